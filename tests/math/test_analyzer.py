"""The C core's combinatorial analyzer against Eric Farmer's published figures, an
independent brute-force enumeration of the dealer, and hand-checked shoes."""

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from feltlab import native
from feltlab.native.analyzer import (
    BLACKJACK,
    STAND,
    AnalyzerRules,
    hand_index,
    may_run_out,
    shoe_counts,
)

# Farmer's combinatorial analyzer v7.6, CDZ-, dealer peeks, 3:2, double any two cards, split
# to 4 hands, no resplit of aces, split aces one card, DAS; EV per initial unit, in percent.
FARMER = [
    ("6 decks S17 DAS", dict(counts=shoe_counts(6)), -0.402870),
    ("6 decks H17 DAS", dict(counts=shoe_counts(6), h17=True), -0.615389),
    ("8 decks S17 DAS", dict(counts=shoe_counts(8)), -0.430581),
    ("1 deck H17 DAS", dict(counts=shoe_counts(1), h17=True), -0.008735),
    ("6 decks S17 DAS LS", dict(counts=shoe_counts(6), surrender=native.SURRENDER_LATE), -0.330268),
    ("6 decks S17 DAS 6:5", dict(counts=shoe_counts(6), bj_num=6, bj_den=5), -1.762560),
]


@pytest.mark.parametrize(("name", "changes", "percent"), FARMER, ids=[f[0] for f in FARMER])
def test_farmer_v76_figures_to_1e_6_percentage_points(
    name: str, changes: dict[str, Any], percent: float
) -> None:
    a = native.analyze(AnalyzerRules(strategy="cdz", **changes))
    assert abs(a.p_total - 1.0) < 1e-12
    # the published figures have six decimals: agreement to their last digit
    assert abs(100 * a.ev - percent) <= 1e-6, f"{name}: {100 * a.ev:.8f}% vs {percent}%"


def _dealer_brute(counts: tuple[int, ...], up: int, h17: bool, peek: bool) -> list[Fraction]:
    """Exact fractions by recursion over every ordered draw of the dealer."""
    comp = list(counts)
    comp[up - 1] -= 1
    out = {k: Fraction(0) for k in range(7)}

    def go(hard: int, ace: bool, ncards: int, p: Fraction) -> None:
        soft = ace and hard <= 11
        t = hard + 10 if soft else hard
        if ncards == 2 and t == 21:
            out[6] += p
            return
        if hard > 21:
            out[5] += p
            return
        if t > 17 or (t == 17 and not (soft and h17)):
            out[t - 17] += p
            return
        n = sum(comp)
        excl = None
        if peek and ncards == 1 and up in (1, 10):
            excl = 9 if up == 1 else 0
        denom = n - (comp[excl] if excl is not None else 0)
        for v in range(10):
            if comp[v] == 0 or v == excl:
                continue
            q = p * Fraction(comp[v], denom)
            comp[v] -= 1
            go(hard + v + 1, ace or v == 0, ncards + 1, q)
            comp[v] += 1

    go(up, up == 1, 1, Fraction(1))
    return [out[k] for k in range(7)]


@pytest.mark.parametrize(
    ("up", "h17", "peek"),
    [(6, False, False), (1, True, True), (10, False, True), (1, False, False)],
)
def test_dealer_probabilities_match_a_brute_force_enumeration(
    up: int, h17: bool, peek: bool
) -> None:
    counts = shoe_counts(1)
    got = native.dealer_probabilities(counts, up, h17=h17, peek=peek)
    want = _dealer_brute(counts, up, h17, peek)
    assert np.allclose(got, [float(x) for x in want], rtol=0, atol=1e-14)
    assert abs(got.sum() - 1) < 1e-14
    if peek:
        assert got[6] == 0.0


