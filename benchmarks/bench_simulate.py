"""Rounds per second of the C round simulator, with the Python round engine's rounds per
second measured in the same run as the baseline, and the time of an exact three-card PAR
sheet.

Each is its own pytest-benchmark table (the calls differ in size: rounds/s in extra_info is
the comparable figure).  The side-by-side targets against the plain C simulator are in
bench_targets.py.  A three-card PAR sheet's target: under 100 ms.  Nothing is asserted about
speed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from feltlab import native, parsheet
from feltlab import simulate as sim
from feltlab.engine import Table, play_round
from feltlab.plugins.main import Main
from feltlab.plugins.perfect_pairs import PerfectPairs
from feltlab.plugins.super_sevens import SuperSevens
from feltlab.rules import Rules
from feltlab.shoe import Shoe

RULES = Rules.preset("vegas_s17")  # 6 decks, S17
RESULTS: dict[str, float] = {}


@pytest.mark.benchmark(group="simulate")
def test_c_simulator_with_perfect_pairs(benchmark: BenchmarkFixture) -> None:
    rounds = 2_000_000
    rules_c = sim.sim_rules(RULES)
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
    policy = sim.TablePolicy(sim.strategy_tables(RULES))

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
