"""Host-side clients of the rig protocol: one per device kind, behind one base class.

Every wait has a timeout; every command is retried with the same request id (the device
replays its reply instead of executing twice); every ISO-TP read is retried after an ISO
15765-2 timeout or a CRC-32 mismatch, so a payload is either received intact or reported with
the reason it was not.  A watchdog declares the device lost after 3 missed heartbeat periods
and raises a ``lost`` event; counter gaps, reboots, faults and protocol mismatches are events
too.  :meth:`DeviceClient.close` joins every thread the client started.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

import can
import numpy as np
import numpy.typing as npt

from feltlab.rig.clock import Clock, ScheduledCall
from feltlab.rig.errors import (
    DeviceLost,
    DeviceRefused,
    DeviceTimeout,
    LimitExceeded,
    ProtocolError,
    RigError,
    SecurityFault,
)
from feltlab.rig.protocol import (
    DEFAULT_BASE,
    EXT_SHIFT,
    PAYLOAD_RID_OFFSET,
    PROTOCOL_MAJOR,
    UNKNOWN_DECK,
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
from feltlab.rig.secoc import DeviceKey, FreshnessVerifier
from feltlab.rig.transport import BusSpec, IsoTpChannel, Node, TransferError

log = logging.getLogger(__name__)

LOST_AFTER_PERIODS = 3

WAIT_CEILING = 600.0
"""No wait of the rig trusts a device beyond this many seconds, whatever a profile declares
(issue 14: nothing a device sends bounds a wait)."""
#: ``security`` event reasons (the ``reason`` detail) of :class:`SecurityFault`.
SECURITY_REASONS = {"forged": 1, "replayed": 2, "reordered": 3, "unauthenticated": 4}


def _describe_event(kind: str, detail: dict[str, Any], injected: str | None) -> str:
    """A readable line for a client event: a Fault frame with its names from the protocol
    enums, labelled when the campaign injected it (test mode)."""
    if kind == "fault":
        try:
            code = FaultCode(detail.get("code", -1)).name
        except ValueError:
            code = f"code {detail.get('code')}"
        try:
            sev = Severity(detail.get("severity", -1)).name
        except ValueError:
            sev = f"severity {detail.get('severity')}"
        state = "raised" if detail.get("active") else "cleared"
        line = f"fault {code} {state} (severity {sev}, detail {detail.get('detail', 0)})"
        if injected is not None:
            line += f"; injected by the campaign (test fault {injected!r}), as expected"
        return line
    if not detail:
        return kind
    return kind + " (" + ", ".join(f"{k} {v}" for k, v in detail.items()) + ")"


@dataclass(frozen=True)
class DeviceEvent:
    """Something the supervision noticed: ``kind`` is ``online``, ``lost``, ``recovered``,
    ``counter_gap`` (detail ``missed``), ``reboot`` (``boot_count``), ``fault`` (``code``,
    ``severity``, ``active``, ``detail``), ``protocol_version`` (``major``),
    ``sequence_gap`` (``missed``), ``bus_error`` (a command could not be sent: the bus
    went away; ``opcode``), ``transfer_error`` (an ISO-TP read failed or timed out:
    ``channel``), ``payload_error`` (a payload arrived but failed its checks: ``channel``),
    ``security`` (a refused jackpot result: ``reason`` a
    :data:`SECURITY_REASONS` number, ``draw_counter``, ``box``) or ``decode_error`` (a frame
    that broke the protocol or crashed a handler: ``arbitration_id``).  ``timestamp`` in
    seconds since the epoch."""

    kind: str
    base: int
    timestamp: float
    detail: dict[str, int] = field(default_factory=dict)


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
        capture: str | Path | None = None,
        on_event: Callable[[DeviceEvent], None] | None = None,
        heartbeat_period: float = 0.1,
        cf_timeout: float = 0.25,
        clock: Clock | None = None,
        limits: Mapping[str, float] | None = None,
    ) -> None:
        if timeout <= 0 or retries < 0:
            raise ValueError("timeout must be > 0 seconds and retries >= 0")
        self.codec = Codec(base if base is not None else DEFAULT_BASE[self.kind_name])
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
        self.frames_decoded = 0
        self.decode_errors = 0
        self.heartbeats_missed = 0
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
        self._rid = itertools.count(0)
        #: request ids with a reply still awaited (a count per id)
        self._awaiting: dict[int, int] = {}
        #: replies discarded because they answer no request in flight: late, repeated or
        #: stale (protocol 2.0 pairs every reply with its request id; docs/protocol.md)
        self.stale_replies = 0
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
        self.node.add_listener(self.on_message)
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
    def on_message(self, msg: can.Message) -> None:
        """Decode one frame (the Notifier calls this; replay may too).  Never raises: a
        frame that breaks the protocol (or a handler bug) is counted in ``decode_errors``,
        logged as an error and reported as a ``decode_error`` event, so no exception
        escapes the Notifier thread."""
        arb = msg.arbitration_id
        off = (arb >> EXT_SHIFT if msg.is_extended_id else arb) - self.base
        if not 0 <= off < 8 or off == 1:
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
        log.log(
            logging.WARNING if kind in ("lost", "fault", "reboot", "security") else logging.DEBUG,
            "device 0x%03X: %s",
            self.base,
            _describe_event(kind, detail, self.injected_fault),
        )
        if self.on_event is not None:
            try:
                self.on_event(ev)
            except Exception:  # a callback bug must not stop supervision
                log.exception("on_event callback failed")

    def _on_heartbeat(self, f: Frame) -> None:
        s = f.signals
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
        if rid == 0:  # sent on its own (e.g. after a LOAD)
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
            try:
                self.node.send(
                    can.Message(
                        arbitration_id=msg.arbitration_id, data=msg.data, is_extended_id=False
                    )
                )
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
        :data:`feltlab.rig.devices.FAULTS`)."""
        from feltlab.rig.devices import FAULTS

        self.request(Opcode.INJECT_FAULT, FAULTS[fault], value)
        self.injected_fault = None if fault == "clear" else fault

    def _read_payload(self, channel: Channel, opcode: int, arg32: int = 0) -> bytes:
        link = self._channels[channel]
        reasons: list[str] = []
        for attempt in range(self.retries + 1):
            if attempt:
                self.transfer_retries += 1
            link.clear()
            try:
                ack = self.request(opcode, arg32=arg32, keep=True)
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
                link.send_and_wait(data, self.timeout)
                deadline = self.clock.now() + self.timeout
                while True:
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


