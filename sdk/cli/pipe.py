"""Standard output on a pipe whose reader goes away (``feltlab ... | head``): the command
finishes its work and exits with its own code."""

from __future__ import annotations

import io
import os
import stat
import sys
from typing import Any


class _PipeSink(io.RawIOBase):
    """Standard output's file descriptor, written until its reader goes away (``| head``),
    then every further byte discarded: the command finishes its work and exits with its own
    code (0 on a PASS) instead of click's 1 for EPIPE, the FAIL code."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.broken = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, b: Any) -> int:
        n = len(memoryview(b))
        if self.broken:
            return n
        try:
            return os.write(self._fd, b)
        except BrokenPipeError:
            self.broken = True
            return n


def quiet_broken_pipe() -> None:
    """Put :class:`_PipeSink` under ``sys.stdout`` when it is this process's own standard
    output on a pipe (never under a test runner's captured stream)."""
    out = sys.stdout
    if out is not sys.__stdout__ or out is None:
        return
    try:
        fd = out.fileno()
        if os.isatty(fd) or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        out.flush()
    except (OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_PipeSink(fd)),
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=True,
    )
