"""What another process asks of a station: ``feltlab station stop|resume STATION SOCKET`` write a
socket's wanted state (``run`` or ``stop``) into ``<station folder>/control/<socket>``
(atomically: a temporary file and ``os.replace``), which the running supervisor reads at its
next look; and the station lock, ``<station folder>/station.lock``, held (``flock``) by the one
supervisor of the station, which tells whether a station is running and keeps a second
supervisor of the same folder out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from feltlab.rig.station.config import StationError

WANTS = ("run", "stop")


def want_path(folder: Path, socket: str) -> Path:
    return folder / "control" / socket


def request(folder: Path, socket: str, want: str) -> None:
    """Ask for socket ``socket`` to ``want`` (``run`` or ``stop``)."""
    if want not in WANTS:
        raise ValueError(f"want must be one of {WANTS}")
    path = want_path(folder, socket)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{socket}.{os.getpid()}")
    tmp.write_text(want + "\n", encoding="utf-8")
    os.replace(tmp, path)


def wanted(folder: Path, socket: str) -> str:
    """The socket's wanted state: ``stop`` if asked, else ``run``."""
    try:
        text = want_path(folder, socket).read_text(encoding="utf-8").strip()
    except OSError:
        return "run"
    return text if text in WANTS else "run"


class StationLock:
    """The station folder's lock: :meth:`acquire` takes it (raises StationError when the
    station already runs), :meth:`running` tells whether another process holds it."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "station.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StationError(
                f"the station of {self.path.parent} is already running (process "
                f"{self.holder_pid()}): use feltlab station stop|resume to change its sockets"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def holder_pid(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8").strip() or "?"
        except OSError:
            return "?"

    def running(self) -> bool:
        """Whether a supervisor holds the lock now (this process's own hold excluded)."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock taken here
        return False

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None


__all__ = ["WANTS", "StationLock", "request", "want_path", "wanted"]
