"""Rounds per second off a continuous shuffler (``fl_simulate_counted`` with a CSM model: the
ideal machine and the bundled profile's 38-slot machine, each with a 16-card buffer, bucketed
by a Hi-Lo window count of 16 cards), against the shoe simulator's tally on the same rules in
the same run (the baseline: ``fl_simulate_tally``).  Issue 26's target: 10^8 rounds off a CSM
in under 60 s on one core.  Nothing is asserted about speed; ``extra_info`` carries rounds/s
and the ratio to the baseline."""

from __future__ import annotations

import time

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.math.eor import HI_LO
from feltlab.math.strategy_tables import strategy_tables
from feltlab.rules import Rules

N = 2_000_000
RULES = Rules.preset("nz")
WINDOW = native.CountSpec(
    tuple(HI_LO[c // 4] for c in range(52)), native.COUNT_WINDOW, 16, 1, -16, 33
)


def _baseline() -> float:
    sr = simulator_rules(RULES, strategy_tables(RULES))
    t = time.perf_counter()
    native.simulate_tally(native.Xoshiro256StarStar(1), sr, N)
    return N / (time.perf_counter() - t)


@pytest.mark.benchmark(group="csm")
@pytest.mark.parametrize("kind", ["ideal", "slots"])
def test_rounds_per_second_off_a_csm(benchmark: BenchmarkFixture, kind: str) -> None:
    sr = simulator_rules(RULES, strategy_tables(RULES), fresh_shoe=True)
    csm = native.CsmModel(kind, slots=38, buffer=16)

    def run() -> native.CountedResult:
        return native.simulate_counted(native.Xoshiro256StarStar(1), sr, N, WINDOW, csm=csm)

    base = _baseline()
    res = benchmark(run)
    assert res.rounds == N
    t = time.perf_counter()
    run()
    rate = N / (time.perf_counter() - t)
    benchmark.extra_info.update(
        rounds_per_second=rate,
        baseline_shoe_tally_rounds_per_second=base,
        ratio_to_baseline=rate / base,
        seconds_for_1e8_rounds=1e8 / rate,
    )
