"""Everything a certification campaign needs, read back from its capture.

A campaign's capture (one BLF file per collection part: ``capture-001.blf``, ...) is its raw
record: the verdicts are computed from it, live and offline alike.  This module runs the rig's
own decoders (:class:`feltlab.rig.bus.capture.CaptureDecoder`: the DBC and ISO-TP payloads) over
it and returns, per device base, the LOAD and SHOE payloads, the dealt cards, the jackpot
draws, and the timing samples (timestamps are the frames' epoch stamps, as captured).
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from feltlab.rig.bus.capture import LATEST_STAMP, CaptureDecoder, read_capture
from feltlab.rig.errors import RigError
from feltlab.rig.protocol.codec import (
    Channel,
    FaultCode,
    LoadPayload,
    Opcode,
    Result,
    ShoePayload,
    State,
)


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


@dataclass(frozen=True)
class JackpotFrame:
    """One frame of a jackpot panel's authentication, as captured: ``what`` is ``"result"``
    (``signals``: the JackpotResult's), ``"mac"`` (``signals``: the JackpotResultMac's, its
    ``Mac``), ``"arm"`` (an ARM acknowledged OK; ``signals["Value"]``: the round id) or
    ``"status"`` (a STATUS command: the host asks the panel to repeat its results); ``part``
    is the capture part (1-based), ``time`` the frame's epoch stamp (s)."""

    part: int
    time: float
    what: str
    signals: dict[str, int]


@dataclass
class CaptureData:
    """What a campaign's capture holds for one device base (see module doc)."""

    base: int
    frames: int = 0
    parts: int = 0
    shoes: list[ShoeRead] = field(default_factory=list)
    loads: list[tuple[int, LoadPayload]] = field(default_factory=list)
    payload_errors: list[str] = field(default_factory=list)
    #: frames at the device's ids that break the protocol (wrong length, bad field value)
    frame_errors: list[str] = field(default_factory=list)
    heartbeat_gaps: list[float] = field(default_factory=list)
    heartbeat_kind: int | None = None
    #: the device's own heartbeat ``Kind`` (the profile's kind's when heard, else the one
    #: heard most); heartbeats of any other kind on its id are counted in
    #: ``other_heartbeats``, per Kind code, and never timed as the device's (a second node
    #: transmitting on its id, which ISO 11898-1 forbids, or a device of another kind)
    own_heartbeat_kind: int | None = None
    other_heartbeats: dict[int, int] = field(default_factory=dict)
    #: per heartbeat Kind: its gaps and count, until :func:`read_campaign_capture` settles
    #: which is the device's
    heartbeat_gaps_by_kind: dict[int, list[float]] = field(default_factory=dict)
    heartbeats_by_kind: dict[int, int] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)
    # continuous shuffler: ("deal", code, deck, sequence) / ("insert", code, deck) / ("load", ...)
    card_events: list[tuple[Any, ...]] = field(default_factory=list)
    prizes: list[int] = field(default_factory=list)
    prize_tables: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    faults: list[dict[str, int]] = field(default_factory=list)
    first_stamp: float = 0.0
    #: jackpot: the frames that authenticate results, in capture (wire) order: every
    #: JackpotResult, JackpotResultMac, acknowledged ARM and STATUS command; paired offline
    #: through the live client's :class:`feltlab.rig.protocol.secoc.MacWindow`
    #: (:func:`feltlab.rig.kinds.jackpot.checks.verify_results`)
    jackpot: list[JackpotFrame] = field(default_factory=list)
    #: time spans of injected faults: timing samples and heartbeat gaps there are left out
    exclude: list[tuple[float, float]] = field(default_factory=list)
    exclude_heartbeats: list[tuple[float, float]] = field(default_factory=list)
    #: samples left out by fault windows, per timing name ("heartbeat" for the gaps)
    excluded_by: dict[str, int] = field(default_factory=dict)
    #: replies in the capture that answer no request in flight (late, repeated, stale)
    stale_replies: int = 0
    #: jackpot: (part, time, round id) of every ARM the panel acknowledged (Result OK)
    arms: list[tuple[int, float, int]] = field(default_factory=list)
    #: every heartbeat period the device announced (PeriodMs) and every shuffle duration
    #: its SHUFFLE acknowledgements announced (ms): judged against the declared limits
    announced_periods_ms: set[int] = field(default_factory=set)
    announced_shuffle_ms: list[int] = field(default_factory=list)
    #: shoe numbers the device sent again with other content (each a FAIL)
    repeat_mismatches: list[str] = field(default_factory=list)

    @property
    def excluded_samples(self) -> int:
        """Samples left out by fault windows, all timing names together."""
        return sum(self.excluded_by.values())

    def timing(self, name: str) -> list[float]:
        return self.timings.setdefault(name, [])

    def disturbed(
        self, start: float, end: float, *, heartbeat: bool = False, name: str | None = None
    ) -> bool:
        """True (and counted, per ``name``: default "heartbeat" with ``heartbeat``) if
        ``start..end`` overlaps a fault window (of the heartbeat's faults, with
        ``heartbeat``)."""
        for lo, hi in self.exclude_heartbeats if heartbeat else self.exclude:
            if start <= hi and end >= lo:
                key = name or ("heartbeat" if heartbeat else "other")
                self.excluded_by[key] = self.excluded_by.get(key, 0) + 1
                return True
        return False

    def sample(self, name: str, start: float, end: float, divide: int = 1) -> None:
        """Add the duration ``end - start`` (divided by ``divide``) to timing ``name``,
        unless a fault disturbed it."""
        if not self.disturbed(start, end, name=name):
            self.timing(name).append((end - start) / divide)


