"""The read-only web server of the live view (aiohttp, in a thread of its own with its own
asyncio loop).

Routes (GET and HEAD only; any other method is refused with 405 and ``Allow: GET, HEAD``):

- ``/``: the page (``rig/live/templates/index.html``); ``/static/<file>``: its script and
  style sheet (``rig/live/static/``), shipped in the package: no CDN, works offline;
- ``/state``: the latest snapshot as JSON (:mod:`feltlab.rig.live.observer`);
- ``/events``: server-sent events, one ``snapshot`` event per new version and an ``end``
  event after the final one;
- ``/report/<file>``: the campaign directory's ``report.html``, ``record.json``,
  ``junit.xml`` and ``manifest.json`` once written (nothing else is served).

The campaign thread publishes into a :class:`~feltlab.rig.live.observer.LiveFeed`; the server
wakes on each publish through ``loop.call_soon_threadsafe``.  Nothing the browser sends reaches the
campaign.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import json
import logging
import os
import socket
import stat
import threading
from pathlib import Path
from typing import Any, BinaryIO

from feltlab.rig.errors import RigError
from feltlab.rig.live.state import LiveFeed

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
PAGE = HERE / "templates" / "index.html"
STATIC = HERE / "static"
STATIC_FILES = {"live.js": "text/javascript", "live.css": "text/css"}
REPORT_FILES = {
    "report.html": "text/html",
    "record.json": "application/json",
    "junit.xml": "application/xml",
    "manifest.json": "application/json",
}
DEFAULT_HOST = "127.0.0.1"
#: seconds between snapshots asked of the campaign while nothing is published
POLL_SECONDS = 1.0
#: seconds between SSE comments that keep an idle connection open
KEEPALIVE_SECONDS = 15.0


MAX_REPORT_BYTES = 256 * 1024 * 1024


def open_report(path: Path) -> tuple[BinaryIO, int] | None:
    """A report file of the campaign folder opened for reading, with its size, or None: never
    through a link (a report.html that is a link to a file outside the folder is not
    served), regular files only, at most MAX_REPORT_BYTES.  The caller closes it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # missing, or a link (ELOOP)
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_REPORT_BYTES:
            os.close(fd)
            return None
        return os.fdopen(fd, "rb"), int(st.st_size)
    except OSError:
        os.close(fd)
        return None


REPORT_CHUNK = 256 * 1024
"""Bytes of a report file sent at a time: a reader holds one chunk (and the transport's
buffer) in memory, never the whole file (16 slow readers of a 200 MB report took 6.47 GB
when each read it whole)."""


class LiveServerError(RigError):
    """The live view cannot start: a bad ``--live`` address or a port in use."""


