"""feltlab.math.countability on hand-built tallies: exact expectations, trigger, frequency and
the counter's edge as fractions, the intervals by the formula, the verdicts."""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

from feltlab.errors import CountError
from feltlab.intervals import Z95
from feltlab.math.countability import (
    Bucket,
    analyze_buckets,
    analyze_line,
    bucket_from_outcomes,
    bucket_from_sums,
    fit_line,
    on_side,
    spread_edge,
)

EVEN = (F(1), F(-1))  # an even-money wager: outcome 0 wins 1, outcome 1 loses 1


def three(scale: int = 1) -> list[Bucket]:
    """True counts -1, 0, +1: 30-70, 24-26 and 12-8 wins-losses (times ``scale``)."""
    return [
        bucket_from_outcomes(-1, [30 * scale, 70 * scale], EVEN),
        bucket_from_outcomes(0, [24 * scale, 26 * scale], EVEN),
        bucket_from_outcomes(1, [12 * scale, 8 * scale], EVEN),
    ]


def test_three_buckets_exact() -> None:
    a = analyze_buckets(three(), max_bet=10_000, min_rounds=1)
    assert [b.mean for b in a.buckets] == [F(-2, 5), F(-1, 25), F(1, 5)]
    assert a.rounds == 170
    assert a.overall.value == float(F(-38, 170))
    assert a.trigger == 2 and a.trigger_value() == 1
    assert a.frequency == 20 / 170
    assert a.edge_per_unit.value == float(F(1, 5))
    assert a.edge_per_unit.rounds == 20
    assert a.edge_per_round.value == float(F(4, 170))
    assert a.edge_per_round.rounds == 170
    # 4/170 of a unit a round observed, at a $100 maximum, per 100 rounds: $235.29
    assert a.win_per_100.value == pytest.approx(float(F(4, 170) * 10_000 * 100))
    # intervals by the formula: per unit, var = 20/20 - (1/5)^2
    assert a.edge_per_unit.half_width == pytest.approx(Z95 * math.sqrt((1 - 1 / 25) / 20))
    var_round = 20 / 170 - (4 / 170) ** 2
    assert a.edge_per_round.half_width == pytest.approx(Z95 * math.sqrt(var_round / 170))
    assert a.buckets[0].half_width() == pytest.approx(Z95 * math.sqrt((1 - 0.16) / 100))
    # the trigger's interval: every upper bound is positive from count 0 (count -1's is
    # -0.4 + 0.18 < 0); no lower bound is positive, not even count +1's
    assert a.trigger_low == 1
    assert a.trigger_high is None
    assert a.verdict.startswith("inconclusive: +20.00% ± 42.94% per unit bet at true count +1")
    assert not a.countable


def test_enough_rounds_make_it_countable() -> None:
    a = analyze_buckets(three(1000), max_bet=10_000, min_rounds=1)
    assert a.trigger == 2 and a.trigger_high == 2
    assert a.edge_per_unit.value == 0.2
    assert a.countable
    assert a.verdict == (
        "countable: +20.00% ± 1.36% per unit bet at true count +1 or more (11.76% of "
        "rounds), +235.29 ± 16.27 dollars per 100 rounds at the 100.00 maximum"
    )


def test_a_negative_top_bucket_ends_the_trigger_unless_sparse() -> None:
    bs = [*three(1000), bucket_from_outcomes(2, [0, 5], EVEN)]
    assert analyze_buckets(bs, max_bet=100, min_rounds=1).trigger is None
    assert analyze_buckets(bs, max_bet=100, min_rounds=1).verdict.startswith("not countable")
    # with 10 rounds needed to decide, the 5-round bucket is skipped by the test, yet counted
    a = analyze_buckets(bs, max_bet=100, min_rounds=10)
    assert a.trigger == 2
    assert a.frequency == 20_005 / 170_005
    assert a.edge_per_unit.value == float(F(4000 - 5, 20_005))


def test_a_trigger_must_stay_positive_not_merely_turn() -> None:
    bs = [
        bucket_from_outcomes(0, [10, 0], EVEN),  # positive low, then negative: no trigger here
        bucket_from_outcomes(1, [0, 10], EVEN),
        bucket_from_outcomes(2, [10, 0], EVEN),
    ]
    assert analyze_buckets(bs, max_bet=100, min_rounds=1).trigger == 2


def test_side_paytable_and_main_sums() -> None:
    pays = (F(25), F(8), F(-1))  # a pair wager: 25:1, 8:1, else loses
    b = bucket_from_outcomes(F(3, 2), [1, 2, 97], pays)
    assert b.rounds == 100
    assert b.total == 25 + 16 - 97
    assert b.total_sq == 625 + 128 + 97
    assert b.mean == F(-56, 100)
    m = bucket_from_sums(
        0, 4, net=1500 - 1000 - 1000 + 2000, net_sq=1500**2 + 3 * 1000**2 + 1000**2 * 3, stake=1000
    )
    assert m.total == F(3, 2)
    assert m.rounds == 4


def test_refusals() -> None:
    with pytest.raises(CountError, match="no count bucket"):
        analyze_buckets([], max_bet=100)
    with pytest.raises(CountError, match="increasing order"):
        analyze_buckets(list(reversed(three())), max_bet=100)
    with pytest.raises(CountError, match="no round"):
        analyze_buckets([bucket_from_outcomes(0, [0, 0], EVEN)], max_bet=100)
    with pytest.raises(CountError, match="jackpot panel"):
        bucket_from_outcomes(0, [1, 1], (None, F(-1)))
    with pytest.raises(CountError, match="max_bet"):
        analyze_buckets(three(), max_bet=0)


