"""Writing a campaign folder's files whole: a kill -9 (or a power loss) at any moment leaves
the file as it was or as written, never torn (docs/station.md, "Crash windows")."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file beside it
    (``.<name>.tmp``), forced to stable storage (fsync) and renamed over ``path``
    (``rename(2)`` is atomic within a filesystem, POSIX.1-2008).  Raises the OSError of a
    full or read-only disk, ``path`` then unchanged and no temporary file left."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
