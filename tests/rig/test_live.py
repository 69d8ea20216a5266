"""The live view's feed and server (rig/live/observer.py, rig/live/server.py) and the command
lines that serve it (``certify --live``, ``view``), over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.live.cli import view as view_cmd
from feltlab.rig.live.observer import CampaignObserver
from feltlab.rig.live.offline import snapshot_from_directory
from feltlab.rig.live.server import STATIC, LiveServer, LiveServerError, parse_address
from feltlab.rig.live.state import LiveFeed, apply_record, empty_snapshot, histogram

FELTLAB = str(Path(sys.executable).with_name("feltlab"))


def _get(url: str, method: str = "GET") -> tuple[int, bytes, Any]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def test_parse_address_defaults_to_this_machine_only() -> None:
    assert parse_address("8000") == ("127.0.0.1", 8000)
    assert parse_address("0.0.0.0:8001") == ("0.0.0.0", 8001)
    assert parse_address("[::1]:8002") == ("::1", 8002)
    assert parse_address(":8003") == ("127.0.0.1", 8003)
    for bad in ("http", "70000", "host:", "-1"):
        with pytest.raises(LiveServerError, match=r"\[HOST:\]PORT"):
            parse_address(bad)


def test_histogram_counts_every_finite_sample() -> None:
    h = histogram([0.001, 0.002, 0.002, 0.004, float("nan")], bins=3)
    assert h["n"] == 4
    assert h["counts"] == [1, 2, 1]  # [1, 2) ms, [2, 3) ms, [3, 4] ms
    assert h["edges"][0] == 0.001 and h["edges"][-1] == 0.004
    assert h["max"] == 0.004
    assert h["p50"] == 0.002
    assert h["scale"] == "linear"
    assert histogram([])["n"] == 0
    # a slow outlier 100 times the rest: log-spaced bins, one decade per two bins
    h = histogram([0.001] * 10 + [0.1], bins=4)
    assert h["scale"] == "log"
    assert h["edges"] == pytest.approx([0.001, 0.001 * 10**0.5, 0.01, 0.01 * 10**0.5, 0.1])
    assert h["counts"] == [10, 0, 0, 1]


def test_apply_record_passes_any_verdict_and_shows_host_uncertainty(tmp_path: Path) -> None:
    """The page takes the verdict strings as they are (issue 13 adds INCONCLUSIVE) and
    shows the record's host_uncertainty when there is one."""
    rec = {
        "verdict": "INCONCLUSIVE",
        "measurements": [
            {
                "name": "heartbeat_jitter.p99",
                "value": 0.0291,
                "unit": "s",
                "low": None,
                "high": 0.03,
                "verdict": "INCONCLUSIVE",
                "detail": {"reason": "margin within the host's uncertainty"},
            }
        ],
        "collection": {"requested": 10, "collected": 9, "missing_count": 1, "missing": []},
        "host_uncertainty": {"timestamp_resolution_s": 1e-6, "scheduling_p99_s": 0.004},
    }
    (tmp_path / "report.html").write_text("<html></html>")
    snap = empty_snapshot()
    apply_record(snap, rec, tmp_path)
    assert snap["verdict"] == "INCONCLUSIVE"
    assert snap["interim"] is False
    assert snap["checks"][0]["verdict"] == "INCONCLUSIVE"
    assert snap["checks"][0]["limits"] == "[, 0.03]"
    assert snap["host_uncertainty"] == rec["host_uncertainty"]
    assert snap["samples"]["missing"] == 1
    assert snap["progress"]["done"] == 9 and snap["progress"]["total"] == 10
    assert snap["report"] == "report/report.html"


