"""The jackpot prize panel's collection loop: prize draws, a forged result the client must
refuse, then the rule 16.12 Madness 21 rounds and a button failure."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any

from feltlab.cards import card_code
from feltlab.engine import StandPolicy, Table, play_round
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rig.certify.collect import CampaignOptions, Collected, sync_capture
from feltlab.rig.certify.faults import (
    FaultRunner,
)
from feltlab.rig.certify.profile import Progress
from feltlab.rig.clients import CanJackpotPanel
from feltlab.rig.errors import (
    RigError,
    SecurityFault,
)
from feltlab.rules import Rules
from feltlab.shoe import FixedCards

log = logging.getLogger(__name__)


MAX_REFUSED_IN_A_ROW = 3
"""Refused results (a security fault each) a jackpot collection draws past before it stops:
one is a round voided, more in a row a panel that cannot be certified as it stands."""


def collect_draws(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    *,
    faults: FaultRunner | None = None,
    directory: Path,
    part: int,
) -> None:
    """Draw ``want`` prizes (:meth:`feltlab.rig.kinds.base.DeviceKind.collect`)."""
    camp = opts.profile.campaign
    box = int(camp.get("box", 1))
    every = max(1, int(camp.get("ping_every", 5)))
    client.prize_table()
    progress.start("drawing prizes", want)
    round_base = part * 1_000_000
    forge_at = want // 2 if camp.get("inject_faults", True) and client.require_auth else -1
    i = refused = 0
    while result.done < want:
        if stop.is_set():
            return
        trial = None
        if i == forge_at:
            trial = _inject_forgery(client)
        client.arm(round_base + i, [box])
        client.press(box)
        try:
            cents = client.result(box)
        except SecurityFault as exc:
            if trial is not None and i <= forge_at + 3:
                log.info("the forged result was refused: %s", exc)
            else:
                # refused (replayed, forged, ...): the round is void (rule 16.12), the
                # refusal is in the capture and so in the record; the next round is drawn
                refused += 1
                if exc.reason == "tampered" or refused > MAX_REFUSED_IN_A_ROW:
                    raise
                log.error("round %d: %s; the next round is drawn", round_base + i, exc)
            i += 1
            continue
        finally:
            if trial is not None:
                _end_forgery(client, trial, directory)
        refused = 0
        client.display(cents)
        result.done += 1
        if i % every == 0:
            client.ping()
        sync_capture(client, i, 100)
        i += 1
        progress.advance()
    if camp.get("inject_faults", True) and not stop.is_set():
        _madness21_and_faults(client, directory / f"madness21-{part:03d}.jsonl", round_base + want)


def _inject_forgery(client: Any) -> dict[str, Any]:
    """Have the panel forge its next result (altered after signing): the client must
    refuse it as a security fault."""
    client.inject_fault("forge_result")
    return {"fault": "forge_result", "injected_at": client.clock.wall()}


def _end_forgery(client: Any, trial: dict[str, Any], directory: Path) -> None:
    """Record the forged-result trial in ``faults.jsonl``: its ``security`` event."""

    t0 = trial["injected_at"]
    ev = next((e for e in list(client.events) if e.kind == "security" and e.timestamp >= t0), None)
    now = client.clock.wall()
    row = {
        "fault": "forge_result",
        "sample": -1,
        "injected_at": trial["injected_at"],
        "shoes_before": 0,
        "digest_before": hashlib.sha256().hexdigest(),
        "detected_at": ev.timestamp if ev is not None else None,
        "detected_by": "security" if ev is not None else None,
        "recovered_at": None,
        "ended_at": now,
        "outcome": "recovered" if not client.lost else "stopped",
        "detail": {"reason": ev.detail.get("reason") if ev is not None else None},
    }
    with (directory / "faults.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def _madness21_and_faults(client: Any, events_path: Path, first_round: int) -> None:
    """Rule 16.12 end to end: Madness 21 rounds through the SDK round engine with
    :class:`CanJackpotPanel`; a display failure during a won round must settle the won wager
    at $25 and withdraw the option.  Then a button failure, for its detection time.  The
    engine's event log goes to ``events_path`` (analysed offline too)."""
    # player blackjack (AS KH), dealer 9D 8C (stands); twice: a round that works, then one
    # during which the panel's display fails
    deal = [card_code(c) for c in ["AS", "9D", "KH", "8C", "AD", "9C", "KS", "8H"]]
    panel = CanJackpotPanel(client)
    wagers = collect_wagers(get_plugin_manager(entry_points=False))  # the built-in wagers
    table = Table(
        Rules.preset("nz"),
        FixedCards(deal),
        [wagers.create("main"), wagers.create("madness21")],
        boxes=1,
        panel=panel,
        first_round=first_round & 0xFFFFFF,
    )
    bets = [(0, "p1", "main", 1000), (0, "p1", "madness21", 500)]

    play_round(table, bets, StandPolicy())
    client.inject_fault("display")
    play_round(table, bets, StandPolicy())
    table.begin_round()
    table.place(0, "p1", "main", 1000)
    withdrawn = "madness21" in table.withdrawn
    try:
        table.place(0, "p1", "madness21", 500)
        offered = True
    except Exception:
        offered = False
    text = table.log.to_jsonl()
    text += json.dumps({"check": "withdrawn", "withdrawn": withdrawn, "offered": offered}) + "\n"
    events_path.write_text(text)
    client.inject_fault("clear")
    client.clear_fault()
    # a button failure: PRESS -> Fault BUTTON (failure detection time)
    client.inject_fault("button")
    client.arm(first_round + 10, [1])
    with contextlib.suppress(RigError):
        client.press(1)
    client.inject_fault("clear")
    client.clear_fault()
