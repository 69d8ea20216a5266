"""Simulated devices speaking the rig protocol (docs/protocol.md): a batch shuffler, a
continuous shuffler and a jackpot prize panel.

A device is driven by its :class:`feltlab.rig.clock.Clock`, which owns all its state: every
heartbeat, command, timed completion (shuffle duration, card latency, button-to-result
latency), boot and injected fault is a callback scheduled on it.  On a
:class:`~feltlab.rig.clock.RealClock` the callbacks run on the clock's thread and frames are
paced to the bus bitrate (:class:`feltlab.rig.transport.WireClock`); on a
:class:`~feltlab.rig.clock.SimClock` they run in simulated time on the simulated bus, where
each frame takes its bit time (:mod:`feltlab.rig.simbus`), so a campaign is a pure function
of its seed.  Randomness is ChaCha20 (RFC 8439) from ``feltlab.native``, seeded.
"""

from __future__ import annotations

import logging
import threading
import tomllib
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Self

import can
import numpy as np

from feltlab import native
from feltlab.rig.clock import Clock, RealClock, ScheduledCall
from feltlab.rig.errors import ProfileError, RigError
from feltlab.rig.models import ShuffleModel, parse_model
from feltlab.rig.protocol import (
    DEFAULT_BASE,
    PROTOCOL_MAJOR,
    PROTOCOL_MINOR,
    UNKNOWN_DECK,
    AuditEntry,
    AuditPayload,
    Channel,
    Codec,
    FaultCode,
    Frame,
    Kind,
    LoadPayload,
    Opcode,
    PrizeTablePayload,
    Result,
    Severity,
    ShoePayload,
    State,
)
from feltlab.rig.secoc import DeviceKey, authenticator, load_key
from feltlab.rig.transport import BusSpec, IsoTpChannel, Node

log = logging.getLogger(__name__)

#: injectable faults: name -> number used by the INJECT_FAULT command (Arg8).
FAULTS: dict[str, int] = {
    "stop_heartbeats": 1,
    "silence_mid_transfer": 2,
    "corrupt_frame": 3,
    "jump_counter": 4,
    "reboot": 5,
    "jam": 6,
    "drop_result": 7,
    "button": 8,
    "display": 9,
    "forge_result": 10,
    "replay_result": 11,
    "reorder_results": 12,
    "clear": 15,
}
FAULT_NAMES = {v: k for k, v in FAULTS.items()}

#: a Madness 21 style prize table: (prize in cents, weight).
DEFAULT_PRIZE_TABLE: tuple[tuple[int, int], ...] = (
    (2_500, 600),
    (5_000, 250),
    (10_000, 100),
    (50_000, 40),
    (250_000, 9),
    (1_000_000, 1),
)


