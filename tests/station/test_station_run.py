"""The station of issue 42's Done-when, in simulated time: 4 batch shufflers (two of them a
batch section), 2 continuous shufflers and 2 jackpot panels.

- each socket's folder is the one a lone ``feltlab certify`` writes for the same seed: the
  captures byte for byte, every other file equal up to the campaign's random id, its wall-clock
  start and end and what they key (the parts' tags, the manifest's digests of the files that
  carry them);
- a kill -9 of the station at a moment it does not choose (its first sample on the bus), then
  ``feltlab station resume``: the same verdicts, every sample collected once (none lost, none
  counted twice), the station record saying what happened when.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.bus.writer import journal_path
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.station.config import load_station
from feltlab.rig.station.record import StationRecord

from .conftest import EIGHT, FELTLAB, feltlab, station_env, write_profiles, write_station

SCRUBBED = {"campaign_id", "started", "finished", "tag"}
"""What differs between two campaigns of one seed: the random id, the wall-clock times, and
the parts' tags (MACs under the per-campaign key, which the id selects)."""
WALL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}")
"""A record's wall-clock time as the report shows it (2026-12-06T06:14:49+0000)."""
KEYED_FILES = {"campaign.json", "record.json", "report.html"}
"""Files that carry the id or the times (compared scrubbed, their manifest digests not)."""


