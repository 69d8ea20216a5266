"""The false-alarm rate of SP 800-22's second level on a fair generator (docs/rng.md,
"Family-wise alpha"): B batteries of M ChaCha20 sequences of N bits; how many the standard's
per-column rule flags and how many the family-wise verdict at 0.01 flags.

    .venv/bin/python -m benchmarks.sp800_22_false_alarm [B M N]     # default 20 100 65536
"""

from __future__ import annotations

import sys
import time

import numpy as np

from feltlab.native import ChaCha20
from feltlab.rig.rng.sp800_22 import band_false_alarm, run_battery


def main(batteries: int = 20, m: int = 100, n: int = 1 << 16) -> None:
    standard = family = columns = 0
    start = time.perf_counter()
    for b in range(batteries):
        raw = ChaCha20(seed=100 + b).random_raw(m * n // 64).view(np.uint8).reshape(m, n // 8)
        result = run_battery(raw, n)
        levels = result.second_level()
        columns = len(levels)
        standard += any(not c.ok for c in levels)
        family += not result.family_verdict(0.01).passed
    print(
        f"batteries={batteries} m={m} n={n} columns={columns} "
        f"sp800_22_rule_flagged={standard} family_flagged={family} "
        f"per-column band false alarm={band_false_alarm(m, 0.01):.4f} "
        f"seconds={time.perf_counter() - start:.0f}"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