@dataclass(frozen=True)
class Collection:
    """Shoes collected from a batch shuffler: the intact ones, and (index, reason) for each
    requested shoe that was not received."""

    shoes: tuple[ShoePayload, ...]
    missing: tuple[tuple[int, str], ...]

    def codes(self) -> npt.NDArray[np.uint8]:
        """``(n_shoes, n_cards)`` uint8 codes; raises ProtocolError if lengths differ."""
        lengths = {len(s.codes) for s in self.shoes}
        if len(lengths) > 1:
            raise ProtocolError(f"shoes of different lengths {sorted(lengths)}: a faulty device")
        if not self.shoes:
            return np.empty((0, 0), dtype=np.uint8)
        return np.stack([s.codes for s in self.shoes])

    def ids(self) -> npt.NDArray[np.uint16]:
        """``(n_shoes, n_cards)`` uint16 ids ``deck * 52 + code``."""
        if not self.shoes:
            return np.empty((0, 0), dtype=np.uint16)
        return np.stack([s.ids() for s in self.shoes])


class BatchShufflerClient(DeviceClient):
    """Client of a batch shuffler: load an input order, shuffle, read the shoe (ISO-TP)."""

    kind = Kind.BATCH_SHUFFLER
    kind_name = "batch"
    payload_channels = (Channel.SHOE, Channel.AUDIT)
    load_channel = True

    def load(self, codes: npt.ArrayLike, decks: npt.ArrayLike | None = None) -> None:
        """Load the input order (card codes top first; deck indexes, default 0xFF) over the
        ISO-TP LOAD channel; verified by the Status card count.  Raises TransferError."""
        c = np.asarray(codes, dtype=np.uint8)
        d = (
            np.full(c.size, UNKNOWN_DECK, np.uint8)
            if decks is None
            else np.asarray(decks, np.uint8)
        )
        n_decks = int(d[d != UNKNOWN_DECK].max() + 1) if (d != UNKNOWN_DECK).any() else 0
        self._send_load(LoadPayload(0, n_decks, c, d), c.size)

    def shuffle(self, cut_position: int = 0, *, timeout: float | None = None) -> int:
        """Shuffle the loaded cards; returns the shoe number when the device is READY.

        ``cut_position``: cards before the cutting card (0 = the device's penetration).
        Waits the announced shuffle duration plus ``timeout`` (default: the client's),
        polling STATUS.  Raises DeviceTimeout, DeviceRefused (e.g. a jam), DeviceLost.
        """
        ack = self.request(Opcode.SHUFFLE, arg32=cut_position, keep=True)
        rid = ack.signals["RequestId"]
        try:
            return self._await_ready(ack, rid, timeout)
        finally:
            self._done(rid)

    def _await_ready(self, ack: Frame, rid: int, timeout: float | None) -> int:
        duration = ack.signals["Value"] / 1000.0
        cap = min(self.limits.get("shuffle_cycle_max", WAIT_CEILING), WAIT_CEILING)
        if duration > cap:
            raise LimitExceeded(
                f"device 0x{self.base:03X} announced a {duration:.3f} s shuffle, beyond the "
                f"declared shuffle_cycle_max of {cap:.3f} s: not waited for",
                "shuffle_cycle",
                duration,
                cap,
            )
        budget = duration + (timeout if timeout is not None else self.timeout)
        deadline = self.clock.now() + budget

        def ready() -> Frame | None:
            st = self._statuses.get(rid)
            if st is not None and st.signals["State"] == State.READY:
                return st
            return None

        while True:
            st: Frame | None = self._wait(ready, max(0.0, min(budget, deadline - self.clock.now())))
            if st is not None:
                return int(st.signals["ShoeCount"])
            if self.clock.now() >= deadline:
                break
            s = self.status()  # the done-Status may have been lost: ask
            if s["State"] == State.READY:
                return int(s["ShoeCount"])
        raise DeviceTimeout(f"device 0x{self.base:03X} not READY {budget:.3f} s after SHUFFLE")

    def read_shoe(self, shoe_number: int = 0) -> ShoePayload:
        """The shuffled shoe over ISO-TP (READ_SHOE), retried after a transfer timeout or a
        CRC mismatch.  ``shoe_number`` (0 = latest) must match.  Raises TransferError with
        every attempt's reason."""
        reasons: list[str] = []
        for _ in range(self.retries + 1):
            try:
                data = self._read_payload(Channel.SHOE, Opcode.READ_SHOE, shoe_number & 0xFFFF)
                shoe = ShoePayload.decode(data)
            except (TransferError, ProtocolError) as exc:
                if not isinstance(exc, TransferError):  # received, but failed its CRC-32
                    with self._cond:
                        self._emit("payload_error", channel=int(Channel.SHOE))
                reasons.append(str(exc))
                self.transfer_retries += 1
                continue
            if shoe_number and shoe.shoe_number != shoe_number & 0xFFFF:
                reasons.append(f"got shoe {shoe.shoe_number}, asked {shoe_number}")
                continue
            return shoe
        raise TransferError(f"shoe {shoe_number} not received: " + " | ".join(reasons))

    def collect(self, n_shoes: int, *, cut_position: int = 0) -> Collection:
        """Shuffle and read ``n_shoes`` shoes; each is received intact or listed in
        ``missing`` with its reason (never silently dropped)."""
        shoes: list[ShoePayload] = []
        missing: list[tuple[int, str]] = []
        for i in range(n_shoes):
            try:
                number = self.shuffle(cut_position)
                shoes.append(self.read_shoe(number))
            except RigError as exc:
                missing.append((i, str(exc)))
        return Collection(tuple(shoes), tuple(missing))