_timestamp = operator.attrgetter("timestamp")


def read_campaign_capture(
    paths: Sequence[str | Path],
    base: int,
    *,
    progress: Callable[[int], None] | None = None,
    exclude: Sequence[tuple[float, float]] = (),
    exclude_heartbeats: Sequence[tuple[float, float]] = (),
    frames: Mapping[str, Sequence[Any]] | None = None,
    time_bases: Mapping[str, float] | None = None,
    heartbeat_kind: int | None = None,
) -> CaptureData:
    """Decode ``paths`` (the parts of one campaign, in order) for the device at ``base``.

    ``heartbeat_kind``: the ``Kind`` the device's heartbeats announce (its kind's client's
    :class:`~feltlab.rig.protocol.codec.Kind`); None takes the first heartbeat's.  Heartbeats
    of another kind on the device's id are counted in ``other_heartbeats``, not timed.

    ``time_bases``: a part's file stem (``capture-001``) -> the epoch stamp (UTC) of its
    first frame in file order, as the campaign recorded it when the part closed
    (campaign.json ``parts``).  A
    part read from a file whose format keeps another time base (python-can's ASC, stamps
    from 0; a BLF whose header a tool wrote in local time; candump) is moved onto it, so
    every format of the same campaign gives the same stamps (within the format's own
    resolution) and the same verdict: the fault windows of ``exclude`` are in that time base.

    ``progress(frames)`` is called every 10,000 frames; ``exclude`` are (start, end) epoch
    spans of injected faults whose timing samples are left out (``exclude_heartbeats``: whose
    heartbeat intervals are); ``frames``: a part's file name -> its frames as read back
    (:meth:`feltlab.rig.bus.writer.CaptureWriter.frames_as_read`), instead of parsing that
    file.  Raises RigError for a missing file.
    """
    data = CaptureData(base, exclude=list(exclude), exclude_heartbeats=list(exclude_heartbeats))
    for part, path in enumerate(paths, start=1):
        p = Path(path)
        kept = (frames or {}).get(p.name)
        msgs = list(read_capture(p)) if kept is None else list(kept)
        stamps = np.fromiter(map(_timestamp, msgs), np.float64, len(msgs))
        fine = np.isfinite(stamps) & (np.abs(stamps) <= LATEST_STAMP)  # stamp_in_range's test
        bad = None if fine.all() else msgs[int(np.argmin(fine))]
        if bad is not None:  # no time base, no timing: refused, not judged
            raise RigError(
                f"capture file {p}: a frame stamped {bad.timestamp} is not a CAN frame "
                "(its time is not a number of seconds up to the year 9999); the file is damaged "
                "or not a capture"
            )
        tb = (time_bases or {}).get(p.stem)  # capture-001.blf, .asc, .log: one part
        if kept is None and tb is not None and msgs and msgs[0].timestamp != tb:
            shift = float(tb) - float(msgs[0].timestamp)
            for m in msgs:
                m.timestamp = float(m.timestamp) + shift
        _read_part(p, part, data, progress, msgs)
        data.parts = part
    _settle_heartbeats(data, heartbeat_kind)
    return data


def _settle_heartbeats(data: CaptureData, expected: int | None) -> None:
    """The device's heartbeats among those of every Kind heard on its id: ``expected``'s
    when any was heard, else the Kind heard most (then the lowest code); the others counted
    in ``other_heartbeats``."""
    heard = data.heartbeats_by_kind
    if not heard:
        return
    own = expected if expected in heard else min(heard, key=lambda k: (-heard[k], k))
    data.own_heartbeat_kind = data.heartbeat_kind = own
    data.heartbeat_gaps = data.heartbeat_gaps_by_kind.get(own, [])
    data.other_heartbeats = {k: n for k, n in sorted(heard.items()) if k != own}