def parse_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` as ``(host, port)``; the host defaults to 127.0.0.1 (this machine
    only); ``[::1]:8000`` for IPv6.  Port 0 picks a free port.  Raises
    :class:`LiveServerError` for anything else."""
    raw = text.strip()
    host, sep, port_text = raw.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_HOST, raw
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise LiveServerError(
            f"--live {text!r}: give [HOST:]PORT, a port 0..65535 (e.g. 8000 or 0.0.0.0:8000)"
        )
    return host, port


class LiveServer:
    """Serve ``feed`` (and the report files of ``directory``) at ``host:port``.

    :meth:`start` binds the port and returns once the server listens (raises
    :class:`LiveServerError` for a port in use or an address that cannot be bound);
    :meth:`stop` ends it and joins its thread.  ``url`` is where it listens.
    """

    def __init__(self, feed: LiveFeed, host: str, port: int, directory: Path | None = None) -> None:
        self.feed = feed
        self.host = host
        self.port = port
        self.directory = directory
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopping: asyncio.Event | None = None
        self._changed: asyncio.Condition | None = None
        self.clients = 0
        self.requests = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    # ------------------------------------------------------------ lifecycle
    def start(self) -> LiveServer:
        self._thread = threading.Thread(target=self._run, name="feltlab-live", daemon=True)
        self._thread.start()
        self._ready.wait(10.0)
        if self._error is not None:
            err = self._error
            self._thread.join(5.0)
            if isinstance(err, OSError) and err.errno == errno.EADDRINUSE:
                raise LiveServerError(
                    f"--live: port {self.port} on {self.host} is in use; choose another "
                    "port (or 0 for any free one)"
                ) from err
            raise LiveServerError(
                f"--live: cannot serve on {self.host}:{self.port}: {err}"
            ) from err
        if not self._ready.is_set():
            raise LiveServerError("--live: the server did not start within 10 s")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        loop, ev = self._loop, self._stopping
        if loop is not None and ev is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(ev.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # reported by start()
            if not self._ready.is_set():
                self._error = exc
                self._ready.set()
            else:
                log.warning("live view server stopped: %s", exc)
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        self._stopping = asyncio.Event()
        self._changed = asyncio.Condition()
        loop = asyncio.get_running_loop()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing to wake
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._notify()))

        self.feed.subscribe(wake)

        async def read_only(request: Any, handler: Any) -> Any:
            return await self._read_only(request, handler)

        app = web.Application(middlewares=[web.middleware(read_only)])
        self.add_routes(app)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            # SO_REUSEADDR: a port whose last server stopped is free although its closed
            # connections linger in TIME_WAIT (250 page loads kept it "in use" for over 20 s);
            # a port another server still listens on is refused all the same (Linux, BSD)
            site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
            await site.start()
            server = getattr(site, "_server", None)
            sockets = getattr(server, "sockets", None) or []
            if sockets:
                self.port = int(sockets[0].getsockname()[1])
            self._ready.set()
            poller = asyncio.ensure_future(self._poll())
            await self._stopping.wait()
            poller.cancel()
            await self._notify()  # let open event streams see the stop
        finally:
            self.feed.unsubscribe(wake)
            await runner.cleanup()

    def add_routes(self, app: Any) -> None:
        """The server's GET routes on the aiohttp ``app`` (a page of another layout, the
        station's operator page, adds its own: :mod:`feltlab.rig.station.page`)."""
        app.router.add_get("/", self._page)
        app.router.add_get("/state", self._state)
        app.router.add_get("/events", self._events)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_get("/report/{name}", self._report)

    async def _notify(self) -> None:
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    async def _poll(self) -> None:
        """Ask the campaign for a fresh snapshot every POLL_SECONDS while it runs (in a
        worker thread: the observer takes the campaign's lock)."""
        loop = asyncio.get_running_loop()
        while not self.feed.done.is_set():
            await asyncio.sleep(POLL_SECONDS)
            if self.clients:
                await loop.run_in_executor(None, self.feed.poll)

    # ------------------------------------------------------------ handlers
    @staticmethod
    def _headers() -> dict[str, str]:
        return {
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'self'; style-src 'self'; "
            "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
            "Referrer-Policy": "no-referrer",
        }

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this server: an IP address literal,
        ``localhost``, or this machine's own host name, with the server's port (or none).
        Any other name is refused (HTTP 421): a DNS-rebinding page reaches the server under
        its own domain's name, which is not this machine's."""
        if not header:
            return False
        host, port = header, None
        if header.startswith("["):
            host, _, rest = header[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else None
        elif header.count(":") == 1:
            host, _, port = header.partition(":")
        if port is not None and port != str(self.port):
            return False
        host = host.lower().rstrip(".")
        try:
            ipaddress.ip_address(host)
            return True
        except ValueError:
            pass
        names = {"localhost", socket.gethostname().lower(), socket.getfqdn().lower()}
        return host in names

    async def _read_only(self, request: Any, handler: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        self.requests += 1
        if not self.host_allowed(request.headers.get("Host")):
            # DNS rebinding: a page of another site whose name now resolves here
            return web.Response(
                status=421,
                text="the live view answers only to this machine's addresses and names\n",
                headers=self._headers(),
            )
        if request.method not in ("GET", "HEAD"):
            return web.Response(
                status=405,
                text="the live view is read-only: GET only\n",
                headers={"Allow": "GET, HEAD", **self._headers()},
            )
        return await handler(request)

    async def _page(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        return web.Response(
            body=PAGE.read_bytes(),
            content_type="text/html",
            charset="utf-8",
            headers=self._headers(),
        )

    async def _static(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        name = request.match_info["name"]
        if name not in STATIC_FILES:
            raise web.HTTPNotFound()
        return web.Response(
            body=(STATIC / name).read_bytes(),
            content_type=STATIC_FILES[name],
            charset="utf-8",
            headers=self._headers(),
        )

    async def _report(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        name = request.match_info["name"]
        path = self.directory / name if self.directory is not None else None
        opened = open_report(path) if name in REPORT_FILES and path is not None else None
        if opened is None:
            raise web.HTTPNotFound(text=f"{name}: not written (yet)\n")
        f, size = opened
        with f:
            headers = self._headers()
            headers["Content-Type"] = REPORT_FILES[name]
            if name == "report.html":  # the report has its own inline style and embedded plots
                headers["Content-Security-Policy"] = (
                    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                    "frame-ancestors 'none'"
                )
            resp = web.StreamResponse(headers=headers)
            resp.content_length = size
            await resp.prepare(request)
            left = size  # the size when opened: a file growing meanwhile is sent as it was
            while left > 0:
                chunk = f.read(min(REPORT_CHUNK, left))
                if not chunk:
                    break
                left -= len(chunk)
                await resp.write(chunk)  # waits while the reader is slow: memory stays bounded
            await resp.write_eof()
            return resp

    async def _state(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        _version, snap = self.feed.get()
        return web.Response(
            text=json.dumps(snap, allow_nan=False),
            content_type="application/json",
            headers=self._headers(),
        )

    async def _events(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only in the page's server process

        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        assert self._changed is not None and self._stopping is not None
        self.clients += 1
        sent = -1
        try:
            while True:
                version, snap = self.feed.get()
                if version != sent:
                    data = json.dumps(snap, allow_nan=False)
                    await resp.write(f"event: snapshot\nid: {version}\ndata: {data}\n\n".encode())
                    sent = version
                if self.feed.done.is_set() and version == self.feed.get()[0]:
                    await resp.write(b"event: end\ndata: {}\n\n")
                    break
                if self._stopping.is_set():
                    break
                async with self._changed:
                    try:
                        await asyncio.wait_for(self._changed.wait(), KEEPALIVE_SECONDS)
                    except TimeoutError:
                        await resp.write(b": keep-alive\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.clients -= 1
        return resp


__all__ = ["DEFAULT_HOST", "LiveServer", "LiveServerError", "open_report", "parse_address"]
