"""The live view's server in a process of its own (issue 30): a campaign's real-time figures
must not depend on how many browsers watch it.

Before, the server ran in the campaign's process: 200 viewers (and 50 connections that never
read) raised a real-time campaign's ``first_card.p99`` from 1.1-1.7 ms to 7.4-9.5 ms, through
the interpreter's lock and the server's work.  Now:

- the campaign publishes into a :class:`SharedFeed`: each snapshot is written as JSON to a
  file in a private folder (a temporary file and ``os.replace``, never waiting on a reader),
  and a thread of the campaign asks the observer for a fresh snapshot every
  :data:`POLL_SECONDS`, whether or not anyone watches;
- :class:`LiveProcess` starts ``python -m feltlab.rig.live.process`` (a new interpreter, in
  its own session, at a lower scheduling priority, ``nice`` +10) that reads that file and
  serves it with :class:`feltlab.rig.live.server.LiveServer`.  Nothing flows back: the
  campaign never reads from the server process, and its stdin only tells it the campaign's
  folder and, by closing, that the campaign is over (it then lets open pages receive the final
  state, at most ``DRAIN_SECONDS``, and exits; it also exits when its parent dies).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from feltlab.inputs import read_regular
from feltlab.rig.live.server import LiveServer, LiveServerError
from feltlab.rig.live.state import LiveFeed

POLL_SECONDS = 1.0
"""Seconds between fresh snapshots the campaign publishes between its own events."""
READ_SECONDS = 0.05
"""Seconds between the server process's looks at the snapshot file."""
DRAIN_SECONDS = 3.0
"""Seconds the server process waits, once the campaign is over, for open pages to receive the
final state."""
MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024


