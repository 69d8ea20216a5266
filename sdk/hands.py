"""Blackjack values of single hands in Python (the engine's per-card arithmetic; batches go
through :func:`feltlab.native.evaluate_hands`).  Cards are codes (docs/design.md); values come from
:data:`feltlab.cards.RANK_VALUES`."""

from __future__ import annotations

from collections.abc import Sequence

from feltlab.cards import (
    card_value,  # re-exported: hands read values
    rank,
)

TEN_RANKS = frozenset({9, 10, 11, 12})
ACE = 0


def hand_total(cards: Sequence[int]) -> tuple[int, bool]:
    """``(total, soft)`` of a hand: the best total (one ace as 11 when that stays <= 21) and
    whether an ace counts 11 in it."""
    hard = sum(card_value(c) for c in cards)
    if any(rank(c) == ACE for c in cards) and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


def is_natural(cards: Sequence[int]) -> bool:
    """Exactly two cards, an ace and a ten-value card.  Whether it is a *blackjack* also
    depends on the hand not coming from a split (the engine decides)."""
    return len(cards) == 2 and hand_total(cards)[0] == 21
