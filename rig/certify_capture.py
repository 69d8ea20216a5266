"""Everything a certification campaign needs, read back from its capture.

A campaign's capture (one BLF file per collection part: ``capture-001.blf``, ...) is its raw
record: the verdicts are computed from it, live and offline alike.  This module runs the rig's
own decoders (:class:`feltlab.rig.capture.CaptureDecoder`: the DBC and ISO-TP payloads) over
it and returns, per device base, the LOAD and SHOE payloads, the dealt cards, the jackpot
draws, and the timing samples (timestamps are the frames' epoch stamps, as captured).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from feltlab.rig.capture import CaptureDecoder, read_capture
from feltlab.rig.protocol import Channel, FaultCode, LoadPayload, Opcode, Result, ShoePayload, State


#: the resolution of a capture timestamp, seconds: a float64 epoch stamp near 2024 has a
#: spacing of 2.4e-7 s (BLF itself stores nanoseconds); time.time() on Linux resolves 1 ns.
def timestamp_resolution(stamp: float) -> float:
    """The resolution in seconds of a captured epoch timestamp near ``stamp``."""
    clock = time.get_clock_info("time").resolution
    return float(max(np.spacing(np.float64(stamp)), clock, 1e-9))


@dataclass
class ShoeRead:
    """One shoe as read from the capture: its part (1-based), the device's shoe number, the
    payload, and the LOAD in force when it was shuffled."""

    part: int
    number: int
    shoe: ShoePayload
    load: LoadPayload | None

    @property
    def label(self) -> str:
        return f"part {self.part} shoe {self.number}"


@dataclass
class CaptureData:
    """What a campaign's capture holds for one device base (see module doc)."""

    base: int
    frames: int = 0
    parts: int = 0
    shoes: list[ShoeRead] = field(default_factory=list)
    loads: list[tuple[int, LoadPayload]] = field(default_factory=list)
    payload_errors: list[str] = field(default_factory=list)
    heartbeat_gaps: list[float] = field(default_factory=list)
    heartbeat_kind: int | None = None
    timings: dict[str, list[float]] = field(default_factory=dict)
    # continuous shuffler: ("deal", code, deck, sequence) / ("insert", code, deck) / ("load", ...)
    card_events: list[tuple[Any, ...]] = field(default_factory=list)
    prizes: list[int] = field(default_factory=list)
    prize_tables: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    faults: list[dict[str, int]] = field(default_factory=list)
    first_stamp: float = 0.0

    def timing(self, name: str) -> list[float]:
        return self.timings.setdefault(name, [])


def read_campaign_capture(
    paths: Sequence[str | Path],
    base: int,
    *,
    progress: Callable[[int], None] | None = None,
) -> CaptureData:
    """Decode ``paths`` (the parts of one campaign, in order) for the device at ``base``.

    ``progress(frames)`` is called every 10,000 frames.  Raises RigError for a missing file.
    """
    data = CaptureData(base)
    for part, path in enumerate(paths, start=1):
        _read_part(Path(path), part, data, progress)
        data.parts = part
    return data


