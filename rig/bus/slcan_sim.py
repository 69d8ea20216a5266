"""A simulated Lawicel SLCAN adapter on a pseudo-terminal, bridged to a CAN bus.

The host opens the pty's slave with python-can's real ``slcan`` driver (``channel=`` the
:attr:`SimulatedSlcanAdapter.port` path, ``sleep_after_open=0``); the adapter answers the
Lawicel ASCII protocol (CAN232/CANUSB manual: ``O``/``L`` open, ``C`` close, ``Sn`` bitrate,
``V`` version, ``N`` serial number, ``F`` status flags, ``tiiildd..``/``Tiiiiiiiildd..``
transmit, ``r``/``R`` remote frames; OK is CR, error is BEL) and forwards frames between the
serial line and the CAN side (a python-can bus, e.g. the ``virtual`` bus of a simulated
device).  Frames towards the CAN side are paced to the selected bitrate.

Like a real Lawicel adapter it never echoes the host's own frames back over the serial line:
a frame it forwarded to the CAN side and receives again (``udp_multicast`` loops every
datagram back to its sender) is recognised by its token and dropped (counted in
:attr:`SimulatedSlcanAdapter.own_frames_dropped`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pty
import select
import threading
import tty

import can

from feltlab.rig.bus.transport import BusSpec, WireClock, open_bus

log = logging.getLogger(__name__)

#: Lawicel ``Sn`` codes to bit/s (the CANUSB manual's table).
BITRATES = {
    "0": 10_000,
    "1": 20_000,
    "2": 50_000,
    "3": 100_000,
    "4": 125_000,
    "5": 250_000,
    "6": 500_000,
    "7": 800_000,
    "8": 1_000_000,
}
OK = b"\r"
ERROR = b"\a"


class SimulatedSlcanAdapter:
    """A Lawicel adapter on a new pty, forwarding to ``bus`` (spec or open bus; an open bus
    is shut down by :meth:`close`).  Use as a context manager; :meth:`close` joins both
    threads."""

    def __init__(self, bus: str | BusSpec | can.BusABC) -> None:
        self.bus = bus if isinstance(bus, can.BusABC) else open_bus(bus)
        self._master, self._slave = pty.openpty()
        tty.setraw(self._slave)
        self.port = os.ttyname(self._slave)
        self.is_open = False
        self.bitrate = 500_000
        self.wire: WireClock | None = None
        self.frames_to_can = 0
        self.frames_to_serial = 0
        self.errors = 0
        self.own_frames_dropped = 0
        self.token = f"feltlab-slcan-{os.getpid()}-{id(self):x}"
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._serial_loop, name="slcan-serial", daemon=True),
            threading.Thread(target=self._can_loop, name="slcan-can", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def __enter__(self) -> SimulatedSlcanAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2.0)
        self.bus.shutdown()
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)

    # ------------------------------------------------------------ serial side
    def _write(self, data: bytes) -> None:
        with self._write_lock:
            try:
                os.write(self._master, data)
            except OSError as exc:  # pragma: no cover - the pty went away
                log.debug("slcan write: %s", exc)

    def _serial_loop(self) -> None:
        buf = bytearray()
        while not self._stop.is_set():
            r, _, _ = select.select([self._master], [], [], 0.05)
            if not r:
                continue
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # pragma: no cover - the pty went away
                break
            buf += chunk
            while True:
                i = buf.find(b"\r")
                if i < 0:
                    break
                line = bytes(buf[:i]).lstrip(b"\n")
                del buf[: i + 1]
                self._write(self._command(line.decode("ascii", "replace")))

    def _command(self, line: str) -> bytes:
        if not line:
            return OK
        c = line[0]
        try:
            if c in "OL":
                self.is_open = True
                self.wire = WireClock(self.bitrate)
                return OK
            if c == "C":
                self.is_open = False
                return OK
            if c == "S":
                if self.is_open or line[1:] not in BITRATES:
                    return ERROR
                self.bitrate = BITRATES[line[1:]]
                return OK
            if c in "sZMmXWQU":
                return OK
            if c == "V":
                return b"V1013\r"
            if c == "N":
                return b"NF31D\r"
            if c == "F":
                return b"F00\r"
            if c in "tTrR":
                if not self.is_open:
                    return ERROR
                self._to_can(line)
                return b"z\r" if c in "tr" else b"Z\r"
        except (ValueError, IndexError, can.CanError) as exc:
            log.debug("slcan: bad command %r: %s", line, exc)
        self.errors += 1
        return ERROR

    def _to_can(self, line: str) -> None:
        c = line[0]
        ext = c in "TR"
        n = 8 if ext else 3
        arb = int(line[1 : 1 + n], 16)
        dlc = int(line[1 + n])
        if not 0 <= dlc <= 8:
            raise ValueError("dlc")
        data = b"" if c in "rR" else bytes.fromhex(line[2 + n : 2 + n + 2 * dlc])
        if c in "tT" and len(data) != dlc:
            raise ValueError("data length")
        msg = can.Message(
            arbitration_id=arb, is_extended_id=ext, is_remote_frame=c in "rR", dlc=dlc, data=data
        )
        if self.wire is not None:
            self.wire.reserve(msg)
        msg.channel = self.token  # to know it again if the CAN side loops it back
        self.bus.send(msg)
        self.frames_to_can += 1

    # ------------------------------------------------------------ CAN side
    def _can_loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.bus.recv(0.05)
            except can.CanError:  # pragma: no cover
                break
            if msg is None or not self.is_open or msg.is_error_frame:
                continue
            if msg.channel == self.token:  # the host's own frame: a Lawicel adapter never
                self.own_frames_dropped += 1  # echoes what it transmitted
                continue
            if msg.is_extended_id:
                head = f"{'R' if msg.is_remote_frame else 'T'}{msg.arbitration_id:08X}{msg.dlc}"
            else:
                head = f"{'r' if msg.is_remote_frame else 't'}{msg.arbitration_id:03X}{msg.dlc}"
            body = "" if msg.is_remote_frame else bytes(msg.data).hex().upper()
            self._write((head + body).encode("ascii") + OK)
            self.frames_to_serial += 1
