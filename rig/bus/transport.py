"""Buses, one Notifier per bus, wire timing and the node that opens ISO-TP channels
(:mod:`feltlab.rig.bus.isotp_channel`).

A bus is named by a spec string ``interface=NAME,channel=CHANNEL[,bitrate=N][,key=value...]``
and opened with python-can's ``can.Bus(..., ignore_config=True)`` so that a ``~/.canrc`` or
``CAN_*`` variables never leak in.  Supported and tested: ``virtual`` (one process),
``udp_multicast`` (several processes on one host; interface-local IPv6 groups ``ff11::...``
only) and ``slcan`` (Lawicel serial adapters; ``sleep_after_open=0`` by default).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import can

from feltlab.rig.bus.isotp_channel import IsoTpChannel
from feltlab.rig.clock import Clock, RealClock
from feltlab.rig.errors import BusSpecError
from feltlab.rig.protocol.bittime import frame_bits

if TYPE_CHECKING:
    from feltlab.rig.bus.writer import CaptureWriter

log = logging.getLogger(__name__)

#: the default udp_multicast group: interface-local scope (ff11::/16), never leaves the host.
DEFAULT_UDP_GROUP = "ff11::4645:4c54"
DEFAULT_UDP_PORT = 43113
INTERFACES = ("virtual", "udp_multicast", "slcan", "socketcan", "pcan", "kvaser", "vector")


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


@dataclass(frozen=True)
class BusSpec:
    """Where a bus is: python-can ``interface`` and ``channel``, the nominal ``bitrate``
    (bit/s; None = unpaced) and extra interface options (e.g. ``port`` for udp_multicast)."""

    interface: str
    channel: str
    bitrate: int | None = None
    options: tuple[tuple[str, Any], ...] = field(default=())

    @classmethod
    def parse(cls, text: str) -> BusSpec:
        """Parse ``interface=udp_multicast,channel=ff11::1,bitrate=500000,port=43113``.

        Raises :class:`BusSpecError` for a missing interface, an unknown key format or an
        IPv4 / non interface-local multicast group.
        """
        fields: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, eq, value = part.partition("=")
            if not eq:
                raise BusSpecError(f"bus spec part {part!r} is not key=value (in {text!r})")
            fields[key.strip()] = _value(value.strip()) if key != "channel" else value.strip()
        interface = fields.pop("interface", None)
        if not interface:
            raise BusSpecError(
                f"bus spec {text!r} names no interface; write e.g. "
                f"interface=udp_multicast,channel={DEFAULT_UDP_GROUP}"
            )
        channel = str(
            fields.pop("channel", DEFAULT_UDP_GROUP if interface == "udp_multicast" else "")
        )
        bitrate = fields.pop("bitrate", None)
        spec = cls(str(interface), channel, bitrate, tuple(sorted(fields.items())))
        spec.validate()
        return spec

    def validate(self) -> None:
        """Raise :class:`BusSpecError` for a channel this rig refuses (udp_multicast: only
        interface-local IPv6 groups ff11::/16, because other scopes leave the host)."""
        if self.interface == "udp_multicast":
            try:
                addr = ipaddress.ip_address(self.channel)
            except ValueError as exc:
                raise BusSpecError(f"udp_multicast channel {self.channel!r} is no IP") from exc
            if addr.version != 6 or not str(addr.exploded).startswith("ff11"):
                raise BusSpecError(
                    f"udp_multicast channel {self.channel} would leave this host; use an "
                    f"interface-local IPv6 group such as {DEFAULT_UDP_GROUP}"
                )
        if not self.channel:
            raise BusSpecError(f"interface {self.interface} needs a channel")
        if self.bitrate is not None and (
            isinstance(self.bitrate, bool)
            or not isinstance(self.bitrate, int)
            or not 0 < self.bitrate <= 8_000_000
        ):
            raise BusSpecError(
                f"bitrate must be an integer in 1..8000000 (bit/s), got {self.bitrate!r}"
            )
        port = dict(self.options).get("port")
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535
        ):
            raise BusSpecError(f"port must be an integer in 0..65535 (a UDP port), got {port!r}")

    def __str__(self) -> str:
        parts = [f"interface={self.interface}", f"channel={self.channel}"]
        if self.bitrate:
            parts.append(f"bitrate={self.bitrate}")
        parts += [f"{k}={v}" for k, v in self.options]
        return ",".join(parts)

    def with_bitrate(self, bitrate: int | None) -> BusSpec:
        return BusSpec(self.interface, self.channel, bitrate, self.options)


def open_bus(spec: BusSpec | str) -> can.BusABC:
    """Open the python-can bus of ``spec`` (no config files, no environment).

    Raises :class:`BusSpecError` if python-can cannot open it (the message keeps its cause).
    """
    s = BusSpec.parse(spec) if isinstance(spec, str) else spec
    kwargs: dict[str, Any] = dict(s.options)
    if s.interface == "slcan":
        kwargs.setdefault("sleep_after_open", 0)
        if s.bitrate:
            kwargs["bitrate"] = s.bitrate
    elif s.interface == "udp_multicast":
        kwargs.setdefault("port", DEFAULT_UDP_PORT)
        kwargs.setdefault("fd", False)
    elif s.interface == "virtual":
        kwargs.setdefault("receive_own_messages", False)
    elif s.bitrate:
        kwargs["bitrate"] = s.bitrate
    try:
        return can.Bus(interface=s.interface, channel=s.channel, ignore_config=True, **kwargs)
    except NotImplementedError as exc:  # python-can: an interface name it does not know
        known = ", ".join(sorted(can.interfaces.VALID_INTERFACES))
        raise BusSpecError(
            f"cannot open bus {s}: python-can has no interface {s.interface!r}; use one of {known}"
        ) from exc
    except (can.CanError, OSError, ValueError, ImportError, TypeError) as exc:
        hint = _OPEN_HINTS.get(s.interface, "check the interface, channel and options")
        raise BusSpecError(f"cannot open bus {s}: {exc}; {hint}") from exc


_OPEN_HINTS = {
    "socketcan": "socketcan needs Linux's CAN support and the interface up (e.g. "
    "`sudo modprobe vcan; sudo ip link add dev vcan0 type vcan; sudo ip link set up vcan0`)",
    "slcan": "give the adapter's serial port (e.g. /dev/ttyACM0) and check it is not in use",
    "udp_multicast": "give an IPv6 multicast group (e.g. ff11::4645:4c54) and a free port",
}


class WireClock:
    """Paces transmission to what a classic CAN bus at ``bitrate`` bit/s can carry: each
    frame reserves its exact bit time (:func:`feltlab.rig.protocol.bittime.frame_bits`, 111-135 bits
    for 8 data bytes and an 11-bit id), and the sender sleeps whenever it runs more than
    ``slack`` seconds ahead of the wire."""

    def __init__(self, bitrate: int, slack: float = 0.002) -> None:
        if bitrate <= 0:
            raise ValueError("bitrate must be positive (bit/s)")
        self.bitrate = bitrate
        self.slack = slack
        self._free_at = 0.0
        self.bits_sent = 0

    def reserve(self, msg: can.Message) -> None:
        bits = frame_bits(msg.arbitration_id, msg.data, extended=msg.is_extended_id)
        self.bits_sent += bits
        now = time.monotonic()
        self._free_at = max(self._free_at, now) + bits / self.bitrate
        ahead = self._free_at - now
        if ahead > self.slack:
            time.sleep(ahead - self.slack / 2)


TxHook = Callable[[can.Message], can.Message | None]


class RigBus(can.BusABC):
    """A python-can bus wrapping another: paces sends to the bitrate (:class:`WireClock`),
    stamps every frame with epoch time, drops its own frames echoed back (udp_multicast
    returns them), lets a fault injector rewrite or drop outgoing frames (``tx_hook``) and
    tells ``tx_listeners`` (the capture) about every frame sent."""

    def __init__(
        self, inner: can.BusABC, *, bitrate: int | None = None, clock: Clock | None = None
    ) -> None:
        self.inner = inner
        self.clock: Clock = clock if clock is not None else RealClock()
        self.wire = WireClock(bitrate) if bitrate else None
        self.token = f"feltlab-{os.getpid()}-{id(self):x}"
        self.tx_hook: TxHook | None = None
        #: ``tx_hook`` of a run of data frames of one id (:meth:`send_run`): True when it
        #: passes each unchanged, False to have them go one by one through ``tx_hook``
        self.tx_run_hook: Callable[[int, list[bytes]], bool] | None = None
        self.tx_listeners: list[Callable[[can.Message], None]] = []
        self.frames_sent = 0
        self.frames_received = 0
        self.frames_lost = 0
        #: receive errors of the underlying bus (a datagram that is no CAN frame, line noise
        #: on a serial adapter): counted, the first few kept, reception goes on
        self.rx_errors = 0
        self.rx_error_examples: list[str] = []
        self._down_until = 0.0
        self._send_lock = threading.Lock()
        super().__init__(channel=getattr(inner, "channel_info", "rig"))
        self.channel_info = f"rig over {getattr(inner, 'channel_info', '?')}"

    def unplug(self, seconds: float) -> None:
        """The bus goes away for ``seconds`` (a fault test: the adapter unplugged, the cable
        cut): nothing is received, frames sent through :meth:`Node.send` raise
        ``can.CanOperationError`` and frames of ISO-TP stacks are dropped; then it comes back."""
        self._down_until = self.clock.now() + max(0.0, seconds)

    @property
    def down(self) -> bool:
        """True while the bus is unplugged (:meth:`unplug`)."""
        return self.clock.now() < self._down_until

    def accept(self, msg: can.Message) -> can.Message | None:
        """``msg`` as received, or None for a frame this node does not see: sent while the
        bus is unplugged, or its own frame echoed back (udp_multicast returns them)."""
        if self._down_until and self.down:
            self.frames_lost += 1
            return None
        if msg.channel == self.token:  # our own frame, echoed by udp_multicast
            return None
        if msg.timestamp < 631152000.0:  # before 1990: not an epoch stamp
            msg.timestamp = self.clock.wall()
        self.frames_received += 1
        return msg

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        try:
            msg = self.inner.recv(timeout)
        except Exception as exc:  # python-can's Notifier thread dies on any (python-can #1039)
            self.note_rx_error(exc)
            self.clock.sleep(min(timeout or 0.0, 0.01))  # a broken bus must not spin
            return None, False
        if msg is None:
            return None, False
        return self.accept(msg), False

    def note_rx_error(self, exc: BaseException | str) -> None:
        """Count a receive error (and keep the first five), then go on receiving."""
        self.rx_errors += 1
        text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        if len(self.rx_error_examples) < 5:
            self.rx_error_examples.append(text[:200])
            log.warning("bus %s: undecodable input refused, reception goes on: %s", self, text)

    def stats(self) -> dict[str, Any]:
        """Frame counters of this node's bus, for the record."""
        return {
            "frames_sent": self.frames_sent,
            "frames_received": self.frames_received,
            "frames_lost": self.frames_lost,
            "rx_errors": self.rx_errors,
            "rx_error_examples": list(self.rx_error_examples),
        }

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        if self._down_until and self.down:  # an unplugged adapter: the frame never goes
            self.frames_lost += 1
            return
        with self._send_lock:
            if self.tx_hook is not None:
                out = self.tx_hook(msg)
                if out is None:
                    return
                msg = out
            if self.wire is not None:
                self.wire.reserve(msg)
            msg.channel = self.token
            msg.timestamp = self.clock.wall()
            msg.is_rx = False
            self.inner.send(msg, timeout)
            self.frames_sent += 1
        for listener in self.tx_listeners:
            try:
                listener(msg)
            except Exception as exc:  # the capture failing must not stop the sender
                self.note_rx_error(f"tx listener: {type(exc).__name__}: {exc}")

    def send_run(self, aid: int, datas: list[bytes]) -> bool:
        """:meth:`send` of classic data frames of 11-bit ``aid`` (``datas``, at most 8
        bytes each) queued at one instant, in order, as one run on the simulated wire
        (``SimBus.send_run``, no python-can message a frame): True when sent so; False,
        nothing done, when something on the way needs them one by one (pacing, frame
        listeners, an unplugged bus, a wire with a fault injector, a ``tx_hook`` without a
        run form or whose run form declines them): the caller then sends each with
        :meth:`send`."""
        inner = self.inner
        takes = getattr(inner, "takes_runs", None)
        if (
            self.wire is not None
            or self.tx_listeners
            or (self._down_until and self.down)
            or takes is None
            or not takes()
        ):
            return False
        with self._send_lock:
            hook = self.tx_run_hook
            if self.tx_hook is not None and (hook is None or not hook(aid, datas)):
                return False
            inner.send_run(aid, datas)  # type: ignore[attr-defined]
            self.frames_sent += len(datas)
        return True

    def shutdown(self) -> None:
        super().shutdown()
        self.inner.shutdown()


