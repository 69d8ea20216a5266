"""The on-disk cache of computed tables (side-wager tables, basic-strategy tables).

Arrays are stored as ``.npy`` files under ``<cache_dir()>/<kind>/<key>.npy``, where the key is
a SHA-256 of everything the table depends on (the caller's business), written atomically
(a temporary file, then ``os.replace``), so concurrent workers never read half a file.  A
cache that cannot be read or written is skipped: the table is computed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt


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


def load_any(kind: str, key: str) -> npt.NDArray[Any] | None:
    """The cached array ``kind``/``key`` of any numeric dtype, or None (absent, unreadable,
    truncated or empty: an empty file raises EOFError in ``np.load``)."""
    try:
        arr = np.load(_path(kind, key), allow_pickle=False)
    except (OSError, ValueError, EOFError):
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
