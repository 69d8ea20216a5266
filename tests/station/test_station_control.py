"""A running station and other processes: a second station naming a device the first holds is
refused with the holder's name; ``station stop`` stops one socket (its record ABORTED, its
capture kept) and ``station resume`` continues it from its journal to a verdict, every shoe
once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from feltlab.rig.bus.writer import journal_path
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.station.config import load_station
from feltlab.rig.station.record import StationRecord

from .conftest import FELTLAB, feltlab, station_env, write_profiles, write_station

SHOES = 3000


def _written(journal: Path) -> int:
    try:
        return len(journal.read_bytes().split(b"\0", 1)[0])
    except OSError:
        return 0


@pytest.mark.slow
def test_held_device_refused_then_stop_and_resume_one_socket(tmp_path: Path) -> None:
    profiles = write_profiles(tmp_path / "p")
    env = station_env(tmp_path / "state")
    a = write_station(
        tmp_path / "lab-a.toml",
        [{"name": "b1", "device": "DM2-0042", "kind": "batch", "seed": 5, "shoes": SHOES}],
        profiles,
        name="lab-a",
        live=False,
    )
    b = write_station(
        tmp_path / "lab-b.toml",
        [{"name": "x", "device": "DM2-0042", "kind": "batch", "seed": 6, "shoes": 12}],
        profiles,
        name="lab-b",
    )
    station = load_station(a)
    proc = subprocess.Popen(
        [*FELTLAB, "station", "run", str(a)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    journal = journal_path(station.folder("b1") / "capture-001.blf")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _written(journal) < 100_000:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.02)
        held = feltlab(["station", "run", str(b)], env)
        assert held.returncode == 2
        assert held.stderr.startswith(
            "error: device 'DM2-0042' is held by station 'lab-a' (socket 'b1', "
            f"{station.path}), process {proc.pid} on "
        )
        assert not (tmp_path / "lab-b.station" / "sockets" / "x").exists()
        stop = feltlab(["station", "stop", str(a), "b1"], env)
        assert stop.returncode == 0 and "asked station lab-a to stop socket b1" in stop.stdout
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 3, err[-2000:]  # a stopped socket: no final verdict yet
    assert "b1: ABORTED" in out
    rec = json.loads((station.folder("b1") / "record.json").read_text())
    assert rec["verdict"] == "ABORTED"
    stopped_at = rec["collection"]["collected"]
    assert 0 < stopped_at < SHOES
    res = feltlab(["station", "resume", str(a), "b1"], env)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    rec = json.loads((station.folder("b1") / "record.json").read_text())
    assert rec["verdict"] == "PASS" and rec["collection"]["collected"] == SHOES
    parts = [station.folder("b1") / c for c in rec["captures"]]
    assert len(parts) == 2
    data = read_campaign_capture(parts, load_profile(station.sockets[0].profile).base)
    keys = [(s.part, s.number) for s in data.shoes]
    assert len(keys) == len(set(keys)) == SHOES
    events = [(e["event"], e["socket"]) for e in StationRecord(station.out).events()]
    assert events == [
        ("station-started", None),
        ("socket-started", "b1"),
        ("socket-stop-requested", "b1"),
        ("socket-stopped", "b1"),
        ("station-ended", None),
        ("station-resumed", None),
        ("socket-started", "b1"),
        ("socket-ended", "b1"),
        ("station-ended", None),
    ]


@pytest.mark.slow
def test_kill_9_of_one_socket_is_resumed_by_the_station(tmp_path: Path) -> None:
    profiles = write_profiles(tmp_path / "p")
    env = station_env(tmp_path / "state")
    path = write_station(
        tmp_path / "lab.toml",
        [{"name": "b1", "kind": "batch", "seed": 8, "shoes": SHOES}],
        profiles,
        name="lab-k",
        live=False,
    )
    station = load_station(path)
    proc = subprocess.Popen(
        [*FELTLAB, "station", "run", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    journal = journal_path(station.folder("b1") / "capture-001.blf")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _written(journal) < 100_000:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.02)
        (started,) = [
            e for e in StationRecord(station.out).events() if e["event"] == "socket-started"
        ]
        os.kill(started["pid"], signal.SIGKILL)  # the socket's campaign, not the station
        _out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err[-2000:]
    rec = json.loads((station.folder("b1") / "record.json").read_text())
    assert rec["verdict"] == "PASS" and rec["collection"]["collected"] == SHOES
    assert rec["recovered_parts"] == ["capture-001.blf"]
    parts = [station.folder("b1") / c for c in rec["captures"]]
    data = read_campaign_capture(parts, load_profile(station.sockets[0].profile).base)
    keys = [(s.part, s.number) for s in data.shoes]
    assert len(keys) == len(set(keys)) == SHOES
    events = [(e["event"], e.get("signal")) for e in StationRecord(station.out).events()]
    assert events == [
        ("station-started", None),
        ("socket-started", None),
        ("socket-lost", 9),
        ("socket-started", None),
        ("socket-ended", None),
        ("station-ended", None),
    ]
