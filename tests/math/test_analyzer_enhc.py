"""No hole card splits against an independent brute-force enumeration of the whole round, in
exact fractions, with the simulator's settlement (sim.c): the dealer takes a second card only
if some hand is live, and a blackjack then takes the original wager, the original and the
busted hands, or everything."""

from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest

from feltlab import Rules, native
from feltlab.math.main_wager import analyze_main
from feltlab.native.analyzer import SPLIT, AnalyzerRules, hand_index

# 26 cards, mostly tens, so that the brute force stays small; four 8s to split and resplit
COUNTS = (1, 1, 1, 0, 1, 1, 0, 4, 0, 17)
HANDS = 3


def _total(cards: list[int]) -> int:
    hard = sum(cards)
    return hard + 10 if 1 in cards and hard <= 11 else hard


def _brute_split_8s_against_a_ten(comp: list[int], takes: int) -> Fraction:
    """Split 8-8 against a ten (resplitting 8s to HANDS hands), hit below 17."""

    def draws(comp: list[int]) -> Iterator[tuple[int, Fraction]]:
        n = sum(comp)
        for v in range(10):
            if comp[v]:
                yield v + 1, Fraction(comp[v], n)

    def settle(dealer: list[int], hands: list[list[int]]) -> int:
        t = _total(dealer)
        net = 0
        for h in hands:
            pt = _total(h)
            if sum(h) > 21 or (t <= 21 and pt < t):
                net -= 1
            elif t > 21 or pt > t:
                net += 1
        return net

    def dealer_draws(comp: list[int], dealer: list[int], hands: list[list[int]]) -> Fraction | int:
        if _total(dealer) >= 17:
            return settle(dealer, hands)
        ev = Fraction(0)
        for c, p in draws(comp):
            comp[c - 1] -= 1
            ev += p * dealer_draws(comp, [*dealer, c], hands)
            comp[c - 1] += 1
        return ev

    def dealer(comp: list[int], hands: list[list[int]]) -> Fraction:
        busted = sum(1 for h in hands if sum(h) > 21)
        if busted == len(hands):  # nobody live: no second card, every wager lost whole
            return Fraction(-busted)
        ev = Fraction(0)
        for c, p in draws(comp):
            comp[c - 1] -= 1
            if c == 1:  # the dealer's blackjack
                ev += p * {0: -1, 1: -1 - busted, 2: -len(hands)}[takes]
            else:
                ev += p * dealer_draws(comp, [10, c], hands)
            comp[c - 1] += 1
        return ev

    def play(comp: list[int], pending: list[list[int]], done: list[list[int]], n: int) -> Fraction:
        if not pending:
            return dealer(comp, done)
        cur, rest = pending[0], pending[1:]
        ev = Fraction(0)
        for c, p in draws(comp):
            comp[c - 1] -= 1
            if len(cur) == 1 and c == 8 and n < HANDS:
                ev += p * play(comp, [[8], [8], *rest], done, n + 1)
            else:
                h = [*cur, c]
                more = _total(h) < 17 and sum(h) <= 21
                ev += p * play(comp, [h, *rest] if more else rest, done + ([] if more else [h]), n)
            comp[c - 1] += 1
        return ev

    return play(comp, [[8], [8]], [], 2)


@pytest.mark.parametrize("takes", [0, 1, 2], ids=["original", "original_and_busted", "all"])
def test_no_hole_card_split_matches_a_brute_force_round(takes: int) -> None:
    hard = np.zeros((32, 11), np.uint8)
    hard[17:] = 1
    soft = hard.copy()
    pair = np.zeros((13, 11), np.uint8)
    pair[7] = 1
    a = native.analyze(
        AnalyzerRules(
            counts=COUNTS, peek=False, enhc_takes=takes, double_on=3, max_hands=HANDS,
            strategy="table", hard=hard, soft=soft, pair=pair,
        )
    )  # fmt: skip
    comp = list(COUNTS)
    comp[7] -= 2
    comp[9] -= 1
    want = float(_brute_split_8s_against_a_ten(comp, takes))
    i = hand_index(7, 7)
    assert a.action[i, 9] == SPLIT
    assert a.action_ev[i, 9, SPLIT] == pytest.approx(want, abs=1e-13)
    assert a.p_split_approx == 0.0


def test_the_nz_game_is_computed_without_approximation() -> None:
    for strategy in ("cdz", "table"):
        assert analyze_main(Rules.preset("nz"), strategy).p_split_approx == 0.0
