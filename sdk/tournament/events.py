"""The tournament's event log: every decision of a tournament, on feltlab's one log type
(:class:`feltlab.events.Log`), each event naming the rule applied."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from feltlab.events import Log


@dataclass(frozen=True)
class TournamentEvent:
    """One tournament decision: ``seq``, ``kind``, where (``stage``, ``table``, ``session``
    label, ``round`` within the session, 0 outside a round), the ``rule`` applied, and
    JSON-serialisable ``data`` (chips in chip units, money in cents)."""

    seq: int
    kind: str
    stage: str
    table: int
    session: str
    round: int
    rule: str
    data: dict[str, Any]

    def to_json(self) -> str:
        """One line of JSON, keys sorted."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"))


class TournamentLog(Log[TournamentEvent]):
    """Every decision of a tournament, in order (a :class:`feltlab.events.Log`: ``of(kind)``,
    ``to_jsonl()``, ``subscribe(listener)``); with ``cards=True`` also every event of the
    round engine (kind ``"table_event"``), so each card and each hand decision is auditable."""

    def __init__(self, *, cards: bool = True) -> None:
        super().__init__()
        self.cards = cards

    def emit(
        self,
        kind: str,
        *,
        stage: str = "",
        table: int = 0,
        session: str = "",
        round: int = 0,
        rule: str = "",
        **data: Any,
    ) -> TournamentEvent:
        """Append an event and return it."""
        return self.append(
            TournamentEvent(len(self.events), kind, stage, table, session, round, rule, data)
        )
