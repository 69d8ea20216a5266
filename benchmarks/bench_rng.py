"""The NIST sample through ``certify rng``: 1,000 sequences of 10^6 bits of the C core's
ChaCha20 (SP 800-22 section 4.3's sample), which must PASS both second-level verdicts.

- ``certify rng (ChaCha20, NIST sample)``: the sequences drawn from the library generator,
  the battery, the verdict, the record, report, JUnit and manifest written
  (:func:`feltlab.rig.certify.rng_certificate.certify_sequences`).
- The baseline, ``the battery alone``: :func:`feltlab.rig.rng.sp800_22.run_battery` on the
  same sequences in the same run; the ratio is what the certificate adds to the battery.

Run ``python benchmarks/bench_rng.py [SEQUENCES]`` for a plain report, or through
pytest-benchmark (``make bench``; under ``--benchmark-disable`` a 60-sequence smoke run,
judged with the tests 2^16 bits allow).  The suite's calibrated version is
tests/rng/test_certify_rng.py.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from feltlab.rig.certify.rng_certificate import certify_sequences
from feltlab.rig.rng.generators import parse_generator
from feltlab.rig.rng.sp800_22 import Params, run_battery

SEQUENCES = 1000
BITS = 1_000_000
SEED = 20261206


def certify(m: int, n: int, params: Params | None = None) -> Any:
    data = parse_generator("chacha20").sequences(m, n, SEED)
    with tempfile.TemporaryDirectory() as d:
        return certify_sequences(
            data, n, {"name": "chacha20"}, {}, seed=SEED, out=Path(d) / "c", params=params
        )


def test_certify_rng_nist_sample(benchmark: Any) -> None:
    if benchmark.disabled:  # a smoke run: the tests 2^16 bits allow
        short = Params(tests=("frequency", "runs", "dft", "non_overlapping_template"))
        args: tuple[Any, ...] = (60, 1 << 16, short)
    else:
        args = (SEQUENCES, BITS)
    res = benchmark.pedantic(certify, args=args, rounds=1, iterations=1)
    assert str(res.verdict) == "PASS", res.record["rng"]["failing"]


def main(m: int) -> None:
    data = parse_generator("chacha20").sequences(m, BITS, SEED)
    t0 = time.perf_counter()
    run_battery(data, BITS)
    battery = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = certify(m, BITS)
    total = time.perf_counter() - t0
    print(
        f"{m} x {BITS:,} bits: certify rng {total:.1f} s ({res.verdict}), the battery alone "
        f"{battery:.1f} s, ratio {total / battery:.2f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SEQUENCES)