@dataclass(frozen=True)
class DealtCard:
    """One card from a continuous shuffler: code, deck (0xFF unknown), the device's deal
    sequence number, cards remaining, and the slot it came from."""

    code: int
    deck: int
    sequence: int
    remaining: int
    slot: int


class ContinuousShufflerClient(DeviceClient):
    """Client of a continuous shuffler: load, deal one card, return cards."""

    kind = Kind.CONTINUOUS_SHUFFLER
    kind_name = "continuous"
    load_channel = True

    def _setup(self) -> None:
        self._cards: dict[int, Frame] = {}
        self._last_seq: int | None = None
        self._handlers["Card"] = self._on_card

    def _on_card(self, f: Frame) -> None:
        self._cards[f.signals["RequestId"]] = f

    def load(
        self, codes: npt.ArrayLike, decks: npt.ArrayLike | None = None, *, insert: bool = False
    ) -> None:
        """Replace the device's cards (or, with ``insert``, return these cards) over ISO-TP
        LOAD.  Raises TransferError."""
        c = np.asarray(codes, dtype=np.uint8)
        d = (
            np.full(c.size, UNKNOWN_DECK, np.uint8)
            if decks is None
            else np.asarray(decks, np.uint8)
        )
        before = self.status()["Cards"] if insert else 0
        self._send_load(
            LoadPayload(1 if insert else 0, 0, c, d), before + c.size, before if insert else None
        )

    def insert(self, code: int, deck: int = UNKNOWN_DECK) -> int:
        """Return one card (INSERT); returns the cards now in the device."""
        return int(self.request(Opcode.INSERT, code, deck).signals["Value"])

    def deal(self, *, timeout: float | None = None) -> DealtCard:
        """Deal one card.  Raises DeviceRefused (Result EMPTY) when the device is empty,
        DeviceTimeout after the retries."""
        with self._cond:
            self._cards.clear()
        f = self.request(Opcode.DEAL, reply=lambda rid: self._cards.get(rid), timeout=timeout)
        s = f.signals
        if self._last_seq is not None and s["Sequence"] != (self._last_seq + 1) & 0xFFFF:
            self._emit("sequence_gap", missed=(s["Sequence"] - self._last_seq - 1) & 0xFFFF)
        self._last_seq = s["Sequence"]
        return DealtCard(s["Code"], s["Deck"], s["Sequence"], s["Remaining"], s["Slot"])


