"""One piece of work done in a forked child process (POSIX ``fork``) while this process goes
on, its result read back through a pipe: the capture's BLF written at close
(:mod:`feltlab.rig.bus.writer`) and the report's plots (:mod:`feltlab.rig.certify.ahead`)."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from typing import Any


class Forked:
    """``fn()`` run in a forked child; :meth:`result` waits for it and returns what it
    returned (pickled through a pipe), or ``fallback()``, run in this process, when there
    is no ``fork`` here, no process could start, or the child failed.  Ctrl-C is this
    process's to handle: SIGINT is blocked across the fork and ignored in the child, which
    ends with ``os._exit`` (no atexit handler or buffer of this process's runs twice)."""

    def __init__(self, fn: Callable[[], Any], fallback: Callable[[], Any]) -> None:
        self._fallback = fallback
        self._pid: int | None = None
        self._fd = -1
        if not hasattr(os, "fork"):  # not POSIX
            return
        r, w = os.pipe()
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pid = os.fork()
        except OSError:  # no process left to start
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
            os.close(r)
            os.close(w)
            return
        if pid == 0:  # the child: never returns
            code = 1
            try:
                with contextlib.suppress(ValueError):
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
                os.close(r)
                data = pickle.dumps(fn())
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        os.close(w)
        self._pid, self._fd = pid, r

    @property
    def running(self) -> bool:
        """A child was started and :meth:`result` has not been asked yet."""
        return self._pid is not None

    def result(self) -> Any:
        """What ``fn`` returned in the child (waiting for it), else ``fallback()``."""
        if self._pid is None:
            return self._fallback()
        data = b""
        try:
            with os.fdopen(self._fd, "rb") as got:
                data = got.read()
        finally:
            _, status = os.waitpid(self._pid, 0)
            self._pid = None
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and data:
            return pickle.loads(data)
        return self._fallback()
