"""Results of a session and the standings at its end (Division XI rules 6.1-6.7): chip
groups, the ties a result is required for, and their play-offs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from feltlab.errors import (
    TournamentError,
)
from feltlab.tournament.definition import SessionLength, TournamentDefinition

MAX_PLAYOFF_DEPTH = 25
"""Play-offs nested deeper than this (ties after ties) raise :class:`TournamentError`."""


# ===================================================================== results
@dataclass
class RoundRecord:
    """One round of a session: its number, ``first_card_at``/``ended_at`` on the session clock
    (seconds), the chips wagered and won by each player, and the players eliminated."""

    number: int
    first_card_at: float
    ended_at: float
    wagers: dict[str, int]
    net: dict[str, int]
    cut_card: bool
    shoe_number: int


class EndReason(StrEnum):
    """Why a session ended (definition of "Session"; rule 4.10)."""

    ONE_LEFT = "(a) one player left"
    TIME = "(b) time"
    SHOES = "(c) shoes"
    ROUNDS = "rounds"
    RULE_4_10 = "4.10 play-off"
    NO_PLAYERS = "no player left"


@dataclass
class SessionResult:
    """The end of a session at a table: the chips each player holds (0 for those eliminated),
    the players ``eliminated`` (round) and ``disqualified`` (reason), why and when it ended,
    the rounds played, and ``playoff_410`` (the players who go to a rule 4.10 play-off)."""

    label: str
    chips: dict[str, int]
    eliminated: dict[str, int]
    disqualified: dict[str, str]
    reason: EndReason
    rounds: list[RoundRecord]
    shoes_completed: int
    clock: float
    length: SessionLength
    playoff_410: list[str] = field(default_factory=list)


# ===================================================================== standings (6.2-6.7)
def chip_groups(chips: Mapping[str, int], box_order: Sequence[str]) -> list[list[str]]:
    """Players grouped by equal chips, most chips first; within a group in ``box_order``."""
    values = sorted(set(chips.values()), reverse=True)
    return [[p for p in box_order if p in chips and chips[p] == v] for v in values]


PlayContest = Callable[[list[str], dict[str, int], str, int], SessionResult]
"""``(players, chips at commencement, label, depth) -> SessionResult``: plays a play-off."""


@dataclass
class Standing:
    """The outcome of a session at a table after its play-offs: ``groups`` of players in
    order (a group of several is a tie no result was required for), the chips each held at the
    end of the session, and the play-offs held (labels)."""

    groups: list[list[str]]
    chips: dict[str, int]
    disqualified: dict[str, str]
    playoffs: list[str]

    @property
    def order(self) -> list[str]:
        """Players in order, ties in box order."""
        return [p for g in self.groups for p in g]


def contest_groups(
    result: SessionResult,
    box_order: Sequence[str],
    play: PlayContest,
    definition: TournamentDefinition,
    depth: int,
    playoffs: list[str],
) -> list[list[str]]:
    """The groups of a finished session, following a rule 4.10 play-off when one is due: its
    players rank above everyone else at the table (they are the players remaining), in the
    order of the play-off; the others by chips."""
    if not result.playoff_410:
        return chip_groups(result.chips, box_order)
    if depth >= MAX_PLAYOFF_DEPTH:
        raise TournamentError(f"more than {MAX_PLAYOFF_DEPTH} nested play-offs: stop the tie")
    extra = min(definition.playoff_chips, definition.chips_per_session)
    start = {p: result.chips[p] + extra for p in result.playoff_410}
    label = f"{result.label}/4.10"
    playoffs.append(label)
    sub = play(list(result.playoff_410), start, label, depth + 1)
    top = contest_groups(sub, box_order, play, definition, depth + 1, playoffs)
    rest = {p: c for p, c in result.chips.items() if p not in result.playoff_410}
    return top + chip_groups(rest, box_order)


def resolve(
    groups: list[list[str]],
    required: int,
    *,
    positions: bool,
    play: PlayContest,
    definition: TournamentDefinition,
    box_order: Sequence[str],
    label: str,
    depth: int = 0,
    playoffs: list[str] | None = None,
) -> list[list[str]]:
    """Break the ties a result is required for, by play-offs (rules 6.2, 6.6, 6.7).

    ``positions=True`` (the final): each of places ``1..required`` (winner, runner-up) needs
    a single player; a tie covering one of them goes to a play-off, whose own ties are resolved
    the same way for the places still open, so that the later placings follow 6.7's order (the
    runner-up play-off first, then the winner's play-off, then the final session).
    ``positions=False`` (advancement): only the cut after place ``required`` matters; a tie
    across it goes to a play-off.  Ties no result is required for stay together (6.8).
    """
    playoffs = playoffs if playoffs is not None else []
    out: list[list[str]] = []
    pos = 1
    for g in groups:
        lo, hi = pos, pos + len(g) - 1
        # the final: places 1..required each need one player; advancement: only the cut
        need = len(g) > 1 and (lo <= required if positions else lo <= required < hi)
        if need:
            if depth >= MAX_PLAYOFF_DEPTH:
                raise TournamentError(
                    f"more than {MAX_PLAYOFF_DEPTH} nested play-offs between {g}: stop the tie"
                )
            name = f"{label}/play-off {len(playoffs) + 1}"
            playoffs.append(name)
            start = dict.fromkeys(g, definition.playoff_chips)
            sub = play(list(g), start, name, depth + 1)
            sub_groups = contest_groups(sub, box_order, play, definition, depth + 1, playoffs)
            out.extend(
                resolve(
                    sub_groups,
                    required - lo + 1,
                    positions=positions,
                    play=play,
                    definition=definition,
                    box_order=box_order,
                    label=label,
                    depth=depth + 1,
                    playoffs=playoffs,
                )
            )
        else:
            out.append(list(g))
        pos = hi + 1
    return out