def test_server_is_read_only_and_refuses_a_port_in_use(tmp_path: Path) -> None:
    feed = LiveFeed()
    with LiveServer(feed, "127.0.0.1", 0, tmp_path) as srv:
        status, body, headers = _get(srv.url)
        assert status == 200 and b"feltlab" in body
        assert "text/html" in headers["Content-Type"]
        for name in ("live.js", "live.css"):
            status, body, _ = _get(srv.url + "static/" + name)
            assert status == 200 and len(body) > 500
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            status, body, headers = _get(srv.url + "state", method)
            assert status == 405, method
            assert headers["Allow"] == "GET, HEAD"
        assert _get(srv.url + "static/../record.json")[0] == 404
        assert _get(srv.url + "report/campaign.json")[0] == 404  # only the report's files
        assert _get(srv.url + "report/report.html")[0] == 404  # not written yet
        (tmp_path / "report.html").write_text("<html>report</html>")
        assert _get(srv.url + "report/report.html")[1] == b"<html>report</html>"
        with pytest.raises(LiveServerError, match=f"port {srv.port} on 127.0.0.1 is in use"):
            LiveServer(LiveFeed(), "127.0.0.1", srv.port).start()
    # issue 41: after many connections the port stayed "in use" for over 20 s (the server's
    # closed connections in TIME_WAIT); a port whose listener has stopped is free at once
    port = srv.port
    with LiveServer(LiveFeed(), "127.0.0.1", port, tmp_path) as again:
        assert again.port == port and _get(again.url)[0] == 200


def test_slow_readers_of_a_large_report_hold_a_chunk_each_not_the_file(tmp_path: Path) -> None:
    """Issue 41: 16 slow readers of a 200 MB report took 6.47 GB (each request read the file
    whole); the report is streamed a chunk at a time, waiting on each reader."""

    def rss() -> int:  # this process's resident memory, bytes (Linux)
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    size = 48 * 1024 * 1024
    (tmp_path / "report.html").write_bytes(b"x" * size)
    with LiveServer(LiveFeed(), "127.0.0.1", 0, tmp_path) as srv:
        before = rss()
        readers = []
        for _ in range(4):  # each asks for the report and reads nothing
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /report/report.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            readers.append(sock)
        time.sleep(1.5)
        grown = rss() - before
        for sock in readers:
            sock.close()
        # the whole file once per reader would be 192 MB; a chunk each is a few MB
        assert grown < size // 2, f"the server grew by {grown / 2**20:.0f} MiB"
        status, body, headers = _get(srv.url + "report/report.html")
        assert status == 200 and len(body) == size and headers["Content-Length"] == str(size)