@dataclass(frozen=True)
class Timing:
    """A device's timing model, all in seconds: heartbeat period, shuffle duration (batch),
    card latency (continuous, request to Card frame), button-to-result latency (panel) and
    boot time after a reboot (silent)."""

    heartbeat_period: float = 0.1
    shuffle_duration: float = 0.0
    card_latency: float = 0.0
    button_latency: float = 0.0
    boot_time: float = 0.05

    def __post_init__(self) -> None:
        if not 0.001 <= self.heartbeat_period <= 65.535:
            raise ValueError("heartbeat_period must be in 0.001..65.535 s (a 16-bit ms field)")
        for name in ("shuffle_duration", "card_latency", "button_latency", "boot_time"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 seconds")


class SimDevice(ABC):
    """Base of the simulated devices.

    ``bus``: spec string, :class:`BusSpec` or an open python-can bus.  ``base``: arbitration
    id base (multiple of 0x10; default per kind: batch 0x100, continuous 0x200, jackpot
    0x300).  ``seed``: ChaCha20 key (int) or None for fresh entropy.  ``bitrate`` (bit/s)
    paces the device's frames; ``test_mode`` enables the PRESS and INJECT_FAULT commands.
    ``clock``: the clock that drives the device (default: a real clock of its own).
    """

    kind: ClassVar[Kind]
    kind_name: ClassVar[str]
    tx_channels: ClassVar[tuple[Channel, ...]] = (Channel.AUDIT,)
    rx_channels: ClassVar[tuple[Channel, ...]] = ()

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        base: int | None = None,
        seed: int | None = None,
        timing: Timing | None = None,
        bitrate: int | None = None,
        pace: bool = True,
        test_mode: bool = True,
        capture: str | Path | None = None,
        protocol_major: int = PROTOCOL_MAJOR,
        clock: Clock | None = None,
    ) -> None:
        self._own_clock = clock is None
        self.clock: Clock = clock if clock is not None else RealClock(f"sim-{self.kind_name}")
        self.codec = Codec(base if base is not None else DEFAULT_BASE[self.kind_name])
        self.base = self.codec.base
        self.timing = timing or Timing()
        self.rng = native.ChaCha20(seed)
        self.test_mode = test_mode
        self.protocol_major = protocol_major
        self._bus_arg = bus
        self._bitrate = bitrate
        self._pace = pace
        self._capture = capture
        self.node: Node | None = None
        self.state = State.BOOT
        self.counter = 0
        self.boot_count = 0
        self.active_fault = FaultCode.NONE
        self.fault_count = 0
        self.faults: dict[str, int] = {}
        self.frames_dropped = 0
        self._timers: list[ScheduledCall] = []
        self._stop = threading.Event()
        self._started = False
        self._hb_call: ScheduledCall | None = None
        self._boot_call: ScheduledCall | None = None
        self._channels: dict[Channel, IsoTpChannel] = {}
        self._audit: deque[AuditEntry] = deque(maxlen=256)
        self._audit_seq = 0
        self._t0 = self.clock.now()
        self._last_key: tuple[int, int, int, int] | None = None
        self._last_replies: list[can.Message] = []
        self._collect: list[can.Message] | None = None
        self._xfer_frames = 0
        self._silence_after: int | None = None
        self._corrupt_at: int | None = None
        self._payload_ids: set[int] = set()
        self._next_hb = 0.0
        self._hb_resume_at: float | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        """Open the bus and ISO-TP channels and boot the device on its clock; returns self."""
        if self._started:
            raise RigError("device already started")
        self._started = True
        self.node = Node(
            self._bus_arg,
            bitrate=self._bitrate,
            pace=self._pace,
            capture=self._capture,
            clock=self.clock,
        )
        for ch in self.tx_channels:
            data_id, fc_id = self.codec.channel_ids(ch)
            self._channels[ch] = self.node.open_channel(ch.name, data_id, fc_id)
            self._payload_ids.add(data_id)
        for ch in self.rx_channels:
            data_id, fc_id = self.codec.channel_ids(ch)
            self._channels[ch] = self.node.open_channel(
                ch.name, fc_id, data_id, cf_timeout=0.5, on_payload=self._payload_cb(ch)
            )
        self.node.bus.tx_hook = self._tx_hook
        self.node.add_listener(self._on_message)
        self.clock.call_soon(lambda: self._boot(initial=True))
        return self

    def _payload_cb(self, ch: Channel) -> Callable[[bytes], None]:
        def on_payload(data: bytes) -> None:
            self._post(lambda: self._on_payload(ch, data))

        return on_payload

    def _post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the device's clock (at once if already there, in simulated time)."""
        if self._stop.is_set():
            return
        if self.clock.simulated:
            fn()
        else:
            self.clock.call_soon(lambda: None if self._stop.is_set() else fn())

    def stop(self) -> None:
        """Stop the device: cancel what it scheduled, close its bus and, if it owns its
        clock, stop the clock's thread."""
        self._stop.set()
        for call in (self._hb_call, self._boot_call, *self._timers):
            if call is not None:
                call.cancel()
        self._timers.clear()
        if self._own_clock:
            self.clock.close()
        if self.node is not None:
            self.node.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_forever(self) -> None:
        """Start (if needed) and run until interrupted (KeyboardInterrupt) or stopped."""
        if not self._started:
            self.start()
        try:
            while not self._stop.wait(0.2):
                pass
        finally:
            self.stop()

    # ------------------------------------------------------------ public test hooks
    def inject(self, fault: str, value: int = 0) -> None:
        """Inject a fault (thread-safe): ``stop_heartbeats`` (value = ms of silence; default
        0: until cleared or rebooted), ``silence_mid_transfer`` (value
        = frames let through, default 3), ``corrupt_frame`` (value = consecutive frame to
        corrupt, default 2), ``jump_counter`` (value = jump, default 7), ``reboot``, ``jam``,
        ``drop_result``, ``button``, ``display``, ``forge_result`` (value = the forged
        prize in cents, default the top prize: the next result is altered after signing),
        ``replay_result`` (value = draws back, default 1: the next result is replaced by an
        earlier signed one), ``reorder_results`` (the next result is held and sent after
        the following one), or ``clear`` (all off).

        Raises :class:`RigError` for an unknown fault name.
        """
        if fault not in FAULTS:
            raise RigError(f"unknown fault {fault!r}; choose one of {', '.join(FAULTS)}")
        self._post(lambda: self._apply_fault(fault, value))

    # ------------------------------------------------------------ bus side
    def _on_message(self, msg: can.Message) -> None:
        if msg.arbitration_id != self.base + 1:
            return
        try:
            frame = self.codec.decode(msg)
        except RigError:
            return
        if frame is not None:
            self._post(lambda: self._on_command(frame))

    def _send(self, name: str, signals: dict[str, int]) -> can.Message | None:
        assert self.node is not None
        msg = self.codec.encode(name, signals)
        if self._collect is not None:
            self._collect.append(msg)
        return self._raw_send(msg)

    def _raw_send(self, msg: can.Message) -> can.Message | None:
        assert self.node is not None
        try:
            self.node.send(msg)
        except can.CanError as exc:
            log.warning("%s: send failed: %s", self.kind_name, exc)
            return None
        return msg

    def _tx_hook(self, msg: can.Message) -> can.Message | None:
        if msg.arbitration_id not in self._payload_ids:
            return msg
        if msg.data and msg.data[0] >> 4 == 1:  # ISO-TP first frame: a new transfer
            self._xfer_frames = 0
        self._xfer_frames += 1
        silence = self._silence_after
        if silence is not None and self._xfer_frames > silence:
            self.frames_dropped += 1
            return None
        if self._corrupt_at is not None and self._xfer_frames == self._corrupt_at:
            self._corrupt_at = None
            data = bytearray(msg.data)
            data[-1] ^= 0xFF
            return can.Message(
                arbitration_id=msg.arbitration_id, data=bytes(data), is_extended_id=False
            )
        return msg

    def _send_payload(self, channel: Channel, payload: bytes) -> None:
        # one-shot transfer faults: they hit this transfer only
        silence = self.faults.pop("silence_mid_transfer", None)
        self._silence_after = None if silence is None else max(1, silence or 3)
        corrupt = self.faults.pop("corrupt_frame", None)
        self._corrupt_at = None if corrupt is None else 1 + max(1, corrupt or 2)
        self._channels[channel].send(payload)

    # ------------------------------------------------------------ scheduling
    def _schedule(self, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` after ``delay`` seconds of device time, unless the device reboots or
        stops first."""
        if len(self._timers) > 64:
            now = self.clock.now()
            self._timers = [c for c in self._timers if c.when >= now and not c.cancelled]
        self._timers.append(
            self.clock.call_later(delay, lambda: None if self._stop.is_set() else fn())
        )

    def _plan_heartbeat(self, at: float) -> None:
        if self._hb_call is not None:
            self._hb_call.cancel()
        self._next_hb = at
        self._hb_call = self.clock.call_at(at, self._heartbeat_tick)

    def _heartbeat_tick(self) -> None:
        if self._stop.is_set():
            return
        self._heartbeat()
        now = self.clock.now()
        p = self.timing.heartbeat_period
        nxt = self._next_hb + p
        self._plan_heartbeat(nxt if nxt > now else now + p)

    def _audit_add(self, event: int, value: int) -> None:
        self._audit_seq += 1
        uptime = int((self.clock.now() - self._t0) * 1000)
        self._audit.append(AuditEntry(self._audit_seq & 0xFFFF, uptime & 0xFFFFFFFF, event, value))

    def _heartbeat(self) -> None:
        if "stop_heartbeats" in self.faults:
            if self._hb_resume_at is None or self.clock.now() < self._hb_resume_at:
                return
            self.faults.pop("stop_heartbeats")  # the silence declared at injection is over
            self._hb_resume_at = None
        if self.state == State.BOOT:
            return
        jump = self.faults.pop("jump_counter", None)
        if jump is not None:
            self.counter = (self.counter + (jump or 7)) & 0xFF
        self._send(
            "Heartbeat",
            {
                "Counter": self.counter,
                "State": int(self.state),
                "Kind": int(self.kind),
                "ProtocolMajor": self.protocol_major,
                "ProtocolMinor": PROTOCOL_MINOR,
                "PeriodMs": round(self.timing.heartbeat_period * 1000),
                "ActiveFault": int(self.active_fault),
                "BootCount": self.boot_count & 0xFF,
            },
        )
        self.counter = (self.counter + 1) & 0xFF

    def _boot(self, initial: bool = False) -> None:
        self.state = State.BOOT
        self.counter = 0
        if not initial:
            self.boot_count += 1
        self._last_key = None
        for call in self._timers:
            call.cancel()
        self._timers.clear()
        self.faults.pop("stop_heartbeats", None)
        if self._boot_call is not None:
            self._boot_call.cancel()
        self._reset()
        if initial:
            self._booted()
        else:
            self._boot_call = self.clock.call_later(self.timing.boot_time, self._booted)

    def _booted(self) -> None:
        if self._stop.is_set():
            return
        self._boot_call = None
        self.state = State.IDLE
        self.active_fault = FaultCode.NONE
        self._plan_heartbeat(self.clock.now())
        self._audit_add(0x80 + FaultCode.REBOOTED, self.boot_count)
        if self.boot_count:
            self._fault(FaultCode.REBOOTED, Severity.WARNING, self.boot_count, active=False)

    def _fault(
        self, code: FaultCode, severity: Severity, detail: int = 0, *, active: bool = True
    ) -> None:
        self.fault_count += 1
        if active and severity >= Severity.ERROR:
            self.active_fault = code
        self._audit_add(0x80 + code, detail)
        self._send(
            "Fault",
            {
                "FaultCode": int(code),
                "Severity": int(severity),
                "Active": int(active),
                "FaultCount": self.fault_count & 0xFFFF,
                "Detail": detail & 0xFFFFFFFF,
            },
        )

    def _apply_fault(self, name: str, value: int) -> None:
        log.info("%s: injected fault %s (%d)", self.kind_name, name, value)
        self._audit_add(0x80 + FaultCode.INJECTED, FAULTS[name])
        if name == "clear":
            self.faults.clear()
        elif name == "reboot":
            self._boot()
        else:
            self.faults[name] = value
            if name == "stop_heartbeats":
                self._hb_resume_at = self.clock.now() + value / 1000.0 if value else None

    def _ack(self, rid: int, op: int, result: Result, value: int = 0) -> None:
        self._send(
            "Ack",
            {
                "RequestId": rid,
                "Opcode": op,
                "Result": int(result),
                "State": int(self.state),
                "Value": value & 0xFFFFFFFF,
            },
        )

    #: opcodes that are re-executed on a retry (reads); the others replay their replies.
    _REEXECUTE = frozenset(
        {Opcode.PING, Opcode.STATUS, Opcode.READ_SHOE, Opcode.READ_AUDIT, Opcode.READ_PRIZE_TABLE}
    )

    def _on_command(self, frame: Frame) -> None:
        s = frame.signals
        rid, op, ver, a8, a32 = (
            s["RequestId"],
            s["Opcode"],
            s["ProtocolMajor"],
            s["Arg8"],
            s["Arg32"],
        )
        if self.state == State.BOOT:
            return  # booting devices are deaf; the host times out and retries
        if ver != self.protocol_major:
            self._ack(rid, op, Result.UNSUPPORTED_VERSION, self.protocol_major)
            self._fault(FaultCode.PROTOCOL_VERSION, Severity.ERROR, ver, active=False)
            return
        key = (rid, op, a8, a32)
        if op not in self._REEXECUTE and key == self._last_key:
            for msg in list(self._last_replies):
                self._raw_send(
                    can.Message(
                        arbitration_id=msg.arbitration_id,
                        data=msg.data,
                        is_extended_id=msg.is_extended_id,
                    )
                )
            return
        replies: list[can.Message] = []
        self._collect = replies
        try:
            self._audit_add(op, a32)
            self._execute(rid, op, a8, a32)
        finally:
            self._collect = None
        if op not in self._REEXECUTE:
            self._last_key = key
            self._last_replies = replies

    def _execute(self, rid: int, op: int, a8: int, a32: int) -> None:
        if op == Opcode.PING:
            self._ack(rid, op, Result.OK, self.boot_count)
        elif op == Opcode.STATUS:
            self._ack(rid, op, Result.OK, int(self.state))
            self._status(rid)
        elif op == Opcode.REBOOT:
            self._ack(rid, op, Result.OK)
            self._boot()
        elif op == Opcode.CLEAR_FAULT:
            self.active_fault = FaultCode.NONE
            if self.state == State.FAULT:
                self.state = State.IDLE
            self._ack(rid, op, Result.OK)
        elif op == Opcode.READ_AUDIT:
            payload = AuditPayload(self.boot_count, tuple(self._audit), rid).encode()
            self._ack(rid, op, Result.OK, len(payload))
            self._send_payload(Channel.AUDIT, payload)
        elif op == Opcode.INJECT_FAULT:
            if not self.test_mode or a8 not in FAULT_NAMES:
                self._ack(rid, op, Result.BAD_ARGUMENT if self.test_mode else Result.UNKNOWN_OPCODE)
                return
            self._ack(rid, op, Result.OK)
            self._apply_fault(FAULT_NAMES[a8], a32)
        elif not self._execute_kind(rid, op, a8, a32):
            self._ack(rid, op, Result.UNKNOWN_OPCODE)

    # ------------------------------------------------------------ per kind
    def _reset(self) -> None:  # noqa: B027 - an optional hook: most kinds keep no such state
        """Forget volatile state (boot)."""

    @abstractmethod
    def _status(self, rid: int = 0) -> None:
        """Send this kind's Status frame, answering request ``rid`` (0: on its own)."""

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        return False

    def _on_payload(self, channel: Channel, data: bytes) -> None:  # noqa: B027 - optional
        """A complete ISO-TP payload arrived on ``channel``; kinds without one ignore it."""


class BatchShuffler(SimDevice):
    """A batch shuffler of ``decks`` (4-8) decks applying ``model`` (see
    :mod:`feltlab.rig.models`): LOAD an input order (default: new-deck order), SHUFFLE (Arg32
    = cutting-card position, 0 = ``penetration`` of the shoe), READ_SHOE over ISO-TP.  With
    ``reports_decks=False`` the device sends deck index 0xFF (it cannot tell decks apart).

    Raises ValueError for decks outside 4..8 and :class:`ModelError` for a bad model.
    """

    kind = Kind.BATCH_SHUFFLER
    kind_name = "batch"
    tx_channels = (Channel.SHOE, Channel.AUDIT)
    rx_channels = (Channel.LOAD,)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        decks: int = 6,
        model: str | ShuffleModel = "fisher-yates",
        reports_decks: bool = True,
        penetration: float = 0.75,
        **kw: Any,
    ) -> None:
        if not 4 <= decks <= 8:
            raise ValueError(f"a batch shuffler holds 4-8 decks, got {decks}")
        if not 0.0 < penetration < 1.0:
            raise ValueError("penetration must be a fraction in (0, 1)")
        self.decks = decks
        self.model = parse_model(model) if isinstance(model, str) else model
        self.reports_decks = reports_decks
        self.penetration = penetration
        super().__init__(bus, **kw)
        self.shoe_count = 0
        self.shoe: ShoePayload | None = None

    def _reset(self) -> None:
        ids = native.new_shoe(self.decks, ids=True)
        self.in_codes = (ids % 52).astype(np.uint8)
        self.in_decks = (ids // 52).astype(np.uint8)
        self.shoe = None

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.shoe_count & 0xFFFF,
                "CutPosition": self.shoe.cut_position if self.shoe else 0,
                "Cards": int(self.in_codes.size),
                "Decks": self.decks,
                "RequestId": rid,
            },
        )

    def _on_payload(self, channel: Channel, data: bytes) -> None:
        try:
            load = LoadPayload.decode(data)
        except RigError as exc:
            log.info("batch: LOAD refused: %s", exc)
            self._fault(FaultCode.LOAD_CRC, Severity.WARNING, len(data), active=False)
            return
        self.in_codes, self.in_decks = load.codes, load.card_decks
        self._status()

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.SHUFFLE:
            if self.state == State.BUSY:
                self._ack(rid, op, Result.BUSY)
            elif self.state == State.FAULT:
                self._ack(rid, op, Result.FAULT, int(self.active_fault))
            elif "jam" in self.faults:
                self.faults.pop("jam")
                self.state = State.FAULT
                self._ack(rid, op, Result.FAULT, int(FaultCode.JAM))
                self._fault(FaultCode.JAM, Severity.ERROR, self.shoe_count)
            else:
                self._shuffle(rid, op, a32)
            return True
        if op == Opcode.READ_SHOE:
            if self.shoe is None or self.state != State.READY:
                self._ack(rid, op, Result.BAD_STATE)
            elif a32 and a32 & 0xFFFF != self.shoe.shoe_number:
                self._ack(rid, op, Result.BAD_ARGUMENT, self.shoe.shoe_number)
            else:
                payload = replace(self.shoe, request_id=rid).encode()
                self._ack(rid, op, Result.OK, len(payload))
                self._send_payload(Channel.SHOE, payload)
            return True
        return False

    def _shuffle(self, rid: int, op: int, cut: int) -> None:
        n = self.in_codes.size
        perm = self.model.apply(np.arange(n, dtype=np.uint16), self.rng)
        codes = self.in_codes[perm]
        decks = self.in_decks[perm] if self.reports_decks else np.full(perm.size, UNKNOWN_DECK)
        if cut == 0 or cut > perm.size:
            cut = round(perm.size * self.penetration)
        self.shoe_count += 1
        self.shoe = ShoePayload(
            self.shoe_count & 0xFFFF,
            self.decks,
            cut,
            codes.astype(np.uint8),
            decks.astype(np.uint8),
        )
        self.state = State.BUSY
        self._ack(rid, op, Result.OK, round(self.timing.shuffle_duration * 1000))

        def done() -> None:
            self.state = State.READY
            self._status(rid)

        if self.timing.shuffle_duration > 0:
            self._schedule(self.timing.shuffle_duration, done)
        else:
            done()


class ContinuousShuffler(SimDevice):
    """A continuous shuffler with ``slots`` slots: returned cards go into a random slot at a
    random depth; DEAL takes the first card of a random non-empty slot and answers with a Card
    frame after ``card_latency``; INSERT (Arg8 code, Arg32 deck) or LOAD mode 1 returns cards.
    Starts loaded with ``decks`` decks (1-8)."""

    kind = Kind.CONTINUOUS_SHUFFLER
    kind_name = "continuous"
    tx_channels = (Channel.AUDIT,)
    rx_channels = (Channel.LOAD,)

    def __init__(
        self, bus: str | BusSpec | can.BusABC, *, decks: int = 6, slots: int = 38, **kw: Any
    ) -> None:
        if not 1 <= decks <= 8:
            raise ValueError(f"decks must be 1..8, got {decks}")
        if not 1 <= slots <= 255:
            raise ValueError(f"slots must be 1..255, got {slots}")
        self.decks = decks
        self.n_slots = slots
        super().__init__(bus, **kw)
        self.sequence = 0

    def _reset(self) -> None:
        self.slots: list[list[tuple[int, int]]] = [[] for _ in range(self.n_slots)]
        ids = native.new_shoe(self.decks, ids=True)
        self._insert(ids % 52, ids // 52)

    @property
    def cards(self) -> int:
        return sum(len(s) for s in self.slots)

    def _insert(self, codes: Sequence[int] | np.ndarray, decks: Sequence[int] | np.ndarray) -> None:
        n = len(codes)
        if n == 0:
            return
        which = self.rng.integers(self.n_slots, n)
        depth = self.rng.random_raw(n)
        for i in range(n):
            slot = self.slots[int(which[i])]
            slot.insert(int(depth[i]) % (len(slot) + 1), (int(codes[i]), int(decks[i])))

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.sequence & 0xFFFF,
                "CutPosition": 0,
                "Cards": self.cards,
                "Decks": self.decks,
                "RequestId": rid,
            },
        )

    def _on_payload(self, channel: Channel, data: bytes) -> None:
        try:
            load = LoadPayload.decode(data)
        except RigError as exc:
            log.info("continuous: LOAD refused: %s", exc)
            self._fault(FaultCode.LOAD_CRC, Severity.WARNING, len(data), active=False)
            return
        if load.mode == 0:
            self.slots = [[] for _ in range(self.n_slots)]
        self._insert(load.codes, load.card_decks)
        self._status()

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.DEAL:
            nonempty = [i for i, s in enumerate(self.slots) if s]
            if not nonempty:
                self._ack(rid, op, Result.EMPTY)
                return True
            slot_no = nonempty[int(self.rng.integers(len(nonempty))[0])]
            code, deck = self.slots[slot_no].pop(0)
            self.sequence = (self.sequence + 1) & 0xFFFF
            signals = {
                "RequestId": rid,
                "Code": code,
                "Deck": deck,
                "Sequence": self.sequence,
                "Remaining": self.cards,
                "Slot": slot_no,
            }
            replies = self._collect
            if self.timing.card_latency > 0:

                def later() -> None:
                    self._collect = replies
                    try:
                        self._send("Card", signals)
                    finally:
                        self._collect = None

                self._schedule(self.timing.card_latency, later)
            else:
                self._send("Card", signals)
            return True
        if op == Opcode.INSERT:
            if a8 > 51:
                self._ack(rid, op, Result.BAD_ARGUMENT)
            else:
                self._insert([a8], [a32 & 0xFF])
                self._ack(rid, op, Result.OK, self.cards)
            return True
        return False


class JackpotPanel(SimDevice):
    """A jackpot prize panel: a declared weighted ``prize_table`` of (cents, weight), ChaCha20
    draws (probability weight / total), a button per box, and a display.  ARM (Arg32 round id,
    Arg8 box 1-255; ARM again with the same round id adds a box), the button (:meth:`press`,
    or the PRESS test
    command), JackpotResult after ``button_latency``, DISPLAY (Arg32 cents) acknowledged.

    With a ``key`` (:class:`feltlab.rig.secoc.DeviceKey`) every JackpotResult is followed by
    its JackpotResultMac (protocol 1.1, SecOC style): the complete 64-bit freshness value is
    the draw count, kept across reboots (non-volatile; ``draws`` is its value at power-on),
    and DrawCounter is its low 16 bits.

    Raises ValueError for an empty table, a negative prize or a zero total weight.
    """

    kind = Kind.JACKPOT_PANEL
    kind_name = "jackpot"
    tx_channels = (Channel.PRIZE_TABLE, Channel.AUDIT)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        prize_table: Sequence[tuple[int, int]] = DEFAULT_PRIZE_TABLE,
        key: DeviceKey | None = None,
        draws: int = 0,
        **kw: Any,
    ) -> None:
        if key is not None and not isinstance(key, DeviceKey):
            raise TypeError("key must be a feltlab.rig.secoc.DeviceKey (see load_key)")
        self.key = key
        rows = tuple((int(c), int(w)) for c, w in prize_table)
        if not rows or any(c < 0 or w < 0 for c, w in rows) or sum(w for _, w in rows) == 0:
            raise ValueError("prize_table needs rows of (cents >= 0, weight >= 0), total > 0")
        if any(c >= 1 << 32 or w >= 1 << 32 for c, w in rows):
            raise ValueError("prizes and weights must fit 32 bits")
        self.prize_table = rows
        self._cum = np.cumsum([w for _, w in rows])
        super().__init__(bus, **kw)
        if not 0 <= draws < 1 << 63:
            raise ValueError("draws (the panel's non-volatile draw count) must be >= 0")
        self.draws = int(draws)  # the complete freshness value: survives reboots
        self.presses = 0
        self._signed: deque[tuple[dict[str, int], int | None]] = deque(maxlen=16)
        self._held: tuple[dict[str, int], int | None] | None = None

    def _reset(self) -> None:
        self.round_id = 0
        self.armed_boxes: set[int] = set()
        self.pressed_boxes: set[int] = set()
        self.last_results: list[tuple[dict[str, int], int | None]] = []

    def _sign(self, result: dict[str, int]) -> int | None:
        """The JackpotResultMac ``Mac`` signal of ``result`` (None without a key)."""
        if self.key is None:
            return None
        payload = self.codec.encode("JackpotResult", result).data
        mac = authenticator(self.key, self.codec.id_of("JackpotResult"), payload, self.draws)
        return int.from_bytes(mac, "little")

    def _send_result(self, result: dict[str, int], mac: int | None) -> None:
        self._send("JackpotResult", result)
        if mac is not None:
            self._send("JackpotResultMac", {"Mac": mac})

    def press(self, box: int) -> None:
        """The physical button of ``box`` (1-255) is pressed (thread-safe)."""
        self._post(lambda: self._press(None, box, source=0))

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.draws & 0xFFFF,
                "CutPosition": 0,
                "Cards": 0,
                "Decks": 0,
                "RequestId": rid,
            },
        )
        if self.state == State.DRAWN:
            for res, mac in self.last_results:
                self._send_result(res, mac)

    def _press(self, rid: int | None, box: int, source: int) -> None:
        op = int(Opcode.PRESS)
        if "button" in self.faults:
            self._fault(FaultCode.BUTTON, Severity.ERROR, box)
            if rid is not None:
                self._ack(rid, op, Result.FAULT, int(FaultCode.BUTTON))
            return
        if self.state not in (State.ARMED, State.DRAWN) or box not in self.armed_boxes:
            if rid is not None:
                self._ack(rid, op, Result.BAD_ARGUMENT if box == 0 else Result.BAD_STATE)
            return
        if box in self.pressed_boxes:
            if rid is not None:
                self._ack(rid, op, Result.BAD_STATE, box)
            return
        self.pressed_boxes.add(box)
        self.presses += 1
        if rid is not None:
            self._ack(rid, op, Result.OK, box)
        self._send(
            "JackpotButton",
            {
                "Box": box,
                "Source": source,
                "RoundId": self.round_id,
                "PressCount": self.presses & 0xFFFF,
            },
        )
        draw = int(self.rng.integers(int(self._cum[-1]))[0])
        row = int(np.searchsorted(self._cum, draw, side="right"))
        self.draws += 1
        result = {
            "PrizeCents": self.prize_table[row][0],
            "DrawCounter": self.draws & 0xFFFF,
            "RoundTag": self.round_id & 0xFF,
            "Box": box,
        }
        self.state = State.DRAWN
        mac = self._sign(result)
        self.last_results.append((result, mac))
        self._signed.append((result, mac))
        if self.faults.pop("drop_result", None) is not None:
            return
        out: list[tuple[dict[str, int], int | None]] = [(result, mac)]
        forged = self.faults.pop("forge_result", None)
        if forged is not None:  # altered after signing: the MAC no longer verifies
            cents = forged or max(c for c, _ in self.prize_table)
            if cents == result["PrizeCents"]:
                cents ^= 1
            out = [({**result, "PrizeCents": cents}, mac)]
        back = self.faults.pop("replay_result", None)
        if back is not None and len(self._signed) > max(1, back):
            out = [self._signed[-1 - max(1, back)]]
        if self.faults.pop("reorder_results", None) is not None:
            self._held, out = out[0], []
        elif self._held is not None:
            out.append(self._held)
            self._held = None
        replies = self._collect

        def send_result() -> None:
            self._collect = replies
            try:
                for res, m in out:
                    self._send_result(res, m)
            finally:
                self._collect = None

        if self.timing.button_latency > 0:
            self._schedule(self.timing.button_latency, send_result)
        else:
            send_result()

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.ARM:
            if a8 == 0:
                self._ack(rid, op, Result.BAD_ARGUMENT)
                return True
            if a32 != self.round_id or self.state == State.IDLE:
                self.round_id, self.armed_boxes, self.pressed_boxes = a32, set(), set()
                self.last_results = []
                self._held = None
            self.armed_boxes.add(a8)
            self.state = State.ARMED
            self._ack(rid, op, Result.OK, a32)
            return True
        if op == Opcode.PRESS:
            if not self.test_mode:
                return False
            self._press(rid, a8, source=1)
            return True
        if op == Opcode.DISPLAY:
            if "display" in self.faults:
                self._ack(rid, op, Result.FAULT, int(FaultCode.DISPLAY))
                self._fault(FaultCode.DISPLAY, Severity.ERROR, a32)
                return True
            if self.pressed_boxes >= self.armed_boxes:
                self.state = State.IDLE
            self._ack(rid, op, Result.OK, a32)
            return True
        if op == Opcode.READ_PRIZE_TABLE:
            payload = PrizeTablePayload(self.prize_table, rid).encode()
            self._ack(rid, op, Result.OK, len(payload))
            self._send_payload(Channel.PRIZE_TABLE, payload)
            return True
        return False


DEVICE_KINDS: dict[str, type[SimDevice]] = {
    "batch": BatchShuffler,
    "continuous": ContinuousShuffler,
    "jackpot": JackpotPanel,
}


def make_device(
    kind: str, bus: str | BusSpec | can.BusABC, profile: dict[str, Any] | None = None, **kw: Any
) -> SimDevice:
    """A simulated device of ``kind`` (``batch``, ``continuous``, ``jackpot``) from a
    device-profile dict (the ``[device]`` table of a profile TOML: base, seed, decks, model,
    slots, bitrate, prize_table, heartbeat_period, shuffle_duration, card_latency,
    button_latency, reports_decks, penetration; for a panel ``key`` (hex) or ``key_file``,
    ``key_id``) overridden by keyword arguments.

    Raises :class:`RigError` for an unknown kind or profile key,
    :class:`~feltlab.rig.errors.ProfileError` for a value of the wrong type or out of range
    (:class:`~feltlab.rig.errors.DeviceKeyError` for a bad key).
    """
    cls = DEVICE_KINDS.get(kind)
    if cls is None:
        raise RigError(f"unknown device kind {kind!r}; choose one of {', '.join(DEVICE_KINDS)}")
    opts: dict[str, Any] = dict(profile or {})
    opts.update({k: v for k, v in kw.items() if v is not None})
    timing_keys = {
        "heartbeat_period",
        "shuffle_duration",
        "card_latency",
        "button_latency",
        "boot_time",
    }
    try:
        timing = replace(
            opts.pop("timing", None) or Timing(),
            **{k: float(opts.pop(k)) for k in list(opts) if k in timing_keys},
        )
        if "prize_table" in opts:
            opts["prize_table"] = [tuple(r) for r in opts["prize_table"]]
        if kind == "jackpot":
            key = load_key(opts)
            for name in ("key", "key_file", "key_id"):
                opts.pop(name, None)
            if key is not None:
                opts["key"] = key
        allowed = {
            "base",
            "seed",
            "bitrate",
            "pace",
            "test_mode",
            "capture",
            "protocol_major",
            "clock",
        }
        allowed |= {
            "batch": {"decks", "model", "reports_decks", "penetration"},
            "continuous": {"decks", "slots"},
            "jackpot": {"prize_table", "key", "draws"},
        }[kind]
        unknown = set(opts) - allowed
        if unknown:
            raise RigError(
                f"unknown profile key(s) for a {kind} device: {', '.join(sorted(unknown))}; "
                f"allowed: {', '.join(sorted(allowed | timing_keys))}"
            )
        return cls(bus, timing=timing, **opts)
    except RigError:
        raise
    except (TypeError, ValueError, OverflowError, KeyError) as exc:
        raise ProfileError(f"bad {kind} device profile: {exc}") from exc


MAX_PROFILE_BYTES = 1 << 20
"""The largest device profile read (bytes): a profile is a few kilobytes of TOML."""


def read_profile_toml(
    path: Path, *, error: type[RigError] = RigError, hint: str = ""
) -> dict[str, Any]:
    """The parsed TOML of the device profile at ``path``.  Raises ``error`` (a
    :class:`RigError`) naming the file for one that is missing, not UTF-8 or not TOML;
    ``hint`` is appended to the message."""
    try:
        if path.exists() and not path.is_file():
            raise error(f"cannot read device profile {path}: it is not a regular file{hint}")
        with path.open("rb") as fh:  # bounded: /dev/zero or a huge file is refused
            raw = fh.read(MAX_PROFILE_BYTES + 1)
        if len(raw) > MAX_PROFILE_BYTES:
            raise error(
                f"cannot read device profile {path}: it is larger than {MAX_PROFILE_BYTES} "
                "bytes; give a device profile TOML file"
            )
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise error(
            f"cannot read device profile {path}: it is not UTF-8 text (byte {exc.start}: "
            f"{exc.reason}); save the TOML file as UTF-8"
        ) from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise error(f"cannot read device profile {path}: {exc}{hint}") from exc
