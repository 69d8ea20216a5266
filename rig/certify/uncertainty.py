"""What the certifying host itself contributes to every timing it measures (issue 13, item 5).

A latency the rig reports is the device's latency plus the host's: the time the host takes
to wake a waiting thread, to take a frame off its bus and to stamp it.  On a busy host that
can reach milliseconds.  This module measures it, on the bus the campaign uses, so that a
timing verdict can say when the host cannot tell PASS from FAIL:

- **timer overshoot**: ask the :class:`~feltlab.rig.clock.Clock` to sleep ``delay`` seconds
  ``samples`` times and record how much longer each sleep took (the scheduling latency a
  waiting thread sees), as p50 / p99 / max seconds;
- **loopback round trips**: a frame sent from a node of the host to a second python-can bus
  object of the host that echoes it back, timed from send to echo, where the bus allows it
  (``virtual``: a sibling channel; ``udp_multicast``: the same group on the next port), so
  that no calibration frame ever reaches the device under test; a serial ``slcan`` adapter
  or a hardware interface has one node per adapter and gets none (said in the record);
- **timestamp source** of each bus: python-can gives no flag; ``virtual``,
  ``udp_multicast`` and ``slcan`` frames are stamped by the host's ``time.time()`` when read
  (software), ``socketcan`` by the kernel on reception (software), ``pcan``, ``kvaser`` and
  ``vector`` by the adapter (hardware); every frame the rig sends is stamped by the host.

The figures are combined into the uncertainty bound of a timing verdict
(:attr:`HostUncertainty.seconds` for a p99 limit, :attr:`HostUncertainty.seconds_max` for a
max limit): the larger of the timer overshoot and the loopback round trip at that
percentile, plus twice the timestamp resolution (a duration has two stamps).  A verdict
whose margin to its limit lies within it is INCONCLUSIVE
(:func:`feltlab.rig.certify.measures.within`).

**A device on the certifying host** (a simulated device the rig runs in real time, or one
started on the same machine with ``feltlab device run``; ``device_on_host``) shares the
host's CPU: its own timers wake late by the host's scheduling latency, so every timing it
emits (a heartbeat's send, a reply's) carries that latency once more.  All through
collection a child process of the rig samples the timer overshoot another process of this
host sees (:class:`~feltlab.rig.certify.uncertainty_measure.SiblingSampler`: a process queued
behind others waits longer than the rig's own threads do); the bounds then add that
device-side overshoot (p99 for ``seconds``, max for ``seconds_max``; the rig's own when no
sibling sample exists), and the record says so.  A real device on its own hardware never
sets it.

In simulated time (:class:`~feltlab.rig.clock.SimClock`, ``clock.simulated``) the host takes
no part in any timing: the uncertainty is exactly 0 and the record says "simulated time".

A campaign records its calibrations (before collection and during it) in
``host-uncertainty.jsonl`` in its directory (:func:`record_calibration`); the analysis uses
the worst of them (:func:`combine`), live and offline alike.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import can
import numpy as np

from feltlab.inputs import read_text_regular
from feltlab.rig.certify.uncertainty_measure import (
    BusRef,
    CalibrationError,
    SiblingSampler,
    as_bus_spec,
    interface_of,
    loopback_spec,
    measure_loopback,
    measure_timer_overshoot,
    no_loopback_reason,
)
from feltlab.rig.clock import Clock
from feltlab.rig.errors import RigError

log = logging.getLogger(__name__)

CALIBRATION_FILE = "host-uncertainty.jsonl"
"""The campaign directory's calibrations, one JSON object a line (:func:`record_calibration`)."""

SIMULATED_TIME = "simulated time"

_TIMESTAMP_SOURCES = {
    "virtual": "software: the host's time.time() when the frame is read (python-can virtual)",
    "udp_multicast": "software: the host's time.time() when the datagram is read",
    "slcan": "software: the host's time.time() when the serial line is read (Lawicel "
    "adapters send no timestamp unless asked, and python-can does not ask)",
    "socketcan": "software: the kernel's reception stamp (SO_TIMESTAMP)",
    "pcan": "hardware: the adapter's clock",
    "kvaser": "hardware: the adapter's clock",
    "vector": "hardware: the adapter's clock",
}


