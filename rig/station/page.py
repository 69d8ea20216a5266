"""The station's operator page: one tile per socket (state, progress, rate, ETA, current
verdict, faults; a link to the socket's own live page while it runs, and to its report once
written), the station record and the batch report.

It is the live view's server (:class:`feltlab.rig.live.server.LiveServer`) with the station's
page, in a process of its own (:class:`feltlab.rig.live.process.LiveProcess` running this
module), fed the supervisor's snapshots through a file, as a campaign feeds its live view: no
browser can slow the supervisor down.  Routes (GET only, this machine's names only, as the
live view's): ``/`` the page, ``/state`` and ``/events`` the snapshot, ``/static/<file>``,
``/report/<file>`` the station's batch report, JUnit and record, ``/socket/<name>/<file>`` a
socket's report files.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.rig.live.process import main as live_main
from feltlab.rig.live.server import REPORT_FILES, LiveServer, open_report
from feltlab.rig.station.config import NAME
from feltlab.rig.station.report import record_seconds

if TYPE_CHECKING:
    from feltlab.rig.station.supervisor import SocketRun, Supervisor

HERE = Path(__file__).parent
PAGE = HERE / "templates" / "station.html"
STATIC = HERE / "static"
STATIC_FILES = {"station.js": "text/javascript", "station.css": "text/css"}
STATION_FILES = {
    "batch-report.html": "text/html",
    "batch-junit.xml": "application/xml",
    "station-record.jsonl": "application/json",
}


def _tile(r: SocketRun) -> dict[str, Any]:
    """One socket's tile: what the page shows of it."""
    prog = (r.live.get("progress") or {}) if r.live else {}
    rec = r.record() if r.state in ("done", "stopped", "error") else None
    coll = (rec or {}).get("collection") or {}
    done = coll.get("collected", prog.get("done", 0)) or 0
    total = coll.get("requested") or prog.get("total") or r.socket.size
    elapsed = prog.get("wall_elapsed_s") or 0.0
    rate = done / elapsed if elapsed and done and rec is None else None
    if rec is not None:  # the campaign's own average, from its record's wall-clock times
        seconds = record_seconds(rec)
        rate = done / seconds if seconds and done else None
    device = (r.live.get("device") or {}) if r.live else {}
    faults = [e.get("text", "") for e in (r.live.get("events") or []) if e.get("kind") == "fault"][
        -3:
    ]
    faults += [str(f.get("name", f)) for f in (rec or {}).get("faults") or [] if f][-3:]
    return {
        "name": r.socket.name,
        "device": r.socket.device,
        "kind": r.socket.kind,
        "unit": r.socket.unit,
        "batch": r.socket.batch,
        "state": r.state,
        "verdict": (rec or {}).get("verdict") or r.verdict or r.live.get("verdict"),
        "interim": rec is None,
        "done": int(done),
        "total": total,
        "rate": rate,
        "eta_s": prog.get("wall_left_s") if rec is None else None,
        "faults": faults,
        "fault_count": int(device.get("faults", 0) or 0) + len((rec or {}).get("faults") or []),
        "starts": r.starts,
        "live_url": r.live_url if r.state in ("running", "stopping") else None,
        "report": f"socket/{r.socket.name}/report.html"
        if (r.folder / "report.html").exists()
        else None,
    }


def station_snapshot(sup: Supervisor, *, final: bool = False) -> dict[str, Any]:
    """The operator page's snapshot of a running station."""
    out = sup.station.out
    return {
        "schema": "feltlab-station/1",
        "station": sup.station.name,
        "file": str(sup.station.path),
        "state": "ended" if final else "running",
        "elapsed_s": time.time() - sup.started_at,
        "active_batch": sup.active_batch,
        "sockets": [_tile(r) for r in sup.runs],
        "tally": sup.tally(),
        "batch_report": "report/batch-report.html"
        if (out / "batch-report.html").exists()
        else None,
        "record": sup.record.events()[-30:],
    }


class StationServer(LiveServer):
    """The live view's server with the station's page and routes (see the module doc);
    ``directory`` is the station folder."""

    def add_routes(self, app: Any) -> None:
        app.router.add_get("/", self._station_page)
        app.router.add_get("/state", self._state)
        app.router.add_get("/events", self._events)
        app.router.add_get("/static/{name}", self._station_static)
        app.router.add_get("/report/{name}", self._station_report)
        app.router.add_get("/socket/{socket}/{name}", self._socket_report)

    def _file(self, body: bytes, content_type: str) -> Any:
        from aiohttp import web  # start-up: aiohttp only when the station's page serves

        return web.Response(
            body=body, content_type=content_type, charset="utf-8", headers=self._headers()
        )

    async def _station_page(self, request: Any) -> Any:
        return self._file(PAGE.read_bytes(), "text/html")

    async def _station_static(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only when the station's page serves

        name = request.match_info["name"]
        if name not in STATIC_FILES:
            raise web.HTTPNotFound()
        return self._file((STATIC / name).read_bytes(), STATIC_FILES[name])

    async def _serve_from(self, folder: Path | None, name: str, allowed: dict[str, str]) -> Any:
        """A file of ``folder`` named in ``allowed``, served as the live view serves a
        campaign's report (never through a link, bounded in size, streamed)."""
        from aiohttp import web  # start-up: aiohttp only when the station's page serves

        if name not in allowed or folder is None:
            raise web.HTTPNotFound(text=f"{name}: not served\n")
        return self._report_file(folder / name, allowed[name])

    async def _station_report(self, request: Any) -> Any:
        return await self._serve_from(self.directory, request.match_info["name"], STATION_FILES)

    async def _socket_report(self, request: Any) -> Any:
        from aiohttp import web  # start-up: aiohttp only when the station's page serves

        socket = request.match_info["socket"]
        if self.directory is None or not NAME.match(socket):
            raise web.HTTPNotFound()
        folder = self.directory / "sockets" / socket
        return await self._serve_from(folder, request.match_info["name"], REPORT_FILES)

    def _report_file(self, path: Path, content_type: str) -> Any:
        """``path`` read whole (a report of a few MB at most) with the live view's checks:
        never through a link, regular files only, bounded
        (:func:`feltlab.rig.live.server.open_report`)."""
        from aiohttp import web  # start-up: aiohttp only when the station's page serves

        opened = open_report(path)
        if opened is None:
            raise web.HTTPNotFound(text=f"{path.name}: not written (yet)\n")
        f, _size = opened
        with f:
            body = f.read()
        headers = self._headers()
        if path.suffix == ".html":  # the reports have inline style and embedded plots
            headers["Content-Security-Policy"] = (
                "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                "frame-ancestors 'none'"
            )
        return web.Response(body=body, headers={**headers, "Content-Type": content_type})


def main(argv: list[str] | None = None) -> int:
    """The page's server process (:func:`feltlab.rig.live.process.serve` with
    :class:`StationServer`); its stdin's ``DIR`` line names the station folder."""
    return live_main(argv, server_class=StationServer)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["STATION_FILES", "StationServer", "main", "station_snapshot"]