def _heartbeat(data: CaptureData, last_hb: dict[int, float], s: Any, t: float) -> None:
    """One Heartbeat at ``t`` (signals ``s``): each ``Kind``'s heartbeats counted and timed
    apart (:func:`_settle_heartbeats` picks the device's at the end); ``last_hb``: the part's
    last heartbeat time per Kind."""
    hk = int(s["Kind"])
    data.heartbeats_by_kind[hk] = data.heartbeats_by_kind.get(hk, 0) + 1
    prev = last_hb.get(hk)
    if prev is not None and not data.disturbed(prev, t, heartbeat=True):
        data.heartbeat_gaps_by_kind.setdefault(hk, []).append(t - prev)
    last_hb[hk] = t
    data.heartbeat_kind = s["Kind"]
    data.announced_periods_ms.add(int(s["PeriodMs"]))


def _read_part(
    path: Path,
    part: int,
    data: CaptureData,
    progress: Callable[[int], None] | None,
    msgs: list[Any],
) -> None:
    base = data.base
    dec = CaptureDecoder([base], errors=data.frame_errors)
    shoe_id = base + Channel.SHOE
    shoe_re = dec.reassembler(base, Channel.SHOE)
    absorb = shoe_re.absorb
    msgs.sort(key=operator.attrgetter("timestamp"))  # host and device frames, in wire order
    pending: dict[tuple[int, int], tuple[float, int, int]] = {}  # (rid, op) -> (t, a8, a32)
    # protocol 2.0: a reply carries the request id of the command it answers, so each
    # latency runs from a request to its own reply and can never be negative
    shuffle_sent: dict[int, float] = {}  # SHUFFLE rid -> time
    read_shoe_sent: dict[int, float] = {}  # READ_SHOE rid -> time
    xfer_first: float | None = None
    last_hb: dict[int, float] = {}  # per heartbeat Kind: its last heartbeat's time
    last_load: LoadPayload | None = None
    deals_since_load = 0
    deal_sent: dict[int, float] = {}
    seen_sequences: set[int] = set()
    seen_draws: set[int] = set()
    buttons: dict[tuple[int, int], float] = {}
    fault_cmd: dict[int, float] = {}  # FaultCode -> time of the command that should raise it
    last_ack_key: tuple[int, int] | None = None
    seen_shoes: dict[int, ShoePayload] = {}
    for msg in msgs:
        data.frames += 1
        if progress is not None and data.frames % 10_000 == 0:
            progress(10_000)
        t = float(msg.timestamp)
        if not data.first_stamp:
            data.first_stamp = t
        if msg.arbitration_id == shoe_id and not msg.is_extended_id and not msg.is_error_frame:
            # a SHOE transfer's quiet consecutive frames (50 of its 53) taken straight into
            # its reassembler, as dec.feed would; every other frame goes through dec.feed
            if absorb(msg.data):
                continue
            if msg.data and msg.data[0] >> 4 in (0, 1):
                xfer_first = t
        elif msg.arbitration_id == shoe_id and msg.data and msg.data[0] >> 4 in (0, 1):
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
                asked = read_shoe_sent.pop(rec.value.request_id, None)
                _shoe(data, path, part, rec.value, (asked, xfer_first, t), seen_shoes, last_load)
            continue
        s = rec.fields
        name = rec.name
        if name == "Heartbeat":
            _heartbeat(data, last_hb, s, t)
        elif name == "Command":
            pending[(s["RequestId"], s["Opcode"])] = (t, s["Arg8"], s["Arg32"])
            _command(data, part, s, t, (shuffle_sent, read_shoe_sent, deal_sent), fault_cmd)
        elif name == "Ack":
            if s["Opcode"] == Opcode.SHUFFLE and s["Result"] == Result.OK:
                data.announced_shuffle_ms.append(int(s["Value"]))
            elif s["Opcode"] == Opcode.ARM and s["Result"] == Result.OK:  # as the client arms
                data.arms.append((part, t, int(s["Value"])))
                data.jackpot.append(JackpotFrame(part, t, "arm", dict(s)))
            key = (s["RequestId"], s["Opcode"])
            sent = pending.pop(key, None)
            if sent is not None:
                data.sample(f"round_trip.{_op_name(s['Opcode'])}", sent[0], t)
                if (
                    s["Opcode"] == Opcode.INSERT
                    and s["Result"] == Result.OK
                    and key != last_ack_key
                ):
                    data.card_events.append(("insert", sent[1], sent[2] & 0xFF))
            last_ack_key = key
        elif name == "Status":
            if s["State"] == State.READY:
                started = shuffle_sent.pop(s["RequestId"], None)
                if started is not None:
                    data.sample("shuffle_cycle", started, t)
        elif name == "Card":
            sent_at = deal_sent.pop(s["RequestId"], None)
            if s["Sequence"] in seen_sequences:  # a replayed reply
                continue
            seen_sequences.add(s["Sequence"])
            if sent_at is not None:
                which = "first_card" if deals_since_load == 0 else "per_card"
                data.sample(which, sent_at, t)
            deals_since_load += 1
            data.card_events.append(("deal", s["Code"], s["Deck"], s["Sequence"]))
        elif name == "JackpotButton":
            buttons[(s["Box"], s["RoundId"] & 0xFF)] = t
        elif name == "JackpotResultMac":
            data.jackpot.append(JackpotFrame(part, t, "mac", dict(s)))
        elif name == "JackpotResult":
            data.jackpot.append(JackpotFrame(part, t, "result", dict(s)))
            if s["DrawCounter"] in seen_draws:
                continue
            seen_draws.add(s["DrawCounter"])
            data.prizes.append(s["PrizeCents"])
            pressed = buttons.pop((s["Box"], s["RoundTag"]), None)
            if pressed is not None:
                data.sample("button_to_result", pressed, t)
        elif name == "Fault":
            data.faults.append(dict(s))
            code = s["FaultCode"]
            started = fault_cmd.pop(code, None)
            if started is not None and s["Active"]:
                data.timing("failure_detection").append(t - started)  # a fault, measured