@dataclass(frozen=True)
class Spread:
    """A sample of host delays in seconds: ``n``, ``p50``, ``p99``, ``max``."""

    n: int
    p50: float
    p99: float
    max: float

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "p50": self.p50, "p99": self.p99, "max": self.max}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Spread:
        return cls(int(d["n"]), float(d["p50"]), float(d["p99"]), float(d["max"]))


def spread(samples: Sequence[float] | np.ndarray) -> Spread:
    """p50 / p99 / max of ``samples`` (seconds; a negative overshoot, a sleep that returned
    early by the clock's rounding, counts as 0).  Raises :class:`CalibrationError` for an
    empty sample or a non-finite value."""
    a = np.asarray(samples, dtype=np.float64)
    if a.size == 0:
        raise CalibrationError("no calibration samples: give samples >= 1")
    if not np.isfinite(a).all():
        raise CalibrationError("calibration samples must be finite seconds")
    a = np.maximum(a, 0.0)
    p50, p99 = np.percentile(a, [50, 99])
    return Spread(int(a.size), float(p50), float(p99), float(a.max()))


def timestamp_source(spec: BusRef) -> str:
    """Where the stamps of frames received on ``spec`` come from ("software: ..." or
    "hardware: ..."); None is the in-process virtual bus."""
    interface = interface_of(spec)
    return _TIMESTAMP_SOURCES.get(
        interface, f"unknown: python-can's {interface} interface does not say; taken as software"
    )


