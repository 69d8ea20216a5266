"""The base of the simulated devices of :mod:`feltlab.rig.devices`: the fault numbers, the
timing model and :class:`SimDevice` (moved here from ``feltlab.rig.devices``, which re-exports
them).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

import can
import numpy as np

from feltlab import native
from feltlab.rig.bus.isotp_channel import IsoTpChannel
from feltlab.rig.bus.transport import BusSpec, Node
from feltlab.rig.clock import Clock, RealClock, ScheduledCall
from feltlab.rig.devices.misbehaviour import MisbehaviourPlan
from feltlab.rig.devices.rawout import ChaChaSource, RawOutput, RawSource
from feltlab.rig.devices.security import NO_FLAWS, DeviceSecurity, FlawSet, SecurityConfig
from feltlab.rig.errors import RigError
from feltlab.rig.kinds import get_kind
from feltlab.rig.protocol.codec import (
    PROTOCOL_MAJOR,
    PROTOCOL_MINOR,
    SECURITY_MINOR,
    AuditEntry,
    AuditPayload,
    Channel,
    Codec,
    FaultCode,
    Frame,
    Kind,
    Opcode,
    Result,
    Severity,
    State,
)
from feltlab.rig.protocol.inject import FAULT_NAMES, FAULTS

log = logging.getLogger("feltlab.rig.devices")

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
    id base (multiple of 0x10; default: its kind's, :attr:`feltlab.rig.kinds.base.DeviceKind.base`:
    batch 0x100, continuous 0x200, jackpot 0x300).  ``seed``: ChaCha20 key (int) or None for
    fresh entropy.  ``bitrate`` (bit/s) paces the device's frames; ``test_mode`` enables the
    PRESS and INJECT_FAULT commands.
    ``clock``: the clock that drives the device (default: a real clock of its own).
    ``plan``: the misbehaviour plan it consults at its named points (the explorer's
    :class:`~feltlab.rig.devices.misbehaviour.MisbehaviourPlan`; default: one that does
    nothing).
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
        plan: MisbehaviourPlan | None = None,
    ) -> None:
        self._own_clock = clock is None
        self.clock: Clock = clock if clock is not None else RealClock(f"sim-{self.kind_name}")
        self.codec = Codec(base if base is not None else get_kind(self.kind_name).base)
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
        self.plan = plan if plan is not None else MisbehaviourPlan()
        self.plan.attach(self)
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
        #: the raw-output mode (protocol 2.2), once :meth:`enable_raw_output` is called
        self.raw_output: RawOutput | None = None
        #: the security mode (protocol 2.3), once :meth:`enable_security` is called, and the
        #: flaws the device declares (consulted at named points; none by default)
        self.security: DeviceSecurity | None = None
        self.flaws: FlawSet = NO_FLAWS
        #: the minor version the heartbeat reports (2.3 only in security mode)
        self.protocol_minor = PROTOCOL_MINOR

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
            self._channels[ch] = self.node.open_channel(ch.name, data_id, fc_id, send_only=True)
            self._payload_ids.add(data_id)
        for ch in self.rx_channels:
            data_id, fc_id = self.codec.channel_ids(ch)
            self._channels[ch] = self.node.open_channel(
                ch.name, fc_id, data_id, cf_timeout=0.5, on_payload=self._payload_cb(ch)
            )
        self.node.bus.tx_hook = self._tx_hook
        self.node.bus.tx_run_hook = self._tx_run_hook
        self.node.add_listener(self._on_message, arbitration_id=self.base + 1)
        self.clock.call_soon(lambda: self._boot(initial=True))
        return self

    def enable_raw_output(self, source: RawSource | None = None, *, fd: bool = True) -> RawOutput:
        """Serve READ_RAW / READ_RAW_BLOCK (protocol 2.2) from ``source`` (default: this
        device's own ChaCha20 stream), on CAN FD frames when ``fd``; call after
        :meth:`start`.  Returns the server (its :attr:`RawOutput.errors`)."""
        if self.node is None:
            raise RigError("start the device before enabling its raw output")
        node = self.node

        def listen(fn: Callable[[can.Message], None], arbitration_id: int) -> None:
            node.add_listener(fn, arbitration_id=arbitration_id)

        self.raw_output = RawOutput(
            self.base,
            self.clock,
            source if source is not None else ChaChaSource(self.rng),
            ack=self._ack,
            send=self._raw_send,
            listen=listen,
            fd=fd,
        )
        return self.raw_output

    def enable_security(self, config: SecurityConfig) -> DeviceSecurity:
        """Turn on the security mode (protocol 2.3; :mod:`feltlab.rig.devices.security`):
        every command must come authenticated, firmware packages are checked, and the flaws
        ``config`` declares are consulted; call after :meth:`start`.  Returns the mode."""
        if self.node is None:
            raise RigError("start the device before enabling its security mode")
        node = self.node
        if Channel.LOAD not in self._channels:  # a panel: the firmware's channel too
            data_id, fc_id = self.codec.channel_ids(Channel.LOAD)
            self._channels[Channel.LOAD] = node.open_channel(
                "LOAD", fc_id, data_id, cf_timeout=0.5, on_payload=self._payload_cb(Channel.LOAD)
            )

        def listen(fn: Callable[[can.Message], None], arbitration_id: int) -> None:
            node.add_listener(lambda m: self._post(lambda: fn(m)), arbitration_id=arbitration_id)

        def fault(code: FaultCode, severity: Severity, detail: int) -> None:
            self._fault(code, severity, detail, active=False)

        self.flaws = config.flaws
        self.protocol_minor = SECURITY_MINOR
        self.security = DeviceSecurity(
            self.codec,
            config,
            ack=self._ack,
            fault=fault,
            run=lambda frame: self._on_command(frame, authenticated=True),
            state=lambda: self.state,
            send=self._raw_send,
            listen=listen,
            shoe=self._shoe_codes,
        )
        return self.security

    def _shoe_codes(self) -> np.ndarray | None:
        """The codes of the shoe the device last made (top first), if it makes shoes."""
        return None

    def _payload_cb(self, ch: Channel) -> Callable[[bytes], None]:
        def on_payload(data: bytes) -> None:
            self._post(lambda: self._route_payload(ch, data))

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

    def _tx_run_hook(self, aid: int, datas: list[bytes]) -> bool:
        """:meth:`_tx_hook` of a run of consecutive frames sent at once (the ISO-TP
        sender's block): True when it would pass each unchanged (they are counted), False
        (nothing counted) when one may be dropped or changed: the frames then go one by one."""
        if aid not in self._payload_ids:
            return True
        if self._silence_after is not None or self._corrupt_at is not None:
            return False
        if any(d and d[0] >> 4 == 1 for d in datas):  # a first frame restarts the count
            return False
        self._xfer_frames += len(datas)
        return True

    def _send_payload(self, channel: Channel, payload: bytes) -> None:
        # one-shot transfer faults: they hit this transfer only
        silence = self.faults.pop("silence_mid_transfer", None)
        self._silence_after = None if silence is None else max(1, silence or 3)
        corrupt = self.faults.pop("corrupt_frame", None)
        self._corrupt_at = None if corrupt is None else 1 + max(1, corrupt or 2)
        self._channels[channel].send(payload)

    def _route_payload(self, channel: Channel, data: bytes) -> None:
        if self.security is not None and self.security.on_payload(channel, data):
            return  # a firmware package (protocol 2.3), kept for INSTALL_FIRMWARE
        self._on_payload(channel, data)

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
                "ProtocolMinor": self.protocol_minor,
                "PeriodMs": round(self.timing.heartbeat_period * 1000),
                "ActiveFault": int(self.active_fault),
                "BootCount": self.boot_count & 0xFF,
            },
        )
        self.counter = (self.counter + 1) & 0xFF

    def reboot_in(self, delay: float) -> None:
        """Reboot by itself ``delay`` seconds from now (a misbehaviour plan's spontaneous
        reboot)."""
        self._schedule(delay, self._boot)

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
        signals = {
            "RequestId": rid,
            "Opcode": op,
            "Result": int(result),
            "State": int(self.state),
            "Value": value & 0xFFFFFFFF,
        }
        for _ in range(self.plan.ack_copies(self)):
            self._send("Ack", dict(signals))

    #: opcodes that are re-executed on a retry (reads); the others replay their replies.
    _REEXECUTE = frozenset(
        {Opcode.PING, Opcode.STATUS, Opcode.READ_SHOE, Opcode.READ_AUDIT, Opcode.READ_PRIZE_TABLE}
    )

    def _on_command(
        self, frame: Frame, *, planned: bool = False, authenticated: bool = False
    ) -> None:
        if not planned:  # the misbehaviour plan may answer it late
            delay = self.plan.command_delay(self, frame)
            if delay is not None:
                self._schedule(
                    delay,
                    lambda: self._on_command(frame, planned=True, authenticated=authenticated),
                )
                return
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
        if (
            self.security is not None
            and not authenticated
            and not self.security.admit_plain(rid, op)
        ):
            return  # refused: never acted on (protocol 2.3)
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
        else:
            # protocol 2.3's firmware commands (security mode), 2.2's raw output, the kind's own
            sec = self.security is not None and self.security.execute(rid, op, a8, a32)
            raw = sec or (self.raw_output is not None and self.raw_output.execute(rid, op, a8, a32))
            if not raw and not self._execute_kind(rid, op, a8, a32):
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
