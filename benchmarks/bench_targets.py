"""The targets of issue 17, each measured side by side with its named baseline in this run
(alternating, medians of REPEATS), calls of the same size on both sides:

- ``feltlab simulate`` end to end (the console script, start to exit, every installed side
  bet tallied) against the plain C simulator's mode 1 (it classifies Perfect Pairs), both as
  rounds per wall-clock second of the whole process: target 1.2x;
- the C simulator alone (``native.simulate_tally``, no side bet) against plain mode 0 (its own
  timing of the loop): target 1.5x;
- ``simulate(workers=2)`` against ``workers=1`` (every installed side bet): target 1.8x on 2
  cores;
- shuffle batches (``native.shuffle_batch``, 6 decks) against numpy's
  ``Generator.permuted`` on the same (shoes, 312) batch: target 15x; and against the plain
  Fisher-Yates of plain mode 3 (ns per shuffle, the same number of shoes): target 1.5x;
- ``feltlab simulate --rounds 1`` start to exit (import and set-up, caches warm) against
  ``python -c pass``: target under 0.3 s.

The ``feltlab`` processes run with Python's bytecode cache on, as on a user's machine (a
sandbox's ``PYTHONDONTWRITEBYTECODE`` is removed for them); the start-up table also gives
the figure with no bytecode at all (every module compiled at each start).

The plain simulator is built from ../shared/peers at benchmark time (benchmarks/compare.py).
Under ``--benchmark-disable`` (``make bench-smoke``) every measurement runs once on tiny sizes
and nothing is printed.  Nothing about speed is asserted.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pytest

from benchmarks.compare import (
    RESULTS,
    Comparison,
    alternate,
    feltlab_command,
    plain_bj,
    plain_run,
    user_env,
    wall,
)
from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.math import strategy_tables as simstrategy
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.simulation import run as sim

RULES = Rules.preset("vegas_s17")  # the plain simulator's rules
REPEATS = 5


def _sizes(benchmark: Any, full: int, smoke: int) -> tuple[int, int]:
    """(size, repeats): the full size and REPEATS when timed, tiny and once in the smoke."""
    return (smoke, 1) if benchmark.disabled else (full, REPEATS)


def _record(benchmark: Any, c: Comparison) -> None:
    RESULTS.append(c)
    benchmark.extra_info.update(
        comparison=c.subject, feltlab=c.feltlab, baseline=c.baseline, ratio=c.ratio, met=c.met
    )


def _once(benchmark: Any, run: Any) -> None:
    """Run the side-by-side measurement once under pytest-benchmark (its own timing of the
    whole comparison is not the figure: the comparison table is)."""
    benchmark.pedantic(run, rounds=1, iterations=1)


def _installed_specs() -> list[tuple[str, str | None]]:
    types = collect_wagers(get_plugin_manager())
    return [
        (n, None)
        for n in types.names()
        if types[n].card_roles and types[n].min_decks <= RULES.decks <= types[n].max_decks
    ]


needs_plain = pytest.mark.skipif(
    plain_bj() is None, reason="../shared/peers/plain_bj.c or gcc missing"
)


@needs_plain
@pytest.mark.benchmark(group="targets")
def test_simulate_end_to_end_vs_plain_mode_1(benchmark: Any) -> None:
    n, reps = _sizes(benchmark, 10_000_000, 20_000)
    cmd = [*feltlab_command(), "simulate", "--rules", "vegas_s17", "--rounds", str(n)]
    cmd += ["--workers", "1", "--json"]
    wagers: list[str] = []

    def feltlab() -> float:
        dt, out = wall(cmd, user_env())
        wagers[:] = [w["wager"] for w in json.loads(out)["wagers"]]
        return n / dt

    def plain() -> float:
        return n / plain_run(1, n)["wall_s"]

    def run() -> None:
        f, b = alternate(feltlab, plain, reps)
        _record(
            benchmark,
            Comparison(
                "feltlab simulate end to end, every installed side bet",
                f"feltlab simulate ({len(wagers)} side bets)",
                f,
                "plain_bj mode 1 (Perfect Pairs)",
                b,
                "rounds/s",
                True,
                1.2,
                f"{n:,} rounds per process, wall clock start to exit",
                reps,
                note="side bets: " + ", ".join(wagers),
            ),
        )

    _once(benchmark, run)


@needs_plain
@pytest.mark.benchmark(group="targets")
def test_c_simulator_vs_plain_mode_0(benchmark: Any) -> None:
    n, reps = _sizes(benchmark, 10_000_000, 20_000)
    rules = simulator_rules(RULES, simstrategy.strategy_tables(RULES))
    rng = native.Xoshiro256StarStar(1)

    def feltlab() -> float:
        t0 = time.perf_counter()
        native.simulate_tally(rng, rules, n)
        return n / (time.perf_counter() - t0)

    def plain() -> float:
        return plain_run(0, n)["rounds_per_s"]

    def run() -> None:
        f, b = alternate(feltlab, plain, reps)
        _record(
            benchmark,
            Comparison(
                "C simulator alone",
                "native.simulate_tally (one call)",
                f,
                "plain_bj mode 0 (its loop)",
                b,
                "rounds/s",
                True,
                1.5,
                f"{n:,} rounds per call",
                reps,
            ),
        )

    _once(benchmark, run)


@pytest.mark.benchmark(group="targets")
def test_two_workers_vs_one(benchmark: Any) -> None:
    n, reps = _sizes(benchmark, 24_000_000, 40_000)
    chunk = max(n // 12, 1)
    specs = _installed_specs()
    sim.simulate(RULES, min(n, 100_000), wagers=specs)  # tables built and cached first

    ran_on: dict[int, str] = {}

    def timed(workers: int) -> float:
        t0 = time.perf_counter()
        res = sim.simulate(RULES, n, workers=workers, chunk_rounds=chunk, wagers=specs)
        ran_on[workers] = res.ran_on
        return n / (time.perf_counter() - t0)

    def run() -> None:
        f, b = alternate(lambda: timed(2), lambda: timed(1), reps)
        _record(
            benchmark,
            Comparison(
                "--workers 2 against one worker (2 cores)",
                f"simulate(workers=2) on {ran_on[2]}",
                f,
                "simulate(workers=1)",
                b,
                "rounds/s",
                True,
                1.8,
                f"{n:,} rounds in chunks of {chunk:,}, {len(specs)} side bets, pool start included",
                reps,
            ),
        )

    _once(benchmark, run)


@pytest.mark.benchmark(group="targets")
def test_shuffle_batch_vs_numpy_permuted(benchmark: Any) -> None:
    shoes, reps = _sizes(benchmark, 20_000, 200)
    out = np.empty((shoes, 312), dtype=np.uint8)
    out[:] = native.new_shoe(6)
    arr = out.copy()
    rng = native.Xoshiro256StarStar(1)
    gen = np.random.default_rng(1)

    def feltlab() -> float:
        t0 = time.perf_counter()
        native.shuffle_batch(rng, out=out, decks=6)
        return shoes / (time.perf_counter() - t0)

    def numpy() -> float:
        t0 = time.perf_counter()
        gen.permuted(arr, axis=1, out=arr)
        return shoes / (time.perf_counter() - t0)

    def run() -> None:
        f, b = alternate(feltlab, numpy, reps * 3)
        _record(
            benchmark,
            Comparison(
                "shuffle batches against numpy",
                "native.shuffle_batch xoshiro256**",
                f,
                "numpy Generator.permuted (PCG64)",
                b,
                "shoes/s",
                True,
                15.0,
                f"({shoes:,}, 312) uint8 per call",
                reps * 3,
            ),
        )

    _once(benchmark, run)


@needs_plain
@pytest.mark.benchmark(group="targets")
def test_shuffle_batch_vs_plain_fisher_yates(benchmark: Any) -> None:
    shoes, reps = _sizes(benchmark, 200_000, 200)
    out = np.empty((shoes, 312), dtype=np.uint8)
    out[:] = native.new_shoe(6)
    rng = native.Xoshiro256StarStar(1)

    def feltlab() -> float:
        t0 = time.perf_counter()
        native.shuffle_batch(rng, out=out, decks=6)
        return (time.perf_counter() - t0) / shoes * 1e9

    def plain() -> float:
        return plain_run(3, shoes)["ns_per_shuffle"]

    def run() -> None:
        f, b = alternate(feltlab, plain, reps)
        _record(
            benchmark,
            Comparison(
                "shuffle batches against a plain Fisher-Yates",
                "native.shuffle_batch xoshiro256**",
                f,
                "plain_bj mode 3 (Fisher-Yates, Lemire)",
                b,
                "ns/shoe",
                False,
                1.5,
                f"{shoes:,} shoes of 312 cards per run",
                reps,
            ),
        )

    _once(benchmark, run)


@pytest.mark.benchmark(group="targets")
def test_simulate_start_up(benchmark: Any) -> None:
    _, reps = _sizes(benchmark, 0, 0)
    cmd = [*feltlab_command(), "simulate", "--rules", "vegas_s17", "--rounds", "1", "--json"]
    env = user_env()
    subprocess.run(cmd, capture_output=True, timeout=120, check=True, env=env)  # caches warm
    # no bytecode read or written: an empty cache prefix, as in a sandbox without .pyc files
    no_bytecode = {
        **env,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="feltlab-nopyc-"),
    }
    compiled: list[float] = []

    def feltlab() -> float:
        compiled.append(wall(cmd, no_bytecode)[0])
        return wall(cmd, env)[0]

    def python() -> float:
        return wall([sys.executable, "-c", "pass"])[0]

    def run() -> None:
        f, b = alternate(feltlab, python, reps * 2)
        _record(
            benchmark,
            Comparison(
                "feltlab simulate start-up (import and set-up)",
                "feltlab simulate --rounds 1",
                f,
                "python -c pass",
                b,
                "s",
                False,
                0.3,
                "one process, start to exit, caches warm (tables, strategy, bytecode)",
                reps * 2,
                absolute=True,
                note="with no bytecode cache (every module compiled at each start): "
                f"{statistics.median(compiled):.3f} s",
            ),
        )

    _once(benchmark, run)
