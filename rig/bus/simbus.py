"""The in-process bus in simulated time: a classic CAN wire and ISO-TP channels driven by a
:class:`feltlab.rig.clock.SimClock` (docs/design.md, "One clock").

A frame sent on a :class:`SimBus` occupies the wire for its exact bit time at the bus
bitrate (:func:`feltlab.rig.protocol.bittime.frame_bits`, stuff bits counted); frames queue behind
each other in the order sent, as on a bus with one frame in flight, and every other node on
the channel receives the frame when its last bit has passed, stamped with the simulated wall
time of that instant. ISO-TP (ISO 15765-2) is can-isotp's own state machine
(``isotp.TransportLayerLogic``), processed whenever a frame arrives, a payload is queued or
one of its timers (N_Bs, N_Cr, STmin) expires, with those timers read from the clock.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import can
import isotp
from isotp.tools import Timer as IsoTpTimer

from feltlab.native import can_frame_bits_unchecked
from feltlab.rig.bus.isotp_channel import TransferError, isotp_link
from feltlab.rig.clock import ScheduledCall, SimClock
from feltlab.rig.errors import RigError
from feltlab.rig.protocol.bittime import fd_frame_bits, frame_bits

log = logging.getLogger(__name__)

#: the bitrate of a simulated bus whose spec and profile name none (bit/s).
DEFAULT_SIM_BITRATE = 500_000

RawListener = Callable[[float, int, bytes, bool], Any]
"""A listener's form taking a received classic data frame as ``(timestamp, arbitration_id,
data, is_extended_id)``, no python-can message built (:class:`SimListeners`); True: taken
quietly."""


class RunListener(Protocol):
    """A listener's form taking a run of received classic data frames of one identifier at
    once (:meth:`SimWire._frame_end`): ``ends`` the simulated instants (seconds) their last
    bits pass, ``stamps`` the same as wall time (epoch seconds, what a frame is stamped
    with), ``datas`` their bytes (at most 8 each), in wire order."""

    def run_quiet(self, aid: int, ext: bool, ends: list[float], datas: list[bytes]) -> int:
        """How many leading frames of the run this listener would take quietly, one by
        one as its raw form would (returning True for each); no side effect."""
        ...

    def run_take(
        self, aid: int, ext: bool, ends: list[float], stamps: list[float], datas: list[bytes]
    ) -> None:
        """Take the frames (all of them within :meth:`run_quiet`'s count): the same state
        as its raw form called on each in turn."""
        ...


class WireFrame:
    """A classic data frame of a :class:`WireRun` taken off a :class:`SimWire`'s queue: the
    fields the wire reads of a python-can message (a message is built from it only where
    one is needed: :attr:`SimWire.chaos`)."""

    __slots__ = ("arbitration_id", "data")
    is_extended_id = False
    is_fd = False
    bitrate_switch = False

    def __init__(self, arbitration_id: int, data: bytes) -> None:
        self.arbitration_id = arbitration_id
        self.data = data

    def message(self) -> can.Message:
        """The python-can message of this frame."""
        return can.Message(0.0, self.arbitration_id, False, False, False, None, None, self.data)


class WireRun:
    """Classic data frames of one 11-bit identifier queued at one instant by
    :meth:`SimBus.send_run`: one place in a :class:`SimWire`'s queue (they arbitrate as
    one, having one identifier and following each other), ``datas[at:]`` still to go."""

    __slots__ = ("arbitration_id", "at", "datas")
    is_extended_id = False
    is_fd = False

    def __init__(self, arbitration_id: int, datas: list[bytes]) -> None:
        self.arbitration_id = arbitration_id
        self.datas = datas
        self.at = 0


class SimWire:
    """One simulated CAN channel: the nodes on it, the frames waiting for the wire and the
    one in flight.

    Arbitration as ISO 11898-1: whenever the wire falls idle, the pending frame with the
    lowest identifier goes next (frames of one identifier in the order sent); a frame in
    flight is never pre-empted.  So a heartbeat waits at most one frame behind a long ISO-TP
    transfer on a higher identifier, as on a real bus.
    """

    def __init__(self, clock: SimClock, channel: str, bitrate: int) -> None:
        if bitrate <= 0:
            raise ValueError("bitrate must be positive (bit/s)")
        self.clock = clock
        self.channel = channel
        self.bitrate = bitrate
        self.buses: list[SimBus] = []
        self.frames = 0
        self.bits = 0
        #: (priority, order, sender, a python-can message or a :class:`WireRun`)
        self._pending: list[tuple[int, int, SimBus, Any]] = []
        self._seq = itertools.count()
        self._busy = False
        #: the frame on the wire: (sender, arbitration id, data, extended)
        self._flight: tuple[SimBus, int, bytes, bool] | None = None
        #: an optional fault injector (:class:`feltlab.rig.bus.chaos.WireChaos`): given each
        #: frame and the instant its last bit passes, it returns (when, frame) deliveries
        #: (none: lost; several: duplicated or garbage added; later: delayed or reordered).
        self.chaos: Any = None
        #: the data-phase bitrate of CAN FD frames with bit-rate switch (bit/s; None: a
        #: classic bus, where an FD frame, if any, goes at :attr:`bitrate` throughout)
        self.data_bitrate: int | None = None
        hook = getattr(clock, "on_new_wire", None)
        if hook is not None:
            hook(self)

    def transmit(self, sender: SimBus, msg: can.Message) -> None:
        prio = (msg.arbitration_id << 1 | 1) if msg.is_extended_id else msg.arbitration_id << 19
        heapq.heappush(self._pending, (prio, next(self._seq), sender, msg))
        if not self._busy:
            self._next()

    def transmit_run(self, sender: SimBus, aid: int, datas: list[bytes]) -> None:
        """:meth:`transmit` of classic data frames of 11-bit ``aid`` queued at one instant,
        in order: one :class:`WireRun` in the queue."""
        if not datas:
            return
        entry = (aid << 19, next(self._seq), sender, WireRun(aid, datas))
        heapq.heappush(self._pending, entry)
        if not self._busy:
            self._next()

    def _pop(self) -> tuple[SimBus, Any]:
        """The next frame of the queue and its sender (a :class:`WireRun`'s next frame,
        the run left in place until its last)."""
        pending = self._pending
        entry = pending[0]
        item: Any = entry[3]
        if type(item) is WireRun:
            data = item.datas[item.at]
            item.at += 1
            if item.at == len(item.datas):
                heapq.heappop(pending)
            return entry[2], WireFrame(item.arbitration_id, data)
        heapq.heappop(pending)
        return entry[2], item

    def _next(self) -> None:
        """Put the lowest pending identifier on the idle wire; when its last bit has passed,
        deliver it (through :attr:`chaos`, if any) and arbitrate again."""
        if not self._pending:
            self._busy = False
            return
        self._busy = True
        sender, msg = self._pop()
        if isinstance(msg, WireFrame) and self.chaos is not None:
            msg = msg.message()
        if self.chaos is None and not msg.is_fd:
            flight = (sender, msg.arbitration_id, bytes(msg.data), msg.is_extended_id)
            self._flight = flight
            self.clock.call_at(self._start(flight), self._frame_end)
            return
        if msg.is_fd:  # CAN FD (protocol 2.2's raw channel): two bitrates, never in a run
            end = self._start_fd(msg)
        else:
            end = self._start((sender, msg.arbitration_id, bytes(msg.data), msg.is_extended_id))
        if self.chaos is None:
            deliver = self._delivery(sender, msg)

            def frame_end() -> None:
                deliver()  # the receivers see it; then the next arbitration
                self._next()

            self.clock.call_at(end, frame_end)
            return
        for when, out in self.chaos.deliveries(sender, msg, end):
            self.clock.call_at(when, self._delivery(sender, out))
        self.clock.call_at(end, self._next)

    def _start_fd(self, msg: can.Message) -> float:
        """Count CAN FD frame ``msg`` on the wire: its arbitration phase at :attr:`bitrate`,
        its data phase at :attr:`data_bitrate` when it switches bitrate
        (:func:`feltlab.rig.protocol.bittime.fd_frame_bits`); the instant its last bit passes."""
        nominal, fast = fd_frame_bits(msg.arbitration_id, msg.data, extended=msg.is_extended_id)
        self.frames += 1
        self.bits += nominal + fast
        fast_rate = self.data_bitrate if msg.bitrate_switch and self.data_bitrate else None
        return self.clock.now() + nominal / self.bitrate + fast / (fast_rate or self.bitrate)

    def _start(self, flight: tuple[SimBus, int, bytes, bool]) -> float:
        """Count the frame ``flight`` (sender, id, data, extended) on the wire; the simulated
        instant its last bit passes (:func:`feltlab.rig.protocol.bittime.frame_bits`)."""
        _, aid, data, ext = flight
        n = len(data)
        if n <= 8:  # the C core's exact count, without frame_bits' checks (the hot path)
            bits: int = can_frame_bits_unchecked(aid, ext, data, n)
        else:
            bits = frame_bits(aid, data, extended=ext)  # raises ValueError, as it did
        self.frames += 1
        self.bits += bits
        return self.clock.now() + bits / self.bitrate

    def _frame_end(self) -> None:
        """The frame in flight has passed: the receivers see it; what is queued at this
        instant (the replies their listeners queued included) competes for the next
        arbitration.

        Frames moved in a run: while every receiver took its frame quietly (a capture, an
        ISO-TP receiver absorbing a consecutive frame: nothing scheduled, nothing a waiter
        reads changed) and nothing else is due before the next frame's last bit, that frame
        is delivered here and now (:meth:`SimClock.run_ahead`) instead of through an event of
        its own: the same instants, the same order, the same bytes (a consecutive-frame
        burst of a SHOE transfer is one event instead of 51)."""
        flight = self._flight
        assert flight is not None
        clock = self.clock
        pending = self._pending
        while self._deliver(*flight) and pending and self.chaos is None:
            if pending[0][3].is_fd:  # an FD frame goes through _next's own path
                break
            while self._move_run():  # a run of quiet frames in one call (or none)
                if not pending or pending[0][3].is_fd:
                    break
            if not pending or pending[0][3].is_fd:
                break
            sender, msg = self._pop()
            flight = (sender, msg.arbitration_id, bytes(msg.data), msg.is_extended_id)
            end = self._start(flight)
            if not clock.run_ahead(end):
                self._flight = flight
                clock.call_at(end, self._frame_end)
                return
        self._next()

    #: longest run of frames moved at once (:meth:`_move_run`); 0: one frame at a time
    RUN_LIMIT = 64

    def _move_run(self) -> int:
        """Move the pending frames of one sender and identifier at the top of the queue as
        one run, while the clock may run ahead to each one's last bit
        (:meth:`SimClock.run_ahead_count`) and every receiver takes each quietly (its
        :class:`RunListener`): the frames :meth:`_frame_end` would move one by one, at the
        same instants, in the same order, in one call a receiver.  Called only after the
        frame before was taken quietly, inside :meth:`_frame_end`; returns how many frames
        moved (0: none, the queue as it was)."""
        pending = self._pending
        top = pending[0]
        sender, msg = top[2], top[3]
        aid, ext = msg.arbitration_id, msg.is_extended_id
        takers: list[RunListener] = []
        for bus in self.buses:
            if bus is not sender and not bus.closed:
                route = bus.run_route(aid, ext)
                if route is None:
                    return 0
                takers.extend(route)
        clock = self.clock
        rate = self.bitrate
        now = clock.now()
        if type(msg) is WireRun:
            return self._move_wire_run(top[2], msg, takers)
        popped: list[tuple[int, int, SimBus, Any]] = []
        ends: list[float] = []
        datas: list[bytes] = []
        sizes: list[int] = []
        limit = self.RUN_LIMIT
        pop = heapq.heappop
        while pending and len(popped) < limit:
            entry = pending[0]
            m = entry[3]
            if (
                entry[2] is not sender
                or type(m) is WireRun
                or m.arbitration_id != aid
                or m.is_extended_id != ext
                or m.is_fd
                or len(m.data) > 8
            ):
                break
            pop(pending)
            data = bytes(m.data)
            bits: int = can_frame_bits_unchecked(aid, ext, data, len(data))
            now = now + bits / rate  # as _start: the clock's time plus the frame's
            sizes.append(bits)
            popped.append(entry)
            ends.append(now)
            datas.append(data)
        n = clock.run_ahead_count(ends)
        for taker in takers:
            if n == 0:
                break
            n = min(n, taker.run_quiet(aid, ext, ends[:n], datas[:n]))
        for entry in popped[n:]:  # back in place: (prio, seq) keep their order
            heapq.heappush(pending, entry)
        if n == 0:
            return 0
        if n < len(popped):
            del ends[n:], datas[n:]
        return self._deliver_run(sender, aid, ext, ends, sum(sizes[:n]), datas)

    def _move_wire_run(self, sender: SimBus, run: WireRun, takers: list[RunListener]) -> int:
        """:meth:`_move_run` of the :class:`WireRun` at the top of the queue: its next
        frames, as many as the clock and every receiver take (the rest left in place)."""
        clock = self.clock
        rate = self.bitrate
        aid = run.arbitration_id
        datas = run.datas[run.at : run.at + self.RUN_LIMIT]
        now = clock.now()
        ends: list[float] = []
        sizes: list[int] = []
        bits_of = can_frame_bits_unchecked
        for data in datas:
            bits: int = bits_of(aid, False, data, len(data))
            now = now + bits / rate  # as _start: the clock's time plus the frame's
            sizes.append(bits)
            ends.append(now)
        n = clock.run_ahead_count(ends)
        for taker in takers:
            if n == 0:
                return 0
            n = min(n, taker.run_quiet(aid, False, ends[:n], datas[:n]))
        if n == 0:
            return 0
        if n < len(datas):
            del ends[n:], datas[n:], sizes[n:]
        run.at += n
        if run.at == len(run.datas):
            heapq.heappop(self._pending)
        return self._deliver_run(sender, aid, False, ends, sum(sizes), datas)

    def _deliver_run(
        self,
        sender: SimBus,
        aid: int,
        ext: bool,
        ends: list[float],
        bits: int,
        datas: list[bytes],
    ) -> int:
        """Count a run of ``len(ends)`` frames taken (``bits`` on the wire in all), move the
        clock to its last frame's end and hand it to every other open bus, stamped as
        SimClock.wall at each end; returns the frames moved."""
        n = len(ends)
        self.frames += n
        self.bits += bits
        clock = self.clock
        clock.run_ahead_run(ends[-1], n)
        epoch = clock.epoch
        stamps = [epoch + t for t in ends]  # as SimClock.wall at each instant
        for bus in self.buses:
            if bus is not sender and not bus.closed:
                bus.take_run(aid, ext, ends, stamps, datas)
        return n

    def _deliver(self, sender: SimBus, aid: int, data: bytes, ext: bool) -> bool:
        """Hand the frame to every other open bus; True when every one took it quietly."""
        stamp = self.clock.wall()
        quiet = True
        for bus in list(self.buses):
            if bus is not sender and not bus.closed and not bus.deliver_data(stamp, aid, data, ext):
                quiet = False
        return quiet

    def _delivery(self, sender: SimBus, msg: can.Message) -> Callable[[], None]:
        data = bytes(msg.data)
        ext = msg.is_extended_id
        fd, brs = msg.is_fd, msg.bitrate_switch

        def deliver() -> None:
            if fd:  # an FD frame keeps its flags: the raw channel's ISO-TP reads them
                stamp = self.clock.wall()
                for bus in list(self.buses):
                    if bus is not sender and not bus.closed:
                        bus.deliver(
                            can.Message(
                                timestamp=stamp,
                                arbitration_id=msg.arbitration_id,
                                data=data,
                                is_extended_id=ext,
                                is_fd=True,
                                bitrate_switch=brs,
                                is_rx=True,
                                channel=self.channel,
                            )
                        )
                return
            self._deliver(sender, msg.arbitration_id, data, ext)

        return deliver


def sim_wire(clock: SimClock, channel: str, bitrate: int | None) -> SimWire:
    """The wire of ``channel`` on ``clock`` (created on first use). Raises RigError when
    two nodes name different bitrates for one channel."""
    wires: dict[str, SimWire] = clock.__dict__.setdefault("_sim_wires", {})
    wire = wires.get(channel)
    rate = int(bitrate) if bitrate else None
    if wire is None:
        wire = wires[channel] = SimWire(clock, channel, rate or DEFAULT_SIM_BITRATE)
    elif rate is not None and rate != wire.bitrate:
        raise RigError(
            f"simulated bus {channel!r} runs at {wire.bitrate} bit/s; a node asked for {rate}"
        )
    return wire


class SimBus(can.BusABC):
    """A python-can bus on a :class:`SimWire`. It has no receive queue: a received frame is
    handed at once to :attr:`on_receive` (set by the :class:`feltlab.rig.bus.transport.Node`),
    in simulated time; :meth:`recv` is never used."""

    def __init__(self, wire: SimWire, **kwargs: Any) -> None:
        self.wire = wire
        self.closed = False
        self.on_receive: Callable[[can.Message], bool | None] | None = None
        #: the node's receiver of a frame's fields (:meth:`deliver_data`), or None
        self.on_data: RawListener | None = None
        #: the node's run route and run taker (:meth:`run_route`, :meth:`take_run`), or None
        self.on_run: Callable[[int, bool], list[RunListener] | None] | None = None
        self.on_take_run: (
            Callable[[int, bool, list[float], list[float], list[bytes]], None] | None
        ) = None
        super().__init__(channel=wire.channel, **kwargs)
        self.channel_info = f"simulated {wire.channel} at {wire.bitrate} bit/s"
        wire.buses.append(self)

    def deliver_data(self, stamp: float, aid: int, data: bytes, ext: bool) -> bool:
        """Hand this node a received classic data frame by its fields (its raw listeners,
        :attr:`on_data`, when it has them; else as a python-can message); True when taken
        quietly."""
        if self.on_data is not None:
            return self.on_data(stamp, aid, data, ext) is True
        msg = can.Message(stamp, aid, ext, False, False, self.wire.channel, None, data, False)
        return self.deliver(msg)

    def run_route(self, aid: int, ext: bool) -> list[RunListener] | None:
        """The run forms of this node's listeners of data frames of ``aid``
        (:attr:`on_run`), or None when a run cannot go to it as one (one of them has none,
        or the node has no such route)."""
        return None if self.on_run is None else self.on_run(aid, ext)

    def take_run(
        self, aid: int, ext: bool, ends: list[float], stamps: list[float], datas: list[bytes]
    ) -> None:
        """Hand this node a run its :meth:`run_route` took quietly, frame for frame."""
        if self.on_take_run is not None:
            self.on_take_run(aid, ext, ends, stamps, datas)

    def deliver(self, msg: can.Message) -> bool:
        """Hand ``msg`` to this node; True when it took it quietly (:class:`SimListeners`)."""
        if self.on_receive is None:
            return True
        return self.on_receive(msg) is True

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        if self.closed:
            raise can.CanOperationError("the simulated bus is shut down")
        self.wire.transmit(self, msg)

    def takes_runs(self) -> bool:
        """True when :meth:`send_run` may be used: open, on a wire without a fault injector."""
        return not self.closed and self.wire.chaos is None

    def send_run(self, aid: int, datas: list[bytes]) -> None:
        """:meth:`send` of classic data frames of 11-bit ``aid`` queued at one instant, in
        order, with no python-can message built (:meth:`SimWire.transmit_run`)."""
        if self.closed:
            raise can.CanOperationError("the simulated bus is shut down")
        self.wire.transmit_run(self, aid, datas)

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        return None, False

    def shutdown(self) -> None:
        if not self.closed:
            self.closed = True
            if self in self.wire.buses:
                self.wire.buses.remove(self)
        super().shutdown()


class SimListeners:
    """What a :class:`Node` in simulated time has instead of a ``can.Notifier``: the same
    ``add_listener`` / ``remove_listener`` / ``stop``, called synchronously on delivery.  A
    listener added with ``wants(arbitration_id, is_extended_id)`` is called only with the
    frames it accepts (the ISO-TP links, the device's command reader and the client: most
    frames concern one listener of several); the routes are built once per id, so ``wants``
    must be a pure function of its arguments.  Every listener is called in the order it was
    added.  A listener returns True when it took the frame quietly: it scheduled nothing and
    changed nothing a waiter's predicate reads (the capture, an ISO-TP receiver absorbing a
    consecutive frame); :meth:`dispatch` tells whether every one did, which lets the wire
    move the next frame at once (:meth:`SimWire._frame_end`)."""

    def __init__(self) -> None:
        self.listeners: list[
            tuple[
                Callable[[can.Message], Any],
                Callable[[int, bool], bool] | None,
                RawListener | None,
                RunListener | None,
            ]
        ] = []
        self._routes: dict[int, list[Callable[[can.Message], Any]]] = {}
        self._raw_routes: dict[int, list[RawListener] | None] = {}
        self._run_routes: dict[int, list[RunListener] | None] = {}

    def add_listener(
        self,
        fn: Callable[[can.Message], Any],
        wants: Callable[[int, bool], bool] | None = None,
        raw: RawListener | None = None,
        run: RunListener | None = None,
    ) -> None:
        """Add ``fn``; ``raw``: the same listener taking a received data frame's fields
        ``(timestamp, arbitration_id, data, is_extended_id)`` without a python-can message
        (:meth:`raw_route`); ``run``: the same taking a run of them at once
        (:meth:`run_route`; only with ``raw``)."""
        self.listeners.append((fn, wants, raw, run if raw is not None else None))
        self._routes = {}
        self._raw_routes = {}
        self._run_routes = {}

    def remove_listener(self, fn: Callable[[can.Message], Any]) -> None:
        for i, (f, _, _, _) in enumerate(self.listeners):
            if f == fn:
                del self.listeners[i]
                self._routes = {}
                self._raw_routes = {}
                self._run_routes = {}
                return
        raise ValueError("listener not added")

    def raw_route(self, aid: int, ext: bool) -> list[RawListener] | None:
        """The raw forms of the listeners a data frame of ``aid`` goes to, in order; None
        when one of them has none (the frame then goes as a python-can message)."""
        key = aid | 0x20000000 if ext else aid
        try:
            return self._raw_routes[key]
        except KeyError:
            pass
        picked = [(raw, wants) for _, wants, raw, _ in self.listeners]
        route = [raw for raw, wants in picked if wants is None or wants(aid, ext)]
        raws = None if any(r is None for r in route) else [r for r in route if r is not None]
        self._raw_routes[key] = raws
        return raws

    def run_route(self, aid: int, ext: bool) -> list[RunListener] | None:
        """The run forms of the listeners a data frame of ``aid`` goes to, in order
        (:class:`RunListener`); None when one of them has none (the frames then go one by
        one)."""
        key = aid | 0x20000000 if ext else aid
        try:
            return self._run_routes[key]
        except KeyError:
            pass
        route = [run for _, wants, _, run in self.listeners if wants is None or wants(aid, ext)]
        runs = None if any(r is None for r in route) else [r for r in route if r is not None]
        self._run_routes[key] = runs
        return runs

    def dispatch(self, msg: can.Message) -> bool:
        aid = msg.arbitration_id
        ext = msg.is_extended_id
        key = aid | 0x20000000 if ext else aid  # 29-bit ids: bit 29 tells them apart
        route = self._routes.get(key)
        if route is None:  # built once per id; never changed in place, so safe to iterate
            route = [f for f, wants, _, _ in self.listeners if wants is None or wants(aid, ext)]
            self._routes[key] = route
        quiet = True
        for fn in route:
            try:
                if fn(msg) is not True:
                    quiet = False
            except Exception:  # a listener's bug must not stop the others (python-can #1039)
                log.exception("a listener failed on frame 0x%03X", msg.arbitration_id)
                quiet = False
        return quiet

    def stop(self, timeout: float = 0.0) -> None:
        self.listeners.clear()
        self._routes = {}
        self._raw_routes = {}
        self._run_routes = {}


class _ClockTimer(IsoTpTimer):
    """can-isotp's Timer reading a :class:`SimClock` instead of ``time.perf_counter_ns``."""

    def __init__(self, now: Callable[[], float], timeout: float) -> None:
        self._now = now
        super().__init__(timeout)

    def start(self, timeout: float | None = None) -> None:
        if timeout is not None:
            self.set_timeout(timeout)
        self.start_time = round(self._now() * 1e9)

    def elapsed_ns(self) -> int:
        if self.start_time is None:
            return 0
        return round(self._now() * 1e9) - self.start_time

    def elapsed(self) -> float:
        return self.elapsed_ns() / 1e9

    def deadline(self) -> float | None:
        """Simulated time at which this timer times out, or None when stopped."""
        if self.start_time is None:
            return None
        return (self.start_time + self.timeout) / 1e9


