"""Validating wrappers over hand evaluation (``native/src/hands.c``): hard and best totals,
softness, blackjack and bust of a batch of hands, from the core's one table of card values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import (
    NO_CARD,
    check,
)


@dataclass(frozen=True)
class HandValues:
    """Blackjack values of a batch of hands; every field has shape ``(n_hands,)``.

    ``hard_total`` (uint8): aces as 1.  ``total`` (uint8): the best total, one ace as 11 when
    that stays <= 21.  ``soft`` (bool): an ace counts 11 in ``total``.  ``blackjack`` (bool):
    exactly two cards, an ace and a ten-value card (whether a two-card 21 on a split hand
    counts as blackjack is a rules question, answered by the round engine).  ``bust`` (bool):
    hard total over 21.
    """

    hard_total: npt.NDArray[np.uint8]
    total: npt.NDArray[np.uint8]
    soft: npt.NDArray[np.bool_]
    blackjack: npt.NDArray[np.bool_]
    bust: npt.NDArray[np.bool_]


def evaluate_hands(cards: np.ndarray) -> HandValues:
    """Evaluate a batch of hands: ``cards`` is ``(n_hands, max_cards)`` uint8 codes, each row
    one hand, padded at its end with ``NO_CARD`` (255).

    Raises TypeError for another dtype, ValueError for a wrong shape, a non-contiguous array, a
    code above 51, or a card after the padding (naming the row and column).
    """
    if not isinstance(cards, np.ndarray):
        raise TypeError(f"cards must be a numpy array, got {type(cards).__name__}")
    if cards.dtype != np.uint8:
        raise TypeError(f"cards must have dtype uint8 (card codes), got {cards.dtype}")
    if cards.ndim != 2 or not 1 <= cards.shape[1] <= 255:
        raise ValueError(
            f"cards must be (n_hands, max_cards) with 1..255 columns, got {cards.shape}"
        )
    if not cards.flags.c_contiguous:
        raise ValueError("cards must be C-contiguous; pass np.ascontiguousarray(cards)")
    n, m = cards.shape
    hard = np.empty(n, dtype=np.uint8)
    total = np.empty(n, dtype=np.uint8)
    flags = np.empty(n, dtype=np.uint8)
    bad = ffi.new("size_t *")
    status = lib.fl_evaluate_hands(
        ffi.from_buffer("uint8_t[]", cards),
        n,
        m,
        ffi.from_buffer("uint8_t[]", hard),
        ffi.from_buffer("uint8_t[]", total),
        ffi.from_buffer("uint8_t[]", flags),
        bad,
    )
    if status == lib.FL_ERR_CARD:
        row, col = divmod(int(bad[0]), m)
        raise ValueError(
            f"cards[{row}, {col}] = {int(cards[row, col])} is not a card: codes are 0..51, "
            f"and {NO_CARD} (NO_CARD) may only pad the end of a hand"
        )
    check(status, "evaluate_hands")
    return HandValues(
        hard_total=hard,
        total=total,
        soft=(flags & lib.FL_HAND_SOFT).astype(bool),
        blackjack=(flags & lib.FL_HAND_BLACKJACK).astype(bool),
        bust=(flags & lib.FL_HAND_BUST).astype(bool),
    )
