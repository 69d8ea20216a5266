"""The round record: what a round ended with, as any wager's classifier may read it.

After a round, each box's final hands and the dealer's final hand, one structure from the
Python round engine (:class:`RoundRecord`, on :attr:`feltlab.RoundResult.record` and on the
final :attr:`feltlab.wagers.RoundView.record`) and from the C round simulator (a numpy record
array of :data:`RECORD_DTYPE`, one row a round, ``native/src/record.c``).  A play-decided
wager (``WagerType.round_fields``) classifies rows of :data:`RECORD_DTYPE`; the engine hands
it its box's row, the simulator a batch, so the table and the math settle alike.

Fields of :data:`RECORD_DTYPE` (all bytes; ``H`` = 4 hands, ``C`` = 24 cards):

==================== ========= =====================================================
field                shape     meaning
==================== ========= =====================================================
``n_hands``          ()        hands on the box (1, or 2..4 after splits)
``hand_n_cards``     (H,)      cards in each hand (0 past ``n_hands``)
``hand_total``       (H,)      best total (one ace as 11 when that stays <= 21)
``hand_bust``        (H,)      total above 21
``hand_blackjack``   (H,)      a two-card 21 not from a split
``hand_doubled``     (H,)      the hand was doubled
``hand_surrendered`` (H,)      the hand was surrendered (``Rules.surrender``)
``hand_cards``       (H, C)    card codes in deal order, ``NO_CARD`` (255) padded
``dealer_n_cards``   ()        cards in the dealer's final hand
``dealer_total``     ()        its best total (22..26 when bust)
``dealer_bust``      ()        its total is above 21
``dealer_blackjack`` ()        a two-card 21
``dealer_up``        ()        the dealer's first (face-up) card, a code
``dealer_suited``    ()        every dealer card of one suit
``dealer_cards``     (C,)      card codes in deal order, ``NO_CARD`` padded
==================== ========= =====================================================

The dealer's hand is final as the rules leave it: under no-hole-card play with every hand
busted the dealer may hold one card, unless a wager in play requires the dealer to play out
(``WagerType.dealer_plays_out``, Buster Blackjack's rule), when the dealer always draws to
17.  A void round (rule 16.5) has no record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feltlab.cards import NO_CARD
from feltlab.hands import hand_total
from feltlab.native import RECORD_DTYPE

__all__ = [
    "EXACT_FIELDS",
    "RECORD_FIELDS",
    "BoxRecord",
    "DealerRecord",
    "HandRecord",
    "RoundRecord",
    "records_array",
]

MAX_HANDS = 4
MAX_CARDS = 24
RECORD_FIELDS: tuple[str, ...] = tuple(RECORD_DTYPE.names or ())
"""The field names of :data:`RECORD_DTYPE`, the values of ``WagerType.round_fields``."""

RECORD_BATCH = 200_000
"""Rounds per call of the C simulator, on every path (since simulator version 3): round
records, when kept, are 151 bytes a round; each call starts from freshly shuffled shoes."""

EXACT_FIELDS = frozenset(
    {
        "dealer_n_cards",
        "dealer_total",
        "dealer_bust",
        "dealer_blackjack",
        "dealer_up",
        "hand_blackjack",
    }
)
"""The rank-level facts the exact analysis (:mod:`feltlab.math.play_decided`) gives: the dealer's
number of cards, total, bust, blackjack and up card (its rank; a ten-valued card as a ten),
and whether the box's first two cards are a blackjack (``hand_blackjack[0]``).  A wager that
reads any other field (suits, the box's final totals) gets a simulated PAR sheet."""


@dataclass(frozen=True)
class HandRecord:
    """One final hand of a box: ``cards`` (codes, deal order), ``total`` (best), ``bust``,
    ``blackjack`` (two-card 21 not from a split), ``doubled``, ``surrendered``,
    ``from_split``."""

    cards: tuple[int, ...]
    total: int
    bust: bool
    blackjack: bool
    doubled: bool
    surrendered: bool
    from_split: bool

    @classmethod
    def of(
        cls, cards: Sequence[int], *, doubled: bool, from_split: bool, surrendered: bool
    ) -> HandRecord:
        """The record of a hand of ``cards``."""
        total = hand_total(cards)[0] if cards else 0
        natural = len(cards) == 2 and total == 21
        return cls(
            tuple(cards),
            total,
            total > 21,
            natural and not from_split,
            doubled,
            surrendered,
            from_split,
        )


@dataclass(frozen=True)
class DealerRecord:
    """The dealer's final hand: ``cards``, ``total`` (best), ``bust``, ``blackjack``, ``up``
    (the first card, :data:`NO_CARD` if none), ``suited`` (every card of one suit)."""

    cards: tuple[int, ...]
    total: int
    bust: bool
    blackjack: bool
    up: int
    suited: bool

    @property
    def n_cards(self) -> int:
        """Cards in the dealer's final hand."""
        return len(self.cards)

    @classmethod
    def of(cls, cards: Sequence[int]) -> DealerRecord:
        """The record of a dealer's hand of ``cards``."""
        total = hand_total(cards)[0] if cards else 0
        suited = bool(cards) and len({c & 3 for c in cards}) == 1
        up = cards[0] if cards else NO_CARD
        return cls(tuple(cards), total, total > 21, len(cards) == 2 and total == 21, up, suited)


@dataclass(frozen=True)
class BoxRecord:
    """One box's final ``hands`` (in play order) and the ``dealer``'s final hand."""

    box: int
    hands: tuple[HandRecord, ...]
    dealer: DealerRecord

    def row(self) -> npt.NDArray[np.void]:
        """This record as a ``(1,)`` array of :data:`RECORD_DTYPE` (what a classifier reads)."""
        return records_array([self])


@dataclass(frozen=True)
class RoundRecord:
    """A finished round: its number, each live box's :class:`BoxRecord` and the dealer's
    final hand."""

    round: int
    boxes: Mapping[int, BoxRecord]
    dealer: DealerRecord

    def array(self) -> npt.NDArray[np.void]:
        """``(n_boxes,)`` :data:`RECORD_DTYPE`, one row a live box, in box order."""
        return records_array([self.boxes[b] for b in sorted(self.boxes)])


def records_array(boxes: Sequence[BoxRecord]) -> npt.NDArray[np.void]:
    """``(len(boxes),)`` :data:`RECORD_DTYPE` rows, the layout of the C simulator's records.
    Hands beyond 4 or cards beyond 24 are cut off (the engine allows at most 4 hands; no hand
    of a 1..8-deck shoe reaches 24 cards)."""
    out = np.zeros(len(boxes), dtype=RECORD_DTYPE)
    out["hand_cards"] = NO_CARD
    out["dealer_cards"] = NO_CARD
    for i, b in enumerate(boxes):
        r = out[i]
        hands = b.hands[:MAX_HANDS]
        r["n_hands"] = len(hands)
        for j, h in enumerate(hands):
            n = min(len(h.cards), MAX_CARDS)
            r["hand_n_cards"][j] = n
            r["hand_total"][j] = h.total
            r["hand_bust"][j] = h.bust
            r["hand_blackjack"][j] = h.blackjack
            r["hand_doubled"][j] = h.doubled
            r["hand_surrendered"][j] = h.surrendered
            r["hand_cards"][j, :n] = h.cards[:n]
        d = b.dealer
        n = min(len(d.cards), MAX_CARDS)
        r["dealer_n_cards"] = n
        r["dealer_total"] = d.total
        r["dealer_bust"] = d.bust
        r["dealer_blackjack"] = d.blackjack
        r["dealer_up"] = d.up
        r["dealer_suited"] = d.suited
        r["dealer_cards"][:n] = d.cards[:n]
    return out
