"""Bounded reading of input files (issue 30): regular files only (a FIFO where a file is
expected would block the reader forever), never more than a stated number of bytes."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from feltlab.errors import InputError


def _open_fd(p: Path, what: str, error: type[Exception]) -> int:
    """A descriptor on the regular file ``p`` (FileNotFoundError passes through), opened
    without blocking and checked with ``fstat`` on the descriptor itself."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"{what} {p} is not readable ({exc.strerror})") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{what} {p} is not a regular file (a FIFO, device or folder); give a file")
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def open_regular(
    path: str | Path, what: str, error: type[Exception] = InputError
) -> Iterator[tuple[BinaryIO, int]]:
    """The regular file ``path`` opened for reading in binary, and its size in bytes, for a
    reader that takes only the part it needs (``f.read(n)`` in blocks, never the whole of a
    large file).  The same checks as :func:`read_regular`; a missing file raises ``error``
    too (``"{what} {path} does not exist"``)."""
    p = Path(path)
    try:
        fd = _open_fd(p, what, error)
    except FileNotFoundError:
        raise error(f"{what} {p} does not exist; give the path of a file") from None
    size = os.fstat(fd).st_size
    with os.fdopen(fd, "rb") as f:
        try:
            yield f, size
        except OSError as exc:
            raise error(f"{what} {p} is not readable ({exc.strerror})") from exc


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
        fd = _open_fd(p, what, error)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
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
