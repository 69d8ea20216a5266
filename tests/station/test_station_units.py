"""The station's pieces without a campaign: the station file's refusals, the bus budget's
figures (docs/protocol.md's frame counts), the device pool's cross-process locks."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.certify.profile import load_profile
from feltlab.rig.station.budget import check_budget, shoe_frames, socket_load, worst_frame_bits
from feltlab.rig.station.config import StationError, load_station
from feltlab.rig.station.pool import DeviceHeld, DevicePool

from .conftest import feltlab, station_env, write_profiles, write_station

UDP = "interface=udp_multicast,channel=ff11::42,port=43142"


def test_protocol_frame_counts() -> None:
    # docs/protocol.md: a SHOE_PACKED of 6 decks is 366 bytes, 53 frames; an 8-byte classic
    # frame with an 11-bit id is at most 135 bits after stuffing
    assert shoe_frames(6) == 53
    assert worst_frame_bits() == 135


def test_sixteen_deck_mates_fit_one_bus_with_the_figures(tmp_path: Path) -> None:
    profiles = write_profiles(tmp_path / "p")
    socks = [
        {"name": f"dm{i}", "kind": "batch", "seed": i, "bus": UDP, "seconds_per_sample": 22.0}
        for i in range(16)
    ]
    st = load_station(write_station(tmp_path / "s.toml", socks, profiles))
    profs = {s.name: load_profile(s.profile) for s in st.sockets}
    load = socket_load(st.sockets[0], profs["dm0"])
    # 53 frames of the shoe + 5 of commands, acks and flow control + a PING and its reply
    # after every shoe; 10 heartbeats a second
    assert load.frames_per_sample == 60
    assert load.frames_per_second == pytest.approx(60 / 22 + 10)
    assert load.bits_per_second == pytest.approx((60 / 22 + 10) * 135)
    (budget,) = check_budget(st.sockets, profs)
    assert budget.bitrate == 500_000
    assert budget.share == pytest.approx(16 * (60 / 22 + 10) * 135 / 500_000)  # 5.5 %
    assert "5.50%" in budget.describe()


def test_a_bus_that_cannot_carry_its_sockets_is_refused(tmp_path: Path) -> None:
    profiles = write_profiles(tmp_path / "p")
    # the simulated shuffler's declared pace: 2 ms a shoe, 500 shoes a second: 4 Mbit/s
    socks = [{"name": f"s{i}", "kind": "batch", "seed": i, "bus": UDP} for i in range(2)]
    path = write_station(tmp_path / "s.toml", socks, profiles)
    res = feltlab(["station", "run", str(path)], station_env(tmp_path / "state"))
    assert res.returncode == 2
    line = res.stderr.strip()
    assert line.startswith("error: bus udp_multicast:ff11::42:43142: ") and "\n" not in line
    # (60 x 500 + 10) frames/s x 135 bits, twice: 8,102.7 kbit/s of 500
    assert "8102.7 kbit/s of 500 kbit/s (1620.54%" in line and "more than 70%" in line
    assert not (tmp_path / "s.station").exists()  # refused before any work


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[station]\n", "name at least one socket"),
        ('[[socket]]\nname = "a"\nprofile = "batch6"\n', "give its campaign seed"),
        ('[[socket]]\nname = "a b"\nprofile = "batch6"\nseed = 1\n', "is not a name"),
        ('[[socket]]\nname = "a"\nprofile = "batch6"\nseed = 1\ndeals = 5\n', "unknown key"),
        (
            '[[socket]]\nname = "a"\nprofile = "batch6"\nseed = 1\n'
            '[[socket]]\nname = "b"\ndevice = "a"\nprofile = "batch6"\nseed = 2\n',
            "two sockets name device 'a'",
        ),
        ('[[socket]]\nname = "a"\nprofile = "nosuch"\nseed = 1\n', "socket 'a'"),
        ('[[socket]]\nname = "a"\nprofle = "batch6"\nseed = 1\n', "unknown key.s. profle; give"),
        (
            '[[socket]]\nname = "a"\nprofile = "batch6"\nseed = 1\nmodel = "riffle:k=x"\n',
            "socket 'a': model 'riffle:k=x': k must be an integer",
        ),
    ],
)
def test_a_bad_station_file_is_one_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(StationError, match=problem):
        load_station(path)


HOLDER = """
import sys, time
from pathlib import Path
from typing import Any
from feltlab.rig.station.pool import DevicePool
pool = DevicePool(Path(sys.argv[1]))
pool.acquire([("DM2-0042", {"station": "lab-a", "socket": "b1", "file": "lab-a.toml"})])
print("held", flush=True)
sys.stdin.read()
"""


def test_a_held_device_is_refused_across_processes_until_its_holder_dies(
    tmp_path: Path,
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        pool = DevicePool(tmp_path)
        with pytest.raises(DeviceHeld) as caught:
            pool.acquire([("DM2-0001", {"station": "lab-b"}), ("DM2-0042", {"station": "lab-b"})])
        assert str(caught.value).startswith(
            "device 'DM2-0042' is held by station 'lab-a' (socket 'b1', lab-a.toml), process "
            f"{holder.pid} on "
        )
        assert pool.held == []  # all or none: DM2-0001 was let go
        holder.kill()  # kill -9: the kernel drops the lock with the process
        holder.wait(10)
        pool.acquire([("DM2-0042", {"station": "lab-b"})])
        assert pool.held == ["DM2-0042"]
        assert (pool.holder("DM2-0042") or {}).get("station") == "lab-b"
        pool.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def test_batch_sections_start_together_one_at_a_time(tmp_path: Path) -> None:
    from feltlab.rig.station.supervisor import Supervisor

    profiles = write_profiles(tmp_path / "p")
    socks = [
        {"name": "a1", "kind": "batch", "seed": 1, "batch": "A"},
        {"name": "a2", "kind": "batch", "seed": 2, "batch": "A"},
        {"name": "b1", "kind": "batch", "seed": 3, "batch": "B"},
        {"name": "free", "kind": "jackpot", "seed": 4},
    ]
    station = load_station(write_station(tmp_path / "s.toml", socks, profiles))
    sup = Supervisor(station, resume=False)
    sup.prepare()
    launched: list[str] = []

    def launch(r: Any) -> None:  # the process's part is another test's: states only here
        launched.append(r.socket.name)
        r.state = "running"

    sup._launch = launch  # type: ignore[method-assign]
    state = {r.socket.name: r for r in sup.runs}
    sup._start_due()
    assert launched == ["a1", "a2", "free"]  # section A together, B waits for A's end
    state["a1"].state = "done"
    sup._end_batch("A")
    sup._start_due()
    assert launched == ["a1", "a2", "free"] and sup.active_batch == "A"
    state["a2"].state = "stopped"
    sup._end_batch("A")
    assert sup.active_batch is None
    sup._start_due()
    assert launched[3:] == ["b1"] and sup.active_batch == "B"
    state["a2"].state = "waiting"  # a2 resumed while B runs: A is due again after B
    sup._start_due()
    assert launched[4:] == []
    state["b1"].state = "done"
    sup._end_batch("B")
    sup._start_due()
    assert launched[4:] == ["a2"] and sup.active_batch == "A"
    events = [(e["event"], e.get("batch")) for e in sup.record.events() if "batch" in e["event"]]
    assert events == [
        ("batch-started", "A"),
        ("batch-ended", "A"),
        ("batch-started", "B"),
        ("batch-ended", "B"),
        ("batch-started", "A"),
    ]
    sup.lock.release()


def test_a_refused_campaign_is_an_error_with_its_reason(tmp_path: Path) -> None:
    profiles = write_profiles(tmp_path / "p")
    socks = [{"name": "c1", "kind": "continuous", "seed": 1, "standard": "25cfr547"}]
    path = write_station(tmp_path / "s.toml", socks, profiles, live=False)
    res = feltlab(["station", "run", str(path)], station_env(tmp_path / "state"))
    log = tmp_path / "s.station" / "logs" / "c1.log"
    line = "c1: error: --standard applies to a batch shuffler's randomness battery"
    assert res.returncode == 2 and f"{line} (log: {log})" in res.stdout.splitlines()
    status = feltlab(["station", "status", str(path)], station_env(tmp_path / "state"))
    assert f"  {line[:3]} {line[4:]} (wanted: run)" in status.stdout.splitlines(), status.stdout
    from feltlab.rig.station.record import StationRecord

    (ended,) = [
        e for e in StationRecord(tmp_path / "s.station").events() if e["event"] == "socket-ended"
    ]
    assert ended["exit_code"] == 2 and ended["verdict"] is None
    assert ended["error"] == "--standard applies to a batch shuffler's randomness battery"


def test_status_shows_a_running_socket_by_its_last_event() -> None:
    """station status read each folder as at start: a running socket was 'interrupted', one
    restarted 'stopped ABORTED', one ended in error 'new' (found by a new user)."""
    from feltlab.rig.cli.station import shown_state

    started = {"event": "socket-started", "socket": "b1"}
    assert shown_state(("interrupted", None), started, running=True) == "running"
    assert shown_state(("stopped", "ABORTED"), started, running=True) == "running"
    assert shown_state(("interrupted", None), started, running=False) == "interrupted"
    stop = {"event": "socket-stop-requested", "socket": "b1"}
    assert shown_state(("interrupted", None), stop, running=True) == "stopping"
    lost = {"event": "socket-lost", "socket": "b1", "signal": 9}
    assert shown_state(("interrupted", None), lost, running=True) == "lost (signal 9): resuming"
    ended = {"event": "socket-ended", "socket": "s1", "error": "model 'x': unknown"}
    assert shown_state(("new", None), ended, running=False) == "error: model 'x': unknown"
    assert shown_state(("done", "PASS"), None, running=False) == "done PASS"


SOCKET = '[[socket]]\nname = "a"\nprofile = "batch6"\nseed = 1\n'


def _station_cli(args: list[str], state: Path) -> Any:
    """``feltlab station ARGS`` in this process (click's runner): exit code, stdout, stderr."""
    from click.testing import CliRunner

    from feltlab.rig.cli.station import station

    return CliRunner(env={"FELTLAB_STATE_DIR": str(state)}).invoke(station, args)


def _one_error_line(res: Any, *parts: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert res.stdout == "" and res.stderr.count("\n") == 1 and res.stderr.startswith("error: ")
    for part in parts:
        assert part in res.stderr, res.stderr


def test_a_station_file_is_read_bounded_and_never_waited_on(tmp_path: Path) -> None:
    """/dev/zero was read whole (a MemoryError traceback) and a FIFO blocked the station for
    ever (found by a breaker)."""
    import os
    import threading

    state = tmp_path / "state"
    for cmd in ("run", "status"):
        res = _station_cli([cmd, "/dev/zero"], state)
        _one_error_line(res, "station file /dev/zero is not a regular file", "give a file")
    fifo = tmp_path / "lab.toml"
    os.mkfifo(fifo)

    def unblock() -> None:  # a reader blocked on the FIFO gets its end of file: no hang
        with contextlib.suppress(OSError):  # ENXIO: no reader waits, the right outcome
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(10, unblock)
    timer.start()
    try:
        with pytest.raises(StationError, match=r"lab.toml is not a regular file \(a FIFO"):
            load_station(fifo)
    finally:
        timer.cancel()
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.truncate((1 << 20) + 1)  # sparse: a byte over the limit
    with pytest.raises(StationError, match=r"is 1048577 bytes, over the 1048576 accepted; give a"):
        load_station(big)
    (tmp_path / "bom.toml").write_bytes(b"\xff\xfe" + SOCKET.encode())
    with pytest.raises(StationError, match=r"not UTF-8 text \(byte 0\); give a STATION.toml"):
        load_station(tmp_path / "bom.toml")


def test_an_out_that_is_a_file_or_cannot_be_made_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    """out = "/etc/passwd" was a FileExistsError traceback and out = "/proc/nope/x" a
    FileNotFoundError one, both exit 1 (found by a breaker)."""
    from feltlab.rig.station.config import make_out

    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    for out, said in ((a_file, ""), (a_file / "x" / "y", f" ({a_file} is a file)")):
        path = tmp_path / "lab.toml"
        path.write_text(f"[station]\nout = {json.dumps(str(out))}\n{SOCKET}")
        with pytest.raises(StationError) as caught:
            load_station(path)
        assert str(caught.value) == (
            f"{path}: [station] out {out} is not a folder{said}; give a folder for the "
            'station\'s campaigns (out = "lab.station")'
        )
        res = _station_cli(["run", str(path)], tmp_path / "state")
        _one_error_line(res, f"[station] out {out} is not a folder")
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here: a folder nobody can make")
    path = tmp_path / "proc.toml"
    path.write_text(f'[station]\nout = "/proc/nope/x"\n{SOCKET}')
    station = load_station(path)  # nothing on disk says it cannot be made: making it does
    with pytest.raises(StationError, match=r"out /proc/nope/x cannot be made or written \(No such"):
        make_out(station)
    for args in (["run", str(path)], ["stop", str(path), "a"]):
        res = _station_cli(args, tmp_path / "state")
        _one_error_line(res, "[station] out /proc/nope/x cannot be made", "give a folder")
    assert not (tmp_path / "state").exists()  # refused before the device pool was touched


@pytest.mark.parametrize(
    ("kind", "unit", "size"),
    [("batch", "shoes", 70_000), ("continuous", "deals", 65_536), ("jackpot", "draws", 1)],
)
def test_a_sample_size_certify_refuses_is_refused_with_the_file(
    tmp_path: Path, kind: str, unit: str, size: int
) -> None:
    """shoes = 70000 passed the file's check; the socket then failed on certify's range,
    only in its log (found by a breaker)."""
    profiles = write_profiles(tmp_path / "p")
    path = write_station(
        tmp_path / "s.toml", [{"name": "x1", "kind": kind, unit: size, "seed": 1}], profiles
    )
    with pytest.raises(StationError) as caught:
        load_station(path)
    assert str(caught.value) == (
        f"socket 'x1': {unit} = {size} is not a whole number in 2..65535 (16-bit shoe and "
        f"draw numbers); give {unit} = 2..65535"
    )
    write_station(path, [{"name": "x1", "kind": kind, unit: 65_535, "seed": 1}], profiles)
    (sock,) = load_station(path).sockets
    assert sock.certify_args(tmp_path)[-4:] == [f"--{unit}", "65535", "--out", str(tmp_path)]


def test_status_json_gives_each_sockets_state_then_the_record(tmp_path: Path) -> None:
    """station status --json printed only the record's events, not the sockets' states the
    text shows (docs/station.md said both)."""
    from feltlab.rig.station.control import request
    from feltlab.rig.station.record import StationRecord

    profiles = write_profiles(tmp_path / "p")
    socks = [{"name": n, "kind": "batch", "seed": i} for i, n in enumerate(("b1", "b2", "b3"))]
    path = write_station(tmp_path / "s.toml", socks, profiles)
    out = tmp_path / "s.station"
    out.mkdir()
    record = StationRecord(out)
    record.add("station-started", pid=1, sockets=["b1", "b2", "b3"])
    record.add("socket-started", "b1", pid=2)
    record.add("socket-ended", "b1", exit_code=2, verdict=None, error="bus down")
    record.add("socket-started", "b2", pid=3)
    request(out, "b2", "stop")
    res = _station_cli(["status", "--json", str(path)], tmp_path / "state")
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert lines[:4] == [
        {"station": "s", "out": str(out), "running": False},
        {"socket": "b1", "state": "error: bus down", "wanted": "run"},
        {"socket": "b2", "state": "new", "wanted": "stop"},  # not running: its folder's state
        {"socket": "b3", "state": "new", "wanted": "run"},
    ]
    assert [e["event"] for e in lines[4:]] == [
        "station-started",
        "socket-started",
        "socket-ended",
        "socket-started",
    ]
    text = _station_cli(["status", str(path)], tmp_path / "state").stdout.splitlines()
    assert text[1:4] == [
        "  b1: error: bus down (wanted: run)",
        "  b2: new (wanted: stop)",
        "  b3: new (wanted: run)",
    ]