def _command(
    data: CaptureData,
    part: int,
    s: dict[str, Any],
    t: float,
    sent: tuple[dict[int, float], dict[int, float], dict[int, float]],
    fault_cmd: dict[int, float],
) -> None:
    """A host's Command at ``t``: when its SHUFFLE, READ_SHOE or DEAL went out (``sent``, by
    request id), when a command that should raise a fault went out (``fault_cmd``, by
    FaultCode), a STATUS in the jackpot's frames (it asks the panel to repeat results)."""
    shuffle_sent, read_shoe_sent, deal_sent = sent
    op = s["Opcode"]
    if op == Opcode.SHUFFLE:
        shuffle_sent.setdefault(s["RequestId"], t)  # a retry keeps the first time
    elif op == Opcode.READ_SHOE:
        read_shoe_sent.setdefault(s["RequestId"], t)
    elif op == Opcode.DEAL:
        deal_sent[s["RequestId"]] = t
    elif op == Opcode.DISPLAY:
        fault_cmd[FaultCode.DISPLAY] = t
    elif op == Opcode.PRESS:
        fault_cmd[FaultCode.BUTTON] = t
    elif op == Opcode.STATUS:
        data.jackpot.append(JackpotFrame(part, t, "status", dict(s)))


def _shoe(
    data: CaptureData,
    path: Path,
    part: int,
    shoe: ShoePayload,
    times: tuple[float | None, float | None, float],
    seen_shoes: dict[int, ShoePayload],
    last_load: LoadPayload | None,
) -> None:
    """One SHOE payload of ``part``: ``times`` are its READ_SHOE's (None: none in flight),
    its transfer's first frame's and its last's; a shoe number seen before is compared with
    its first reading (a mismatch recorded), else the shoe is added."""
    asked, xfer_first, t = times
    if asked is not None and xfer_first is not None:
        # paired by request id; a transfer stamped before its own request (a damaged time
        # base) gives a negative sample, counted as bad by the analysis
        data.sample("first_card", asked, xfer_first)
        if len(shoe.codes):
            data.sample("per_card", xfer_first, t, len(shoe.codes))
    else:  # answers no READ_SHOE in flight: a late or repeated transfer
        data.stale_replies += 1
    first = seen_shoes.get(shoe.shoe_number)
    if first is not None:  # a repeated read: the same shoe, card for card?
        if not (
            np.array_equal(first.codes, shoe.codes)
            and np.array_equal(first.card_decks, shoe.card_decks)
            and first.cut_position == shoe.cut_position
        ):
            same_n = first.codes.size == shoe.codes.size
            diff = int((first.codes != shoe.codes).sum()) if same_n else "all"
            data.repeat_mismatches.append(
                f"{path.name}: shoe {shoe.shoe_number} was sent again with other "
                f"content (positions differing: {diff})"
            )
        return
    seen_shoes[shoe.shoe_number] = shoe
    data.shoes.append(ShoeRead(part, shoe.shoe_number, shoe, last_load))


def _op_name(op: int) -> str:
    try:
        return Opcode(op).name.lower()
    except ValueError:
        return f"0x{op:02x}"
