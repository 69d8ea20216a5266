"""NIST SP 800-22's battery (feltlab.rig.rng.sp800_22) against the reference STS, side by
side in one run, on one core (issue 39).

(a) All fifteen tests on 100 sequences of 10^6 bits from ChaCha20, at the STS's parameters
(block frequency M = 16384, universal K = 1000 2^L, the rest SP 800-22's defaults), against
the improved NIST STS (../shared/peers/nist-sts, public domain, built here into a temporary
folder at benchmark time with ``make``; ``FELTLAB_PEERS`` names another peers folder, e.g.
from a worktree elsewhere; it needs FFTW3's headers, libfftw3-dev, and the
benchmark skips with the reason when it cannot be built) run with ``-T 1`` on the same file.
Target: 10 times faster.  (b) The NIST sample, 1,000 sequences of 10^6 bits, in under 120 s
on one core (an absolute target).  Each side runs once (the STS takes about two minutes).

Both sides are timed in CPU seconds (user + system: ours one thread, the STS's child
process), the figure that does not depend on the other work of a shared machine; the wall
times are printed beside them.

Under ``--benchmark-disable`` (``make bench-smoke``) the battery runs once on 4 sequences of
10^5 bits and the STS is not built.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.compare import PEERS, Comparison
from benchmarks.compare import RESULTS as COMPARISONS
from feltlab.native import ChaCha20
from feltlab.rig.rng.sp800_22 import Params, run_battery

N_BITS = 1_000_000
STS_PARAMS = Params(block_frequency_block=16384, universal_test_blocks=128_000)


def chacha_sequences(m: int, n_bits: int, seed: int = 39) -> np.ndarray:
    words = (m * n_bits + 63) // 64
    raw = ChaCha20(seed=seed).random_raw(words).view(np.uint8)
    return np.ascontiguousarray(raw[: m * n_bits // 8].reshape(m, n_bits // 8))


@pytest.fixture(scope="module")
def sts_binary(request: pytest.FixtureRequest) -> Iterator[Path]:
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("timed run only: the smoke run builds no STS")
    src = Path(os.environ.get("FELTLAB_PEERS", str(PEERS))) / "nist-sts"
    if not src.is_dir() or shutil.which("make") is None:
        pytest.skip(f"the reference STS cannot be built: {src} or make is missing")
    with tempfile.TemporaryDirectory(prefix="feltlab-sts-") as tmp:
        build = Path(tmp) / "sts"
        shutil.copytree(src, build)
        made = subprocess.run(
            ["make", "-C", str(build), "clobber", "all"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if made.returncode != 0 or not (build / "sts").exists():
            tail = (made.stderr or made.stdout)[-300:]
            pytest.skip(f"the reference STS did not build (needs libfftw3-dev): {tail}")
        yield build / "sts"


def _time_sts(sts: Path, data: np.ndarray, work: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: the child's user + system time)."""
    path = work / "chacha.bin"
    data.tofile(path)
    out = work / "sts-out"
    out.mkdir()
    cmd = [str(sts), "-v", "0", "-i", str(data.shape[0]), "-S", str(N_BITS), "-T", "1"]
    cmd += ["-P", "1=16384,2=9,3=9,4=10,5=16,6=500", "-w", str(out), str(path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _time_battery(data: np.ndarray, n_bits: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process: the battery runs on one thread)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = run_battery(data, n_bits, STS_PARAMS)
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    assert sum(t.p_values.shape[1] for t in result.tests if t.ran) >= 1
    return elapsed, used


def test_battery_smoke(request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("benchmark_disable", False):
        pytest.skip("the smoke run only (make bench-smoke)")
    _time_battery(chacha_sequences(4, 100_000), 100_000)


def test_battery_vs_reference_sts(
    request: pytest.FixtureRequest, benchmark: Any, sts_binary: Path, tmp_path: Path
) -> None:
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("timed run only")
    data = chacha_sequences(100, N_BITS)
    ours_wall, ours = _time_battery(data, N_BITS)
    theirs_wall, theirs = _time_sts(sts_binary, data, tmp_path)
    benchmark.extra_info.update(
        feltlab_cpu_s=ours, sts_cpu_s=theirs, feltlab_wall_s=ours_wall, sts_wall_s=theirs_wall
    )
    print(f"\nwall: feltlab {ours_wall:.1f} s, STS {theirs_wall:.1f} s")
    print(f"CPU: feltlab {ours:.1f} s, STS {theirs:.1f} s")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    COMPARISONS.append(
        Comparison(
            "SP 800-22 battery, 100 x 10^6 bits, one core",
            "feltlab run_battery (CPU s)",
            ours,
            "NIST STS (improved) -T 1 (CPU s)",
            theirs,
            "s",
            higher=False,
            target=10.0,
            size="100 sequences of 10^6 bits",
            repeats=1,
        )
    )


def test_nist_sample_of_1000_sequences(request: pytest.FixtureRequest, benchmark: Any) -> None:
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("timed run only")
    data = chacha_sequences(1000, N_BITS, seed=40)
    wall, ours = _time_battery(data, N_BITS)
    benchmark.extra_info.update(feltlab_cpu_s=ours, feltlab_wall_s=wall)
    print(f"\nthe NIST sample: wall {wall:.1f} s, CPU {ours:.1f} s")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    COMPARISONS.append(
        Comparison(
            "SP 800-22 battery, the NIST sample (1,000 x 10^6 bits), one core",
            "feltlab run_battery (CPU s)",
            ours,
            "target",
            120.0,
            "s",
            higher=False,
            target=120.0,
            size="1,000 sequences of 10^6 bits",
            repeats=1,
            absolute=True,
        )
    )