def test_a_shoe_of_tens_only_pushes_every_round() -> None:
    # 26 ten-valued cards: player 20 against dealer 20, every round a stand-off
    a = native.analyze(AnalyzerRules(counts=(0,) * 9 + (26,)))
    i = hand_index(9, 9)
    assert a.prob[i, 9] == pytest.approx(1.0, abs=1e-15)
    assert a.action[i, 9] == STAND
    assert a.ev == pytest.approx(0.0, abs=1e-15)


def test_player_blackjack_value_and_dealer_blackjack_chance_hand_checked() -> None:
    # 1 deck, A-T against a 6: paid 3:2 with no dealer blackjack possible
    a = native.analyze(AnalyzerRules(counts=shoe_counts(1)))
    i = hand_index(0, 9)
    assert a.action[i, 5] == BLACKJACK
    assert a.value[i, 5] == pytest.approx(1.5, abs=1e-15)
    # A-T against an ace: 15 tens left in 49 cards; a dealer blackjack pushes
    assert a.p_dealer_bj[i, 0] == pytest.approx(15 / 49, abs=1e-15)
    assert a.value[i, 0] == pytest.approx(1.5 * 34 / 49, abs=1e-15)
    # probability of the deal A, T (either order) and up card 6 from one deck
    p = 2 * (4 / 52) * (4 / 51) * (16 / 50)
    assert a.prob[i, 5] == pytest.approx(p, abs=1e-15)


def test_late_surrender_is_worth_minus_half_after_the_check() -> None:
    a = native.analyze(AnalyzerRules(counts=shoe_counts(6), surrender=native.SURRENDER_LATE))
    i = hand_index(5, 9)  # hard 16 (6, T) against a ten
    q = a.p_dealer_bj[i, 9]
    assert a.action_ev[i, 9, 4] == pytest.approx(-0.5 * (1 - q) - q, abs=1e-15)
    early = native.analyze(AnalyzerRules(counts=shoe_counts(6), surrender=native.SURRENDER_EARLY))
    assert early.action_ev[i, 9, 4] == -0.5
    assert early.ev > a.ev


@pytest.mark.parametrize(
    ("changes", "exc", "words"),
    [
        (dict(counts=(1,) * 10), ValueError, "26 to"),
        (dict(counts=(4,) * 9), ValueError, "10 card counts"),
        (dict(counts=(4,) * 9 + (-1,)), ValueError, "counts[9]"),
        (dict(counts="abc"), ValueError, "10 card counts"),
        (dict(max_hands=5), ValueError, "max_hands"),
        (dict(strategy="best"), ValueError, "strategy"),
        (dict(surrender=3), ValueError, "surrender"),
        (dict(h17=2), TypeError, "h17"),
        (dict(pair=np.ones((13, 11), dtype=np.uint8)), ValueError, "ten-valued"),
        (dict(hard=np.zeros((3, 3), dtype=np.uint8)), ValueError, "shape"),
        (dict(threads=-1), ValueError, "threads"),
    ],
)
def test_bad_rules_are_refused_with_the_field_named(
    changes: dict[str, Any], exc: type[Exception], words: str
) -> None:
    with pytest.raises(exc, match=words.replace("[", r"\[").replace("]", r"\]")):
        native.analyze(AnalyzerRules(**changes))


@pytest.mark.parametrize("peek", [True, False])
def test_the_figures_are_the_same_for_any_thread_count(peek: bool) -> None:
    """Each up card is analysed in its own context and the sums are added in up-card order,
    so one thread, three and one per CPU give the same bits (split distribution included)."""
    runs = [
        native.analyze(
            AnalyzerRules(
                counts=shoe_counts(1), peek=peek, enhc_takes=1, split_dist=True, threads=t
            )
        )
        for t in (1, 3, 0)
    ]
    for a in runs[1:]:
        assert a.ev == runs[0].ev
        for name in ("net_dist", "split_net", "value", "action_ev", "prob", "dealer"):
            assert np.array_equal(getattr(a, name), getattr(runs[0], name), equal_nan=True)
    if peek:  # Farmer's CA v7.6, 1 deck S17 DOA DAS split to 4, CDZ-
        assert abs(100 * runs[0].ev - 0.181934306) <= 1e-6


