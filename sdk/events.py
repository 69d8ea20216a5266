"""Table events and the JSON-lines event log.

Every step of a round is an :class:`Event`: a sequence number, a kind (one of
:data:`EVENT_KINDS`) and JSON-serialisable data (cards as codes, money as integer cents).  One
event is one line of JSON, so a log is auditable with standard tools, and
:func:`feltlab.engine.replay.replay_round` replays a round from its lines to the identical outcome.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from feltlab.errors import ReplayError

EVENT_KINDS: dict[str, str] = {
    "shoe_shuffled": "the cards were shuffled (new shoe, rule 5.7(b) cutting card, rule 16.10)",
    "round_started": "a round opened for betting",
    "wager_placed": "a wager was placed on a box (rule 5.1, 5.6, 15B.2-15B.4)",
    "card_dealt": "a card was dealt to a box's hand or to the dealer",
    "cut_card_reached": "the cutting card came out: shuffle after this round (rule 5.7(b))",
    "cutting_card_missing": "the cutting card was found not inserted (rule 16.10)",
    "insurance_offered": "the dealer's first card is an ace",
    "insurance_closed": "no more insurance wagers; under peek the dealer checks the hole card",
    "decision": "the box's controller decided: hit, stand, double or split",
    "hand_done": "a hand is complete (stood, busted, 21, doubled, split aces, blackjack)",
    "dealer_done": "the dealer's hand is complete",
    "wager_settled": "a wager was decided: outcome and net result in cents",
    "jackpot_pressed": "the jackpot prize button was pressed (rules 15A.7, 15A.9)",
    "device_fault": "a table device failed (rule 16.12 for the jackpot panel)",
    "card_misplaced": "a card was dealt in error to the wrong place (rule 16.5)",
    "round_reconstructed": "a misplaced card was moved to where it should have gone (16.5)",
    "hand_voided": "a box's hands were voided, its wagers returned (rule 16.5)",
    "round_voided": "the whole round was voided, every wager returned (rule 16.5)",
    "card_removed": "an exposed card was removed to the discard rack (rule 16.3)",
    "round_settled": "the round is over: every wager decided",
}
"""Every event kind the engine emits, with what it means."""


@dataclass(frozen=True)
class Event:
    """One step of a round: ``seq`` (0, 1, ... within the table), ``round`` (1-based round
    number, 0 before the first round), ``kind`` (a key of :data:`EVENT_KINDS`) and ``data``
    (JSON-serialisable; cards are codes 0..51, money integer cents)."""

    seq: int
    round: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """One line of JSON (keys sorted, no spaces), without a newline."""
        return json.dumps(
            {"seq": self.seq, "round": self.round, "kind": self.kind, "data": self.data},
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, line: str) -> Event:
        """Parse one line; raises :class:`ReplayError` naming what is wrong."""
        try:
            obj = json.loads(line)
            event = cls(int(obj["seq"]), int(obj["round"]), str(obj["kind"]), dict(obj["data"]))
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            raise ReplayError(f"not a feltlab event line: {line[:80]!r} ({exc})") from exc
        if event.kind not in EVENT_KINDS:
            raise ReplayError(f"unknown event kind {event.kind!r} in {line[:80]!r}")
        return event


class _Loggable(Protocol):
    @property
    def kind(self) -> str: ...

    def to_json(self) -> str: ...


E = TypeVar("E", bound=_Loggable)


class Log(Generic[E]):
    """An ordered log of events (anything with a ``kind`` and a one-line ``to_json()``), with
    listeners called on every new event: the one log type of feltlab.  :class:`EventLog` holds
    a table's events (:class:`Event`); the tournament's log
    (:class:`feltlab.tournament.TournamentLog`) holds its decisions."""

    def __init__(self) -> None:
        self.events: list[E] = []
        self._listeners: list[Callable[[E], None]] = []

    def subscribe(self, listener: Callable[[E], None]) -> None:
        """Call ``listener(event)`` for every event from now on."""
        self._listeners.append(listener)

    def append(self, event: E) -> E:
        """Append ``event``, notify the listeners and return it."""
        self.events.append(event)
        for listener in self._listeners:
            listener(event)
        return event

    def of(self, kind: str) -> list[E]:
        """The events of one kind, in order."""
        return [e for e in self.events if e.kind == kind]

    def to_jsonl(self, events: Iterable[E] | None = None) -> str:
        """The events (default: all) as JSON lines, each ending in a newline."""
        return "".join(e.to_json() + "\n" for e in (self.events if events is None else events))

    def __iter__(self) -> Iterator[E]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)


class EventLog(Log[Event]):
    """The ordered events of a table, with listeners called on every new event."""

    def emit(self, round_no: int, kind: str, **data: Any) -> Event:
        """Append an event of ``kind`` (a key of :data:`EVENT_KINDS`) and notify listeners."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; add it to EVENT_KINDS")
        return self.append(Event(len(self.events), round_no, kind, data))

    def round_events(self, round_no: int) -> list[Event]:
        """The events of one round."""
        return [e for e in self.events if e.round == round_no]


def read_jsonl(text: str) -> list[Event]:
    """Parse JSON lines (blank lines ignored) into events."""
    return [Event.from_json(line) for line in text.splitlines() if line.strip()]