def _read_part(
    path: Path, part: int, data: CaptureData, progress: Callable[[int], None] | None
) -> None:
    base = data.base
    dec = CaptureDecoder([base])
    shoe_id = base + Channel.SHOE
    msgs = list(read_capture(path))
    msgs.sort(key=lambda m: m.timestamp)  # host frames and device frames, in wire order
    pending: dict[tuple[int, int], tuple[float, int, int]] = {}  # (rid, op) -> (t, a8, a32)
    shuffle_started: float | None = None
    read_shoe_at: float | None = None
    xfer_first: float | None = None
    last_hb: float | None = None
    last_load: LoadPayload | None = None
    deals_since_load = 0
    deal_sent: dict[int, float] = {}
    seen_sequences: set[int] = set()
    seen_draws: set[int] = set()
    buttons: dict[tuple[int, int], float] = {}
    fault_cmd: dict[int, float] = {}  # FaultCode -> time of the command that should raise it
    last_ack_key: tuple[int, int] | None = None
    seen_shoes: set[int] = set()
    for i, msg in enumerate(msgs):
        data.frames += 1
        if progress is not None and data.frames % 10_000 == 0:
            progress(10_000)
        t = float(msg.timestamp)
        if not data.first_stamp:
            data.first_stamp = t
        if msg.arbitration_id == shoe_id and msg.data and msg.data[0] >> 4 in (0, 1):
            xfer_first = t
        rec = dec.feed(msg)
        if rec is None:
            continue
        if rec.kind == "payload":
            if rec.error is not None:
                data.payload_errors.append(f"{path.name}: {rec.name}: {rec.error}")
                continue
            if rec.name == "LOAD":
                load: LoadPayload = rec.value
                last_load = load
                data.loads.append((part, load))
                deals_since_load = 0
                data.card_events.append(("load", load.mode, load.codes, load.card_decks))
            elif rec.name == "PRIZE_TABLE":
                data.prize_tables.append(rec.value.rows)
            elif rec.name == "SHOE":
                shoe: ShoePayload = rec.value
                if read_shoe_at is not None and xfer_first is not None:
                    data.timing("first_card").append(xfer_first - read_shoe_at)
                    if len(shoe.codes):
                        data.timing("per_card").append((t - xfer_first) / len(shoe.codes))
                read_shoe_at = None
                if shoe.shoe_number in seen_shoes:  # a repeated read of the same shoe
                    continue
                seen_shoes.add(shoe.shoe_number)
                data.shoes.append(ShoeRead(part, shoe.shoe_number, shoe, last_load))
            continue
        s = rec.fields
        name = rec.name
        if name == "Heartbeat":
            if last_hb is not None:
                data.heartbeat_gaps.append(t - last_hb)
            last_hb = t
            data.heartbeat_kind = s["Kind"]
        elif name == "Command":
            key = (s["RequestId"], s["Opcode"])
            op = s["Opcode"]
            pending[key] = (t, s["Arg8"], s["Arg32"])
            if op == Opcode.SHUFFLE and shuffle_started is None:
                shuffle_started = t
            elif op == Opcode.READ_SHOE:
                read_shoe_at = t
            elif op == Opcode.DEAL:
                deal_sent[s["RequestId"]] = t
            elif op == Opcode.DISPLAY:
                fault_cmd[FaultCode.DISPLAY] = t
            elif op == Opcode.PRESS:
                fault_cmd[FaultCode.BUTTON] = t
        elif name == "Ack":
            key = (s["RequestId"], s["Opcode"])
            sent = pending.pop(key, None)
            if sent is not None:
                data.timing(f"round_trip.{_op_name(s['Opcode'])}").append(t - sent[0])
                if (
                    s["Opcode"] == Opcode.INSERT
                    and s["Result"] == Result.OK
                    and key != last_ack_key
                ):
                    data.card_events.append(("insert", sent[1], sent[2] & 0xFF))
            last_ack_key = key
        elif name == "Status":
            if shuffle_started is not None and s["State"] == State.READY:
                data.timing("shuffle_cycle").append(t - shuffle_started)
                shuffle_started = None
        elif name == "Card":
            sent_at = deal_sent.pop(s["RequestId"], None)
            if s["Sequence"] in seen_sequences:  # a replayed reply
                continue
            seen_sequences.add(s["Sequence"])
            if sent_at is not None:
                which = "first_card" if deals_since_load == 0 else "per_card"
                data.timing(which).append(t - sent_at)
            deals_since_load += 1
            data.card_events.append(("deal", s["Code"], s["Deck"], s["Sequence"]))
        elif name == "JackpotButton":
            buttons[(s["Box"], s["RoundId"] & 0xFF)] = t
        elif name == "JackpotResult":
            if s["DrawCounter"] in seen_draws:
                continue
            seen_draws.add(s["DrawCounter"])
            data.prizes.append(s["PrizeCents"])
            pressed = buttons.pop((s["Box"], s["RoundTag"]), None)
            if pressed is not None:
                data.timing("button_to_result").append(t - pressed)
        elif name == "Fault":
            data.faults.append(dict(s))
            code = s["FaultCode"]
            started = fault_cmd.pop(code, None)
            if started is not None and s["Active"]:
                data.timing("failure_detection").append(t - started)
        _ = i


def _op_name(op: int) -> str:
    try:
        return Opcode(op).name.lower()
    except ValueError:
        return f"0x{op:02x}"