@dataclass(frozen=True)
class HostUncertainty:
    """The host's measured timing uncertainty (see the module doc).

    ``seconds`` bounds a p99 verdict, ``seconds_max`` a max verdict (both 0 in simulated
    time); ``timer`` and ``loopback`` are the measured spreads (None: not measured, why in
    ``loopback_reason``); ``resolution_s`` the timestamp resolution; ``timestamp_sources``
    {bus: source}; ``measured`` the calibrations that went into it: (label, epoch seconds,
    ISO time)."""

    source: str
    seconds: float
    seconds_max: float
    timer: Spread | None = None
    timer_delay_s: float | None = None
    loopback: Spread | None = None
    loopback_reason: str | None = None
    resolution_s: float = 0.0
    timestamp_sources: dict[str, str] = field(default_factory=dict)
    measured: tuple[tuple[str, float, str], ...] = ()
    device_on_host: bool = False
    device_side: Spread | None = None

    @property
    def simulated(self) -> bool:
        return self.source == SIMULATED_TIME

    @classmethod
    def simulated_time(cls, when: str = "campaign") -> HostUncertainty:
        """The uncertainty of a campaign in simulated time: exactly 0."""
        return cls(
            SIMULATED_TIME,
            0.0,
            0.0,
            timestamp_sources={"in-process simulated bus": SIMULATED_TIME},
            measured=((when, 0.0, SIMULATED_TIME),),
        )

    def to_dict(self) -> dict[str, Any]:
        """The record's ``host_uncertainty`` (seconds)."""
        return {
            "source": self.source,
            "seconds": self.seconds,
            "seconds_max": self.seconds_max,
            "timer_overshoot": None if self.timer is None else self.timer.to_dict(),
            "timer_delay_s": self.timer_delay_s,
            "loopback_round_trip": None if self.loopback is None else self.loopback.to_dict(),
            "loopback_reason": self.loopback_reason,
            "resolution_s": self.resolution_s,
            "timestamp_sources": dict(self.timestamp_sources),
            "measured": [{"label": a, "epoch": b, "time": c} for a, b, c in self.measured],
            "device_on_host": self.device_on_host,
            "device_side_overshoot": None
            if self.device_side is None
            else self.device_side.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HostUncertainty:
        t, lb = d.get("timer_overshoot"), d.get("loopback_round_trip")
        return cls(
            str(d["source"]),
            float(d["seconds"]),
            float(d["seconds_max"]),
            None if t is None else Spread.from_dict(t),
            d.get("timer_delay_s"),
            None if lb is None else Spread.from_dict(lb),
            d.get("loopback_reason"),
            float(d.get("resolution_s", 0.0)),
            dict(d.get("timestamp_sources", {})),
            tuple((m["label"], float(m["epoch"]), m["time"]) for m in d.get("measured", [])),
            bool(d.get("device_on_host", False)),
            None
            if d.get("device_side_overshoot") is None
            else Spread.from_dict(d["device_side_overshoot"]),
        )


def from_samples(
    overshoot: Sequence[float] | np.ndarray,
    loopback: Sequence[float] | np.ndarray | None = None,
    *,
    resolution: float = 1e-9,
    delay: float | None = None,
    sources: dict[str, str] | None = None,
    loopback_reason: str | None = None,
    label: str = "before",
    epoch: float | None = None,
    device_on_host: bool = False,
    device_side: Sequence[float] | np.ndarray | None = None,
) -> HostUncertainty:
    """A :class:`HostUncertainty` from measured samples (seconds): the timer ``overshoot``
    of each sleep, the ``loopback`` round trips (None: not measured, ``loopback_reason``
    says why), the timestamp ``resolution``.  ``seconds`` = max(overshoot p99, loopback p99)
    + 2 * resolution; ``seconds_max`` the same with the maxima; with ``device_on_host`` the
    p99 (max) of ``device_side`` (another process's overshoot; default ``overshoot``) is
    added (the device's own late wake-ups).  Raises
    :class:`CalibrationError` for an empty or non-finite sample."""
    timer = spread(overshoot)
    lb = spread(loopback) if loopback is not None and len(loopback) else None
    if resolution < 0 or not math.isfinite(resolution):
        raise CalibrationError(f"resolution must be finite non-negative seconds: {resolution}")
    p99 = max(timer.p99, lb.p99 if lb else 0.0) + 2 * resolution
    top = max(timer.max, lb.max if lb else 0.0) + 2 * resolution
    side: Spread | None = None
    if device_on_host:
        side = spread(device_side) if device_side is not None and len(device_side) else timer
        p99 += side.p99
        top += side.max
    at = time.time() if epoch is None else epoch
    return HostUncertainty(
        "measured",
        p99,
        top,
        timer,
        delay,
        lb,
        None if lb else (loopback_reason or "not measured"),
        resolution,
        dict(sources or {}),
        ((label, at, _iso(at)),),
        device_on_host,
        side,
    )


def combine(calibrations: Sequence[HostUncertainty]) -> HostUncertainty | None:
    """The worst of several calibrations (before, during and after a campaign): each bound
    the largest; the timer overshoot of the one with the largest p99, the largest loopback
    round trip (or, with none, why the first calibration had none); every measurement
    listed.  None for no calibration; simulated time only if every one is."""
    if not calibrations:
        return None
    if all(c.simulated for c in calibrations):
        sim = HostUncertainty.simulated_time()
        return HostUncertainty(
            sim.source,
            0.0,
            0.0,
            timestamp_sources=sim.timestamp_sources,
            measured=tuple(m for c in calibrations for m in c.measured),
        )
    real = [c for c in calibrations if not c.simulated]
    timed = [c for c in real if c.timer is not None] or real
    worst = max(timed, key=lambda c: c.timer.p99 if c.timer else c.seconds)
    looped = [c for c in real if c.loopback is not None]
    loop = max(looped, key=lambda c: c.loopback.p99 if c.loopback else 0.0) if looped else None
    sources: dict[str, str] = {}
    for c in real:
        sources.update(c.timestamp_sources)
    return HostUncertainty(
        worst.source,
        max(c.seconds for c in real),
        max(c.seconds_max for c in real),
        worst.timer,
        worst.timer_delay_s,
        None if loop is None else loop.loopback,
        None if loop is not None else next((c.loopback_reason for c in real), None),
        max(c.resolution_s for c in real),
        sources,
        tuple(m for c in calibrations for m in c.measured),
        any(c.device_on_host for c in real),
        max(
            (c.device_side for c in real if c.device_side is not None),
            key=lambda sp: sp.p99,
            default=None,
        ),
    )


# ------------------------------------------------------------------ measuring


def calibrate_host(
    clock: Clock,
    bus_spec: BusRef,
    *,
    when: str = "before",
    samples: int = 100,
    delay: float = 0.001,
    loopback_samples: int = 50,
    device_on_host: bool = False,
) -> HostUncertainty:
    """Measure the host's timing uncertainty on the bus ``bus_spec`` (a spec, an open
    python-can bus, or None: the in-process virtual bus) with ``clock``: ``samples`` sleeps
    of ``delay`` seconds, up to ``loopback_samples`` loopback round trips where the bus
    allows, the timestamp source and resolution.  ``when`` labels the calibration
    ("before", "during shoe 500", "after"); ``device_on_host``: the device under test runs
    on this host (see the module doc).

    What collection calls before a campaign and every so often during it (then
    :func:`record_calibration`).  In simulated time (``clock.simulated``) it measures
    nothing and returns :meth:`HostUncertainty.simulated_time`.  Takes about
    ``samples * delay`` seconds plus the round trips.  Raises :class:`CalibrationError` for
    bad options or a bus spec it cannot parse."""
    if clock.simulated:
        return HostUncertainty.simulated_time(when)
    if samples < 1 or not 0 < delay <= 1.0:
        raise CalibrationError(
            f"calibration needs samples >= 1 and 0 < delay <= 1 s, got {samples}, {delay}"
        )
    label = _label(bus_spec)
    over = measure_timer_overshoot(clock, delay=delay, samples=samples)
    reason: str | None = None
    try:
        rt = measure_loopback(clock, bus_spec, samples=loopback_samples)
    except CalibrationError as exc:
        rt, reason = [], str(exc)
    if not rt and reason is None:
        reason = (
            "no echo came back"
            if loopback_spec(bus_spec) is not None
            else no_loopback_reason(bus_spec)
        )
    res = float(
        max(
            np.spacing(np.float64(clock.wall())),
            time.get_clock_info("time").resolution,
            time.get_clock_info("monotonic").resolution,
            1e-9,
        )
    )
    return from_samples(
        over,
        rt or None,
        resolution=res,
        delay=delay,
        sources={label: timestamp_source(bus_spec)},
        loopback_reason=reason,
        label=when,
        epoch=clock.wall(),
        device_on_host=device_on_host,
    )


class HostMonitor:
    """Timer overshoot sampled all through collection, on a thread of its own: every
    ``every`` seconds it asks ``clock`` to sleep ``delay`` seconds and keeps how much longer
    it took, so a load that comes and goes during a campaign is in the figures (a
    calibration before it may have met a quiet host).  :meth:`stop` records the result in
    ``directory`` (label ``during collection``) and returns it.  Loopback frames are not
    sent during collection (they would share the host's bus stack with the campaign);
    :func:`calibrate_host` measures them before and after.

    In simulated time nothing is sampled and :meth:`stop` records simulated time.  Use as a
    context manager around collection::

        with HostMonitor(clock, bus_spec, directory):
            ...collect...
    """

    MAX_SAMPLES = 200_000

    def __init__(
        self,
        clock: Clock,
        bus_spec: BusRef,
        directory: Path,
        *,
        delay: float = 0.001,
        every: float = 0.01,
        device_on_host: bool = False,
    ) -> None:
        self.clock = clock
        self.device_on_host = device_on_host
        self.bus_spec = bus_spec
        self.directory = directory
        self.delay = delay
        self.every = every
        self.samples: list[float] = []
        self.seen = 0
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sibling: SiblingSampler | None = None
        self.sibling_samples: list[float] = []
        self._rng = np.random.default_rng(0)  # reservoir sampling past MAX_SAMPLES

    def __enter__(self) -> HostMonitor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> HostMonitor:
        if not self.clock.simulated and self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="feltlab-host-monitor", daemon=True
            )
            self._thread.start()
            if self.device_on_host:
                self._sibling = SiblingSampler(delay=self.delay, every=self.every)
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = self.clock.now()
            self.clock.sleep(self.delay)
            self.add(self.clock.now() - t0 - self.delay)
            self._stop.wait(self.every)

    def add(self, overshoot: float) -> None:
        """Keep one overshoot (seconds): every one up to MAX_SAMPLES, then a uniform
        reservoir of them; the largest is always kept."""
        self.seen += 1
        self.worst = max(self.worst, overshoot)
        if len(self.samples) < self.MAX_SAMPLES:
            self.samples.append(overshoot)
            return
        j = int(self._rng.integers(self.seen))
        if j < self.MAX_SAMPLES:
            self.samples[j] = overshoot

    def result(self) -> HostUncertainty | None:
        """What was sampled so far (None: nothing yet, in real time)."""
        if self.clock.simulated:
            return HostUncertainty.simulated_time("during collection")
        if not self.samples:
            return None
        kept = [*self.samples, self.worst]
        return from_samples(
            kept,
            None,
            resolution=float(max(np.spacing(np.float64(self.clock.wall())), 1e-9)),
            delay=self.delay,
            sources={_label(self.bus_spec): timestamp_source(self.bus_spec)},
            loopback_reason="not sent during collection (measured before and after)",
            label="during collection",
            epoch=self.clock.wall(),
            device_on_host=self.device_on_host,
            device_side=self.sibling_samples
            or (list(self._sibling.samples) if self._sibling is not None else None),
        )

    def stop(self) -> HostUncertainty | None:
        """Stop sampling, record the result in the directory and return it (never raises:
        a failure to write is logged)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._sibling is not None:
            self.sibling_samples = self._sibling.stop()
            self._sibling = None
        hu = self.result()
        if hu is not None:
            try:
                record_calibration(self.directory, hu)
            except OSError as exc:
                log.warning("host monitor: cannot record the calibration: %s", exc)
        return hu


# ------------------------------------------------------------------ the campaign's file


def record_calibration(directory: Path, hu: HostUncertainty) -> None:
    """Append ``hu`` to the campaign directory's ``host-uncertainty.jsonl``."""
    with (directory / CALIBRATION_FILE).open("a") as f:
        f.write(json.dumps(hu.to_dict()) + "\n")