class _ClockLogic(isotp.TransportLayerLogic):
    """can-isotp's ISO-TP state machine with its timers on a :class:`SimClock` (it creates
    them in ``__init__``, ``load_params`` and the two ``_start_rx_*_timer`` methods).  Every
    frame is processed the instant its last bit passes, so every timer starts and expires at
    the simulated instant it would on a bus."""

    def __init__(self, clock: SimClock, *args: Any, **kwargs: Any) -> None:
        self._clock = clock
        super().__init__(*args, **kwargs)
        self.timer_tx_stmin = _ClockTimer(self.now, 0)

    def now(self) -> float:
        return self._clock.now()

    def load_params(self) -> None:
        super().load_params()
        if self.__dict__.get("_clock") is not None:
            self.timer_rx_fc = _ClockTimer(self.now, self.params.rx_flowcontrol_timeout / 1000)
            self.timer_rx_cf = _ClockTimer(
                self.now, self.params.rx_consecutive_frame_timeout / 1000
            )

    def _start_rx_fc_timer(self) -> None:
        self.timer_rx_fc = _ClockTimer(self.now, self.params.rx_flowcontrol_timeout / 1000)
        self.timer_rx_fc.start()

    def _start_rx_cf_timer(self) -> None:
        # restarted at every consecutive frame: the one timer, not a new one each time
        timer = self.timer_rx_cf
        if not isinstance(timer, _ClockTimer):
            timer = self.timer_rx_cf = _ClockTimer(self.now, 0)
        timer.start(self.params.rx_consecutive_frame_timeout / 1000)

    def receiving_quietly(self) -> bool:
        """True when a consecutive frame could be taken by
        :meth:`absorb_consecutive_frame`: receiving (after a first frame of 8-byte frames),
        nothing to send (no flow control pending, no payload queued or in transmission), the
        N_Cr timer on the clock, and can-isotp not logging each frame (debug).  Only
        can-isotp's own calls change this, so :class:`SimIsoTpChannel` asks after each."""
        return (
            self.rx_state == self.RxState.WAIT_CF
            and self.tx_state == self.TxState.IDLE
            and not self.pending_flow_control_tx
            and self.tx_queue.empty()
            and self.actual_rxdl == 8
            and isinstance(self.timer_rx_cf, _ClockTimer)
            and not self.logger.isEnabledFor(logging.DEBUG)
        )

    def absorb_consecutive_frame(self, data: bytes) -> bool:
        """Take ``data``, arriving now while :meth:`receiving_quietly`, as can-isotp's receiver
        takes a consecutive frame that needs no answer, without its per-frame machinery: a
        full frame (8 bytes, as the sender's others) with the next sequence number, arriving
        within N_Cr of the last, that neither completes the payload nor ends a block (no flow
        control due).  can-isotp (``_process_rx``) then restarts the N_Cr timer, notes the
        sequence number, appends the 7 data bytes and counts the frame in its block: exactly
        what is done here.  Returns False, having done nothing, for any other frame, which
        can-isotp then processes (tests/rig/test_simsender.py compares the two paths)."""
        timer = self.timer_rx_cf
        start = timer.start_time
        now_ns = round(self._clock.now() * 1e9)
        if (
            len(data) != 8
            or data[0] != 0x20 | ((self.last_seqnum + 1) & 0x0F)
            or start is None
            or timer.timeout == 0
            or now_ns - start > timer.timeout  # N_Cr passed
            or self.rx_frame_length - len(self.rx_buffer) <= 7  # completes the payload
        ):
            return False
        block = self.rx_block_counter + 1
        if self.params.blocksize > 0 and block % self.params.blocksize == 0:
            return False  # ends a block: a flow control is due
        # the N_Cr timer restarted now, as _ClockTimer.start(N_Cr) does
        timer.timeout = int(self.params.rx_consecutive_frame_timeout / 1000 * 1e9)
        timer.start_time = now_ns
        self.last_seqnum = data[0] & 0x0F
        self.rx_buffer.extend(data[1:])
        self.rx_block_counter = block
        return True

    def absorb_run_count(self, ends: list[float], datas: list[bytes]) -> int:
        """How many leading frames of ``datas``, arriving at the simulated instants ``ends``
        (seconds), :meth:`absorb_consecutive_frame` would take one after another; no side
        effect (:meth:`absorb_run` takes them)."""
        timer = self.timer_rx_cf
        start = timer.start_time
        timeout = timer.timeout
        if start is None or timeout == 0:
            return 0
        n_cr = int(self.params.rx_consecutive_frame_timeout / 1000 * 1e9)
        seq = self.last_seqnum
        left = self.rx_frame_length - len(self.rx_buffer)
        block = self.rx_block_counter
        size = self.params.blocksize
        n = 0
        for when, data in zip(ends, datas, strict=True):
            now_ns = round(when * 1e9)
            if (
                len(data) != 8
                or data[0] != 0x20 | ((seq + 1) & 0x0F)
                or now_ns - start > timeout
                or left <= 7
            ):
                break
            block += 1
            if size > 0 and block % size == 0:
                break
            timeout, start, seq, left = n_cr, now_ns, data[0] & 0x0F, left - 7
            n += 1
        return n

    def absorb_run(self, ends: list[float], datas: list[bytes]) -> None:
        """:meth:`absorb_consecutive_frame` of each frame (all within
        :meth:`absorb_run_count`): the N_Cr timer restarted at the last one's instant, its
        sequence number noted, the data bytes appended, the frames counted in the block."""
        timer = self.timer_rx_cf
        timer.timeout = int(self.params.rx_consecutive_frame_timeout / 1000 * 1e9)
        timer.start_time = round(ends[-1] * 1e9)
        self.last_seqnum = datas[-1][0] & 0x0F
        self.rx_buffer.extend(b"".join([d[1:] for d in datas]))
        self.rx_block_counter += len(datas)

    def deadlines(self) -> list[float]:
        out = []
        for t in (self.timer_rx_fc, self.timer_rx_cf, self.timer_tx_stmin):
            d = t.deadline() if isinstance(t, _ClockTimer) else None
            if d is not None:
                out.append(d)
        return out