class Node:
    """One endpoint on a bus: the :class:`RigBus`, its single ``can.Notifier`` (python-can
    4.6 refuses a second one) shared by every listener and ISO-TP channel, and an optional
    capture of every frame sent and received.

    ``bus``: a spec string, a :class:`BusSpec` or an open python-can bus (then owned and shut
    down by this node).  ``bitrate`` (bit/s) overrides the spec's for pacing.  ``clock``:
    the :class:`feltlab.rig.clock.Clock` of the node (default: a new real clock).  On a
    :class:`feltlab.rig.clock.SimClock` the bus must be the in-process ``virtual`` one: it is
    then a :class:`feltlab.rig.bus.simbus.SimBus` in simulated time (frames take their bit time
    at the bitrate; no Notifier thread, no sleeping).

    Raises :class:`BusSpecError` for a bus simulated time cannot drive.
    """

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        bitrate: int | None = None,
        pace: bool = True,
        capture: str | Path | CaptureWriter | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._own_clock = clock is None
        self.clock: Clock = clock if clock is not None else RealClock("node")
        self.notifier: Any
        self.bitrate: int | None
        rate: int | None
        if self.clock.simulated:
            from feltlab.rig.bus.simbus import SimBus, SimListeners, sim_wire  # start-up

            if isinstance(bus, can.BusABC):
                if not isinstance(bus, SimBus):
                    raise BusSpecError("simulated time drives only the simulated bus")
                inner: can.BusABC = bus
            else:
                spec = BusSpec.parse(bus) if isinstance(bus, str) else bus
                if spec.interface != "virtual":
                    raise BusSpecError(
                        f"simulated time runs on the in-process virtual bus, not "
                        f"{spec.interface}; certify a device on {spec.interface} in real time "
                        "(--clock real)"
                    )
                rate = bitrate if bitrate is not None else spec.bitrate
                inner = SimBus(sim_wire(self.clock, spec.channel, rate))  # type: ignore[arg-type]
            sim: SimBus = inner  # type: ignore[assignment]
            self.bitrate = sim.wire.bitrate
            self.bus = RigBus(inner, bitrate=None, clock=self.clock)
            self.notifier = SimListeners()
            sim.on_receive = self._sim_receive
            sim.on_data = self._sim_receive_data
            sim.on_run = self._sim_run_route
            sim.on_take_run = self._sim_take_run
            self._sim_channel = sim.wire.channel
        else:
            if isinstance(bus, can.BusABC):
                inner = bus
                rate = bitrate
            else:
                spec = BusSpec.parse(bus) if isinstance(bus, str) else bus
                inner = open_bus(spec)
                rate = bitrate if bitrate is not None else spec.bitrate
            self.bitrate = rate
            self.bus = RigBus(inner, bitrate=rate if pace else None, clock=self.clock)
            self.notifier = can.Notifier(self.bus, [], timeout=0.05)
        self.channels: list[Any] = []
        self.capture: Any = None
        self._guards: dict[Callable[[can.Message], Any], Callable[[can.Message], bool]] = {}
        self.listener_errors = 0
        self.listener_error_examples: list[str] = []
        if capture is not None:
            from feltlab.rig.bus.writer import CaptureWriter  # start-up

            self.capture = capture if isinstance(capture, CaptureWriter) else CaptureWriter(capture)
            self.add_listener(
                self.capture.on_message_received,
                quiet=True,
                raw=self.capture.on_data,
                run=self.capture,
            )
            self.bus.tx_listeners.append(self.capture.on_message_received)
        self._closed = False

    def _sim_receive(self, msg: can.Message) -> bool:
        """Deliver ``msg`` in simulated time; True when every listener took it quietly
        (:class:`feltlab.rig.bus.simbus.SimListeners`)."""
        got = self.bus.accept(msg)
        return got is not None and self.notifier.dispatch(got) is True

    def _sim_receive_data(self, stamp: float, aid: int, data: bytes, ext: bool) -> bool:
        """:meth:`_sim_receive` of a classic data frame by its fields: when every listener it
        goes to has a raw form (``add_listener(raw=...)``), they take it without a python-can
        message (what :meth:`RigBus.accept` does, done here: counted received), else as a
        message.  True when every one took it quietly."""
        bus = self.bus
        raws = self.notifier.raw_route(aid, ext)
        if raws is None or bus._down_until or stamp < 631152000.0:
            msg = can.Message(stamp, aid, ext, False, False, self._sim_channel, None, data, False)
            return self._sim_receive(msg)
        bus.frames_received += 1
        quiet = True
        for raw in raws:
            if raw(stamp, aid, data, ext) is not True:
                quiet = False
        return quiet

    def _sim_run_route(self, aid: int, ext: bool) -> list[Any] | None:
        """The run forms of the listeners of data frames of ``aid``
        (``SimListeners.run_route``), or None when a run cannot go as one: a listener
        without one, the bus unplugged at some time, a clock before 1990 (the frames then go
        one by one, through :meth:`_sim_receive_data`)."""
        if self.bus._down_until or self.clock.wall() < 631152000.0:
            return None
        route: list[Any] | None = self.notifier.run_route(aid, ext)
        return route

    def _sim_take_run(
        self, aid: int, ext: bool, ends: list[float], stamps: list[float], datas: list[bytes]
    ) -> None:
        """:meth:`_sim_receive_data` of each frame of a run its listeners take quietly
        (``SimWire._move_run``): counted received, each run form given the run."""
        self.bus.frames_received += len(datas)
        for run in self.notifier.run_route(aid, ext) or ():
            try:
                run.run_take(aid, ext, ends, stamps, datas)
            except Exception as exc:
                self.listener_errors += 1
                if self.listener_errors <= 5:
                    log.exception("a listener failed on a run of frames 0x%03X", aid)
                    self.listener_error_examples.append(f"{type(exc).__name__}: {exc}"[:200])

    def add_listener(
        self,
        fn: Callable[[can.Message], Any],
        *,
        arbitration_id: int | None = None,
        wants: Callable[[int, bool], bool] | None = None,
        quiet: bool = False,
        raw: Callable[[float, int, bytes, bool], Any] | None = None,
        run: Any = None,
    ) -> None:
        """Call ``fn`` with every frame received (with ``arbitration_id``: only the frames of
        that id; with ``wants(arbitration_id, is_extended_id)``: only the frames it accepts, a
        pure function of the two).  An exception ``fn`` raises is counted in
        ``listener_errors`` and logged; reception goes on for every other listener.
        ``quiet``: ``fn`` never schedules anything nor changes what a waiter reads (the
        capture), so in simulated time the wire may move the next frame at once; else ``fn``
        says so of each frame by returning True (:class:`feltlab.rig.bus.simbus.SimListeners`).
        ``raw``: ``fn`` taking a received classic data frame's fields ``(timestamp,
        arbitration_id, data, is_extended_id)``, which simulated time calls instead when
        every listener of the frame has one (no python-can message built for it).  ``run``:
        with ``raw``, its form taking a run of such frames at once
        (:class:`feltlab.rig.bus.simbus.RunListener`), which simulated time uses when every
        listener of the frames has one (``SimWire._move_run``)."""
        if arbitration_id is not None:
            aid = arbitration_id

            def wants(a: int, ext: bool) -> bool:
                return a == aid

        # real time: the Notifier calls every listener, so the id is tested here; simulated
        # time routes the frames by id before the call (SimListeners)
        test = wants if isinstance(self.notifier, can.Notifier) else None

        def guarded(msg: can.Message) -> bool:
            if test is not None and not test(msg.arbitration_id, msg.is_extended_id):
                return True
            try:
                took = fn(msg)
            except Exception as exc:
                self.listener_errors += 1
                if self.listener_errors <= 5:
                    log.exception("a listener failed on frame 0x%03X", msg.arbitration_id)
                    self.listener_error_examples.append(f"{type(exc).__name__}: {exc}"[:200])
                return False
            return quiet or took is True

        self._guards[fn] = guarded
        if isinstance(self.notifier, can.Notifier):  # (which ignores guarded's True/False)
            self.notifier.add_listener(guarded)  # type: ignore[arg-type]
            return
        guarded_raw = None
        if raw is not None:
            take = raw

            def guarded_raw(stamp: float, aid: int, data: bytes, ext: bool) -> bool:
                try:
                    took = take(stamp, aid, data, ext)
                except Exception as exc:
                    self.listener_errors += 1
                    if self.listener_errors <= 5:
                        log.exception("a listener failed on frame 0x%03X", aid)
                        self.listener_error_examples.append(f"{type(exc).__name__}: {exc}"[:200])
                    return False
                return quiet or took is True

        self.notifier.add_listener(guarded, wants, guarded_raw, run)

    def remove_listener(self, fn: Callable[[can.Message], None]) -> None:
        """Stop calling ``fn`` (added by :meth:`add_listener`); raises ValueError if absent."""
        guarded = self._guards.pop(fn, None)
        if guarded is None:
            raise ValueError("not a listener of this node")
        self.notifier.remove_listener(guarded)

    def stats(self) -> dict[str, Any]:
        """The bus counters and the listener errors, for the record."""
        out = {
            **self.bus.stats(),
            "listener_errors": self.listener_errors,
            "listener_error_examples": list(self.listener_error_examples),
        }
        if self.capture is not None:
            out["capture_write_errors"] = self.capture.write_errors
            out["capture_write_error_examples"] = list(self.capture.write_error_examples)
        return out

    def send(self, msg: can.Message) -> None:
        """Send ``msg``.  Raises ``can.CanOperationError`` while the bus is unplugged."""
        if self.bus.down:
            self.bus.frames_lost += 1
            raise can.CanOperationError("the bus is down (unplugged)")
        self.bus.send(msg)

    def open_channel(
        self,
        name: str,
        txid: int,
        rxid: int,
        *,
        on_payload: Callable[[bytes], None] | None = None,
        send_only: bool = False,
        **kw: Any,
    ) -> Any:
        """An ISO-TP channel (:class:`IsoTpChannel`, or in simulated time
        :class:`feltlab.rig.bus.simbus.SimIsoTpChannel`); ``on_payload`` is called with each
        complete payload received (else they queue for ``recv``).  ``send_only`` (a simulated
        device's transmit links): in simulated time the lean
        :class:`feltlab.rig.bus.simsender.SimIsoTpSender`."""
        ch: Any
        if self.clock.simulated and send_only:
            from feltlab.rig.bus.simsender import SimIsoTpSender  # start-up

            ch = SimIsoTpSender(name, self, txid, rxid, **kw)
        elif self.clock.simulated:
            from feltlab.rig.bus.simbus import SimIsoTpChannel  # start-up

            ch = SimIsoTpChannel(name, self, txid, rxid, on_payload=on_payload, **kw)
        else:
            ch = IsoTpChannel(
                name, self.bus, self.notifier, txid, rxid, on_payload=on_payload, **kw
            )
        self.channels.append(ch)
        return ch

    def close(self) -> None:
        """Stop the ISO-TP channels, the Notifier (its thread joined), the capture and the
        bus.  Idempotent; never raises for an already broken bus."""
        if self._closed:
            return
        self._closed = True
        for ch in self.channels:
            ch.close()
        try:
            self.notifier.stop(timeout=2.0)
        except Exception as exc:  # pragma: no cover - defensive
            log.warning("notifier stop: %s", exc)
        if self.capture is not None:
            self.capture.stop()
        try:
            self.bus.shutdown()
        except Exception as exc:  # pragma: no cover - defensive
            log.warning("bus shutdown: %s", exc)
        if self._own_clock:
            self.clock.close()
