"""Helpers for the Division XI tests: definitions from a base dict, stacked shoes of fixed
cards, scripted betting strategies, and hand-checked round deals."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from feltlab.cards import card_code
from feltlab.tournament import (
    BettingStrategy,
    BettingView,
    RoundRecord,
    SessionResult,
    SessionTable,
    TournamentDefinition,
    WagerIntent,
)

BASE: dict[str, Any] = {
    "tournament": {"name": "test", "entry_fee": 5000, "rules": "nz"},
    "entry": {"min_players": 4, "max_players": 7},
    "chips": {"per_session": 100, "gratuitous": True},
    "wagers": {"minimum": 10, "maximum": 50, "increment": 5},
    "session": {"length": "rounds", "rounds": 3},
    "playoff": {"length": "rounds", "rounds": 1, "chips": 100},
    "stages": [{"name": "final"}],
    "prizes": {"shares": [6000, 3000, 1000]},
}


def base(**sections: Any) -> dict[str, Any]:
    """BASE with ``sections`` merged in (section -> fields); a field set to None is deleted."""
    d = copy.deepcopy(BASE)
    for name, fields in sections.items():
        target = d.setdefault(name, {})
        if isinstance(fields, list):
            d[name] = fields
            continue
        for k, v in fields.items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = v
    return d


def definition(**sections: Any) -> TournamentDefinition:
    return TournamentDefinition.from_dict(base(**sections))


def cards(text: str) -> list[int]:
    return [card_code(t) for t in text.split()]


def win(n: int) -> list[int]:
    """A round where each of ``n`` boxes holds K-Q (20, stands) and the dealer K then 8 (18):
    every box wins even money."""
    return cards(" ".join(["KS"] * n + ["KH"] + ["QS"] * n + ["8D"]))


def lose(n: int) -> list[int]:
    """Each box K-7 (hard 17 stands against a 10), the dealer K then Q (20): every box loses."""
    return cards(" ".join(["KS"] * n + ["KH"] + ["7S"] * n + ["QD"]))


def push(n: int) -> list[int]:
    """Each box K-Q (20) against the dealer's K-Q (20): every wager stands off."""
    return cards(" ".join(["KS"] * n + ["KH"] + ["QS"] * n + ["QD"]))


class Stacked:
    """A card source of fixed shoes: ``shoes`` is a list of ``(cards, cut_after)``; each
    shuffle moves to the next shoe (then repeats the last)."""

    def __init__(self, shoes: Sequence[tuple[Sequence[int], int | None]]) -> None:
        self.shoes = [(list(c), cut) for c, cut in shoes]
        self.index = -1
        self.pos = 0
        self.shuffles = 0

    @property
    def needs_shuffle(self) -> bool:
        return self.index < 0

    @property
    def cut_card_reached(self) -> bool:
        cut = self.shoes[self.index][1]
        return cut is not None and self.pos >= cut

    def shuffle(self) -> dict[str, Any]:
        self.index = min(self.index + 1, len(self.shoes) - 1)
        self.pos = 0
        self.shuffles += 1
        return {"fixed": True}

    def draw(self) -> int:
        c = self.shoes[self.index][0][self.pos]
        self.pos += 1
        return c

    def end_round(self, cards: Sequence[int]) -> None:
        pass

    def report_missing_cutting_card(self) -> None:
        pass


def one_shoe(*rounds: list[int], cut_after: int | None = None) -> Stacked:
    seq: list[int] = []
    for r in rounds:
        seq.extend(r)
    return Stacked([(seq, cut_after)])


class Script(BettingStrategy):
    """Wagers from a list (ints, WagerIntents or None), then repeats the last entry."""

    name = "script"

    def __init__(self, bets: Sequence[int | WagerIntent | None] = (10,)) -> None:
        super().__init__(None)  # type: ignore[arg-type]
        self.bets = list(bets)
        self.views: list[BettingView] = []

    def wager(self, view: BettingView) -> int | WagerIntent | None:
        self.views.append(view)
        if len(self.bets) > 1:
            return self.bets.pop(0)
        return self.bets[0]


def session(
    d: TournamentDefinition,
    source: Any,
    bets: Sequence[Sequence[int | WagerIntent | None]] | None = None,
    *,
    n: int = 4,
    chips: int | Sequence[int] | None = None,
    **kw: Any,
) -> SessionTable:
    """A session of ``n`` players P1..Pn in boxes 0..n-1 with scripted wagers."""
    bets = bets or [[10]] * n
    seats = [(f"P{i + 1}", i, Script(bets[i])) for i in range(n)]
    if chips is None:
        chips = d.chips_per_session
    each = [chips] * n if isinstance(chips, int) else list(chips)
    start = {f"P{i + 1}": each[i] for i in range(n)}
    return SessionTable(d, seats, source, start, **kw)


def played(st: SessionTable) -> RoundRecord:
    """Play one round of ``st``; fails the test if the session had already ended."""
    rec = st.play_round()
    assert rec is not None, "the session ended before this round"
    return rec


def ended(st: SessionTable) -> SessionResult:
    """The result of ``st``; fails the test if the session has not ended."""
    assert st.result is not None, "the session has not ended"
    return st.result