class SimStack:
    """The part of ``isotp.NotifierBasedCanStack`` the rig uses, in simulated time."""

    def __init__(self, channel: SimIsoTpChannel) -> None:
        self._ch = channel

    def recv(self, block: bool = False, timeout: float | None = None) -> bytearray | None:
        return self._ch.logic.recv(block=False)

    def available(self) -> bool:
        return self._ch.logic.available()

    def transmitting(self) -> bool:
        return self._ch.logic.transmitting()

    def stop_sending(self) -> None:
        self._ch.logic.stop_sending()


class SimIsoTpChannel:
    """An ISO-TP link (normal 11-bit addressing) in simulated time, with the interface of
    :class:`feltlab.rig.bus.isotp_channel.IsoTpChannel`. ``on_payload`` (if given) is called with
    each complete payload instead of queueing it for :meth:`recv`.  Each frame is processed
    the instant it arrives; a consecutive frame that needs no answer is taken without
    can-isotp's per-frame machinery (:meth:`_ClockLogic.absorb_consecutive_frame`; off when
    :attr:`absorb` is False)."""

    #: take quiet consecutive frames the lean way (False: every frame through can-isotp)
    absorb = True

    def __init__(
        self,
        name: str,
        node: Any,
        txid: int,
        rxid: int,
        *,
        cf_timeout: float = 0.25,
        fc_timeout: float = 1.0,
        blocksize: int = 0,
        stmin: int = 0,
        on_payload: Callable[[bytes], None] | None = None,
    ) -> None:
        self._transfer_error = TransferError
        self.name = name
        self.node = node
        self.clock: SimClock = node.clock
        self.rxid = rxid
        self.errors: list[str] = []
        self._error_flag = threading.Event()
        self.on_payload = on_payload
        self._rx: deque[isotp.CanMessage] = deque()
        #: the state machine is receiving quietly (``_ClockLogic.receiving_quietly``), as of
        #: the last pump: consecutive frames may be absorbed
        self._quiet = False
        self._wake: ScheduledCall | None = None
        self._closed = False
        #: a complete payload waits in the state machine (set by :meth:`pump`)
        self._ready = False
        address, params = isotp_link(txid, rxid, cf_timeout, fc_timeout, blocksize, stmin)
        self.logic = _ClockLogic(
            self.clock, self._rxfn, self._txfn, address, self._on_error, params
        )
        self.stack = SimStack(self)
        node.add_listener(self._on_frame, arbitration_id=rxid, raw=self._on_data, run=self)

    def _rxfn(self, timeout: float) -> isotp.CanMessage | None:
        return self._rx.popleft() if self._rx else None

    def _txfn(self, msg: isotp.CanMessage) -> None:
        try:
            self.node.bus.send(
                can.Message(
                    arbitration_id=msg.arbitration_id,
                    data=bytes(msg.data),
                    is_extended_id=msg.is_extended_id,
                )
            )
        except can.CanError as exc:
            self._on_error(exc)

    def _on_error(self, error: Exception) -> None:
        self.errors.append(f"{type(error).__name__}: {error}")
        log.debug("ISO-TP %s: %s", self.name, error)
        self._error_flag.set()

    def _on_frame(self, msg: can.Message) -> bool:
        """Take a frame of ``rxid``; True when absorbed quietly (nothing answered, nothing
        completed, no timer moved earlier, nothing scheduled)."""
        if msg.arbitration_id != self.rxid or msg.is_extended_id or self._closed:
            return False
        data = bytes(msg.data)
        if self._quiet and self.logic.absorb_consecutive_frame(data):
            return True
        self._rx.append(isotp.CanMessage(arbitration_id=msg.arbitration_id, data=data, dlc=msg.dlc))
        self.pump()
        return False

    def _on_data(self, stamp: float, aid: int, data: bytes, ext: bool) -> bool:
        """:meth:`_on_frame` on a frame's fields (``SimListeners.raw_route``)."""
        if aid != self.rxid or ext or self._closed:
            return False
        if self._quiet and self.logic.absorb_consecutive_frame(data):
            return True
        self._rx.append(isotp.CanMessage(arbitration_id=aid, data=data, dlc=len(data)))
        self.pump()
        return False

    def run_quiet(self, aid: int, ext: bool, ends: list[float], datas: list[bytes]) -> int:
        """:class:`RunListener`: how many frames of a run :meth:`_on_data` would absorb."""
        if aid != self.rxid or ext or self._closed or not self._quiet:
            return 0
        return self.logic.absorb_run_count(ends, datas)

    def run_take(
        self, aid: int, ext: bool, ends: list[float], stamps: list[float], datas: list[bytes]
    ) -> None:
        """:class:`RunListener`: absorb the frames (all within :meth:`run_quiet`'s count)."""
        self.logic.absorb_run(ends, datas)

    def pump(self) -> None:
        """Process the state machine until it rests; plan a wake-up at its next timer."""
        if self._closed:
            return
        self.logic.process()
        while self._rx:
            self.logic.process()
        if self.on_payload is not None:
            while self.logic.available():
                data = self.logic.recv(block=False)
                if data is not None:
                    self.on_payload(bytes(data))
        self._ready = self.logic.available()
        self._quiet = self.absorb and self.logic.receiving_quietly()
        active = (
            self.logic.rx_state != self.logic.RxState.IDLE
            or self.logic.tx_state != self.logic.TxState.IDLE
            or not self.logic.tx_queue.empty()
        )
        # a timer already past needs no wake-up: process() just saw it (the STmin timer of a
        # sender waiting for the next block's flow control stays started, expired)
        now = self.clock.now()
        dls = [d for d in self.logic.deadlines() if d + 1e-6 > now] if active else []
        if dls:
            when = min(dls) + 1e-6  # can-isotp times out strictly after its timeout
            if self._wake is None or self._wake.cancelled or self._wake.when > when:
                if self._wake is not None:
                    self._wake.cancel()
                self._wake = self.clock.call_at(when, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        self.pump()

    def send(self, payload: bytes) -> None:
        """Queue ``payload`` (at most 4095 bytes) for transmission."""
        self.logic.send(payload)
        self.pump()

    def send_and_wait(self, payload: bytes, timeout: float) -> None:
        """Send ``payload`` and wait (simulated) until its last frame is queued on the wire.
        Raises :class:`TransferError` on a failed or unfinished transfer."""
        self._error_flag.clear()
        self.send(payload)
        done = self.clock.wait(
            lambda: self._error_flag.is_set() or not self.logic.transmitting(), timeout
        )
        if self._error_flag.is_set():
            raise self._transfer_error(f"ISO-TP {self.name}: {self.errors[-1]}")
        if not done:
            self.logic.stop_sending()
            raise self._transfer_error(f"ISO-TP {self.name}: send not finished in {timeout:.3f} s")

    def clear(self) -> None:
        """Forget errors and drop any payload already received."""
        self._error_flag.clear()
        while self.logic.available():
            self.logic.recv(block=False)
        self._ready = False

    def recv(self, timeout: float) -> bytes:
        """The next complete payload. Raises :class:`TransferError` on a stack error or when
        nothing completes within ``timeout`` simulated seconds."""
        got: bool | None = True
        if not self.logic.available():
            # a payload completes only in pump(), which notes it: a cheap test after each event
            got = self.clock.wait(lambda: self._ready or self._error_flag.is_set(), timeout)
        if self.logic.available():
            data = self.logic.recv(block=False)
            assert data is not None
            self._ready = self.logic.available()
            return bytes(data)
        if got and self._error_flag.is_set():
            self._error_flag.clear()
            raise self._transfer_error(f"ISO-TP {self.name}: {self.errors[-1]}")
        raise self._transfer_error(f"ISO-TP {self.name}: no payload within {timeout:.3f} s")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._wake is not None:
            self._wake.cancel()
        with contextlib.suppress(ValueError):
            self.node.remove_listener(self._on_frame)