class JackpotPanelClient(DeviceClient):
    """Client of a jackpot prize panel (Madness 21): arm a round for boxes, the button (a
    physical press is reported by the panel; :meth:`press` is the test-mode command), the
    result in cents, the display acknowledgement, and the declared prize table.

    ``key`` (:class:`feltlab.rig.secoc.DeviceKey`, from the profile with
    :func:`feltlab.rig.secoc.load_key`) makes the client verify every result (protocol 1.1,
    SecOC style); ``require_auth`` (default: when a key is given) refuses results without a
    valid MAC.  ``freshness`` is the last complete freshness value accepted from this panel
    (0 for a new panel; the lab keeps it between sessions); :attr:`freshness` reads it.
    A refused result raises :class:`SecurityFault` from the next :meth:`result` and is a
    ``security`` event.  Other keyword arguments are those of :class:`DeviceClient`.
    """

    kind = Kind.JACKPOT_PANEL
    kind_name = "jackpot"
    payload_channels = (Channel.PRIZE_TABLE, Channel.AUDIT)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC | Node,
        *,
        key: DeviceKey | None = None,
        require_auth: bool | None = None,
        freshness: int = 0,
        **kw: Any,
    ) -> None:
        if key is not None and not isinstance(key, DeviceKey):
            raise TypeError("key must be a feltlab.rig.secoc.DeviceKey (see load_key)")
        self.require_auth = key is not None if require_auth is None else bool(require_auth)
        if self.require_auth and key is None:
            raise ValueError(
                "require_auth needs the panel's key: give key= (profile key or key_file)"
            )
        self._key = key
        self._freshness0 = freshness
        super().__init__(bus, **kw)

    def _setup(self) -> None:
        self.round_id = -1
        self._results: list[Frame] = []
        self._seen_draws: set[int] = set()
        self._presses: list[Frame] = []
        self.last_result: dict[str, int] | None = None
        self.security_faults = 0
        self._verifier: FreshnessVerifier | None = None
        if self._key is not None:
            self._verifier = FreshnessVerifier(
                self._key, self.codec.id_of("JackpotResult"), self._freshness0
            )
        self._pending: Frame | None = None  # a result waiting for its MAC
        self._unauthenticated: list[Frame] = []
        self._refused: list[SecurityFault] = []
        self._round_fvs: set[int] = set()
        self._handlers["JackpotResult"] = self._on_result
        self._handlers["JackpotResultMac"] = self._on_mac
        self._handlers["JackpotButton"] = self._on_button

    @property
    def freshness(self) -> int:
        """The last complete freshness value accepted (0 before the first, or without key)."""
        return self._verifier.last if self._verifier is not None else 0

    def _on_result(self, f: Frame) -> None:
        if self._verifier is not None:
            self._unpaired()
            self._pending = f
            return
        draw = f.signals["DrawCounter"]
        if draw not in self._seen_draws:  # repeats (after STATUS) are not new draws
            self._seen_draws.add(draw)
            self._results.append(f)

    def _unpaired(self) -> None:
        """The pending result got no MAC (lost, or an unauthenticated panel)."""
        if self._pending is not None:
            log.debug("panel 0x%03X: a result without its MAC", self.base)
            self._unauthenticated.append(self._pending)
            self._pending = None

    def _refuse(self, exc: SecurityFault, f: Frame) -> None:
        self.security_faults += 1
        self._refused.append(exc)
        self._emit(
            "security",
            reason=SECURITY_REASONS[exc.reason],
            draw_counter=f.signals["DrawCounter"],
            box=f.signals["Box"],
        )
        log.error("panel 0x%03X: %s", self.base, exc)

    def _on_mac(self, f: Frame) -> None:
        pending, self._pending = self._pending, None
        if self._verifier is None:
            return
        if pending is None:
            log.debug("panel 0x%03X: a MAC without a result", self.base)
            return
        payload = bytes(self.codec.encode("JackpotResult", pending.signals).data)
        mac = int(f.signals["Mac"]).to_bytes(8, "little")
        try:
            verdict = self._verifier.verify(payload, pending.signals["DrawCounter"], mac)
        except SecurityFault as exc:
            self._refuse(exc, pending)
            return
        if (
            verdict.fresh
            and self.round_id >= 0
            and (pending.signals["RoundTag"] != self.round_id & 0xFF)
        ):
            # authentic and newer than the last accepted, but of another round: a result the
            # host never accepted (its round was refused), sent again now (a stale replay)
            self._refuse(
                SecurityFault(
                    f"panel 0x{self.base:03X}: a result tagged for round "
                    f"{pending.signals['RoundTag']} arrived while round "
                    f"{self.round_id & 0xFF} is armed: refused as replayed",
                    "replayed",
                ),
                pending,
            )
            return
        if verdict.fresh:
            self._round_fvs.add(verdict.freshness)
            self._results.append(pending)
        elif verdict.freshness not in self._round_fvs:
            self._refuse(
                SecurityFault(
                    f"panel 0x{self.base:03X}: a result of an earlier round (freshness "
                    f"{verdict.freshness}) was sent again: refused as replayed",
                    "replayed",
                ),
                pending,
            )
        # else: the panel repeated a result of this round (STATUS, retried PRESS)

    def _on_button(self, f: Frame) -> None:
        self._presses.append(f)

    def arm(self, round_id: int, boxes: Iterable[int]) -> None:
        """Arm the panel for ``round_id`` (0..2^32-1) and the winning ``boxes`` (1-255; one
        ARM per box).  Arming the same round again adds boxes.  Raises ValueError for a box
        outside 1-255 or no box."""
        wanted = [int(b) for b in boxes]
        if not wanted or not all(1 <= b <= 255 for b in wanted):
            raise ValueError(f"boxes {wanted} must be one or more numbers in 1-255")
        rid = round_id & 0xFFFFFFFF
        new_round = rid != self.round_id
        for i, b in enumerate(wanted):
            self.request(Opcode.ARM, b, rid)
            if i == 0 and new_round:
                # Only now forget the last round: the panel answers in order, so every
                # repeat of the last round's results it sent before this ARM (after a STATUS
                # or a retried PRESS) has arrived before the ARM's acknowledgement, and is
                # recognised as a repeat, not refused as a replay.
                with self._cond:
                    self._results.clear()
                    self._presses.clear()
                    self._round_fvs.clear()
                    self._unauthenticated.clear()
                self.round_id = rid

    def press(self, box: int) -> None:
        """Press ``box``'s button through the test-mode PRESS command (rigs only; a real
        panel reports its own presses).  Raises DeviceRefused for a box not armed."""
        self.request(Opcode.PRESS, box)

    def wait_press(self, timeout: float | None = None) -> int:
        """The box of the next button press this round.  Raises DeviceTimeout."""
        f = self._wait(
            lambda: self._presses.pop(0) if self._presses else None,
            timeout if timeout is not None else self.timeout,
        )
        if f is None:
            raise DeviceTimeout(f"no button press on panel 0x{self.base:03X}")
        return int(f.signals["Box"])

    def result(self, box: int | None = None, *, timeout: float | None = None) -> int:
        """The prize in cents of the next draw of this round (of ``box`` if given).

        Waits ``timeout`` seconds (default: the client's) per attempt, asking the panel to
        repeat its result (STATUS) between attempts.  Raises DeviceTimeout, DeviceLost, and
        (with a key) :class:`SecurityFault` for a refused result: forged, replayed,
        reordered, or unauthenticated (only results without a MAC came, every attempt).
        """
        tag = self.round_id & 0xFF

        def mine(f: Frame) -> bool:
            s = f.signals
            return bool(s["RoundTag"] == tag and (box is None or s["Box"] == box))

        def pick() -> Frame | None:
            if self._refused:
                raise self._refused.pop(0)
            for i, f in enumerate(self._results):
                if mine(f):
                    return self._results.pop(i)
            return None

        wait = timeout if timeout is not None else self.timeout
        for attempt in range(self.retries + 1):
            f: Frame | None = self._wait(pick, wait)
            if f is not None:
                self.last_result = dict(f.signals)
                return int(f.signals["PrizeCents"])
            with self._cond:
                self._unpaired()
            if attempt < self.retries:
                self.retransmissions += 1
                with contextlib.suppress(DeviceTimeout):
                    self.request(Opcode.STATUS)
        with self._cond:
            bare = [f for f in self._unauthenticated if mine(f)]
            if bare and self.require_auth:
                exc = SecurityFault(
                    f"panel 0x{self.base:03X} sent {len(bare)} result(s) for round "
                    f"{self.round_id} without a MAC; the profile requires authenticated "
                    "results: give the panel its key (profile key or key_file)",
                    "unauthenticated",
                )
                self._refuse(exc, bare[-1])
                self._refused.remove(exc)
                raise exc
        raise DeviceTimeout(
            f"panel 0x{self.base:03X} gave no result for round {self.round_id} "
            f"within {self.retries + 1} x {wait:.3f} s"
        )

    def display(self, cents: int) -> None:
        """Show ``cents`` on the panel's display; returns when the panel acknowledges.
        Raises DeviceRefused (Result FAULT) on a display failure (rule 16.12 applies)."""
        self.request(Opcode.DISPLAY, 0, cents)

    def prize_table(self) -> tuple[tuple[int, int], ...]:
        """The panel's declared prize table: (cents, weight) rows, over ISO-TP."""
        for attempt in range(self.retries + 1):
            data = self._read_payload(Channel.PRIZE_TABLE, Opcode.READ_PRIZE_TABLE)
            try:
                return PrizeTablePayload.decode(data).rows
            except ProtocolError:
                if attempt == self.retries:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


