"""The allocation of the prize list to the final placings (Division XI rules 6.5-6.8):
tied players share the prizes of the places they tie for, to the cent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from feltlab.errors import (
    TournamentError,
)


# ===================================================================== prizes (6.5-6.8)
@dataclass(frozen=True)
class Award:
    """A prize paid: ``player``, the ``place`` reached, ``amount`` in cents, and for a tie
    (rule 6.8) the ``places`` whose prizes were combined and the players ``shared_with``."""

    place: int
    player: str
    amount: int
    places: tuple[int, ...] = ()
    shared_with: tuple[str, ...] = ()


def allocate_prizes(amounts: Sequence[int], placings: Sequence[Sequence[str]]) -> list[Award]:
    """Pay the prize list ``amounts`` (cents, place 1 first) to ``placings``: groups of
    players in order, each group tied at the next place (a group of one is a single place).

    Rule 6.8: ``k`` players tied for a place share equally that prize combined with the
    ``k - 1`` subsequent prizes (if any); the rule does not apply to the winner or the
    runner-up, who must each be alone in their group (else :class:`TournamentError`: hold the
    play-off of rule 6.6 first).  Cents that do not divide equally go one each to the tied
    players in the order given (their box order, an assumption).  Prizes for places no player
    reached go to the winner (an assumption: the pool is always paid out in full).  Returns
    one :class:`Award` per player placed, including zero amounts after the prize list.
    """
    awards: list[Award] = []
    place = 1
    seen: set[str] = set()
    for group in placings:
        k = len(group)
        if k == 0:
            continue
        if k > 1 and place <= 2:
            raise TournamentError(
                f"{list(group)} are tied for place {place}: rule 6.8 does not apply to the "
                "winner or the runner-up; hold the play-off of rule 6.6 first"
            )
        dup = seen.intersection(group)
        if dup:
            raise TournamentError(f"{sorted(dup)} placed twice: each player is placed once")
        seen.update(group)
        places = tuple(range(place, place + k))
        pot = sum(amounts[p - 1] for p in places if p - 1 < len(amounts))
        share, extra = divmod(pot, k)
        for i, player in enumerate(group):
            awards.append(
                Award(
                    place,
                    player,
                    share + (1 if i < extra else 0),
                    places if k > 1 else (),
                    tuple(p for p in group if p != player) if k > 1 else (),
                )
            )
        place += k
    unclaimed = sum(amounts[place - 1 :])
    if unclaimed and awards:
        first = awards[0]
        awards[0] = Award(first.place, first.player, first.amount + unclaimed)
    return awards
