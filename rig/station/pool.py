"""The device pool: a device held by one station cannot be taken by another, across processes.

Each device is a lock file ``devices/<device>.lock`` in the lab's state folder
(``$FELTLAB_STATE_DIR``, else ``$XDG_STATE_HOME/feltlab``, else ``~/.local/state/feltlab``),
locked with ``flock(LOCK_EX | LOCK_NB)`` (POSIX advisory locks, fcntl(2)) for as long as the
holder lives; the file then names its holder (station, socket, station file, process id, host,
since when).  The kernel drops the lock when the holder's process ends, however it ends
(kill -9 included), so a crashed station never leaves a device stuck; a second station asking
for a held device is refused with the holder's name.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from feltlab.rig.protocol.freshness import default_state_path
from feltlab.rig.station.config import StationError


def state_dir() -> Path:
    """The lab's state folder: ``$FELTLAB_STATE_DIR``, else ``$XDG_STATE_HOME/feltlab``, else
    ``~/.local/state/feltlab`` (the folder of the lab key and the freshness state:
    :func:`feltlab.rig.protocol.freshness.default_state_path`)."""
    return default_state_path().parent


class DeviceHeld(StationError):
    """A device another station (or socket) holds; ``holder`` is what its lock file says."""

    def __init__(self, device: str, holder: dict[str, Any]) -> None:
        self.device = device
        self.holder = holder
        who = f"station {holder.get('station')!r}"
        if holder.get("socket"):
            who += f" (socket {holder.get('socket')!r}"
            who += f", {holder.get('file')}" if holder.get("file") else ""
            who += ")"
        super().__init__(
            f"device {device!r} is held by {who}, process {holder.get('pid')} on "
            f"{holder.get('host')} since {holder.get('since')}: stop that station first, or "
            "name another device"
        )


class DevicePool:
    """The locks of one holder (a station): :meth:`acquire` takes every device or none,
    :meth:`release` lets them go (the process's end does too)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or state_dir()) / "devices"
        self._held: dict[str, int] = {}

    def lock_path(self, device: str) -> Path:
        return self.root / f"{device}.lock"

    def holder(self, device: str) -> dict[str, Any] | None:
        """What the lock file of ``device`` says of its holder (None: no file or unreadable)."""
        try:
            data = json.loads(self.lock_path(device).read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def acquire(self, devices: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Lock every ``(device, holder info)``: all or none.  Raises :class:`DeviceHeld`
        for the first device another process holds (the ones taken are let go)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StationError(
                f"cannot create the device pool {self.root}: {exc.strerror or exc}; set "
                "FELTLAB_STATE_DIR to a writable folder"
            ) from None
        try:
            for device, info in devices:
                self._take(device, info)
        except BaseException:
            self.release()
            raise

    def _take(self, device: str, info: dict[str, Any]) -> None:
        path = self.lock_path(device)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DeviceHeld(device, self.holder(device) or {"station": "unknown"}) from None
        except OSError:
            os.close(fd)
            raise
        record = {
            **info,
            "device": device,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._held[device] = fd

    def release(self) -> None:
        """Let every held device go (the lock files stay, naming their last holder)."""
        for fd in self._held.values():
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        self._held.clear()

    @property
    def held(self) -> list[str]:
        return sorted(self._held)


__all__ = ["DeviceHeld", "DevicePool", "state_dir"]