CLIENT_KINDS: dict[str, type[DeviceClient]] = {
    "batch": BatchShufflerClient,
    "continuous": ContinuousShufflerClient,
    "jackpot": JackpotPanelClient,
}

__all__ = [
    "CLIENT_KINDS",
    "BatchShufflerClient",
    "CanJackpotPanel",
    "Collection",
    "ContinuousShufflerClient",
    "DealtCard",
    "DeviceClient",
    "DeviceEvent",
    "FaultCode",
    "JackpotPanelClient",
    "SecurityFault",
]


class CanJackpotPanel:
    """The SDK's jackpot panel interface (``feltlab.jackpot.JackpotPanel``) over CAN: each
    :meth:`press` arms the panel for the round and box (SDK box b is protocol box b + 1),
    presses the button (test-mode PRESS
    command: on a rig the presser is simulated), waits for the result in cents and has the
    panel display it.  Every rig failure surfaces as ``feltlab.errors.DeviceError`` (the
    engine applies rule 16.12)."""

    def __init__(self, client: JackpotPanelClient) -> None:
        self.client = client
        self.presses = 0

    def press(self, round_no: int, box: int, presser: str) -> int:
        from feltlab.errors import DeviceError

        self.presses += 1
        wire_box = box + 1  # the SDK numbers boxes from 0, the protocol from 1
        try:
            self.client.arm(round_no, [wire_box])
            self.client.press(wire_box)
            cents = self.client.result(wire_box)
            self.client.display(cents)
        except DeviceError:
            raise
        except RigError as exc:
            raise DeviceError(f"jackpot panel 0x{self.client.base:03X}: {exc}") from exc
        log.info("round %d box %d (%s): %d cents", round_no, box, presser, cents)
        return cents
