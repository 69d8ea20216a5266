"""The seed search of ``feltlab certify predict`` (native/src/seedsearch.c,
rig/security/predict.py): issue 40's targets, a 20-bit timer seed in under a second and any
32-bit seed from one 6-deck shoe in under 10 minutes on a 2-core machine.

- ``seeds/s`` of each generator (down Fisher-Yates, modulo, the cards the shuffle settles
  first, every core), and the time a whole 32-bit space takes at that rate;
- the baseline, ``no early exit``: the same search in the same run from the first dealt
  cards, which a down shuffle settles last, so every candidate replays the whole shuffle
  (311 steps); the ratio is what comparing cards as the shuffle settles them buys;
- ``one thread``: the same search on one worker (the ratio is the parallel speed-up);
- the 20-bit timer seed, whole command path (:func:`predictability`), its worst case (the
  last seed of the space).

Run ``python benchmarks/bench_seedsearch.py [--full32 GENERATOR]`` for a plain report
(``--full32``: one real search of a seed at the top of the 32-bit space), or through
pytest-benchmark (``make bench``).  Speed is never asserted in the tests.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

from feltlab.host import usable_cores
from feltlab.native.seedsearch import GENERATORS
from feltlab.rig.security.predict import plan_cards, predictability, run_search
from feltlab.rig.security.shuffler import Declaration, human_seconds, library_shoe

SPACE_32 = float(1 << 32)


def rate(
    generator: str, order: str, workers: int, seconds: float = 2.0
) -> tuple[float, float, float]:
    """``(seeds a wall second, seeds a CPU second of one core, shuffle steps a candidate)``
    of a search timed for ``seconds`` against a fair shoe (a numpy permutation: no seed
    deals it, so the search never stops early)."""
    decl = Declaration(generator, 64)
    codes = (np.random.default_rng(2026).permutation(312) % 52).astype(np.uint8)
    plan = plan_cards(Declaration(generator, 32), codes, order)
    total = steps = 0
    wall = cpu = 0.0
    while wall < seconds:  # run_search stops at its calibration: repeat
        run = run_search(
            decl, plan, codes, workers=workers, max_seconds=0.0, bounds=(0, (1 << 40) - 1)
        )
        total, steps = total + run.searched, steps + run.steps
        wall, cpu = wall + run.seconds, cpu + run.cpu_seconds
    return total / wall, total / cpu, steps / total


def twenty_bit() -> dict[str, Any]:
    """The whole predictability check of a 20-bit millisecond timer seed, its worst case."""
    decl = Declaration("mt19937", 20, seed_source="timer-ms")
    codes = (library_shoe(decl, (1 << 20) - 1) % 52).astype(np.uint8)
    return predictability(decl, codes)


def test_twenty_bit_timer_seed(benchmark: Any) -> None:
    rec = benchmark.pedantic(twenty_bit, rounds=1 if benchmark.disabled else 5, iterations=1)
    assert rec["recovered"]["seed"] == (1 << 20) - 1


def main(argv: list[str]) -> None:
    cores = usable_cores()
    print(f"seed search on {cores} cores; load average {os.getloadavg()[0]:.1f}")
    for g in GENERATORS:
        fast, fast_cpu, steps = rate(g, "settled", cores)
        one, _, _ = rate(g, "settled", 1)
        _, slow_cpu, slow_steps = rate(g, "dealt", cores, seconds=1.0)
        print(
            f"{g:13s} {fast:12,.0f}/s ({steps:.2f} steps) "
            f"2^32 in {human_seconds(SPACE_32 / fast)}; {fast_cpu:12,.0f}/CPU s, "
            f"2^32 on {cores} idle cores {human_seconds(SPACE_32 / fast_cpu / cores)}; "
            f"one thread {one:,.0f}/s (x{fast / one:.2f}); no early exit {slow_cpu:,.0f}/CPU s "
            f"({slow_steps:.0f} steps, settled x{fast_cpu / slow_cpu:.0f})"
        )
    t0 = time.perf_counter()
    rec = twenty_bit()
    print(
        f"20-bit timer seed (mt19937, worst case): {time.perf_counter() - t0:.3f} s whole, "
        f"search {rec['search']['seconds']:.3f} s: {rec['summary']}"
    )
    if "--full32" in argv:
        g = argv[argv.index("--full32") + 1]
        decl = Declaration(g, 32)
        codes = (library_shoe(decl, (1 << 32) - 3) % 52).astype(np.uint8)
        t0 = time.perf_counter()
        rec = predictability(decl, codes)
        print(f"32-bit {g}, seed 2^32 - 3: {time.perf_counter() - t0:.1f} s: {rec['summary']}")


if __name__ == "__main__":
    main(sys.argv[1:])