def test_the_server_process_survives_a_hostile_snapshot_and_serves_strict_json(
    tmp_path: Path,
) -> None:
    """Issue 41: a snapshot file nested thousands deep killed the live server (SIGABRT), and a
    NaN was served as NaN, which no JSON parser need accept."""
    state = tmp_path / "snapshot.json"
    snap = {**empty_snapshot(), "host_uncertainty": {"x": float("nan")}}
    state.write_text(json.dumps({"final": False, "snapshot": snap}))  # NaN, as Python writes it
    proc = subprocess.Popen(
        [sys.executable, "-m", "feltlab.rig.live.process", "--state", str(state),
         "--host", "127.0.0.1", "--port", "0", "--parent", str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        url = f"http://127.0.0.1:{port}/state"
        deadline = time.monotonic() + 30
        while _get(url)[1].find(b'"host_uncertainty": {"x": null}') < 0:
            assert time.monotonic() < deadline, _get(url)[1][:200]
            time.sleep(0.1)

        def refuse(constant: str) -> None:
            raise AssertionError(f"{constant} is not JSON")

        json.loads(_get(url)[1], parse_constant=refuse)
        state.write_text('{"final": false, "snapshot": ' + "[" * 5000 + "]" * 5000 + "}")
        time.sleep(1.0)  # read (and refused) within READ_SECONDS
        assert proc.poll() is None  # alive
        status, body, _ = _get(url)
        assert status == 200 and b'"host_uncertainty": {"x": null}' in body  # the last good one
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)


def _read_events(url: str, want_end: bool = True) -> list[dict[str, Any]]:
    """The snapshots of an SSE stream, up to its ``end`` event."""
    out: list[dict[str, Any]] = []
    with urllib.request.urlopen(url + "events", timeout=30) as r:
        event = None
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
                if event == "end":
                    break
            elif line.startswith("data: ") and event == "snapshot":
                out.append(json.loads(line[6:]))
    return out


def test_a_campaign_streams_progress_then_its_verdict(tmp_path: Path) -> None:
    """A simulated campaign publishing after every shoe (``every=0``): the snapshots count
    the shoes up one by one with the bus and the latencies so far, interim until the
    record's verdict; the event stream ends with that verdict."""
    feed = LiveFeed()
    observer = CampaignObserver(feed, every=0.0)
    seen: list[dict[str, Any]] = []
    streamed: list[dict[str, Any]] = []
    feed.subscribe(lambda: seen.append(feed.get()[1]))

    class Gate:
        def start(self, description: str, total: int | None) -> None:
            pass

        def advance(self, n: int = 1) -> None:
            pass

    out = tmp_path / "c"
    with LiveServer(feed, "127.0.0.1", 0, out) as srv:
        reader = threading.Thread(target=lambda: streamed.extend(_read_events(srv.url)))
        reader.start()
        opts = CampaignOptions(load_profile(None, "batch"), out, size=30, seed=11)
        result = run_campaign(opts, progress=Gate(), live=observer)
        reader.join(30)
        assert not reader.is_alive()
        _, final = feed.get()
    assert streamed[-1] == final  # the stream's last snapshot is the verdict
    assert str(result.verdict) == final["verdict"]
    assert final["state"] == "finished" and final["interim"] is False
    assert final["campaign"]["clock"] == "sim"
    assert final["samples"] == {"collected": 30, "missing": 0, "missing_list": []}
    assert final["report"] == "report/report.html"
    # the checks are the record's, in its order
    names = [c["name"] for c in final["checks"]]
    assert names == [f"battery.{c['name']}" for c in result.record["battery"]["checks"]] + [
        m["name"] for m in result.record["measurements"]
    ]
    # the power table is the record's: 30 shoes of the bundled profile catch eight of its 13
    # named alternatives, not the five that need more (`feltlab certify plan`, the same at
    # every seed: the naive swap 244 shoes, position-bias 1,045, modulo:bits=8 41, short-seed
    # 776, reboot 101)
    table = result.record["battery"]["power"]
    rows = final["power"]["rows"]
    assert [r["model"] for r in rows] == [a["model"] for a in table["alternatives"]]
    assert len(rows) == 13 and all(r["shoes"] == 30 for r in rows)
    missed = ["biased", "position-bias", "modulo:bits=8", "short-seed", "reboot"]
    assert [r["model"] for r in rows if not r["caught"]] == missed
    assert all(r["needed"] > 30 for r in rows if not r["caught"])
    assert [r["needed"] for r in rows] == [a["shoes_needed"] for a in table["alternatives"]]
    assert final["power"]["required"] == 0.99 and final["verdict"] == "INCONCLUSIVE"
    notes = final["power"]["notes"]
    assert len(notes) == 6 and "30 shoes catch biased" in notes[0]
    assert "shoes would catch every named alternative" in notes[-1]
    collecting = [s for s in seen if s["state"] == "collecting"]
    done = [s["progress"]["done"] for s in collecting]
    assert done == sorted(done) and done[-1] == 30
    assert set(range(1, 31)) <= set(done)
    assert all(s["interim"] and s["verdict"] is None for s in seen[:-1])
    last = collecting[-1]
    assert last["device"]["online"] and last["device"]["heartbeats"] >= 1
    assert last["device"]["reboots"] == 0 and last["device"]["malformed"] == 0
    assert last["bus"]["frames_received"] > 30 * 40  # a 6-deck shoe is 45 ISO-TP frames
    assert 0 < last["bus"]["load"] <= 1
    # one READ_SHOE answered per shoe: first_card counts every shoe read so far
    assert last["latencies"]["first_card"]["n"] == 30
    assert last["latencies"]["shuffle_cycle"]["n"] == 30
    assert sum(last["latencies"]["first_card"]["counts"]) == 30


def test_view_of_an_interrupted_campaign_reads_its_capture(tmp_path: Path) -> None:
    """No record: campaign.json and the capture give what was collected, no verdict, and
    the command that continues the campaign."""
    out = tmp_path / "c"
    stop = threading.Event()

    class StopAt:
        n = 0

        def start(self, description: str, total: int | None) -> None:
            pass

        def advance(self, n: int = 1) -> None:
            self.n += n
            if self.n == 12:
                stop.set()

    opts = CampaignOptions(load_profile(None, "batch"), out, size=40, seed=5)
    run_campaign(opts, progress=StopAt(), stop=stop)
    for name in ("record.json", "report.html", "junit.xml", "manifest.json"):
        (out / name).unlink()
    snap = snapshot_from_directory(out)
    assert snap["verdict"] is None
    assert snap["state"] == "interrupted"
    assert snap["samples"]["collected"] == 12 and snap["samples"]["missing"] == 28
    assert snap["latencies"]["first_card"]["n"] == 12
    assert any(f"feltlab certify shuffler --resume {out}" in e for e in snap["errors"])
    # issue 41: a capture that cannot be read made view say "0 of 2000 shoes", exit 0
    blf = out / "capture-001.blf"
    raw = bytearray(blf.read_bytes())
    raw[200:300] = b"\xff" * 100
    blf.write_bytes(bytes(raw))
    res = CliRunner().invoke(view_cmd, [str(out)])
    assert res.exit_code == 2, res.output
    assert "failed, shoes collected unknown (of 40)" in res.output
    assert "how many shoes were collected is unknown" in res.output
    assert " 0 of 40" not in res.output and "Traceback" not in res.output


def test_a_64_bit_seed_reaches_the_page_exact(tmp_path: Path) -> None:
    """Issue 41: the page showed 2,256,960,695,605,606,000 for seed 2256960695605605789 (a
    JSON number above 2**53 is rounded by the browser's JSON.parse); the snapshot, live and
    offline, carries it as a decimal string, and the page prints it as it is."""
    seed = 2256960695605605789
    assert float(seed) != seed  # a double cannot hold it: a number would be rounded
    feed = LiveFeed()
    out = tmp_path / "c"
    run_campaign(
        CampaignOptions(load_profile(None, "batch"), out, size=2, seed=seed),
        live=CampaignObserver(feed, every=0.0),
    )
    live = json.loads(json.dumps(feed.get()[1]))
    offline = json.loads(json.dumps(snapshot_from_directory(out)))
    assert live["schema"] == offline["schema"] == 2
    assert live["campaign"]["seed"] == offline["campaign"]["seed"] == str(seed)
    script = (STATIC / "live.js").read_text(encoding="utf-8")
    assert "seed ${c.seed ?? " in script and "num(c.seed)" not in script


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_certify_live_serves_the_final_verdict_and_refuses_a_busy_port(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run(
            [FELTLAB, "certify", "shuffler", "--shoes", "20", "--out", str(tmp_path / "x"),
             "--live", str(port)],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: --live: port {port} on 127.0.0.1 is in use; choose another port (or 0 for "
        "any free one)"
    ]
    assert not (tmp_path / "x").exists()  # nothing was started
    port = _free_port()
    proc = subprocess.Popen(
        [FELTLAB, "certify", "shuffler", "--shoes", "40", "--seed", "3",
         "--out", str(tmp_path / "c"), "--live", f"127.0.0.1:{port}", "--live-linger", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.startswith(f"live view: http://127.0.0.1:{port}/ (read-only")
        lingering = proc.stderr.readline()  # printed once the campaign is over
        assert "serving the final page" in lingering, lingering
        status, body, _ = _get(f"http://127.0.0.1:{port}/state")
        snap = json.loads(body)
        record = json.loads((tmp_path / "c" / "record.json").read_text())
        # 40 shoes catch every named alternative but the five that need more (plan: biased
        # 244, position-bias 1,045, modulo:bits=8 41, short-seed 776, reboot 101)
        assert snap["verdict"] == record["verdict"] == "INCONCLUSIVE"
        missed = [r["model"] for r in snap["power"]["rows"] if not r["caught"]]
        assert missed == ["biased", "position-bias", "modulo:bits=8", "short-seed", "reboot"]
        assert snap["samples"]["collected"] == 40
        status, body, _ = _get(f"http://127.0.0.1:{port}/report/report.html")
        assert status == 200 and body == (tmp_path / "c" / "report.html").read_bytes()
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_live_view_that_stops_with_its_campaign_says_how_to_see_the_final_page(
    tmp_path: Path,
) -> None:
    """Issue 41: `--live PORT` as the README shows it was gone before a browser opened it
    (a simulated campaign ends in seconds); without --live-linger the command says so and
    gives the command that serves the final page."""
    out = tmp_path / "c"
    r = subprocess.run(
        [FELTLAB, "certify", "shuffler", "--shoes", "2", "--out", str(out), "--live", "0"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    last = [ln for ln in r.stderr.splitlines() if ln.startswith("live view:")][-1]
    assert last.startswith(
        f"live view: stopped with the campaign; its final page: feltlab view {out} --live "
    )
    assert last.endswith("(or give --live-linger SECONDS)")


def test_kill_9_of_a_live_campaign_leaves_no_feed_folder(tmp_path: Path) -> None:
    """Issue 41: kill -9 left feltlab-live-* folders in the temp dir; the server process,
    which outlives its campaign, removes its feed folder when it finds the campaign gone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [FELTLAB, "certify", "shuffler", "--shoes", "2000", "--out", str(tmp_path / "c"),
         "--live", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("live view: http://127.0.0.1:")
        assert [p.name[:13] for p in tmp.iterdir()] == ["feltlab-live-"]
    finally:
        proc.kill()
        proc.wait(30)
    deadline = time.monotonic() + 30
    while list(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmp.iterdir()) == []


def test_watching_a_campaign_does_not_change_it(tmp_path: Path) -> None:
    """The observer only reads: the same seed gives a byte-identical capture and the same
    verdicts with and without the live view."""
    from feltlab.rig.certify.record import verdict_summary

    prof = load_profile(None, "batch")
    plain = run_campaign(CampaignOptions(prof, tmp_path / "a", size=20, seed=77))
    watched = run_campaign(
        CampaignOptions(prof, tmp_path / "b", size=20, seed=77),
        live=CampaignObserver(LiveFeed(), every=0.0),
    )
    a = (tmp_path / "a" / "capture-001.blf").read_bytes()
    assert a == (tmp_path / "b" / "capture-001.blf").read_bytes()
    assert verdict_summary(plain.record) == verdict_summary(watched.record)


def test_a_continuous_shuffler_campaign_shows_each_deal(tmp_path: Path) -> None:
    feed = LiveFeed()
    run_campaign(
        CampaignOptions(load_profile("continuous"), tmp_path / "c", size=25, seed=3),
        live=CampaignObserver(feed),
    )
    _, snap = feed.get()
    assert snap["campaign"]["unit"] == "deals"
    assert snap["latencies"]["deal"]["n"] == 25  # one DEAL answered by one Card each
    assert snap["latencies"]["round_trip.INSERT"]["n"] == 25


def test_fault_events_are_named_from_the_protocol() -> None:
    from feltlab.rig.live.state import describe_event
    from feltlab.rig.protocol.codec import FaultCode, Severity

    text = describe_event(
        "fault",
        {"code": int(FaultCode.JAM), "severity": int(Severity.ERROR), "active": 1, "detail": 60},
    )
    assert text == "fault JAM raised (severity ERROR, detail 60)"
    assert describe_event("reboot", {"boot_count": 2}) == "reboot (boot_count 2)"