class SharedFeed(LiveFeed):
    """A :class:`LiveFeed` that also writes each snapshot to ``path`` (JSON, ``{"final":
    bool, "snapshot": {...}}``) for the server process, and refreshes itself every
    :data:`POLL_SECONDS` on a thread of its own (:meth:`start_polling`)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._poller: threading.Thread | None = None

    def publish(self, snapshot: Mapping[str, Any], *, final: bool = False) -> int:
        version = super().publish(snapshot, final=final)
        _v, snap = self.get()
        data = json.dumps({"final": final, "snapshot": snap}, default=str).encode()
        tmp = self.path.with_name(f".{self.path.name}.{threading.get_ident()}")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, self.path)
        except OSError:  # the live view is informative: never stop the campaign for it
            with contextlib.suppress(OSError):
                tmp.unlink()
        return version

    def start_polling(self) -> None:
        def run() -> None:
            while not self.done.wait(POLL_SECONDS):
                self.poll()

        self._poller = threading.Thread(target=run, name="feltlab-live-poll", daemon=True)
        self._poller.start()


class LiveProcess:
    """The server process of a :class:`SharedFeed` at ``host:port`` (see the module
    docstring); the same ``start``/``stop``/``url``/``directory`` as
    :class:`~feltlab.rig.live.server.LiveServer`.  ``clients`` is always 0 here: the
    server process drains its own pages."""

    clients = 0

    def __init__(
        self, feed: SharedFeed, host: str, port: int, module: str = "feltlab.rig.live.process"
    ) -> None:
        self.feed = feed
        self.host = host
        self.port = port
        self.module = module  # the server process's module (``python -m``): its main serves
        self._proc: subprocess.Popen[bytes] | None = None
        self._directory: Path | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def directory(self) -> Path | None:
        return self._directory

    @directory.setter
    def directory(self, value: Path | None) -> None:
        self._directory = value
        if value is not None and self._proc is not None and self._proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self._proc.stdin.write(f"DIR {Path(value).resolve()}\n".encode())
                self._proc.stdin.flush()

    def start(self) -> LiveProcess:
        """Start the server process and wait (at most 10 s) until it serves.  Raises
        :class:`LiveServerError` (a port in use, a bad host) with the server's message."""
        cmd = [
            sys.executable,
            "-m",
            self.module,
            "--state",
            str(self.feed.path),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--parent",
            str(os.getpid()),
        ]
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        line = self._first_line(10.0)
        if line.startswith("READY "):
            self.port = int(line.split()[1])
            self.feed.start_polling()
            return self
        self._proc.kill()
        self._proc.wait()
        raise LiveServerError(
            line.removeprefix("ERROR ").strip() or "--live: the server did not start within 10 s"
        )

    def _first_line(self, timeout: float) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        got: list[bytes] = []
        reader = threading.Thread(
            target=lambda: got.append(self._proc.stdout.readline()),  # type: ignore[union-attr]
            daemon=True,
        )
        reader.start()
        reader.join(timeout)
        return got[0].decode("utf-8", "replace") if got else ""

    def stop(self) -> None:
        """The campaign is over: the server process sends the final state to open pages
        (at most DRAIN_SECONDS) and exits; killed if it has not within 2 s more."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(DRAIN_SECONDS + 2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _read_snapshot(path: Path) -> tuple[bool, dict[str, Any]] | None:
    try:
        raw = read_regular(path, "live snapshot", MAX_SNAPSHOT_BYTES)
        if raw is None:
            return None
        data = json.loads(raw)
        if not _shallow(data, MAX_SNAPSHOT_DEPTH):
            return None  # a campaign's snapshot is a few levels deep: a deeper one is not one
        return bool(data["final"]), dict(data["snapshot"])
    except (ValueError, KeyError, TypeError, OSError, RecursionError):
        return None


MAX_SNAPSHOT_DEPTH = 16
"""Levels of nesting a snapshot file may have (a campaign's has about six): a file nested
hundreds deep is refused, since serving it took the server process down (SIGABRT)."""


def _shallow(obj: Any, limit: int) -> bool:
    """Whether ``obj`` (parsed JSON) nests at most ``limit`` levels, checked without
    recursion."""
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return False
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return True


def serve(
    state: Path, host: str, port: int, parent: int, server_class: type[LiveServer] = LiveServer
) -> int:
    """The server process's main loop (see the module docstring); returns its exit code.
    ``server_class``: the server serving the snapshots (the station's operator page serves
    them with its own page: :mod:`feltlab.rig.station.page`)."""
    with contextlib.suppress(OSError):
        os.nice(10)
    feed = LiveFeed()
    server = server_class(feed, host, port)
    try:
        server.start()
    except LiveServerError as exc:
        print(f"ERROR {exc}", flush=True)
        return 2
    print(f"READY {server.port}", flush=True)
    ended = threading.Event()

    def commands() -> None:
        for line in sys.stdin.buffer:
            cmd, _, arg = line.decode("utf-8", "replace").strip().partition(" ")
            if cmd == "DIR" and arg:
                server.directory = Path(arg)
        ended.set()

    threading.Thread(target=commands, name="feltlab-live-stdin", daemon=True).start()
    seen: tuple[int, int] | None = None
    while True:
        with contextlib.suppress(OSError):
            st = state.stat()
            if (st.st_mtime_ns, st.st_size) != seen:
                seen = (st.st_mtime_ns, st.st_size)
                got = _read_snapshot(state)
                if got is not None:
                    feed.publish(got[1], final=got[0])
        if ended.is_set() or os.getppid() != parent:
            break
        ended.wait(READ_SECONDS)
    deadline = time.monotonic() + DRAIN_SECONDS
    time.sleep(0.05)
    while server.clients and time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(0.05)
    server.stop()
    if os.getppid() != parent and state.parent.name.startswith(FEED_PREFIX):
        # the campaign was killed (kill -9: it could not clean up): its feed folder goes
        # with its server, never left in the temp dir
        shutil.rmtree(state.parent, ignore_errors=True)
    return 0


FEED_PREFIX = "feltlab-live-"
"""The name of a live feed's folder in the temp dir begins so."""


def new_shared_feed() -> SharedFeed:
    """A :class:`SharedFeed` writing into a new private folder (mode 0700)."""
    folder = Path(tempfile.mkdtemp(prefix=FEED_PREFIX))
    return SharedFeed(folder / "snapshot.json")


def main(argv: list[str] | None = None, server_class: type[LiveServer] = LiveServer) -> int:
    """``python -m feltlab.rig.live.process --state FILE --host H --port P --parent PID``."""
    ap = argparse.ArgumentParser(prog="python -m feltlab.rig.live.process")
    ap.add_argument("--state", type=Path, required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--parent", type=int, required=True)
    args = ap.parse_args(argv)
    return serve(args.state, args.host, args.port, args.parent, server_class)


if __name__ == "__main__":
    sys.exit(main())
