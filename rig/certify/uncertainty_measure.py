"""Measuring the host's delays (docs/certification.md): timer overshoot
(:func:`measure_timer_overshoot`) and loopback round trips (:func:`measure_loopback`) on a
private sibling of the device's bus (:func:`loopback_spec`), with the bus helpers they share.
Re-exported by :mod:`feltlab.rig.certify.uncertainty`."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import can

from feltlab.rig.bus.transport import DEFAULT_UDP_PORT, BusSpec, open_bus
from feltlab.rig.clock import Clock
from feltlab.rig.errors import BusSpecError, RigError

#: the arbitration id of a loopback frame (on a private sibling channel, never the device's)
LOOPBACK_ID = 0x7F0


class CalibrationError(RigError):
    """The host's uncertainty could not be measured (a bad bus spec, bad sample options)."""


BusRef = BusSpec | str | can.BusABC | None
"""A bus to calibrate on: a spec (string or :class:`BusSpec`), an open python-can bus, or
None for the in-process virtual bus."""


def interface_of(bus: BusRef) -> str:
    """The python-can interface name of ``bus`` (an open bus: by its class, through
    python-can's backend table; a rig bus: of the bus it wraps)."""
    if bus is None:
        return "virtual"
    if isinstance(bus, can.BusABC):
        inner = getattr(bus, "inner", None)  # feltlab.rig.bus.transport.RigBus
        if isinstance(inner, can.BusABC):
            return interface_of(inner)
        cls = type(bus).__name__
        for name, (_module, cls_name) in can.interfaces.BACKENDS.items():
            if cls_name == cls:
                return name
        return cls
    return as_bus_spec(bus).interface


def measure_timer_overshoot(
    clock: Clock, *, delay: float = 0.001, samples: int = 100
) -> list[float]:
    """How much longer than ``delay`` seconds each of ``samples`` ``clock.sleep(delay)``
    took, in seconds (by ``clock.now()``)."""
    out: list[float] = []
    for _ in range(samples):
        t0 = clock.now()
        clock.sleep(delay)
        out.append(clock.now() - t0 - delay)
    return out


def loopback_spec(spec: BusRef) -> BusSpec | None:
    """The private sibling of ``spec`` that loopback round trips use (same interface and host
    stack, never the device's bus), or None where there is none (one node per adapter; an
    open bus of another interface than ``virtual`` or ``udp_multicast``)."""
    if isinstance(spec, can.BusABC):
        interface = interface_of(spec)
        if interface == "virtual":
            return BusSpec("virtual", f"feltlab-calibration-{id(spec):x}~calibration", None, ())
        if interface == "udp_multicast":
            return loopback_spec(BusSpec("udp_multicast", "ff11::4645:4c54"))
        return None
    s = BusSpec("virtual", "feltlab-certify") if spec is None else as_bus_spec(spec)
    if s.interface == "virtual":
        return BusSpec("virtual", f"{s.channel}~calibration-{os.getpid()}", None, ())
    if s.interface == "udp_multicast":
        opts = dict(s.options)
        port = int(opts.get("port", DEFAULT_UDP_PORT))
        opts["port"] = port + 1 if port < 65535 else port - 1
        return BusSpec(s.interface, s.channel, None, tuple(sorted(opts.items())))
    return None


def no_loopback_reason(spec: BusRef) -> str:
    """Why the bus ``spec`` gets no loopback measurement (timer overshoot only)."""
    interface = interface_of(spec)
    if interface == "slcan":
        return "slcan: one serial adapter is one node; a loopback would need a second adapter"
    return f"{interface}: a loopback would put frames on the device's bus; timer overshoot only"


