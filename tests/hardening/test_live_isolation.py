"""Issue 30, class 3: a live view cannot move a verdict, nor be turned against the lab.  The
server runs in a process of its own reading the campaign's snapshots (viewers cannot reach
the campaign's interpreter); it answers only to this machine's names (DNS rebinding); it never
serves a link; ``--resume`` never writes through a link planted in the campaign folder."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import CampaignError, quick_profile
from feltlab.rig.live.cli import Live
from feltlab.rig.live.server import LiveServer
from feltlab.rig.live.state import LiveFeed, empty_snapshot


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def _raw_get(port: int, path: str, host: str | None) -> tuple[int, bytes]:
    """One HTTP/1.1 request with exactly the ``Host`` header given (None: none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        head = f"GET {path} HTTP/1.1\r\nConnection: close\r\n"
        if host is not None:
            head += f"Host: {host}\r\n"
        s.sendall((head + "\r\n").encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def test_the_server_answers_only_to_this_machines_names(tmp_path: Path) -> None:
    feed = LiveFeed()
    feed.publish(empty_snapshot())
    with LiveServer(feed, "127.0.0.1", 0, tmp_path) as srv:
        p = srv.port
        ok: list[str | None] = [
            f"127.0.0.1:{p}",
            f"localhost:{p}",
            f"LOCALHOST.:{p}",
            "127.0.0.1",
            f"[::1]:{p}",
        ]
        ok.append(f"{socket.gethostname()}:{p}")
        for host in ok:
            assert _raw_get(p, "/state", host)[0] == 200, host
        refused = [
            f"evil.example:{p}",  # the rebinding attacker's own name
            f"127.0.0.1.evil.example:{p}",
            f"localhost.evil.example:{p}",
            f"127.0.0.1:{p + 1}",  # another port: another origin
            None,  # no Host at all
            "",
        ]
        for host in refused:
            status, body = _raw_get(p, "/state", host)
            assert status in (400, 421), host
            assert b'"schema"' not in body  # nothing of the state leaks
        assert _raw_get(p, "/report/record.json", f"evil.example:{p}")[0] in (400, 421)


def test_links_and_fifos_in_the_folder_are_not_served(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the lab's private key")
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "report.html").symlink_to(secret)
    (folder / "junit.xml").symlink_to(folder / "record.json")  # a link even inside
    (folder / "record.json").write_text('{"verdict": "PASS"}')
    os.mkfifo(folder / "manifest.json")
    feed = LiveFeed()
    with LiveServer(feed, "127.0.0.1", 0, folder) as srv:
        host = f"127.0.0.1:{srv.port}"
        for name in ("report.html", "junit.xml", "manifest.json", "../secret.txt"):
            status, body = _raw_get(srv.port, f"/report/{name}", host)
            assert status == 404 and b"private key" not in body, name
        assert _raw_get(srv.port, "/report/record.json", host) == (200, b'{"verdict": "PASS"}')


@pytest.fixture(scope="module")
def stopped_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("links") / "c"
    stop = threading.Event()
    stop.set()
    prof = quick_profile("batch", null_replicates=39)
    run_campaign(CampaignOptions(prof, out, size=12, seed=3), stop=stop)
    return out


@pytest.fixture
def stopped(stopped_template: Path, tmp_path: Path) -> Path:
    """An interrupted campaign (resumable), a copy of its own."""
    shutil.copytree(stopped_template, tmp_path / "c")
    return tmp_path / "c"


@pytest.mark.parametrize(
    "name",
    [
        "record.json",
        "report.html",
        "junit.xml",
        "manifest.json",
        "campaign.json",
        "capture-002.blf",
    ],
)
def test_resume_never_writes_through_a_planted_link(
    stopped: Path, tmp_path: Path, name: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    target = stopped / name
    if target.exists():
        if name == "campaign.json":  # the real one moved aside, a link in its place
            os.replace(target, tmp_path / "campaign.json")
            victim = tmp_path / "campaign.json"
        else:
            target.unlink()
    before = victim.read_bytes()
    target.symlink_to(victim)
    with pytest.raises(CampaignError, match="is a link"):
        resume_campaign(stopped)
    assert victim.read_bytes() == before


VIEWERS = r"""
import asyncio, os, sys
os.nice(19)  # the browsers' machines, not the rig's: never ahead of the campaign for a CPU
port = int(sys.argv[1])
async def viewer(read):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    await w.drain()
    while read and await r.read(65536):
        pass
    if not read:
        await asyncio.sleep(3600)
async def main():
    tasks = [asyncio.ensure_future(viewer(True)) for _ in range(200)]
    tasks += [asyncio.ensure_future(viewer(False)) for _ in range(50)]
    print("connected", flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)
asyncio.run(main())
"""


def test_the_server_runs_in_its_own_process_and_viewers_reach_only_it(tmp_path: Path) -> None:
    live = Live("127.0.0.1:0").open()
    proc = live.server._proc
    viewers = None
    try:
        assert proc is not None and proc.pid != os.getpid()
        # no server thread, no event loop of the server in the campaign's process
        assert not [t for t in threading.enumerate() if t.name == "feltlab-live"]
        viewers = subprocess.Popen(
            [sys.executable, "-c", VIEWERS, str(live.server.port)], stdout=subprocess.PIPE
        )
        assert viewers.stdout is not None and viewers.stdout.readline() == b"connected\n"
        snap = empty_snapshot()
        snap["phase"] = "collecting 7 of 9"
        t0 = time.perf_counter()
        live.feed.publish(snap)
        publish_s = time.perf_counter() - t0
        deadline = time.monotonic() + 10
        seen = None
        while time.monotonic() < deadline:
            _status, body = _raw_get(live.server.port, "/state", f"127.0.0.1:{live.server.port}")
            seen = json.loads(body).get("phase")
            if seen == "collecting 7 of 9":
                break
            time.sleep(0.05)
        assert seen == "collecting 7 of 9"
        # publishing never waits on 250 connections: one file write, whatever they do
        assert publish_s < 1.0
    finally:
        if viewers is not None:
            viewers.kill()
            viewers.wait()
        live.feed.done.set()
        live.server.stop()
    assert proc.poll() is not None  # the server process is gone with the campaign


def test_real_time_figures_are_the_same_with_and_without_viewers(tmp_path: Path) -> None:
    """A real-time campaign judged with 200 viewers and 50 connections that never read, and
    without: its timing figures agree within the host's recorded uncertainty."""
    prof = quick_profile("batch")

    def p99s(record: dict[str, object]) -> dict[str, float]:
        ms = record["measurements"]
        assert isinstance(ms, list)
        return {
            m["name"]: m["value"]
            for m in ms
            if m["name"].endswith(".p99") and isinstance(m["value"], float)
        }

    plain = run_campaign(CampaignOptions(prof, tmp_path / "a", size=6, seed=5, clock="real"))
    live = Live("127.0.0.1:0").open()
    viewers = subprocess.Popen(
        [sys.executable, "-c", VIEWERS, str(live.server.port)], stdout=subprocess.PIPE
    )
    try:
        assert viewers.stdout is not None and viewers.stdout.readline() == b"connected\n"
        watched = run_campaign(
            CampaignOptions(prof, tmp_path / "b", size=6, seed=5, clock="real"),
            live=live.observer,
        )
    finally:
        viewers.kill()
        viewers.wait()
        live.close(0.0)
    a, b = p99s(plain.record), p99s(watched.record)
    assert a and a.keys() == b.keys()
    # the host's uncertainty of a single figure: its largest recorded timer overshoot (a p99
    # of six shoes is their slowest one), of the worse of the two runs
    hu = max(
        float(plain.record["host_uncertainty"]["seconds_max"]),
        float(watched.record["host_uncertainty"]["seconds_max"]),
    )
    for name in a:
        assert abs(a[name] - b[name]) <= hu, (name, a[name], b[name], hu)


def test_the_bus_load_is_the_parts_average_beside_the_last_second(tmp_path: Path) -> None:
    """The live view's bus load moved (85.6%, 32.1%, 59.6% in one campaign) against the
    capture's one figure: it now shows the part's average, its frame bits over its bus
    time, beside the last second's."""
    from feltlab.rig.live.observer import CampaignObserver

    feed = LiveFeed()
    seen: list[dict[str, object]] = []
    obs = CampaignObserver(feed, every=0.0)
    feed.subscribe(
        lambda: seen.append(
            {**feed.get()[1]["bus"], "elapsed": feed.get()[1]["progress"].get("clock_elapsed_s")}
        )
    )
    prof = quick_profile("batch", null_replicates=39)
    run_campaign(CampaignOptions(prof, tmp_path / "c", size=12, seed=4), live=obs)
    rows = [b for b in seen if b.get("load_average") is not None and b.get("elapsed")]
    assert rows
    for b in rows:  # one definition: the part's frame bits over its elapsed bus time
        bits, rate, avg, elapsed = b["bits"], b["bitrate"], b["load_average"], b["elapsed"]
        assert isinstance(bits, int) and isinstance(rate, int)
        assert isinstance(avg, float) and isinstance(elapsed, float)
        assert 0 < avg <= 1
        assert avg == pytest.approx(min(1.0, bits / (elapsed * rate)), rel=0.05)