def test_a_shoe_a_round_could_run_out_of_is_refused() -> None:
    """26 twos, split to 2 hands: each split hand draws to 20 (ten twos), so the box takes 20
    cards and the dealer, holding the up card, finds 5 of the 8 more twos its 18 needs: the
    round cannot be finished.  The analyzer's split values assume no shoe runs out (they came
    out +2.0 a round, and the split rounds' distribution summed to 0, not 1, labelled exact).
    native/tests/test_core.c checks the C core refuses it too."""
    with pytest.raises(
        ValueError, match=r"26 cards could run out in a round of up to 2 split hands"
    ):
        native.analyze(AnalyzerRules(counts=(0, 26) + (0,) * 8, max_hands=2, split_dist=True))
    # one split hand fewer: 10 + 9 twos fit in 26
    assert may_run_out((0, 26) + (0,) * 8, 2) and not may_run_out((0, 26) + (0,) * 8, 1)
    native.analyze(AnalyzerRules(counts=(0, 26) + (0,) * 8, max_hands=1))


@pytest.mark.parametrize(
    ("counts", "max_hands"),
    [
        ((0, 40) + (0,) * 8, 2),
        ((4,) * 9 + (0,), 4),
        ((0,) * 9 + (26,), 4),
        ((60,) + (0,) * 8 + (40,), 4),
    ],
)
def test_lopsided_shoes_the_round_cannot_exhaust_have_whole_distributions(
    counts: tuple[int, ...], max_hands: int
) -> None:
    """Shoes no round can run out of: every outcome's probability sums to 1 and the
    distribution's mean is the expectation (40 twos split to 2: ten twos to each hand's 20,
    nine to the dealer's 18; a win of 2 units every round)."""
    a = native.analyze(AnalyzerRules(counts=counts, max_hands=max_hands, split_dist=True))
    nets = np.arange(-native.analyzer.SPLIT_NET0, native.analyzer.SPLIT_NET0 + 1)
    pay = np.array([-2, -1, -0.5, 0, 1, 2, 1.5])
    assert a.net_dist.sum() + a.split_net.sum() == pytest.approx(1.0, abs=1e-12)
    assert a.split_net.sum() == pytest.approx(a.p_split, abs=1e-12)
    mean = float(a.net_dist @ pay + a.split_net @ nets)
    assert mean == pytest.approx(a.ev, abs=1e-12)
    if counts[1] == 40:
        assert a.ev == pytest.approx(2.0, abs=1e-15)


@pytest.mark.parametrize("strategy", ["cdz", "cdp1", "cdp"])
@pytest.mark.parametrize("max_hands", [3, 4])
def test_the_split_distribution_keeps_the_strategys_expectation(
    strategy: str, max_hands: int
) -> None:
    """The distribution's mean is the strategy's exact expectation, its approximated re-split
    rounds matched to it: CDP plays a split hand for the pair cards out at each count, which
    the enumeration (one play per hand) does not follow past a re-split (1 deck S17 split to
    3 under CDP: the mean was 1.76e-7 a unit short of the expectation)."""
    a = native.analyze(
        AnalyzerRules(
            counts=shoe_counts(1), strategy=strategy, max_hands=max_hands, split_dist=True
        )
    )
    nets = np.arange(-native.analyzer.SPLIT_NET0, native.analyzer.SPLIT_NET0 + 1)
    pay = np.array([-2, -1, -0.5, 0, 1, 2, 1.5])
    assert float(a.net_dist @ pay + a.split_net @ nets) == pytest.approx(a.ev, abs=1e-12)
    assert a.net_dist.sum() + a.split_net.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_strategy_names_are_the_analyzers() -> None:
    from feltlab.math.main_wager import Strategy
    from feltlab.native.analyzer import STRATEGIES

    assert {s.value for s in Strategy} == set(STRATEGIES) == {"cdz", "cdp1", "cdp", "table"}