def measure_loopback(
    clock: Clock, spec: BusRef, *, samples: int = 50, timeout: float = 0.5
) -> list[float]:
    """Round trips (seconds, by ``clock.now()``) of ``samples`` frames from one host node to
    a second one that echoes them back, on :func:`loopback_spec` of ``spec``.  Returns []
    where the bus allows none.  Raises :class:`CalibrationError` if the sibling bus cannot
    be opened."""
    sib = loopback_spec(spec)
    if sib is None:
        return []
    try:
        a = open_bus(sib)
    except BusSpecError as exc:
        raise CalibrationError(f"loopback calibration: {exc}") from exc
    try:
        b = open_bus(sib)
    except BusSpecError as exc:
        a.shutdown()
        raise CalibrationError(f"loopback calibration: {exc}") from exc
    stop = threading.Event()
    nonce = os.getpid() & 0xFFFF

    def echo() -> None:
        while not stop.is_set():
            try:
                m = b.recv(0.05)
            except can.CanError:  # pragma: no cover - the bus went away
                return
            if m is not None and m.arbitration_id == LOOPBACK_ID and m.data[:1] == b"\x00":
                b.send(
                    can.Message(
                        arbitration_id=LOOPBACK_ID,
                        is_extended_id=False,
                        data=b"\x01" + bytes(m.data[1:]),
                    )
                )

    th = threading.Thread(target=echo, name="feltlab-calibration-echo", daemon=True)
    th.start()
    out: list[float] = []
    try:
        for i in range(samples):
            body = nonce.to_bytes(2, "little") + i.to_bytes(4, "little")
            t0 = clock.now()
            a.send(
                can.Message(arbitration_id=LOOPBACK_ID, is_extended_id=False, data=b"\x00" + body)
            )
            deadline = t0 + timeout
            while clock.now() < deadline:
                m = a.recv(max(0.0, deadline - clock.now()))
                if (
                    m is not None
                    and m.arbitration_id == LOOPBACK_ID
                    and bytes(m.data) == b"\x01" + body
                ):
                    out.append(clock.now() - t0)
                    break
    finally:
        stop.set()
        th.join(timeout=2.0)
        a.shutdown()
        b.shutdown()
    return out


class SiblingSampler:
    """Timer overshoot seen by **another process** of this host, as a device started here
    (``feltlab device run``) sees it: a child Python process sleeps ``delay`` seconds every
    ``every`` seconds and reports how much longer each sleep took (seconds, one line each);
    :meth:`stop` ends it and returns the samples.  The rig's own threads do not see the
    scheduling delays of a separate process (a process queued behind others on a busy
    CPU), and those delay the device's own timers.  The child exits when its parent does
    (its stdin closes) or after ``limit`` seconds.  Never raises: a child that cannot start
    leaves :attr:`samples` empty and :attr:`error` set."""

    def __init__(self, *, delay: float = 0.001, every: float = 0.01, limit: float = 86400.0):
        self.samples: list[float] = []
        self.error: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        cmd = [sys.executable, "-I", "-S", "-c", _SIBLING_CHILD, repr(delay), repr(every)]
        cmd.append(repr(limit))
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except OSError as exc:
            self.error = f"sibling sampler did not start: {exc}"
            return
        self._reader = threading.Thread(target=self._read, name="feltlab-sibling", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                self.samples.append(max(0.0, float(line)))
            except ValueError:
                continue

    def stop(self) -> list[float]:
        """End the child (closing its stdin, then SIGTERM if need be) and return the
        overshoots it reported (seconds)."""
        proc = self._proc
        if proc is None:
            return list(self.samples)
        self._proc = None
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=2.0)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(timeout=5.0)
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        return list(self.samples)


#: the child of :class:`SiblingSampler`, run with ``python -I -S -c`` so that it starts in
#: milliseconds (no feltlab, no site packages): argv ``delay every limit`` (seconds)
_SIBLING_CHILD = """
import sys, threading, time
delay, every, limit = (float(a) for a in sys.argv[1:4])
done = threading.Event()
def watch_parent():
    sys.stdin.read()
    done.set()
threading.Thread(target=watch_parent, daemon=True).start()
end = time.monotonic() + limit
while not done.is_set() and time.monotonic() < end:
    t0 = time.monotonic()
    time.sleep(delay)
    try:
        print(repr(time.monotonic() - t0 - delay), flush=True)
    except OSError:
        break
    done.wait(every)
"""


def as_bus_spec(spec: BusSpec | str) -> BusSpec:
    """``spec`` parsed to a :class:`BusSpec`; CalibrationError when it does not parse."""
    try:
        return BusSpec.parse(spec) if isinstance(spec, str) else spec
    except BusSpecError as exc:
        raise CalibrationError(f"calibration: {exc}") from exc
