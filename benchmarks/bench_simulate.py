"""Rounds per second of the C round simulator, with the Python round engine's rounds per
second measured in the same run as the baseline, and the time of an exact three-card PAR
sheet.

Each is its own pytest-benchmark table (the calls differ in size: rounds/s in extra_info is
the comparable figure).  The side-by-side targets against the plain C simulator are in
bench_targets.py.  A three-card PAR sheet's target: under 100 ms.  Nothing is asserted about
speed.

Issue 29's targets, printed together in one table (benchmarks/conftest.py), each against the
plain C simulator (../shared/peers/plain_bj.c, built with gcc -O2 in a temporary folder at
benchmark time) in the same run, in 15 back-to-back pairs of 1 M rounds, the ratio the
median of the pairs' ratios (``benchmarks.compare.alternate_paired``): the simulation's own rounds/s
(``SimulationResult.simulation_rounds_per_second``, what ``feltlab simulate`` prints: set-up
excluded, as plain_bj's own loop timing excludes its start) with no side bet against plain
mode 0 (goal 1.2x), with Perfect Pairs against mode 1 (1.2x), with every installed side bet
against mode 1 (0.6x); and ``workers=2`` against one worker (goal 0.9 x 2 on two free cores).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.compare import RESULTS as COMPARISONS
from benchmarks.compare import Comparison, alternate_paired, plain_bj, plain_run
from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.engine import Table, play_round
from feltlab.math import parsheet
from feltlab.math import strategy_tables as simstrategy
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.plugins.main import Main
from feltlab.plugins.perfect_pairs import PerfectPairs
from feltlab.plugins.super_sevens import SuperSevens
from feltlab.rules import Rules
from feltlab.shoe import Shoe
from feltlab.simulation import run as sim

RULES = Rules.preset("vegas_s17")  # 6 decks, S17
RESULTS: dict[str, float] = {}


@pytest.mark.benchmark(group="simulate")
def test_c_simulator_with_perfect_pairs(benchmark: BenchmarkFixture) -> None:
    rounds = 2_000_000
    rules_c = simulator_rules(RULES, simstrategy.strategy_tables(RULES))
    pp = PerfectPairs()
    rng = native.Xoshiro256StarStar(1)

    def run() -> npt.NDArray[np.intp]:
        res = native.simulate_rounds(rng, rules_c, rounds)
        cards = np.ascontiguousarray(res.initial[:, :2])
        return np.bincount(pp.classify(cards), minlength=4)

    counts = benchmark(run)
    assert counts.sum() == rounds
    rate = rounds / benchmark.stats.stats.mean if benchmark.stats else 0.0
    benchmark.extra_info.update(
        path="C simulator + Perfect Pairs", rounds=rounds, rounds_per_s=rate
    )
    RESULTS["c"] = rate


@pytest.mark.benchmark(group="simulate")
def test_python_round_engine_baseline(benchmark: BenchmarkFixture) -> None:
    rounds = 300
    policy = simstrategy.TablePolicy(simstrategy.strategy_tables(RULES))

    def run() -> None:
        table = Table(
            RULES, Shoe(RULES, native.Xoshiro256StarStar(2)), [Main(), PerfectPairs()], boxes=1
        )
        for _ in range(rounds):
            play_round(table, [(0, "p", "main", 1000), (0, "p", "perfect_pairs", 500)], policy)

    benchmark.pedantic(run, rounds=3, iterations=1)  # type: ignore[no-untyped-call]
    rate = rounds / benchmark.stats.stats.mean if benchmark.stats else 0.0
    benchmark.extra_info.update(path="Python round engine", rounds=rounds, rounds_per_s=rate)
    RESULTS["python"] = rate


@pytest.mark.benchmark(group="parsheet")
def test_three_card_par_sheet(benchmark: BenchmarkFixture) -> None:
    sheet = benchmark(parsheet.par_sheet, SuperSevens(), 6)
    assert round(float(sheet.house_edge), 5) == 0.11400
    benchmark.extra_info.update(path="Super Sevens PAR sheet, 6 decks")


# ---------------------------------------------------------------- issue 29: one table

SIM_TABLE_PREFIX = "issue 29: "
"""Subjects printed together in one table by benchmarks/conftest.py."""


def _plain_or_skip() -> None:
    if plain_bj() is None:
        pytest.skip("../shared/peers/plain_bj.c or gcc missing")


def _simulation_rate(specs: list[tuple[str, str | None]], n: int) -> float:
    """The simulation's own rounds/s (``SimulationResult.simulation_rounds_per_second``, what
    ``feltlab simulate`` prints: the chunk's time in the simulator, set-up apart)."""
    res = sim.simulate(RULES, n, seed=5, chunk_rounds=n, wagers=specs)
    return res.simulation_rounds_per_second


