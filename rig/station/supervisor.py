"""The station's supervisor: starts each socket's campaign in a process of its own (``feltlab
certify`` through :mod:`feltlab.rig.station.child`), stops and resumes sockets when asked
(:mod:`feltlab.rig.station.control`), runs batch sections together, keeps the station record
(:mod:`feltlab.rig.station.record`) and the operator page's snapshot, and writes the batch
report when every socket is over.

Socket states: ``waiting`` (not started yet, or its batch section not yet due), ``running``,
``stopping`` (asked to stop: the campaign finishes its sample in flight and keeps its capture),
``stopped`` (its record says ABORTED; ``station resume`` continues it from its journal),
``done`` (a final verdict: PASS, FAIL or INCONCLUSIVE), ``error`` (the campaign ended with
exit 2, e.g. a refused profile).  A batch section's sockets start together once the section
before it has ended (a shared instrument is used by one section at a time) and the section
ends when the last of them does; a socket with no batch starts at once and ends on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from feltlab.rig.station.config import Socket, Station, StationError, make_out
from feltlab.rig.station.control import StationLock, request, wanted
from feltlab.rig.station.record import StationRecord
from feltlab.rig.station.report import write_batch_report

LIVE_LINE = re.compile(rb"live view: (http://127\.0\.0\.1:\d+/)")
FINAL = ("PASS", "FAIL", "INCONCLUSIVE")
MAX_STARTS = 10
"""Starts of one socket in one run of the station: a campaign killed more often than that
(a device or host that keeps killing it) is left in error for the operator."""
SNAPSHOT_SECONDS = 1.0
"""Seconds between the operator page's snapshots (and the sockets' live states read)."""


@dataclass
class SocketRun:
    """The supervisor's view of one socket."""

    socket: Socket
    folder: Path
    state: str = "waiting"
    proc: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    resume: bool = False
    live_url: str | None = None
    live: dict[str, Any] = field(default_factory=dict)
    verdict: str | None = None
    exit_code: int | None = None
    #: the campaign's own error line when it ended with an error (None: no error, or none
    #: written: its log says more)
    error: str | None = None
    started: float | None = None
    starts: int = 0

    def record(self) -> dict[str, Any] | None:
        """The campaign's record.json, if written and readable."""
        try:
            data = json.loads((self.folder / "record.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def socket_status(folder: Path) -> tuple[str, str | None]:
    """A campaign folder's state at start: ``("done", verdict)`` with a final record,
    ``("stopped", "ABORTED")`` with an ABORTED record, ``("interrupted", None)`` with a
    campaign but no record (its process died: a kill -9, a reboot), ``("new", None)``."""
    try:
        rec = json.loads((folder / "record.json").read_text(encoding="utf-8"))
        verdict = str(rec.get("verdict"))
    except (OSError, ValueError, AttributeError):
        verdict = None
    if verdict in FINAL:
        return "done", verdict
    if verdict is not None:
        return "stopped", verdict
    if (folder / "campaign.json").exists():
        return "interrupted", None
    if folder.is_dir() and any(folder.iterdir()):
        return "incomplete", None  # killed before its campaign.json: no campaign to resume
    return "new", None


class Supervisor:
    """Run ``station`` (see the module docstring); ``resume``: continue a station that ran
    before (every unfinished socket from its journal), else a new one (its folder must hold no
    campaign).  ``publish(snapshot)`` receives the operator page's snapshot."""

    def __init__(self, station: Station, *, resume: bool, publish: Any = None) -> None:
        self.station = station
        self.resume = resume
        self.publish = publish
        self.record = StationRecord(station.out)
        self.lock = StationLock(station.out)
        self.runs = [SocketRun(s, station.folder(s.name)) for s in station.sockets]
        self.active_batch: str | None = None
        self.started_at = time.time()
        self._last_snapshot = 0.0

    # ------------------------------------------------------------ start
    def prepare(self) -> None:
        """Take the station lock, read every socket's folder, record the start.  Raises
        StationError for a new station whose folder already holds campaigns."""
        make_out(self.station)
        self.lock.acquire()
        (self.station.out / "sockets").mkdir(exist_ok=True)
        found = {r.socket.name: socket_status(r.folder) for r in self.runs}
        if not self.resume:
            used = [name for name, (st, _v) in found.items() if st != "new"]
            if used:
                self.lock.release()
                raise StationError(
                    f"{self.station.out} already holds the campaigns of socket(s) "
                    f"{', '.join(used)}: continue with feltlab station resume "
                    f"{self.station.path}, or give the station another out folder"
                )
        self.record.add(
            "station-resumed" if self.resume else "station-started",
            pid=os.getpid(),
            sockets=[r.socket.name for r in self.runs],
        )
        for r in self.runs:
            state, verdict = found[r.socket.name]
            if state == "done":
                r.state, r.verdict = "done", verdict
            elif state == "stopped":
                r.state, r.verdict, r.resume = "stopped", verdict, True
            elif state == "interrupted":
                r.resume = True
                self.record.add("socket-lost", r.socket.name, detail="no record: resumed")
            elif state == "incomplete":  # kept aside, never deleted: the campaign starts anew
                aside = r.folder.with_name(f"{r.socket.name}.incomplete-{int(time.time())}")
                r.folder.rename(aside)
                self.record.add(
                    "socket-lost", r.socket.name, detail=f"no campaign: kept in {aside}"
                )
            if wanted(self.station.out, r.socket.name) == "run" and r.state == "stopped":
                r.state = "waiting"

    # ------------------------------------------------------------ the loop
    def run(self) -> int:
        """Supervise until no socket runs or waits; returns the station's exit code (0 every
        socket PASS, 1 any FAIL, 3 any INCONCLUSIVE or stopped, 2 any error)."""
        try:
            while True:
                self._follow_requests()
                self._start_due()
                self._reap()
                self._snapshot()
                if not any(r.state in ("waiting", "running", "stopping") for r in self.runs):
                    break
                time.sleep(self.station.poll)
        except BaseException:
            for r in self.runs:
                self._interrupt(r)
            raise
        finally:
            for r in self.runs:
                if r.log is not None:
                    r.log.close()

        code = self.exit_code()
        self.record.add("station-ended", exit_code=code, tally=self.tally())
        write_batch_report(self.station, code, self.tally())
        self._snapshot(force=True, final=True)
        self.lock.release()
        return code

    def stop_all(self, signum: int = 0, frame: Any = None) -> None:
        """Ctrl-C (SIGINT) or SIGTERM of the station: every running socket is asked to stop
        as ``station stop`` would (its sample in flight finished, its capture kept);
        ``station resume`` continues them."""
        for r in self.runs:
            if r.state in ("running", "waiting"):
                request(self.station.out, r.socket.name, "stop")

    def tally(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.runs:
            key = r.verdict or r.state
            counts[key] = counts.get(key, 0) + 1
        return counts

    def exit_code(self) -> int:
        states = {r.verdict or r.state for r in self.runs}
        if states & {"error", "ERROR"}:
            return 2
        if "FAIL" in states:
            return 1
        if states - {"PASS"}:
            return 3
        return 0

    def _follow_requests(self) -> None:
        for r in self.runs:
            want = wanted(self.station.out, r.socket.name)
            if want == "stop" and r.state == "running":
                self.record.add("socket-stop-requested", r.socket.name)
                self._interrupt(r)
                r.state = "stopping"
            elif want == "stop" and r.state == "waiting":
                r.state = "stopped"
                self.record.add("socket-stopped", r.socket.name, before_start=True)
                self._end_batch(r.socket.batch)
            elif want == "run" and r.state == "stopped":
                self.record.add("socket-resume-requested", r.socket.name)
                r.state = "waiting"

    def _interrupt(self, r: SocketRun) -> None:
        """SIGINT to a running campaign: it finishes the sample in flight and writes its
        record (ABORTED), keeping its capture."""
        if r.proc is not None and r.proc.poll() is None:
            with contextlib.suppress(OSError):
                r.proc.send_signal(signal.SIGINT)

    def _due(self, r: SocketRun) -> bool:
        batch = r.socket.batch
        if batch is None:
            return True
        if self.active_batch is None:
            # the first section (in file order) with a socket waiting is the one due: a
            # section whose sockets all ended is passed over, one resumed later is due again
            members = [m for m in self.runs if m.socket.batch == batch]
            due = next(
                (
                    b
                    for b in self.station.batches
                    if any(m.state == "waiting" for m in self.runs if m.socket.batch == b)
                ),
                None,
            )
            if due != batch:
                return False
            if any(m.state == "stopping" for m in members):
                return False
            self.active_batch = batch
            self.record.add(
                "batch-started", None, batch=batch, sockets=[m.socket.name for m in members]
            )
            return True
        return self.active_batch == batch

    def _start_due(self) -> None:
        for r in self.runs:
            if r.state == "waiting" and self._due(r):
                self._launch(r)

    def _launch(self, r: SocketRun) -> None:
        s, live = r.socket, self.station.live
        args = r.socket.resume_args(r.folder, live=live) if r.resume else None
        if args is None:
            args = s.certify_args(r.folder, live=live)
        logs = self.station.out / "logs"
        logs.mkdir(exist_ok=True)
        r.log = open(logs / f"{s.name}.log", "ab")  # noqa: SIM115 - closed when it ends
        env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
        cmd = [sys.executable, "-m", "feltlab.rig.station.child", str(os.getpid()), "--", *args]
        r.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=r.log, stderr=r.log, env=env
        )
        r.state, r.started, r.live_url, r.live = "running", time.time(), None, {}
        r.starts += 1
        self.record.add(
            "socket-started",
            s.name,
            pid=r.proc.pid,
            resume=r.resume,
            device=s.device,
            command="feltlab " + " ".join(args),
        )

    def _reap(self) -> None:
        for r in self.runs:
            if r.proc is None or r.proc.poll() is None:
                continue
            code = r.proc.returncode
            r.proc = None
            if r.log is not None:
                r.log.close()
                r.log = None
            status, verdict = socket_status(r.folder)
            r.exit_code, r.verdict = code, verdict
            rec = r.record() or {}
            detail = {
                "exit_code": code,
                "verdict": verdict,
                "samples": (rec.get("collection") or {}).get("collected"),
            }
            if status == "done":
                r.state = "done"
                self.record.add("socket-ended", r.socket.name, **detail)
            elif status == "stopped" or r.state == "stopping":
                r.state, r.resume = "stopped", True
                self.record.add("socket-stopped", r.socket.name, **detail)
            elif status == "interrupted" and code < 0 and r.starts < MAX_STARTS:
                # the socket's process was killed (kill -9, the OOM killer): its campaign
                # continues from its journal, at once
                r.state, r.resume = "waiting", True
                self.record.add("socket-lost", r.socket.name, signal=-code, **detail)
            else:
                r.state = "error"
                r.resume = status == "interrupted"
                why = r.error = self._error_line(r)
                self.record.add("socket-ended", r.socket.name, error=why or True, **detail)
            self._end_batch(r.socket.batch)

    def _error_line(self, r: SocketRun) -> str | None:
        """The last ``error: ...`` line the socket's campaign wrote to its log (what made it
        end with exit 2), or None."""
        try:
            tail = (self.station.out / "logs" / f"{r.socket.name}.log").read_bytes()[-16384:]
        except OSError:
            return None
        found = [x for x in tail.decode("utf-8", "replace").splitlines() if x.startswith("error:")]
        return found[-1][len("error:") :].strip() if found else None

    def _end_batch(self, batch: str | None) -> None:
        if batch is None or batch != self.active_batch:
            return
        members = [m for m in self.runs if m.socket.batch == batch]
        if all(m.state in ("done", "stopped", "error") for m in members):
            self.active_batch = None
            self.record.add(
                "batch-ended",
                None,
                batch=batch,
                **{m.socket.name: m.verdict or m.state for m in members},
            )

    # ------------------------------------------------------------ the operator page
    def _read_live(self, r: SocketRun) -> None:
        if r.live_url is None and self.station.live:
            with contextlib.suppress(OSError):
                head = (self.station.out / "logs" / f"{r.socket.name}.log").read_bytes()[-65536:]
                found = LIVE_LINE.findall(head)
                if found:
                    r.live_url = found[-1].decode()
        if r.live_url is None or r.state not in ("running", "stopping"):
            return
        with (
            contextlib.suppress(OSError, ValueError),
            urllib.request.urlopen(r.live_url + "state", timeout=0.5) as resp,
        ):
            data = json.loads(resp.read(1 << 22))
            if isinstance(data, dict):
                r.live = data

    def _snapshot(self, *, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if self.publish is None or (not force and now - self._last_snapshot < SNAPSHOT_SECONDS):
            return
        self._last_snapshot = now
        from feltlab.rig.station.page import station_snapshot  # start-up

        for r in self.runs:
            self._read_live(r)
        self.publish(station_snapshot(self, final=final), final=final)


__all__ = ["FINAL", "SocketRun", "Supervisor", "socket_status"]
