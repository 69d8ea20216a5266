"""Replay of a recorded round: the cards and operations of a round's event log re-issued on a
new :class:`feltlab.engine.Table`, which must emit the identical events (rule 16.5
reconstruction, audits)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from feltlab.engine.round import (
    Phase,
    RoundResult,
)
from feltlab.engine.table import Table
from feltlab.errors import (
    ReplayError,
)
from feltlab.events import Event, read_jsonl
from feltlab.jackpot import ReplayPanel
from feltlab.rules import Rules
from feltlab.shoe import FixedCards
from feltlab.wagers import WagerType

_PRODUCED_BY_SETTLE = {"wager_settled", "jackpot_pressed", "round_settled", "device_fault"}


def replay_round(
    lines: str | Sequence[Event],
    rules: Rules,
    wagers: Iterable[WagerType],
    *,
    boxes: int = 7,
) -> tuple[RoundResult, list[Event]]:
    """Replay the round recorded in ``lines`` (JSON lines or events of one round) on a new
    table with the same ``rules``, ``wagers`` and ``boxes``: the cards come from the log, the
    operations are re-issued, the jackpot prizes repeated.  Returns the result and the new
    events; raises :class:`ReplayError` at the first event that differs from the log."""
    events = read_jsonl(lines) if isinstance(lines, str) else list(lines)
    if not events:
        raise ReplayError("the log is empty")
    rounds = {e.round for e in events}
    if len(rounds) != 1:
        raise ReplayError(f"replay_round takes one round's events, got rounds {sorted(rounds)}")
    cards: list[int] = []
    cut_after = None
    prizes: list[int | None] = []
    for e in events:
        if e.kind == "card_dealt" or e.kind == "card_misplaced" or e.kind == "card_removed":
            cards.append(int(e.data["card"]))
        elif e.kind == "cut_card_reached" and cut_after is None:
            cut_after = len(cards)
        elif e.kind == "jackpot_pressed":
            prizes.append(int(e.data["prize"]))
        elif e.kind == "device_fault" and e.data.get("during") == "press":
            prizes.append(None)
    source = FixedCards(cards, cut_after=cut_after, needs_shuffle=events[0].kind == "shoe_shuffled")
    table = Table(
        rules,
        source,
        wagers,
        boxes=boxes,
        panel=ReplayPanel(prizes),
        first_round=events[0].round,
    )
    pressers: dict[int, str] = {}
    for e in events:
        if e.kind == "jackpot_pressed":
            pressers[int(e.data["box"])] = str(e.data["by"])
    produced = table.log.events
    for i, e in enumerate(events):
        if i < len(produced):
            continue
        d = e.data
        k = e.kind
        if k in ("shoe_shuffled", "round_started") and table.phase is Phase.IDLE:
            table.begin_round()
        elif k == "wager_placed":
            table.place(int(d["box"]), str(d["player"]), str(d["wager"]), int(d["amount"]))
        elif k == "card_dealt" and table.phase in (Phase.BETTING, Phase.DEALING):
            table.deal_step()
        elif k == "card_misplaced":
            table.misdeal(d["to"])
        elif k == "round_reconstructed":
            table.reconstruct()
        elif k == "hand_voided":
            table.void_box(int(d["box"]))
        elif k == "round_voided":
            table.void_round()
        elif k == "cutting_card_missing":
            table.report_missing_cutting_card()
        elif k == "insurance_closed":
            table.close_insurance()
        elif k == "decision":
            table.decide(str(d["decision"]))
        elif k == "device_fault" and d.get("during") == "reported":
            table.report_device_fault(str(d["device"]), str(d["message"]))
        elif k == "card_removed":
            table.remove_exposed_card()
        elif table.phase is Phase.DEALER:
            table.play_dealer()
        elif table.phase is Phase.SETTLING and k in _PRODUCED_BY_SETTLE:
            table.settle(pressers)
        else:
            raise ReplayError(f"event {e.seq} ({k}) cannot be replayed in phase {table.phase}")
    new = table.log.events
    for old, rep in zip(events, new, strict=False):
        if (old.kind, old.data) != (rep.kind, _jsonable(rep.data)):
            raise ReplayError(
                f"replay diverged at event {old.seq}: logged {old.kind} {old.data}, "
                f"replayed {rep.kind} {rep.data}"
            )
    if len(new) != len(events) or table.result is None:
        raise ReplayError(f"replay produced {len(new)} events, the log has {len(events)}")
    return table.result, new


def _jsonable(data: dict[str, Any]) -> Any:

    return json.loads(json.dumps(data))
