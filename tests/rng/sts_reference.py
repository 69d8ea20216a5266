"""Collect the reference STS's p-values on pi, e, sqrt(2), sqrt(3) into
tests/rng/data/sts_pi_e_sqrt.json.

Run by hand (not in CI, which needs no FFTW): build the improved NIST STS outside the tree
(/work/shared/peers/README.md), write the four expansions with ``expansions.py`` and run it:

    cp -r ../shared/peers/nist-sts BUILD/sts && make -C BUILD/sts clobber all
    python -m tests.rng.sts_reference BUILD/sts/sts BUILD/work    # from the project root

The STS prints six decimals; its linear-complexity p-value uses its misprinted class
probability 0.01047 (SP 800-22 prints 0.010417), so the class counts C0..C6 are stored too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.rng.expansions import expansion_bits

CONSTANTS = ("pi", "e", "sqrt2", "sqrt3")
N_BITS = 1_000_000
# -P: 1 block frequency M, 2 non-overlapping m, 3 overlapping m, 4 approximate entropy m,
# 5 serial m, 6 linear complexity M
STS_PARAMS = "1=16384,2=9,3=9,4=10,5=16,6=500"
SINGLE = {
    "frequency": "Frequency/results.txt",
    "block_frequency": "BlockFrequency/results.txt",
    "cumulative_sums": "CumulativeSums/results.txt",
    "runs": "Runs/results.txt",
    "longest_run": "LongestRun/results.txt",
    "rank": "Rank/results.txt",
    "dft": "DFT/results.txt",
    "overlapping_template": "OverlappingTemplate/results.txt",
    "universal": "Universal/results.txt",
    "approximate_entropy": "ApproximateEntropy/results.txt",
    "random_excursions": "RandomExcursions/results.txt",
    "serial": "Serial/results.txt",
    "linear_complexity": "LinearComplexity/results.txt",
}


def _floats(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()]


def collect(out: Path) -> dict[str, list[float] | list[int]]:
    res: dict[str, list[float] | list[int]] = {k: _floats(out / v) for k, v in SINGLE.items()}
    res["non_overlapping_template"] = [
        _floats(out / "NonOverlappingTemplate" / f"data{i:02d}.txt")[0] for i in range(1, 149)
    ]
    res["random_excursions_variant"] = [
        _floats(out / "RandomExcursionsVariant" / f"data{i}.txt")[0] for i in range(1, 19)
    ]
    stats = (out / "LinearComplexity" / "stats.txt").read_text()
    row = re.search(r"CHI2\s*-+\s*\n\s*((?:\d+\s+){7})", stats)
    assert row, stats
    res["linear_complexity_counts"] = [int(x) for x in row.group(1).split()]
    return res


def main(sts: str, work: str) -> None:
    base = Path(work)
    base.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([sts, "-h"], capture_output=True, text=True).stdout
    found = re.search(r"Version: (\S+)", version + "")
    data: dict[str, object] = {
        "sts": "NIST STS improved (arcetri/sts), version " + (found.group(1) if found else "?"),
        "command": f"sts -v 1 -i 1 -S {N_BITS} -T 1 -s -P {STS_PARAMS} -w OUT FILE",
        "bits": N_BITS,
        "p_values": {},
    }
    for name in CONSTANTS:
        f = base / f"{name}.bin"
        expansion_bits(name, N_BITS).tofile(f)
        out = base / f"out-{name}"
        out.mkdir(exist_ok=True)
        cmd = [sts, "-v", "1", "-i", "1", "-S", str(N_BITS), "-T", "1", "-s"]
        subprocess.run(
            [*cmd, "-P", STS_PARAMS, "-w", str(out), str(f)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        data["p_values"][name] = collect(out)  # type: ignore[index]
    target = Path(__file__).parent / "data" / "sts_pi_e_sqrt.json"
    target.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
