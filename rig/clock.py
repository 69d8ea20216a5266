"""One clock for the rig: every read of time, every sleep and every wait goes through a
:class:`Clock` (docs/design.md, "One clock").

- :class:`RealClock` is the host's time: ``time.monotonic`` for intervals, ``time.time``
  for timestamps, and one loop thread per clock that runs scheduled callbacks. A real device
  on an external bus is certified in real time.
- :class:`SimClock` is simulated time: a deterministic discrete-event schedule. Nothing
  sleeps and nothing is left to thread scheduling: a caller that waits runs the pending
  events in time order (ties in the order they were scheduled) until what it waits for
  holds or its simulated deadline passes. A simulated campaign on the in-process bus is
  then a pure function of its seed, on a quiet or a busy host.

Times are seconds (float). ``now()`` is monotonic from an arbitrary origin (0.0 for a new
:class:`SimClock`); ``wall()`` is seconds since the epoch, for capture timestamps (a
:class:`SimClock` starts at its fixed ``epoch``, 2000-01-01T00:00:00Z by default, so that
captures are byte-identical run after run).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from feltlab.rig.errors import RigError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the wall-clock origin of simulated time: 2000-01-01T00:00:00Z (after 1990, so python-can's
#: BLF writer stores absolute stamps).
SIM_EPOCH = 946_684_800.0


class SimulationStall(RigError):
    """Simulated time could not advance: more events than ``max_events`` ran at one instant
    (a zero-delay loop), or the simulation passed its ``horizon`` (seconds)."""


class ScheduledCall:
    """A callback scheduled on a clock; :meth:`cancel` before it runs and it never does."""

    __slots__ = ("cancelled", "fn", "when")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Clock(ABC):
    """What the rig asks of time. ``simulated`` tells a reader (and the record) which."""

    simulated: bool = False

    @abstractmethod
    def now(self) -> float:
        """Monotonic seconds."""

    @abstractmethod
    def wall(self) -> float:
        """Seconds since the epoch (capture timestamps)."""

    @abstractmethod
    def call_at(self, when: float, fn: Callable[[], None]) -> ScheduledCall:
        """Run ``fn()`` at ``now() == when`` (at once if ``when`` has passed). Thread-safe."""

    def call_later(self, delay: float, fn: Callable[[], None]) -> ScheduledCall:
        """Run ``fn()`` after ``delay`` seconds (>= 0)."""
        return self.call_at(self.now() + max(0.0, delay), fn)

    def call_soon(self, fn: Callable[[], None]) -> ScheduledCall:
        """Run ``fn()`` as soon as the clock's loop can (after what is already due)."""
        return self.call_at(self.now(), fn)

    @abstractmethod
    def wait(
        self,
        predicate: Callable[[], T | None],
        timeout: float,
        cond: threading.Condition | None = None,
    ) -> T | None:
        """The first truthy ``predicate()``, or None once ``timeout`` seconds have passed.

        ``cond`` is the condition the producers notify (real time); the predicate is
        evaluated holding it. An exception the predicate raises propagates.
        """

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass (simulated: run the events due meanwhile)."""
        self.wait(lambda: None, seconds)

    def lock(self, cond: threading.Condition | None) -> AbstractContextManager[Any]:
        return cond if cond is not None else nullcontext()

    def close(self) -> None:  # noqa: B027 - only a real clock has a thread to stop
        """Stop the clock's loop (a real clock's thread); scheduled calls never run."""


class SimClock(Clock):
    """Simulated time: a discrete-event schedule run by whoever waits.

    Single-threaded by design: devices, the simulated bus, ISO-TP timers and the host's
    timeouts all advance this one clock; only the thread that drives the campaign may call
    :meth:`wait`. An exception raised by a scheduled callback (a device bug) is logged and
    kept in :attr:`crashes`; it never unwinds into the waiter.

    ``horizon``: the simulated seconds after which :meth:`wait` raises
    :class:`SimulationStall` (nothing can hang: default one simulated week).
    ``max_events``: callbacks allowed at one instant before :class:`SimulationStall`.
    """

    simulated = True

    def __init__(
        self,
        *,
        epoch: float = SIM_EPOCH,
        horizon: float = 7 * 86_400.0,
        max_events: int = 1_000_000,
    ) -> None:
        self.epoch = epoch
        self.horizon = horizon
        self.max_events = max_events
        self._now = 0.0
        self._heap: list[tuple[float, int, ScheduledCall]] = []
        self._seq = itertools.count()
        self._same_instant = 0
        self.events_run = 0
        #: (simulated time, repr of the exception) of each callback that raised
        self.crashes: list[tuple[float, str]] = []
        #: the deadline of the innermost :meth:`wait` running, or None outside one
        self._deadline: float | None = None

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self.epoch + self._now

    def call_at(self, when: float, fn: Callable[[], None]) -> ScheduledCall:
        call = ScheduledCall(max(when, self._now), fn)
        heapq.heappush(self._heap, (call.when, next(self._seq), call))
        return call

    def next_time(self) -> float | None:
        """When the next pending callback is due, or None when nothing is scheduled."""
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def step(self) -> bool:
        """Run the next pending callback (advancing time to it); False if there is none."""
        when = self.next_time()
        if when is None:
            return False
        self._run_next(when)
        return True

    def _run_next(self, when: float) -> None:
        """Run the callback at the top of the heap, due at ``when`` (from :meth:`next_time`)."""
        _, _, call = heapq.heappop(self._heap)
        if when > self._now:
            self._advance(when)  # the horizon holds while events keep coming, too
        self._same_instant += 1
        if self._same_instant > self.max_events:
            raise SimulationStall(
                f"more than {self.max_events} events at simulated t={self._now:.6f} s: "
                "a zero-delay loop in a device or the host"
            )
        self.events_run += 1
        try:
            call.fn()
        except RigError as exc:
            self.crashes.append((self._now, f"{type(exc).__name__}: {exc}"))
            log.error("simulated t=%.6f s: %s", self._now, exc)
        except Exception as exc:
            self.crashes.append((self._now, f"{type(exc).__name__}: {exc}"))
            log.exception("simulated t=%.6f s: a scheduled callback raised", self._now)

    def run_ahead(self, when: float) -> bool:
        """Advance to ``when`` inside the running callback, as if a callback due at ``when``
        had been popped next: allowed (True, the time set, the event counted) only within a
        :meth:`wait` whose deadline is not before ``when``, with no pending callback due at
        or before ``when``.  The caller must have changed nothing the waiter's predicate
        reads since that predicate was last evaluated (the simulated wire's quiet frames,
        :class:`feltlab.rig.bus.simbus.SimWire`), so the waiter would have gone on waiting;
        then running its next callback at once is what :meth:`wait` would have done."""
        deadline = self._deadline
        if deadline is None or not self._now < when <= deadline or when > self.horizon:
            return False  # (past the horizon: the waiter's own step raises SimulationStall)
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        if heap and heap[0][0] <= when:
            return False
        self._advance(when)
        self._same_instant = 1
        self.events_run += 1
        return True

    def run_ahead_count(self, ends: Sequence[float]) -> int:
        """How many of the instants ``ends`` (increasing) :meth:`run_ahead` would allow one
        after another, nothing being scheduled meanwhile: the frames of a run on the
        simulated wire (:class:`feltlab.rig.bus.simbus.SimWire`); no side effect.  Take them
        with :meth:`run_ahead_run`."""
        deadline = self._deadline
        if deadline is None:
            return 0
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        bound = min(deadline, self.horizon)
        top = heap[0][0] if heap else None
        now = self._now
        n = 0
        for when in ends:
            if not now < when <= bound or (top is not None and top <= when):
                break
            now = when
            n += 1
        return n

    def run_ahead_run(self, when: float, events: int) -> None:
        """Advance to ``when`` as ``events`` successive :meth:`run_ahead` calls allowed by
        :meth:`run_ahead_count` would (the last one's instant; each counted as an event)."""
        self._advance(when)
        self._same_instant = 1
        self.events_run += events

    def run_until(self, when: float) -> None:
        """Run every callback due up to ``when``, then set the time to ``when``."""
        while True:
            nxt = self.next_time()
            if nxt is None or nxt > when:
                break
            self.step()
        self._advance(when)

    def _advance(self, when: float) -> None:
        if when > self._now:
            self._now = when
            self._same_instant = 0
        if self._now > self.horizon:
            raise SimulationStall(
                f"simulated time passed its horizon of {self.horizon:.0f} s; the campaign "
                "waits on something that never happens"
            )

    def wait(
        self,
        predicate: Callable[[], T | None],
        timeout: float,
        cond: threading.Condition | None = None,
    ) -> T | None:
        deadline = self._now + max(0.0, timeout)
        outer, self._deadline = self._deadline, deadline
        try:
            with self.lock(cond):
                while True:
                    value = predicate()
                    if value:
                        return value
                    nxt = self.next_time()
                    if nxt is None or nxt > deadline:
                        self._advance(deadline)
                        value = predicate()
                        return value if value else None
                    self._run_next(nxt)
        finally:
            self._deadline = outer


class RealClock(Clock):
    """The host's time. Scheduled callbacks run on one daemon thread per clock (started on
    first use), in time order; an exception they raise is logged and kept in
    :attr:`crashes`."""

    simulated = False

    def __init__(self, name: str = "rig-clock") -> None:
        self.name = name
        self._heap: list[tuple[float, int, ScheduledCall]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.crashes: list[tuple[float, str]] = []

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def call_at(self, when: float, fn: Callable[[], None]) -> ScheduledCall:
        call = ScheduledCall(when, fn)
        with self._cv:
            if self._closed:
                call.cancelled = True
                return call
            heapq.heappush(self._heap, (when, next(self._seq), call))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._cv.notify()
        return call

    def _loop(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self._closed:
                        return
                    if self._heap and self._heap[0][2].cancelled:
                        heapq.heappop(self._heap)
                        continue
                    if self._heap and self._heap[0][0] <= time.monotonic():
                        _, _, call = heapq.heappop(self._heap)
                        break
                    left = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cv.wait(left)
            try:
                call.fn()
            except Exception as exc:
                self.crashes.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))
                log.exception("%s: a scheduled callback raised", self.name)

    def wait(
        self,
        predicate: Callable[[], T | None],
        timeout: float,
        cond: threading.Condition | None = None,
    ) -> T | None:
        deadline = time.monotonic() + max(0.0, timeout)
        c = cond if cond is not None else threading.Condition()
        with c:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                c.wait(min(left, 0.05) if cond is None else left)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._heap.clear()
            self._cv.notify_all()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5.0)
