"""Writing a campaign folder's files whole: a kill -9 (or a power loss) at any moment leaves
the file as it was or as written, never torn (docs/station.md, "Crash windows")."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file of a unique name
    beside it (``.<name>-XXXXXXXX``, so two writers never share one), forced to stable
    storage (fsync), renamed over ``path`` (``rename(2)`` is atomic within a filesystem,
    POSIX.1-2008) and the rename made durable (the folder fsynced, where the OS allows).
    Raises the OSError of a full or read-only disk, ``path`` then unchanged and no temporary
    file left."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