def calibrate_into(
    directory: Path, clock: Clock, bus_spec: BusRef, *, when: str, device_on_host: bool = False
) -> HostUncertainty | None:
    """:func:`calibrate_host` then :func:`record_calibration` into the campaign
    ``directory``: the one call collection makes before the first sample (``when="before"``)
    and every so often during collection (``when="during shoe 500"``).  Never raises: a
    calibration that cannot run is logged and returns None (a campaign is never lost to
    its calibration)."""
    try:
        hu = calibrate_host(clock, bus_spec, when=when, device_on_host=device_on_host)
        record_calibration(directory, hu)
    except (CalibrationError, OSError) as exc:
        log.warning("host calibration (%s) failed: %s", when, exc)
        return None
    return hu


def read_calibrations(directory: Path | None) -> list[HostUncertainty]:
    """The calibrations recorded in ``directory`` (none: []); an unreadable line is skipped
    with a warning."""
    path = None if directory is None else directory / CALIBRATION_FILE
    if path is None:
        return []
    text = read_text_regular(path, "host calibrations", 64 << 20, error=RigError)
    out: list[HostUncertainty] = []
    for n, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(HostUncertainty.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s line %d unreadable, skipped: %s", path.name, n, exc)
    return out


def _label(spec: BusRef) -> str:
    if spec is None:
        return "in-process virtual bus"
    if isinstance(spec, can.BusABC):
        return f"{interface_of(spec)}: {spec.channel_info}"
    return str(as_bus_spec(spec))


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))


__all__ = [
    "CALIBRATION_FILE",
    "SIMULATED_TIME",
    "HostMonitor",
    "HostUncertainty",
    "Spread",
    "calibrate_host",
    "calibrate_into",
    "combine",
    "from_samples",
    "read_calibrations",
    "record_calibration",
    "spread",
    "timestamp_source",
]