def line_three(sign: int = 1) -> list[Bucket]:
    """Counts -1, 0, +1, 1,000 rounds each of +-1 results averaging -0.1, 0, +0.1 (times
    ``sign``): the line is exactly ``0.1 * sign * count``."""
    return [
        bucket_from_outcomes(-1, [450 if sign > 0 else 550, 550 if sign > 0 else 450], EVEN),
        bucket_from_outcomes(0, [500, 500], EVEN),
        bucket_from_outcomes(1, [550 if sign > 0 else 450, 450 if sign > 0 else 550], EVEN),
    ]


def test_the_fitted_line_by_hand() -> None:
    line = fit_line(line_three())
    assert (line.rounds, line.mean, line.mean_count, line.sxx) == (3000, 0.0, 0.0, 2000.0)
    assert line.slope == pytest.approx(0.1)
    # residual variance: (3000 - 0.1 * 200) / 2998; the slope's error sqrt(that / 2000)
    resid = (3000 - 0.1 * 200) / 2998
    assert line.residual_variance == pytest.approx(resid)
    assert line.slope_se == pytest.approx(math.sqrt(resid / 2000))
    # the rounds at 0 and +1 sit at mean count 0.5: fitted 0.05, variance s2/3000 + 0.25 s2/2000
    f = line.fitted(line_three()[1:])
    assert f.value == pytest.approx(0.05)
    assert f.half_width == pytest.approx(Z95 * math.sqrt(resid / 3000 + 0.25 * resid / 2000))


def test_the_line_trigger_of_either_sign_fraction_edge_and_spread() -> None:
    a = analyze_line(line_three(), z=1.0, max_bet=10_000, spread=8)
    assert a.trigger == 1 and a.direction == 1 and a.trigger_value() == 0
    assert a.frequency == pytest.approx(2 / 3)
    assert a.edge.value == pytest.approx(0.05)
    assert a.observed_edge.value == pytest.approx(0.05)  # (0 + 100) / 2,000 rounds
    # cents per 100 rounds at a $100 maximum: 100 * 10,000 * 2/3 * 0.05
    assert a.win_per_100.value == pytest.approx(100 * 10_000 * 2 / 3 * 0.05)
    # 8 units on 2,000 rounds, 1 on 1,000: (8 * 100 - 100) / 17,000 per unit bet
    assert a.spread_per_unit_bet.value == pytest.approx(700 / 17_000)
    assert a.spread_per_round.value == pytest.approx(700 / 3000)
    # a machine whose count runs the other way: bet at or below 0
    m = analyze_line(line_three(-1), z=1.0, max_bet=10_000)
    assert m.direction == -1 and m.trigger == 1 and m.frequency == pytest.approx(2 / 3)
    assert [b.value for b in on_side(line_three(), 1, -1)] == [-1, 0]
    assert math.isnan(m.spread_per_unit_bet.value)  # no spread asked
    # a flat, losing line: no trigger
    flat = [bucket_from_outcomes(v, [475, 525], EVEN) for v in (-1, 0, 1)]
    f = analyze_line(flat, z=1.0, max_bet=10_000)
    assert f.trigger is None and f.frequency == 0.0 and math.isnan(f.edge.value)
    # the trigger's test: at z = 20 standard errors the +0.05 is not shown
    assert analyze_line(line_three(), z=20.0, max_bet=10_000).trigger is None


def test_spread_edge_exact_and_line_refusals() -> None:
    per_round, per_unit = spread_edge(line_three(), 2, 1, 4)  # 4 units at +1 only
    assert per_round.value == pytest.approx((-100 + 0 + 4 * 100) / 3000)
    assert per_unit.value == pytest.approx(300 / 6000)
    with pytest.raises(CountError, match="no round"):
        fit_line([Bucket(F(0), 0, F(0), F(0))])
    with pytest.raises(CountError, match="increasing order"):
        analyze_line(list(reversed(line_three())), z=1.0, max_bet=100)


def test_no_trigger_says_sample_or_penetration_by_the_intervals() -> None:
    # true counts -1 and 0 (30-70 and 24-26 wins-losses, times 1000), both decided and shown
    # negative; a 20-round bucket at +1 holds 0.013% of rounds: penetration decides
    bs = [*three(1000)[:2], bucket_from_outcomes(1, [12, 8], EVEN)]
    a = analyze_buckets(bs, max_bet=100, min_rounds=1000)
    assert a.trigger is None
    assert a.verdict.startswith("not countable at this penetration")
    # 50,000 rounds at 0 and 20,000 at +1 undecided (100,000 needed): 41.18% of rounds
    bs = three(1000)
    a = analyze_buckets(bs, max_bet=100, min_rounds=100_000)
    assert a.trigger is None
    assert a.verdict == (
        "not countable at this sample: 41.18% of rounds are at true counts above -1 with "
        "fewer than 100,000 rounds each; simulate more rounds (--rounds) to decide"
    )
    # the top decided bucket (0: 24-26) may be positive: -4.00% with a 95% interval over 4%
    a = analyze_buckets(three(1)[:2], max_bet=100, min_rounds=1)
    assert a.verdict.startswith("not countable at this sample: the expectation at true count +0 ")
    assert a.verdict.endswith("may be positive; simulate more rounds (--rounds) to decide")
    a = analyze_buckets(three(1), max_bet=100, min_rounds=1000)
    assert a.verdict.startswith("not countable at this sample: no count has 1,000 rounds")
