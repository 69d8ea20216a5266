"""The card model of docs/design.md, on the Python side.

A card *code* is ``rank * 4 + suit`` (uint8, 0..51): rank index 0..12 = A, 2..10, J, Q, K (the
rules' "face value": J, Q and K are different face values); suit index 0..3 = clubs, diamonds,
hearts, spades (diamonds and hearts are red).  A physical card in a multi-deck shoe has the id
``deck * 52 + code`` (uint16).

:data:`RANK_VALUES` is the one definition of a card's blackjack value in Python
(:func:`card_value` for one card, :func:`bj_value` for arrays); the C core's one table is
``fl_card_value`` in native/src/internal.h.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
RANK_LETTERS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K")
"""One letter a rank (ten as ``T``), by rank index: the charts', the counts' and the effects of
removal's labels."""
SUITS = ("C", "D", "H", "S")
SUIT_SYMBOLS = ("♣", "♦", "♥", "♠")
RED_SUITS = frozenset({1, 2})
NO_CARD = 255
"""The code of a role never dealt (a classifier's padding, a round record's unused slot): the
C core's ``FL_NO_CARD`` (``feltlab.native.NO_CARD``; tests/sdk/test_cards.py checks they
agree)."""
RANK_VALUES: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10)
"""Blackjack value by rank index: ace 1 (a hand counts one ace as 11 when soft), 2..10 their
face, J/Q/K 10 (rule 5.4; Division 2 definitions)."""


@functools.cache
def _rank_values() -> npt.NDArray[np.uint8]:
    """:data:`RANK_VALUES` as a uint8 array, made on first use (numpy is not loaded by
    importing this module: ``feltlab --help`` imports it through every wager plugin)."""
    import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

    return np.array(RANK_VALUES, dtype=np.uint8)


def rank(code: int) -> int:
    """Rank index 0..12 (A, 2..10, J, Q, K) of a card code or id."""
    return (int(code) % 52) >> 2


def suit(code: int) -> int:
    """Suit index 0..3 (clubs, diamonds, hearts, spades) of a card code or id."""
    return int(code) & 3


def card_code(text: str) -> int:
    """The code of a card written like ``"AS"``, ``"10H"``, ``"TD"`` or ``"Q♣"``.

    Raises ValueError naming the text and the accepted forms.
    """
    t = text.strip().upper()
    symbols = {s: i for i, s in enumerate(SUIT_SYMBOLS)}
    if len(t) < 2:
        raise ValueError(f"{text!r} is not a card: write rank then suit, e.g. 'AS', '10H', 'Q♣'")
    r, s = t[:-1], t[-1]
    r = "10" if r == "T" else r
    if r not in RANKS or (s not in SUITS and s not in symbols):
        raise ValueError(f"{text!r} is not a card: write rank then suit, e.g. 'AS', '10H', 'Q♣'")
    return RANKS.index(r) * 4 + (SUITS.index(s) if s in SUITS else symbols[s])


def card_str(code: int, *, symbols: bool = True) -> str:
    """``"A♠"`` (or ``"AS"`` with ``symbols=False``) for a card code or id."""
    c = int(code) % 52
    return RANKS[c >> 2] + (SUIT_SYMBOLS if symbols else SUITS)[c & 3]


def card_value(code: int) -> int:
    """Blackjack value of one card code or id (:data:`RANK_VALUES`): ace 1, J/Q/K 10."""
    return RANK_VALUES[rank(code)]


def bj_value(codes: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Blackjack value of card codes or ids (:data:`RANK_VALUES`: ace 1, J/Q/K 10), same
    shape, uint8."""
    import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

    ranks = (np.asarray(codes, dtype=np.int64) % 52) >> 2
    values: npt.NDArray[np.uint8] = _rank_values()[ranks]
    return values
