"""Bounded reading of input files (issue 30): regular files only (a FIFO where a file is
expected would block the reader forever), never more than a stated number of bytes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from feltlab.errors import InputError


def read_regular(
    path: str | Path,
    what: str,
    limit: int,
    error: type[Exception] = InputError,
) -> bytes | None:
    """The bytes of the regular file ``path``, or None if it does not exist.

    Opened without blocking (``O_NONBLOCK``: a FIFO is seen, never waited on) and checked
    with ``fstat`` on the open descriptor (no race with a swapped path). ``what`` names the
    file in messages (``"freshness state"``); ``limit`` is the most bytes accepted.

    Raises ``error`` (default :class:`feltlab.errors.InputError`; its constructor takes the
    one-line message) for a FIFO, device or folder, an unreadable file, or one over ``limit``.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise error(f"{what} {p} is not readable ({exc.strerror})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {p} is not a regular file (a FIFO, device or folder); give a file")
        if st.st_size > limit:
            raise error(f"{what} {p} is {st.st_size} bytes, over the {limit} accepted")
        chunks = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise error(f"{what} {p} is not readable ({exc.strerror})") from exc
    finally:
        os.close(fd)
    if got > limit:
        raise error(f"{what} {p} grew past the {limit} bytes accepted while it was read")
    return b"".join(chunks)


def read_text_regular(
    path: str | Path,
    what: str,
    limit: int,
    error: type[Exception] = InputError,
) -> str | None:
    """:func:`read_regular` decoded as UTF-8 (None if the file does not exist); a file that
    is not UTF-8 raises ``error`` too."""
    raw = read_regular(path, what, limit, error)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path} is not UTF-8 text (byte {exc.start})") from exc
