"""The on-disk cache of computed tables (side-wager tables, basic-strategy tables).

Arrays are stored as ``.npy`` files under ``<cache_dir()>/<kind>/<key>.npy``, where the key is
a SHA-256 of everything the table depends on (the caller's business), written atomically
(a temporary file, then ``os.replace``), so concurrent workers never read half a file.  A
cache that cannot be read or written is skipped: the table is computed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import inputs


def cache_dir() -> Path:
    """``$FELTLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/feltlab``, else ``~/.cache/feltlab``."""
    env = os.environ.get("FELTLAB_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "feltlab"


def digest(*parts: object) -> str:
    """The SHA-256 hex digest of ``parts`` joined by newlines (their ``str``)."""
    return hashlib.sha256("\n".join(str(p) for p in parts).encode()).hexdigest()


def _path(kind: str, key: str) -> Path:
    return cache_dir() / kind / f"{key}.npy"


def load(kind: str, key: str) -> npt.NDArray[np.uint8] | None:
    """The cached uint8 array ``kind``/``key``, or None (absent, unreadable, not uint8)."""
    arr = load_any(kind, key)
    if arr is None or arr.dtype != np.uint8:
        return None
    return arr


_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


class _Unusable(Exception):
    """A cache file that is not a regular file (a FIFO, a device, a folder)."""


def load_any(kind: str, key: str) -> npt.NDArray[Any] | None:
    """The cached array ``kind``/``key`` of any numeric dtype, or None: absent, not a regular
    file (a FIFO is never waited on: opened without blocking), unreadable, truncated, empty,
    or a header that promises more bytes than the file holds (read before anything is
    allocated for it).  The ``.npy`` format: NumPy's NEP 1."""
    try:
        with inputs.open_regular(_path(kind, key), "cached table", error=_Unusable) as (f, size):
            header = _HEADER_READERS.get(np.lib.format.read_magic(f))
            if header is None:
                return None
            shape, _, dtype = header(f)
            if dtype.hasobject or math.prod(shape) * dtype.itemsize > size - f.tell():
                return None
            f.seek(0)
            arr = np.load(f, allow_pickle=False)
    except (_Unusable, OSError, ValueError, EOFError, MemoryError):
        return None
    return np.ascontiguousarray(arr)


def store(kind: str, key: str, arr: npt.NDArray[Any]) -> None:
    """Write ``arr`` as ``kind``/``key`` (silently skipped when the cache is not writable)."""
    path = _path(kind, key)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            np.save(f, arr, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # its folder may be no folder at all
            tmp.unlink(missing_ok=True)


__all__ = ["cache_dir", "digest", "load", "load_any", "store"]