@pytest.fixture(scope="module")
def eight(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("station")
    profiles = write_profiles(root / "profiles")
    path = write_station(root / "lab.toml", EIGHT, profiles, name="lab-a", live=False)
    env = station_env(root / "state")
    t0 = time.monotonic()
    res = feltlab(["station", "run", str(path)], env)
    wall = time.monotonic() - t0
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    return {"root": root, "path": path, "env": env, "profiles": profiles, "wall": wall}


def _scrub(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: ("*" if k in SCRUBBED else _scrub(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def _same_folder(a: Path, b: Path) -> None:
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    rec_a = json.loads((a / "record.json").read_text())
    rec_b = json.loads((b / "record.json").read_text())
    for name in names:
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if name.endswith(".json") and name in KEYED_FILES:
            assert _scrub(json.loads(x)) == _scrub(json.loads(y)), name
        elif name == "report.html":
            # the id, then every wall-clock time (the report shows no other timestamp)
            tx = WALL_TIME.sub("T", x.decode().replace(rec_a["campaign_id"], "ID"))
            ty = WALL_TIME.sub("T", y.decode().replace(rec_b["campaign_id"], "ID"))
            assert tx == ty, name
        elif name == "manifest.json":
            fa, fb = json.loads(x)["files"], json.loads(y)["files"]
            assert sorted(fa) == sorted(fb)
            for f in fa:
                if f not in KEYED_FILES:
                    assert fa[f] == fb[f], f
        else:  # the captures, the JUnit, the host's uncertainty: byte for byte
            assert x == y, name
    assert re.fullmatch(r"capture-001\.blf", " ".join(n for n in names if n.endswith(".blf")))


@pytest.mark.slow
def test_each_socket_folder_is_its_lone_campaigns(eight: dict[str, Any]) -> None:
    station = load_station(eight["path"])
    assert [s.kind for s in station.sockets].count("batch") == 4
    lone = eight["root"] / "lone"
    lone.mkdir()
    procs = []
    for s in station.sockets:  # the command a lab types for one device, 2 at a time
        procs.append(
            subprocess.Popen(
                [*FELTLAB, *s.certify_args(lone / s.name)],
                env=eight["env"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        if len(procs) % 2 == 0:
            for p in procs[-2:]:
                p.wait(300)
    for p in procs:
        p.wait(300)
    for s in station.sockets:
        _same_folder(station.folder(s.name), lone / s.name)
        assert json.loads((station.folder(s.name) / "record.json").read_text())["verdict"] == "PASS"
    # the batch report: one row and one JUnit suite a socket
    html = (station.out / "batch-report.html").read_text()
    assert html.count('<tr data-socket="') == 8
    junit = (station.out / "batch-junit.xml").read_text()
    assert junit.count("<testsuite ") == 8 and 'failures="0"' in junit
    events = [e["event"] for e in StationRecord(station.out).events()]
    assert events[0] == "station-started" and events[-1] == "station-ended"
    assert events.count("socket-started") == 8 and events.count("socket-ended") == 8
    assert events.count("batch-started") == events.count("batch-ended") == 1


def _written(journal: Path) -> int:
    """Bytes of frames in a journal (the mapped file is pre-sized: the rest is NUL bytes)."""
    try:
        return len(journal.read_bytes().split(b"\0", 1)[0])
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead
        return f.read().split(") ", 1)[1][0] != "Z"


def _diagnosis(station: Any, before: dict[str, Any]) -> str:
    """Each socket that ended without PASS: its folder after the kill, its record's errors
    and the end of its log."""
    lines = []
    for s in station.sockets:
        try:
            rec = json.loads((station.folder(s.name) / "record.json").read_text())
        except (OSError, ValueError):
            rec = {}
        if rec.get("verdict") != "PASS":
            log = (station.out / "logs" / f"{s.name}.log").read_text(errors="replace")[-1500:]
            lines.append(f"{s.name}: after the kill {before[s.name]}; errors {rec.get('errors')}")
            lines.append(log)
    return "\n".join(lines)


@pytest.mark.slow
def test_kill_9_of_the_station_then_resume_gives_the_same_verdicts(
    eight: dict[str, Any],
) -> None:
    root = eight["root"]
    path = write_station(
        root / "crash.toml", EIGHT, eight["profiles"], name="lab-crash", live=False
    )
    station = load_station(path)
    proc = subprocess.Popen(
        [*FELTLAB, "station", "run", str(path)],
        env=eight["env"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    journals = [journal_path(station.folder(s.name) / "capture-001.blf") for s in station.sockets]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(_written(j) > 2000 for j in journals):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # the station, as the OOM killer or a crash would
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    pids = [e["pid"] for e in StationRecord(station.out).events() if e["event"] == "socket-started"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), "a socket outlived its station"
    finished = {
        s.name for s in station.sockets if (station.folder(s.name) / "record.json").exists()
    }
    interrupted = {
        s.name
        for s in station.sockets
        if s.name not in finished and (station.folder(s.name) / "campaign.json").exists()
    }
    assert interrupted, "the kill came when no campaign was under way: nothing was tested"
    before = {  # what each folder held after the kill (said if the resume fails)
        s.name: sorted(p.name for p in station.folder(s.name).iterdir())
        if station.folder(s.name).exists()
        else None
        for s in station.sockets
    }
    res = feltlab(["station", "resume", str(path)], eight["env"])
    assert res.returncode == 0, res.stdout + _diagnosis(station, before)
    lone = load_station(eight["path"])
    for s in station.sockets:
        rec = json.loads((station.folder(s.name) / "record.json").read_text())
        ref = json.loads((lone.folder(s.name) / "record.json").read_text())
        assert rec["verdict"] == ref["verdict"] == "PASS", s.name
        coll = rec["collection"]
        assert coll["collected"] == coll["requested"] == s.size and not coll["missing"], s.name
        if s.kind == "batch":
            parts = [station.folder(s.name) / c for c in rec["captures"]]
            data = read_campaign_capture(parts, load_profile(s.profile).base)
            keys = [(x.part, x.number) for x in data.shoes]
            assert len(keys) == len(set(keys)) == s.size, s.name  # none lost, none twice
            assert rec["battery"]["n_shoes"] == s.size
    events = StationRecord(station.out).events()
    names = [e["event"] for e in events]
    assert "station-resumed" in names and names[-1] == "station-ended"
    lost = {e["socket"] for e in events if e["event"] == "socket-lost"}
    assert interrupted <= lost and not lost & finished
    for s in station.sockets:  # a socket finished before the kill is never run again
        starts = [e for e in events if e["event"] == "socket-started" and e["socket"] == s.name]
        if s.name in finished:
            assert len(starts) == 1, s.name
        if s.name in interrupted:
            assert [e["resume"] for e in starts] == [False, True], s.name
    shutil.rmtree(station.out, ignore_errors=True)
