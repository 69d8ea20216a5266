"""Hand evaluation over batches, checked exhaustively against a direct count."""

from collections.abc import Sequence
from itertools import product

import numpy as np
import pytest

from feltlab import native
from feltlab.cards import card_code

NO = native.NO_CARD


def _reference(ranks: Sequence[int]) -> tuple[int, int, bool, bool, bool]:
    values = [min(r + 1, 10) for r in ranks]
    hard = sum(values)
    soft = 1 in values and hard + 10 <= 21
    total = hard + 10 if soft else hard
    blackjack = len(ranks) == 2 and sorted(values) == [1, 10]
    return hard, total, soft, blackjack, hard > 21


def test_every_two_and_three_card_rank_combination() -> None:
    hands, expected = [], []
    for k in (2, 3):
        for ranks in product(range(13), repeat=k):
            suits = [(i * 3 + r) % 4 for i, r in enumerate(ranks)]  # suits do not matter
            row = [r * 4 + s for r, s in zip(ranks, suits, strict=True)] + [NO] * (3 - k)
            hands.append(row)
            expected.append(_reference(ranks))
    v = native.evaluate_hands(np.array(hands, dtype=np.uint8))
    got = list(
        zip(
            v.hard_total.tolist(),
            v.total.tolist(),
            v.soft.tolist(),
            v.blackjack.tolist(),
            v.bust.tolist(),
            strict=True,
        )
    )
    assert got == expected
    assert len(got) == 13**2 + 13**3


def test_hand_checked_examples() -> None:
    rows: list[list[str | None]] = [
        ["AS", "KH", None, None],  # blackjack, soft 21
        ["10C", "6D", "5H", None],  # three-card 21, not blackjack
        ["AS", "AH", "9C", None],  # soft 21
        ["KS", "QH", "5D", None],  # 25, bust
        ["AC", "6D", None, None],  # soft 17
        ["AC", "6D", "10H", "5S"],  # hard 22, bust
        ["JD", "QC", None, None],  # hard 20
    ]
    cards = np.array([[NO if c is None else card_code(c) for c in r] for r in rows], np.uint8)
    v = native.evaluate_hands(cards)
    assert v.total.tolist() == [21, 21, 21, 25, 17, 22, 20]
    assert v.hard_total.tolist() == [11, 21, 11, 25, 7, 22, 20]
    assert v.soft.tolist() == [True, False, True, False, True, False, False]
    assert v.blackjack.tolist() == [True, False, False, False, False, False, False]
    assert v.bust.tolist() == [False, False, False, True, False, True, False]


def test_bad_card_names_row_and_column() -> None:
    cards = np.array([[0, 4], [52, 1]], dtype=np.uint8)
    with pytest.raises(ValueError, match=r"cards\[1, 0\] = 52 is not a card"):
        native.evaluate_hands(cards)
    gap = np.array([[0, NO, 4]], dtype=np.uint8)
    with pytest.raises(ValueError, match=r"cards\[0, 2\]"):
        native.evaluate_hands(gap)