def _compare_simulation(
    benchmark: BenchmarkFixture,
    subject: str,
    specs: list[tuple[str, str | None]],
    mode: int,
    target: float,
) -> None:
    _plain_or_skip()
    n, reps = (20_000, 1) if benchmark.disabled else (1_000_000, 15)
    sim.simulate(RULES, 20_000, wagers=specs)  # tables and strategy built and cached first

    def run() -> None:
        f, b, pair = alternate_paired(
            lambda: _simulation_rate(specs, n), lambda: plain_run(mode, n)["rounds_per_s"], reps
        )
        COMPARISONS.append(
            Comparison(
                SIM_TABLE_PREFIX + subject,
                f"feltlab.simulation.run ({len(specs)} side bets)",
                f,
                f"plain_bj mode {mode}",
                b,
                "rounds/s",
                True,
                target,
                f"{n:,} rounds a call, one process, set-up excluded on both sides",
                reps,
                note="side bets: " + (", ".join(s for s, _ in specs) or "none"),
                pair_ratio=pair,
            )
        )

    benchmark.pedantic(run, rounds=1, iterations=1)  # type: ignore[no-untyped-call]


@pytest.mark.benchmark(group="issue29")
def test_side_bets_none_vs_plain_mode_0(benchmark: BenchmarkFixture) -> None:
    _compare_simulation(benchmark, "simulate --side-bets none", [], 0, 1.2)


@pytest.mark.benchmark(group="issue29")
def test_perfect_pairs_vs_plain_mode_1(benchmark: BenchmarkFixture) -> None:
    _compare_simulation(
        benchmark, "simulate --side-bets perfect_pairs", [("perfect_pairs", None)], 1, 1.2
    )


@pytest.mark.benchmark(group="issue29")
def test_every_side_bet_vs_plain_mode_1(benchmark: BenchmarkFixture) -> None:
    specs, _ = sim.wager_specs(collect_wagers(get_plugin_manager()), RULES)
    _compare_simulation(benchmark, "simulate, every installed side bet", specs, 1, 0.6)


@pytest.mark.benchmark(group="issue29")
def test_two_workers_scale(benchmark: BenchmarkFixture) -> None:
    n, reps = (40_000, 1) if benchmark.disabled else (16_000_000, 3)
    specs = [("perfect_pairs", None)]
    sim.simulate(RULES, 20_000, wagers=specs)

    ran_on: dict[int, str] = {}

    def timed(workers: int) -> float:
        res = sim.simulate(RULES, n, workers=workers, chunk_rounds=n // 8, wagers=specs)
        ran_on[workers] = res.ran_on  # "2 threads": every wager is settled in C
        return res.rounds / res.seconds

    def run() -> None:
        f, b, pair = alternate_paired(lambda: timed(2), lambda: timed(1), reps)
        COMPARISONS.append(
            Comparison(
                SIM_TABLE_PREFIX + "--workers 2 against 1 (goal 0.9 N = 1.8 on 2 free cores)",
                f"simulate(workers=2) on {ran_on[2]}",
                f,
                "simulate(workers=1)",
                b,
                "rounds/s",
                True,
                1.8,
                f"{n:,} rounds in 8 chunks, wall clock of simulate() (pool start included)",
                reps,
                pair_ratio=pair,
            )
        )

    benchmark.pedantic(run, rounds=1, iterations=1)  # type: ignore[no-untyped-call]
