"""``feltlab station``: a test station of several devices certified at once (issue 42;
docs/station.md): ``run STATION.toml``, ``stop STATION SOCKET``, ``resume STATION [SOCKET]``,
``status STATION``.  The machinery is :mod:`feltlab.rig.station`."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import threading
from typing import Any

import click

from feltlab.cli.options import FiniteRange
from feltlab.rig.errors import RigError

PAGE_HELP = (
    "Serve the operator page at [HOST:]PORT (HOST 127.0.0.1 unless given; PORT 0 picks a "
    "free one): a tile per socket, the station record and the batch report."
)


def _fail(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(2)


def _supervise(
    path: str, resume: bool, page: str | None, linger: float, socket: str | None
) -> None:
    from feltlab.rig.certify.profile import load_profile  # start-up: when the command runs
    from feltlab.rig.station.budget import check_budget  # start-up: when the command runs
    from feltlab.rig.station.config import load_station, make_out  # start-up: when it runs
    from feltlab.rig.station.control import request  # start-up: when the command runs
    from feltlab.rig.station.pool import DevicePool  # start-up: when the command runs
    from feltlab.rig.station.supervisor import Supervisor  # start-up: when the command runs

    server: Any = None
    pool = DevicePool()
    try:
        station = load_station(path)
        if socket is not None:
            station.socket(socket)  # an unknown socket is refused before any work
        profiles = {s.name: load_profile(s.profile) for s in station.sockets}
        for budget in check_budget(station.sockets, profiles):
            click.echo(f"budget: {budget.describe()}", err=True)
        make_out(station)  # an out that cannot be made is refused before any device is taken
        pool.acquire(
            (s.device, {"station": station.name, "socket": s.name, "file": str(station.path)})
            for s in station.sockets
        )
        if socket is not None:
            request(station.out, socket, "run")
        publish = None
        if page is not None:
            from feltlab.rig.live.process import LiveProcess, new_shared_feed  # start-up
            from feltlab.rig.live.server import parse_address  # start-up: when the command runs

            host, port = parse_address(page)
            feed = new_shared_feed()
            server = LiveProcess(feed, host, port, module="feltlab.rig.station.page").start()
            server.directory = station.out
            publish = feed.publish
            click.echo(f"operator page: {server.url}", err=True)
        sup = Supervisor(station, resume=resume, publish=publish)
        sup.prepare()
        if server is not None:
            server.directory = station.out
        signal.signal(signal.SIGINT, sup.stop_all)
        signal.signal(signal.SIGTERM, sup.stop_all)
        click.echo(
            f"station {station.name}: {len(station.sockets)} socket(s) in {station.out}", err=True
        )
        code = sup.run()
    except RigError as exc:
        if server is not None:
            _stop_page(server)
        pool.release()
        _fail(exc)
        return
    pool.release()
    for r in sup.runs:
        if r.state == "error":  # why, and where the rest is: never a bare "error"
            log = station.out / "logs" / f"{r.socket.name}.log"
            click.echo(f"{r.socket.name}: error: {r.error or 'no error line'} (log: {log})")
        else:
            click.echo(f"{r.socket.name}: {r.verdict or r.state}")
    click.echo(f"batch report: {station.out / 'batch-report.html'}")
    if server is not None:
        if linger > 0:
            click.echo(f"operator page: serving the final page for {linger:g} s", err=True)
            waiter = threading.Event()
            signal.signal(signal.SIGINT, lambda s, f: waiter.set())
            waiter.wait(linger)
        _stop_page(server)
    sys.exit(code)


def _stop_page(server: Any) -> None:
    """Stop the operator page's process and remove its feed's temporary folder."""

    server.stop()
    shutil.rmtree(server.feed.path.parent, ignore_errors=True)


def _page_options(fn: Any) -> Any:
    fn = click.option(
        "--page-linger",
        type=FiniteRange(0, 86_400),
        default=0.0,
        help="With --page: keep serving the final page this many seconds after the end.",
    )(fn)
    return click.option("--page", metavar="[HOST:]PORT", default=None, help=PAGE_HELP)(fn)


@click.group("station")
def station() -> None:
    """A test station: several devices certified at once, each socket's campaign in its own
    process and folder (docs/station.md)."""


@station.command("run")
@click.argument("station_file", metavar="STATION.toml")
@_page_options
def run_command(station_file: str, page: str | None, page_linger: float) -> None:
    """Run every socket of STATION.toml (exit 0 all PASS, 1 any FAIL, 2 any error, 3 any
    INCONCLUSIVE or stopped)."""
    _supervise(station_file, False, page, page_linger, None)


@station.command("resume")
@click.argument("station_file", metavar="STATION.toml")
@click.argument("socket", required=False)
@_page_options
def resume_command(
    station_file: str, socket: str | None, page: str | None, page_linger: float
) -> None:
    """Continue SOCKET (a stopped one), or with no SOCKET the whole station after a crash:
    each unfinished campaign from its journal.  A running station is asked to resume SOCKET."""
    from feltlab.rig.station.config import load_station  # start-up: when the command runs
    from feltlab.rig.station.control import StationLock, request  # start-up: when the command runs

    try:
        st = load_station(station_file)
        if socket is not None:
            st.socket(socket)
    except RigError as exc:
        _fail(exc)
        return
    if StationLock(st.out).running():
        if socket is None:
            _fail(RigError(f"station {st.name} is running: name the SOCKET to resume"))
        request(st.out, socket, "run")  # type: ignore[arg-type]
        click.echo(f"asked station {st.name} to resume socket {socket}")
        return
    _supervise(station_file, True, page, page_linger, socket)


@station.command("stop")
@click.argument("station_file", metavar="STATION.toml")
@click.argument("socket")
def stop_command(station_file: str, socket: str) -> None:
    """Stop SOCKET of a running station: its campaign finishes the sample in flight, keeps
    its capture and records ABORTED; ``feltlab station resume`` continues it."""
    from feltlab.rig.station.config import load_station, make_out  # start-up: when it runs
    from feltlab.rig.station.control import StationLock, request  # start-up: when the command runs

    try:
        st = load_station(station_file)
        st.socket(socket)
    except RigError as exc:
        _fail(exc)
        return
    from feltlab.rig.station.supervisor import socket_status  # start-up: when the command runs

    state, verdict = socket_status(st.folder(socket))
    if state == "done":
        click.echo(
            f"socket {socket} of station {st.name} has finished ({verdict}): nothing to stop"
        )
        return
    try:
        make_out(st)
    except RigError as exc:
        _fail(exc)
        return
    request(st.out, socket, "stop")
    if StationLock(st.out).running():
        click.echo(f"asked station {st.name} to stop socket {socket}")
    else:
        click.echo(
            f"station {st.name} is not running: socket {socket} stays stopped until "
            f"feltlab station resume {station_file} {socket}"
        )


def shown_state(
    folder_state: tuple[str, str | None], last: dict[str, Any] | None, running: bool
) -> str:
    """A socket's state as ``station status`` shows it: its last event in the station
    record while the station runs (``running``, ``stopping``, ``lost (signal N):
    resuming``) and an error's own line; otherwise its folder's state and verdict
    (:func:`feltlab.rig.station.supervisor.socket_status`)."""
    state, verdict = folder_state
    last = last or {}
    event = last.get("event")
    if event == "socket-ended" and last.get("error"):
        error = last["error"]
        return f"error: {error if isinstance(error, str) else 'see its log'}"
    if running and event in ("socket-started", "socket-resume-requested"):
        return "running"
    if running and event == "socket-stop-requested":
        return "stopping"
    if running and event == "socket-lost":
        return f"lost (signal {last.get('signal')}): resuming"
    return f"{state} {verdict}" if verdict else state


@station.command("status")
@click.argument("station_file", metavar="STATION.toml")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="JSON lines: the station (name, out, running), each socket's state, then every event "
    "of the record.",
)
def status_command(station_file: str, as_json: bool) -> None:
    """The station record: what happened when, and each socket's campaign state."""
    from feltlab.rig.station.config import load_station  # start-up: when the command runs
    from feltlab.rig.station.control import StationLock, wanted  # start-up: when the command runs
    from feltlab.rig.station.record import StationRecord  # start-up: when the command runs
    from feltlab.rig.station.supervisor import socket_status  # start-up: when the command runs

    try:
        st = load_station(station_file)
    except RigError as exc:
        _fail(exc)
        return
    events = StationRecord(st.out).events()
    running = StationLock(st.out).running()
    last = {e["socket"]: e for e in events if e.get("socket")}
    states = [
        (s.name, shown_state(socket_status(st.folder(s.name)), last.get(s.name), running))
        for s in st.sockets
    ]
    if as_json:  # the text's lines, as JSON: a line with "state" a socket, "event" the record
        click.echo(json.dumps({"station": st.name, "out": str(st.out), "running": running}))
        for name, shown in states:
            click.echo(json.dumps({"socket": name, "state": shown, "wanted": wanted(st.out, name)}))
        for e in events:
            click.echo(json.dumps(e))
        return
    click.echo(f"station {st.name} ({st.out}): {'running' if running else 'not running'}")
    for name, shown in states:
        click.echo(f"  {name}: {shown} (wanted: {wanted(st.out, name)})")
    for e in events[-20:]:
        click.echo(f"  {e.get('t')} {e.get('socket') or '-'} {e.get('event')}")
