"""One card value: the Python definition (feltlab.cards.RANK_VALUES) and the C core's table
(fl_card_value, read through hand evaluation and the simulator's strategy) agree on every code."""

from __future__ import annotations

import numpy as np

from feltlab import native
from feltlab.cards import NO_CARD, RANK_VALUES, RANKS, bj_value, card_code, card_value
from feltlab.cards import card_value as hands_card_value


def test_rank_values_are_the_rules_face_values() -> None:
    # ace 1 (11 when soft), 2..10 their face, J/Q/K 10 (Division 2 definitions, rule 5.4)
    assert dict(zip(RANKS, RANK_VALUES, strict=True)) == {
        "A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "10": 10,
        "J": 10, "Q": 10, "K": 10,
    }  # fmt: skip


def test_scalar_vector_and_c_values_agree_on_every_code_and_id() -> None:
    codes = np.arange(52, dtype=np.uint8)
    expected = [RANK_VALUES[c >> 2] for c in range(52)]
    assert [card_value(c) for c in range(52)] == expected
    assert [hands_card_value(c) for c in range(52)] == expected
    assert bj_value(codes).tolist() == expected
    ids = np.arange(8 * 52, dtype=np.uint16)  # deck * 52 + code in an 8-deck shoe
    assert bj_value(ids).tolist() == expected * 8
    # the C core: one-card hands give the card's hard value
    one = np.full((52, 2), native.NO_CARD, dtype=np.uint8)
    one[:, 0] = codes
    assert native.evaluate_hands(one).hard_total.tolist() == expected


def test_two_card_values_in_c_match_python_sums() -> None:
    a, k, five = card_code("AS"), card_code("KD"), card_code("5H")
    hands = np.array([[a, k], [k, five], [a, five]], dtype=np.uint8)
    v = native.evaluate_hands(hands)
    assert v.hard_total.tolist() == [card_value(a) + card_value(k), 15, 6]
    assert v.total.tolist() == [21, 15, 16]  # the ace counts 11 when the hand stays <= 21


def test_no_card_is_the_c_cores() -> None:
    assert NO_CARD == native.NO_CARD == 255
