"""The base class of the clients of :mod:`feltlab.rig.clients` (moved here from
``feltlab.rig.clients``, which re-exports it)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import can

from feltlab.rig.bus.isotp_channel import IsoTpChannel, TransferError
from feltlab.rig.bus.transport import BusSpec, Node
from feltlab.rig.clients.events import (
    LOST_AFTER_PERIODS,
    DeviceEvent,
    describe_client_event,
)
from feltlab.rig.clock import Clock, ScheduledCall
from feltlab.rig.errors import (
    DeviceLost,
    DeviceRefused,
    DeviceTimeout,
    ProtocolError,
    RigError,
)
from feltlab.rig.kinds import get_kind
from feltlab.rig.protocol.codec import (
    EXT_SHIFT,
    PAYLOAD_RID_OFFSET,
    PROTOCOL_MAJOR,
    AuditPayload,
    Channel,
    Codec,
    Frame,
    Kind,
    LoadPayload,
    Opcode,
    Result,
)
from feltlab.rig.protocol.inject import FAULTS

if TYPE_CHECKING:
    from feltlab.rig.bus.writer import CaptureWriter

log = logging.getLogger("feltlab.rig.clients")


class DeviceClient:
    """Base client: heartbeat supervision, commands with retries, ISO-TP reads.

    ``bus``: spec string, :class:`BusSpec`, an open python-can bus, or a :class:`Node`
    shared with other clients (then not closed by this client).  ``timeout`` (seconds) bounds
    each wait for a reply; ``retries`` is how many times a request is repeated after a timeout
    or a failed transfer.  ``on_event`` is called (on the Notifier or watchdog thread) with
    each :class:`DeviceEvent`.  ``capture``: a .blf/.asc/.log path recording every frame.
    ``clock``: the :class:`feltlab.rig.clock.Clock` every wait and timeout reads (default:
    the shared node's, else a real clock of its own).  ``heartbeat_period`` (s) is the
    declared period: a device announcing more than 1.5 times it is supervised at 1.5 times
    it.  ``limits``: the profile's declared timing limits (s, e.g. ``shuffle_cycle_max``);
    they and :data:`WAIT_CEILING` cap every wait on a duration the device announces.
    """

    kind: ClassVar[Kind]
    kind_name: ClassVar[str]
    payload_channels: ClassVar[tuple[Channel, ...]] = (Channel.AUDIT,)
    load_channel: ClassVar[bool] = False

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC | Node,
        *,
        base: int | None = None,
        timeout: float = 0.5,
        retries: int = 3,
        capture: str | Path | CaptureWriter | None = None,
        on_event: Callable[[DeviceEvent], None] | None = None,
        heartbeat_period: float = 0.1,
        cf_timeout: float = 0.25,
        clock: Clock | None = None,
        limits: Mapping[str, float] | None = None,
    ) -> None:
        if timeout <= 0 or retries < 0:
            raise ValueError("timeout must be > 0 seconds and retries >= 0")
        self.codec = Codec(base if base is not None else get_kind(self.kind_name).base)
        self.base = self.codec.base
        self.timeout = timeout
        self.retries = retries
        self.on_event = on_event
        self._own_node = not isinstance(bus, Node)
        self.node = (
            bus if isinstance(bus, Node) else Node(bus, pace=False, capture=capture, clock=clock)
        )
        self.clock: Clock = self.node.clock
        self.events: list[DeviceEvent] = []
        self.counts: dict[str, int] = {}
        #: the fault the campaign last injected (test mode), until it injects "clear"
        self.injected_fault: str | None = None
        #: fault codes (``FaultCode`` values) the lab provokes on purpose, e.g. SECURITY while
        #: the security pack sends forged commands: still events, logged at DEBUG, not WARNING
        self.provoked_faults: frozenset[int] = frozenset()
        self.frames_decoded = 0
        self.decode_errors = 0
        self.heartbeats_missed = 0
        #: heartbeats on the device's id announcing another ``Kind`` than the client's (a
        #: second node on the id): counted, never taken for the device's own
        self.other_kind_heartbeats = 0
        self.retransmissions = 0
        self.transfer_retries = 0
        self.heartbeat: Frame | None = None
        self.period = heartbeat_period
        #: the heartbeat period the profile declares (s): a device announcing a longer one
        #: cannot slow down lost detection (``period_mismatch`` event)
        self.declared_period = heartbeat_period
        #: the profile's declared timing limits (s), which cap every wait on the device
        self.limits: dict[str, float] = dict(limits or {})
        self.lost = False
        self._last_hb = 0.0
        self._seen_hb = False
        self._cond = threading.Condition()
        self._acks: dict[int, Frame] = {}
        self._status: Frame | None = None
        self._statuses: dict[int, Frame] = {}
        #: Status frames the device sent on its own (RequestId 0: the answer to a LOAD)
        self._own_statuses: list[Frame] = []
        self._rid = itertools.count(0)
        #: request ids with a reply still awaited (a count per id)
        self._awaiting: dict[int, int] = {}
        #: replies discarded because they answer no request in flight: late, repeated or
        #: stale (protocol 2.0 pairs every reply with its request id; docs/protocol.md)
        self.stale_replies = 0
        #: protocol 2.3's security mode: turns each Command frame into its AuthCommand
        #: (:meth:`feltlab.rig.protocol.cmdauth.CommandSigner.wrap`); None sends it bare
        self.authenticate: Callable[[can.Message], can.Message] | None = None
        self._closed = threading.Event()
        self._channels: dict[Channel, IsoTpChannel] = {}
        for ch in self.payload_channels:
            data_id, fc_id = self.codec.channel_ids(ch)
            self._channels[ch] = self.node.open_channel(
                f"{ch.name}@0x{self.base:03X}", fc_id, data_id, cf_timeout=cf_timeout
            )
        if self.load_channel:
            data_id, fc_id = self.codec.channel_ids(Channel.LOAD)
            self._channels[Channel.LOAD] = self.node.open_channel(
                f"LOAD@0x{self.base:03X}", data_id, fc_id, fc_timeout=timeout
            )
        self._handlers: dict[str, Callable[[Frame], None]] = {
            "Heartbeat": self._on_heartbeat,
            "Ack": self._on_ack,
            "Status": self._on_status,
            "Fault": self._on_fault,
        }
        self._setup()
        self.node.add_listener(self.on_message, wants=self.wants_frame)
        self._watchdog: ScheduledCall | None = None
        self._plan_watch()

    def _setup(self) -> None:
        """Per-kind state and frame handlers (called before the first frame arrives)."""

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Stop the watchdog and (if this client opened it) the bus node; joins threads."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._cond:
            self._cond.notify_all()
            if self._watchdog is not None:
                self._watchdog.cancel()
        with contextlib.suppress(ValueError):
            self.node.remove_listener(self.on_message)
        if self._own_node:
            self.node.close()
        else:
            for ch in self._channels.values():
                ch.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ decoding
    def wants_frame(self, arbitration_id: int, extended: bool) -> bool:
        """True for a frame :meth:`on_message` decodes: this device's single-frame channels
        (offsets 0 and 2..7; an extended id carries its 11-bit id above ``EXT_SHIFT``), not
        its ISO-TP channels' frames, which their links take."""
        off = (arbitration_id >> EXT_SHIFT if extended else arbitration_id) - self.base
        return 0 <= off < 8 and off != 1

    def on_message(self, msg: can.Message) -> None:
        """Decode one frame (the Notifier calls this; replay may too).  Never raises: a
        frame that breaks the protocol (or a handler bug) is counted in ``decode_errors``,
        logged as an error and reported as a ``decode_error`` event, so no exception
        escapes the Notifier thread."""
        arb = msg.arbitration_id
        if not self.wants_frame(arb, msg.is_extended_id):
            return
        try:
            frame = self.codec.decode(msg)
            if frame is None:
                return
            self.frames_decoded += 1
            name = frame.name
            self.counts[name] = self.counts.get(name, 0) + 1
            handler = self._handlers.get(name)
            with self._cond:
                if handler is not None:
                    handler(frame)
                self._cond.notify_all()
        except Exception as exc:  # the receive thread must survive any frame
            if isinstance(exc, ProtocolError):
                log.error("device 0x%03X: frame refused: %s", self.base, exc)
            else:
                log.exception("device 0x%03X: frame 0x%03X crashed its handler", self.base, arb)
            with self._cond:
                self._emit("decode_error", arbitration_id=arb)
                self.decode_errors += 1
                self._cond.notify_all()

    def _emit(self, kind: str, **detail: int) -> None:
        ev = DeviceEvent(kind, self.base, self.clock.wall(), detail)
        self.events.append(ev)
        provoked = kind == "fault" and detail.get("code") in self.provoked_faults
        log.log(
            logging.WARNING
            if kind in ("lost", "fault", "reboot", "security") and not provoked
            else logging.DEBUG,
            "device 0x%03X: %s",
            self.base,
            describe_client_event(kind, detail, self.injected_fault),
        )
        if self.on_event is not None:
            try:
                self.on_event(ev)
            except Exception:  # a callback bug must not stop supervision
                log.exception("on_event callback failed")

    def _on_heartbeat(self, f: Frame) -> None:
        s = f.signals
        own = getattr(self, "kind", None)
        if own is not None and s["Kind"] != own:
            # another node's heartbeat on the device's id: taken for the device's, it kept a
            # silent device "online" and its BootCount and Counter read as reboots and gaps
            self.other_kind_heartbeats += 1
            if self.other_kind_heartbeats == 1:
                log.warning(
                    "device 0x%03X: a heartbeat of another kind (Kind %d, not %d) on its id: "
                    "another node transmits there; counted, not taken for the device's",
                    self.base,
                    s["Kind"],
                    int(own),
                )
            return
        prev = self.heartbeat
        if s["ProtocolMajor"] != PROTOCOL_MAJOR and (
            prev is None or prev.signals["ProtocolMajor"] != s["ProtocolMajor"]
        ):
            self._emit("protocol_version", major=s["ProtocolMajor"])
        if prev is None:
            self._emit("online", boot_count=s["BootCount"])
        else:
            p = prev.signals
            if s["BootCount"] != p["BootCount"]:
                self._emit("reboot", boot_count=s["BootCount"])
            elif s["Counter"] != (p["Counter"] + 1) & 0xFF:
                missed = (s["Counter"] - p["Counter"] - 1) & 0xFF
                self.heartbeats_missed += missed
                self._emit("counter_gap", missed=missed, counter=s["Counter"])
        if self.lost:
            self.lost = False
            self._emit("recovered")
        if s["PeriodMs"]:
            announced = s["PeriodMs"] / 1000.0
            if announced > self.declared_period * 1.5 and (
                prev is None or prev.signals["PeriodMs"] != s["PeriodMs"]
            ):
                self._emit(
                    "period_mismatch",
                    announced_ms=s["PeriodMs"],
                    declared_ms=round(self.declared_period * 1000),
                )
            self.period = min(announced, self.declared_period * 1.5)
        self.heartbeat = f
        self._last_hb = self.clock.now()
        self._seen_hb = True

    def _stale(self, name: str, rid: int) -> None:
        self.stale_replies += 1
        self._emit("stale_reply", request_id=rid)
        log.debug("device 0x%03X: %s for request %d discarded (stale)", self.base, name, rid)

    def _on_ack(self, f: Frame) -> None:
        rid = f.signals["RequestId"]
        if rid not in self._awaiting:
            self._stale("Ack", rid)
            return
        self._acks[rid] = f

    def _on_status(self, f: Frame) -> None:
        self._status = f
        rid = f.signals["RequestId"]
        if rid == 0:  # sent on its own (the answer to a LOAD, docs/protocol.md)
            self._own_statuses.append(f)
            del self._own_statuses[:-8]
            return
        if rid not in self._awaiting:
            self._stale("Status", rid)
            return
        self._statuses[rid] = f

    def _expect(self, rid: int) -> None:
        with self._cond:
            self._awaiting[rid] = self._awaiting.get(rid, 0) + 1

    def _done(self, rid: int) -> None:
        with self._cond:
            n = self._awaiting.get(rid, 0) - 1
            if n > 0:
                self._awaiting[rid] = n
            else:
                self._awaiting.pop(rid, None)
                self._acks.pop(rid, None)
                self._statuses.pop(rid, None)

    def _on_fault(self, f: Frame) -> None:
        s = f.signals
        self._emit(
            "fault",
            code=s["FaultCode"],
            severity=s["Severity"],
            active=s["Active"],
            detail=s["Detail"],
        )

    def _plan_watch(self) -> None:
        if not self._closed.is_set():
            step = min(max(self.period / 4, 0.005), 0.05)
            self._watchdog = self.clock.call_later(step, self._watch)

    def _watch(self) -> None:
        """Heartbeat supervision, every quarter period (5..50 ms) on the clock."""
        with self._cond:
            if self._closed.is_set():
                return
            silent = self.clock.now() - self._last_hb
            if self._seen_hb and not self.lost and silent > LOST_AFTER_PERIODS * self.period:
                self.lost = True
                self._emit("lost", periods=LOST_AFTER_PERIODS)
                self._cond.notify_all()
            self._plan_watch()

    # ------------------------------------------------------------ waiting
    def _wait(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """The first truthy ``predicate()`` (evaluated under the lock), or None after
        ``timeout`` seconds.  Raises :class:`DeviceLost` if the device is lost meanwhile."""

        def check() -> Any:
            value = predicate()
            if value:
                return value
            if self.lost:
                raise DeviceLost(
                    f"device 0x{self.base:03X} missed {LOST_AFTER_PERIODS} heartbeat "
                    "periods; check its power and bus, then reconnect"
                )
            if self._closed.is_set():
                raise RigError("client closed")
            return None

        return self.clock.wait(check, timeout, self._cond)

    def wait_online(self, timeout: float = 2.0) -> Frame:
        """Wait for the first heartbeat.  Raises :class:`DeviceTimeout` if none comes within
        ``timeout`` seconds and :class:`ProtocolError` if the device speaks another protocol
        major version."""
        hb: Frame | None = self._wait(lambda: self.heartbeat, timeout)
        if hb is None:
            raise DeviceTimeout(
                f"no heartbeat from device 0x{self.base:03X} within {timeout:.2f} s; check "
                "the bus spec, the base id and that the device runs"
            )
        major = hb.signals["ProtocolMajor"]
        if major != PROTOCOL_MAJOR:
            raise ProtocolError(
                f"device 0x{self.base:03X} speaks protocol {major}.x; this host speaks "
                f"{PROTOCOL_MAJOR}.x"
            )
        return hb

    def _next_rid(self) -> int:
        """1..255, then 1 again (0 marks a frame sent on the device's own account)."""
        return 1 + next(self._rid) % 255

    def request(
        self,
        opcode: int,
        arg8: int = 0,
        arg32: int = 0,
        *,
        reply: Callable[[int], Frame | None] | None = None,
        timeout: float | None = None,
        check: bool = True,
        keep: bool = False,
    ) -> Frame:
        """Send a Command and wait for its reply (the Ack with the same request id, or
        ``reply(rid)`` when given), repeating the same request id up to ``retries`` times.
        A reply with another request id is discarded and counted (``stale_replies``).
        With ``keep`` the request id stays awaited for a further reply (a Status, a
        payload): the caller ends it with ``_done(answer.signals["RequestId"])``.

        Raises :class:`DeviceTimeout` after the last retry, :class:`DeviceLost` if the device
        is lost, :class:`DeviceRefused` for an Ack whose Result is not OK (with ``check``).
        """
        rid = self._next_rid()
        msg = self.codec.encode(
            "Command",
            {
                "RequestId": rid,
                "Opcode": int(opcode),
                "ProtocolMajor": PROTOCOL_MAJOR,
                "Arg8": arg8,
                "Arg32": arg32,
            },
        )
        wait = timeout if timeout is not None else self.timeout

        def got() -> Frame | None:
            ack = self._acks.get(rid)
            if (
                ack is not None
                and ack.signals["Opcode"] == int(opcode)
                and (reply is None or ack.signals["Result"] != Result.OK)
            ):
                return ack
            return reply(rid) if reply is not None else None

        with self._cond:
            self._acks.pop(rid, None)
        self._expect(rid)
        try:
            answer = self._send_and_wait(msg, opcode, got, wait)
        finally:
            if not keep:
                self._done(rid)
        if answer is None:
            if keep:
                self._done(rid)
            raise DeviceTimeout(
                f"device 0x{self.base:03X} did not answer {Opcode(opcode).name} within "
                f"{wait:.3f} s, {self.retries + 1} attempts"
            )
        if check and answer.name == "Ack" and answer.signals["Result"] != Result.OK:
            if keep:
                self._done(rid)
            res = answer.signals["Result"]
            raise DeviceRefused(
                f"device 0x{self.base:03X} refused {Opcode(opcode).name}: "
                f"{Result(res).name if res in Result._value2member_map_ else res} "
                f"(value {answer.signals['Value']})",
                res,
            )
        return answer

    def _send_and_wait(
        self, msg: can.Message, opcode: int, got: Callable[[], Frame | None], wait: float
    ) -> Frame | None:
        answer: Frame | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.retransmissions += 1
            out = can.Message(
                arbitration_id=msg.arbitration_id, data=msg.data, is_extended_id=False
            )
            if self.authenticate is not None:  # protocol 2.3: each attempt freshly signed
                out = self.authenticate(out)
            try:
                self.node.send(out)
            except can.CanError as exc:  # the bus went away: this attempt gets no answer
                with self._cond:
                    self._emit("bus_error", opcode=int(opcode))
                log.warning("device 0x%03X: send failed: %s", self.base, exc)
            answer = self._wait(got, wait)
            if answer is not None:
                break
        return answer

    def ping(self) -> float:
        """Round-trip time of a PING in seconds."""
        t0 = self.clock.now()
        self.request(Opcode.PING)
        return self.clock.now() - t0

    def status(self) -> dict[str, int]:
        """The device's Status signals (STATUS command)."""
        ack = self.request(Opcode.STATUS, keep=True)
        rid = ack.signals["RequestId"]
        try:
            st = self._wait(lambda: self._statuses.get(rid), self.timeout)
        finally:
            self._done(rid)
        if st is None:
            raise DeviceTimeout(f"device 0x{self.base:03X}: no Status after STATUS")
        return dict(st.signals)

    def reboot(self) -> None:
        """Ask the device to reboot (REBOOT); a ``reboot`` event follows its next heartbeat."""
        self.request(Opcode.REBOOT)

    def clear_fault(self) -> None:
        self.request(Opcode.CLEAR_FAULT)

    def inject_fault(self, fault: str, value: int = 0) -> None:
        """Ask a simulated device in test mode to inject ``fault`` (see
        :data:`feltlab.rig.protocol.inject.FAULTS`)."""
        self.request(Opcode.INJECT_FAULT, FAULTS[fault], value)
        self.injected_fault = None if fault == "clear" else fault

    def _read_payload(self, channel: Channel, opcode: int, arg32: int = 0, arg8: int = 0) -> bytes:
        link = self._channels[channel]
        reasons: list[str] = []
        for attempt in range(self.retries + 1):
            if attempt:
                self.transfer_retries += 1
            link.clear()
            try:
                ack = self.request(opcode, arg8, arg32, keep=True)
                rid = ack.signals["RequestId"]
                try:
                    return self._paired_payload(link, rid)
                finally:
                    self._done(rid)
            except (TransferError, DeviceTimeout) as exc:
                reasons.append(str(exc))
                with self._cond:
                    self._emit("transfer_error", channel=int(channel))
        raise TransferError(
            f"{channel.name} from device 0x{self.base:03X} failed {self.retries + 1} times: "
            + "; ".join(reasons)
        )

    def _paired_payload(self, link: IsoTpChannel, rid: int) -> bytes:
        """The payload answering request ``rid`` within the timeout: one with another
        request id in byte :data:`PAYLOAD_RID_OFFSET` (a late transfer of an earlier read) is
        discarded and counted, never taken for this one.  Raises TransferError."""
        deadline = self.clock.now() + self.timeout
        while True:
            data = link.recv(max(0.0, deadline - self.clock.now()))
            got = data[PAYLOAD_RID_OFFSET] if len(data) > PAYLOAD_RID_OFFSET else None
            if got == rid:
                return data
            with self._cond:
                self._stale("payload", -1 if got is None else got)

    def read_audit(self) -> AuditPayload:
        """The device's audit log (READ_AUDIT over ISO-TP)."""
        for attempt in range(self.retries + 1):
            data = self._read_payload(Channel.AUDIT, Opcode.READ_AUDIT)
            try:
                return AuditPayload.decode(data)
            except ProtocolError:
                if attempt == self.retries:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_load(
        self, payload: LoadPayload, expect_cards: int, before: int | None = None
    ) -> None:
        """Send a LOAD and confirm it by the device's card count.  A Status frame may be one
        the device sent before it processed the LOAD, so the count is polled until it shows
        ``expect_cards`` or ``timeout`` passes.  A replacing LOAD (``before`` None) is
        idempotent and retried; an inserting one is retried only while the count still
        shows ``before`` cards (the LOAD was lost), never after it took effect, so no card
        is ever returned twice.  Raises TransferError."""
        link = self._channels[Channel.LOAD]
        data = payload.encode()
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.transfer_retries += 1
            try:
                marker = self._own_statuses[-1] if self._own_statuses else None
                link.send_and_wait(data, self.timeout)
                # the device answers a LOAD with a Status of its own (RequestId 0) once it
                # has taken the cards: wait for it, so that no later command (a SHUFFLE)
                # can overtake the LOAD; a STATUS poll alone cannot tell when the count
                # does not change (208 cards before and after)

                def answered(marker: Frame | None = marker) -> Frame | None:
                    own = self._own_statuses
                    return own[-1] if own and own[-1] is not marker else None

                answer = self._wait(answered, self.timeout)
                cards = int(answer.signals["Cards"]) if answer is not None else -1
                deadline = self.clock.now() + self.timeout
                while cards != expect_cards:
                    cards = self.status()["Cards"]
                    if cards == expect_cards or self.clock.now() > deadline:
                        break
                    self.clock.sleep(0.002)
            except (TransferError, DeviceTimeout) as exc:
                last = str(exc)
                if before is None:
                    continue
                cards = self.status()["Cards"]  # did the insert take effect after all?
                if cards == expect_cards:
                    return
                if cards != before:
                    break
                continue
            if cards == expect_cards:
                return
            last = f"device holds {cards} cards, expected {expect_cards}"
            if before is not None and cards != before:
                break  # the insert took effect in part or twice: retrying would not help
        raise TransferError(f"LOAD to device 0x{self.base:03X} failed: {last}")
