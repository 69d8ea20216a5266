"""Time of the combinatorial analyzer's whole analysis of the main wager (6 decks, S17, DAS,
split to 4 hands, CDZ-), beside the baseline of the same run: the time the C round simulator
needs to reach a 95% interval of +-0.01 percentage points on the same game (fresh shoe),
extrapolated from its measured rounds per second and the per-round standard deviation.

Target (issue 15): the analysis in under 0.2 s on one core; the figures and their ratio are
printed (and kept in pytest-benchmark's extra_info); nothing is asserted about speed.
"""

from __future__ import annotations

import math

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from feltlab import native
from feltlab import simulate as sim
from feltlab.native.analyzer import AnalyzerRules, shoe_counts
from feltlab.rules import Rules

RULES = AnalyzerRules(counts=shoe_counts(6), strategy="cdz", max_hands=4)
RESULTS: dict[str, float] = {}
HALF_WIDTH = 0.0001  # +-0.01 percentage points


@pytest.mark.benchmark(group="analyzer")
def test_analyzer_cdz_six_decks_split_to_four(benchmark: BenchmarkFixture) -> None:
    a = benchmark(native.analyze, RULES)
    assert abs(100 * a.ev + 0.402870) <= 1e-6  # Farmer's CA v7.6, the same rules
    if benchmark.stats:
        RESULTS["analyzer_s"] = benchmark.stats.stats.mean
        benchmark.extra_info.update(path="analyzer, 6 decks S17 DAS SPL4 CDZ-")


@pytest.mark.benchmark(group="analyzer")
def test_simulator_time_to_a_hundredth_of_a_point(benchmark: BenchmarkFixture) -> None:
    rules = sim.sim_rules(Rules.preset("vegas_s17"), fresh_shoe=True)
    rounds = 2_000_000
    rng = native.Xoshiro256StarStar(3)
    # pytest-benchmark's pedantic() is unannotated (third-party)
    res = benchmark.pedantic(  # type: ignore[no-untyped-call]
        native.simulate_rounds, (rng, rules, rounds), rounds=3, iterations=1
    )
    sd = float(res.net.std()) / sim.DEFAULT_STAKE
    if benchmark.stats:
        rate = rounds / benchmark.stats.stats.mean
        needed = (1.96 * sd / HALF_WIDTH) ** 2
        RESULTS["simulator_s"] = needed / rate
        benchmark.extra_info.update(
            path="C simulator to +-0.01 pp", rounds_needed=needed, rounds_per_s=rate
        )
    assert 1.1 < sd < 1.2


def teardown_module() -> None:
    if "analyzer_s" in RESULTS and "simulator_s" in RESULTS:
        a, s = RESULTS["analyzer_s"], RESULTS["simulator_s"]
        print(
            f"\nanalyzer (exact): {a:.3f} s; simulator to +-0.01 pp: {s:.1f} s "
            f"({math.ceil(s / a):,} times the analyzer)"
        )
