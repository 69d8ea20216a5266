"""Time to generate the Illustrious 18 Hi-Lo indices (``feltlab.math.indices.hilo_indices``,
vegas_s17, 3 decks remaining: 7 analyses of 156-card shoes), beside the baseline of the same
run: one analysis of the full six-deck shoe (``feltlab.math.main_wager.analyze_main``), the unit the
indices are made of.  The two times and their ratio are printed (and kept in
pytest-benchmark's extra_info); nothing is asserted about speed."""

from __future__ import annotations

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from feltlab.math.indices import hilo_indices
from feltlab.math.main_wager import analyze_main
from feltlab.rules import Rules

RULES = Rules.preset("vegas_s17")
RESULTS: dict[str, float] = {}


@pytest.mark.benchmark(group="indices")
def test_illustrious_18_under_vegas_s17(benchmark: BenchmarkFixture) -> None:
    # pytest-benchmark's pedantic() is unannotated (third-party)
    t = benchmark.pedantic(  # type: ignore[no-untyped-call]
        hilo_indices, (RULES,), rounds=3, iterations=1
    )
    assert len(t.indices) == 18 and t.analyses == 7
    if benchmark.stats:
        RESULTS["indices_s"] = benchmark.stats.stats.mean
        benchmark.extra_info.update(path="hilo_indices, vegas_s17, 3 decks remaining")


@pytest.mark.benchmark(group="indices")
def test_one_full_shoe_analysis(benchmark: BenchmarkFixture) -> None:
    a = benchmark.pedantic(  # type: ignore[no-untyped-call]
        analyze_main, (RULES,), rounds=3, iterations=1
    )
    assert -0.005 < a.ev < 0
    if benchmark.stats:
        RESULTS["analysis_s"] = benchmark.stats.stats.mean
        benchmark.extra_info.update(path="analyze_main, vegas_s17, 6 decks")


def teardown_module() -> None:
    if "indices_s" in RESULTS and "analysis_s" in RESULTS:
        i, a = RESULTS["indices_s"], RESULTS["analysis_s"]
        print(f"\nIllustrious 18: {i:.2f} s; one full-shoe analysis: {a:.3f} s ({i / a:.1f}x)")
