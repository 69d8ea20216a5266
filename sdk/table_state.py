"""What the operations of a :class:`feltlab.engine.Table` kept in other modules
(:mod:`feltlab.settling`, :mod:`feltlab.irregularities`) see of the table: a protocol of its
state and of the primitives they call, so that each module type-checks on its own (their
methods take ``self: TableState``; :class:`~feltlab.engine.Table` satisfies it)."""

from __future__ import annotations

from typing import Any, Protocol

from feltlab.events import Event
from feltlab.jackpot import JackpotPanel
from feltlab.record import RoundRecord
from feltlab.round import Phase, RoundResult, _Box
from feltlab.shoe import CardSource
from feltlab.wagers import Bet, RoundView, Settlement, WagerType


class TableState(Protocol):
    """The state and primitives of a table that its mixins use (see :class:`Table`)."""

    source: CardSource
    panel: JackpotPanel | None
    wagers: dict[str, WagerType]
    round_no: int
    phase: Phase
    withdrawn: set[str]
    boxes: list[_Box]
    dealer: list[int]
    dealer_done: bool
    settled: dict[tuple[int, str, str], Settlement]
    order: list[tuple[Bet, Settlement]]
    _deal_queue: list[int | None]
    _misplaced: tuple[int, int | None] | None
    _current: tuple[int, int] | None
    _round_cards: list[int]
    _cut_announced: bool
    _device_failed: bool
    _result: RoundResult | None

    @property
    def live_boxes(self) -> list[_Box]: ...

    def _emit(self, kind: str, **data: Any) -> Event: ...

    def _need(self, *phases: Phase, op: str) -> None: ...

    def _box(self, box: int) -> _Box: ...

    def _draw(self) -> int: ...

    def _check_cut(self) -> None: ...

    def view(self, box: int, *, final: bool = False) -> RoundView: ...

    def deal_step(self) -> None: ...

    def _initial_deal_done(self) -> None: ...

    def _advance(self) -> None: ...

    def _record(self, bet: Bet, s: Settlement) -> None: ...

    def _settle_ready(self, *, final: bool = False) -> list[tuple[Bet, Settlement]]: ...

    def _finish(self, *, void: bool) -> RoundResult: ...

    def _plays_out(self) -> bool: ...

    def _round_record(self) -> RoundRecord: ...

    def _fault(self, device: str, message: str, *, during: str) -> None: ...
