"""The command-line side of the live view: ``--live [HOST:]PORT`` and ``--live-linger`` of
``feltlab certify``, and ``feltlab view DIR [--live [HOST:]PORT]``."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from feltlab.cli.options import FiniteRange, make_console
from feltlab.rig.errors import RigError

_F = TypeVar("_F", bound=Callable[..., Any])

LIVE_HELP = (
    "Serve a read-only live view of the campaign at [HOST:]PORT (HOST 127.0.0.1 unless "
    "given; 0.0.0.0:PORT for other machines; PORT 0 picks a free one). It stops when the "
    "campaign ends (see --live-linger)."
)
#: seconds the server waits for open pages to receive the final state before it stops
DRAIN_SECONDS = 3.0


def live_options(fn: _F) -> _F:
    """``--live [HOST:]PORT`` and ``--live-linger SECONDS`` (certify)."""
    fn = click.option(
        "--live-linger",
        type=FiniteRange(0, 86_400),
        default=0.0,
        show_default=True,
        help="With --live: keep serving the final page this many seconds after the "
        "campaign ends (Ctrl-C stops sooner).",
    )(fn)
    fn = click.option("--live", "live", metavar="[HOST:]PORT", default=None, help=LIVE_HELP)(fn)
    return fn


class Live:
    """A live view for one campaign: the feed, the observer given to ``run_campaign`` and
    the server.  :meth:`open` binds the port (before the campaign starts, so that a port in
    use stops the command at once); :meth:`close` drains, lingers and stops."""

    def __init__(self, address: str) -> None:
        from feltlab.rig.live.observer import CampaignObserver  # start-up: when the command runs
        from feltlab.rig.live.process import LiveProcess, new_shared_feed  # start-up
        from feltlab.rig.live.server import parse_address  # start-up: when the command runs

        host, port = parse_address(address)
        # the server runs in a process of its own: viewers cannot move the campaign's timing
        self.feed = new_shared_feed()
        self.observer = CampaignObserver(self.feed)
        self.server = LiveProcess(self.feed, host, port)

    def open(self) -> Live:
        self.server.start()
        click.echo(
            f"live view: {self.server.url} (read-only; stops when the campaign ends)", err=True
        )
        return self

    def set_directory(self, directory: Path) -> None:
        self.server.directory = directory

    def close(self, linger: float, stop: threading.Event | None = None) -> None:
        """Stop serving: after open pages have the final state (at most DRAIN_SECONDS),
        and after ``linger`` seconds more (``stop`` ends the wait sooner)."""
        if not self.feed.done.is_set():
            self.observer.failed("the campaign stopped before its record was written")
        waiter = stop or threading.Event()
        waiter.wait(0.05)
        deadline = DRAIN_SECONDS
        while self.server.clients and deadline > 0 and not waiter.is_set():
            waiter.wait(0.05)
            deadline -= 0.05
        if linger > 0 and not waiter.is_set():
            click.echo(
                f"live view: serving the final page at {self.server.url} for {linger:g} s "
                "(Ctrl-C stops)",
                err=True,
            )
            waiter.wait(linger)
        self.server.stop()
        shutil.rmtree(self.feed.path.parent, ignore_errors=True)
        directory = self.server.directory
        if linger <= 0 and directory is not None:  # a short campaign ends before a browser opens
            click.echo(
                f"live view: stopped with the campaign; its final page: feltlab view "
                f"{directory} --live {self.server.port} (or give --live-linger SECONDS)",
                err=True,
            )


@click.command("view")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--live",
    "live",
    metavar="[HOST:]PORT",
    default=None,
    help="Serve the campaign's page at [HOST:]PORT (HOST 127.0.0.1 unless given) until "
    "Ctrl-C (or --live-linger seconds). Without it: print the campaign's state.",
)
@click.option(
    "--live-linger",
    type=FiniteRange(0, 86_400, min_open=True),
    default=None,
    help="With --live: stop serving after this many seconds (default: until Ctrl-C).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the campaign's state as JSON.")
def view(directory: str, live: str | None, live_linger: float | None, as_json: bool) -> None:
    """Show a finished or interrupted campaign: its record (record.json), or when none was
    written its campaign.json and capture; in the browser with --live."""
    from feltlab.rig.live.offline import snapshot_from_directory  # start-up: when the command runs
    from feltlab.rig.live.server import LiveServer, LiveServerError, parse_address  # start-up
    from feltlab.rig.live.state import LiveFeed  # start-up: when the command runs

    path = Path(directory)
    try:
        server = None
        address = parse_address(live) if live is not None else None
        try:
            snap = snapshot_from_directory(path)
        except (
            TypeError,
            AttributeError,
            KeyError,
            ValueError,
            RecursionError,
            OverflowError,  # a count too large for a float (a 4,000-digit value): damaged
        ) as exc:
            raise RigError(
                f"{path}: its campaign.json or record.json is not a feltlab campaign's "
                f"({type(exc).__name__}: {_short(str(exc), 120)}); give a campaign's --out"
            ) from exc
        if address is not None:
            feed = LiveFeed()
            server = LiveServer(feed, *address, path).start()
    except (RigError, LiveServerError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if server is None:
        if as_json:
            click.echo(json.dumps(snap, indent=2))
        else:
            print_snapshot(snap)
        if snap.get("state") == "failed":  # a damaged campaign is an error, not a state shown
            sys.exit(2)
        return
    feed.publish(snap, final=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    previous = signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        how = f"for {live_linger:g} s" if live_linger else "until Ctrl-C"
        click.echo(f"live view of {path}: {server.url} (read-only; serving {how})", err=True)
        stop.wait(live_linger)
    finally:
        signal.signal(signal.SIGINT, previous)
        server.stop()


#: rows of checks and lines of errors ``view`` prints (the rest counted, not printed)
MAX_ROWS = 200
#: characters of one field ``view`` prints (a longer one is cut, with an ellipsis)
MAX_FIELD = 300


def _short(text: object, limit: int = MAX_FIELD) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _dict(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


#: records without a collection that ``view`` names by what they certify (their kind)
CERTIFICATES = {"security": "security pack certificate", "predict": "predictability check"}


def print_snapshot(snap: dict[str, Any]) -> None:
    """The campaign's state as text: who, progress, verdict and each check (at most
    MAX_ROWS rows and error lines, each field at most MAX_FIELD characters; every text from
    the files printed as text, never as rich markup)."""
    from rich.markup import escape  # start-up: rich only when a snapshot is printed
    from rich.table import Table  # start-up: rich only when a snapshot is printed

    console = make_console()
    camp = _dict(snap.get("campaign"))
    prog = _dict(snap.get("progress"))
    verdict = snap.get("verdict") or "no verdict (no record)"
    table = Table(title=escape(_short(f"{camp.get('device')}: {verdict}")))
    for col in ("check", "value", "limits / p", "verdict"):
        table.add_column(col)
    checks = [c for c in _list(snap.get("checks")) if isinstance(c, dict)]
    for c in checks[:MAX_ROWS]:
        value = c.get("value")
        shown = "" if value is None else f"{value} {c.get('unit') or ''}".strip()
        if value is None and c.get("reason"):
            shown = f"not measured: {c['reason']}"
        cells = (c.get("name"), shown, c.get("limits") or "", c.get("verdict"))
        table.add_row(*(escape(_short(x if x is not None else "")) for x in cells))
    # a raw-output certificate (feltlab certify rng), the security pack's and certify
    # predict's records have no campaign id, collection or clock
    head = (
        f"raw-output certificate in {camp.get('directory')}: {snap.get('state')}, "
        f"{prog.get('done')} {camp.get('unit')}"
        if camp.get("kind") == "rng"
        else f"{CERTIFICATES[camp['kind']]} in {camp.get('directory')}: {snap.get('state')}, "
        f"{verdict}"
        if camp.get("kind") in CERTIFICATES
        else f"campaign {camp.get('id')} in {camp.get('directory')}: {snap.get('state')}, "
        + (
            f"{prog.get('done')} of {prog.get('total')} {camp.get('unit')} collected, "
            if prog.get("done") is not None
            else f"{camp.get('unit')} collected unknown (of {prog.get('total')}), "
        )
        + f"clock {camp.get('clock')}"
    )
    console.print(escape(_short(head, 4 * MAX_FIELD)))
    if checks:
        console.print(table)
        if len(checks) > MAX_ROWS:
            console.print(f"... and {len(checks) - MAX_ROWS} more checks (view --json)")
    errors = _list(snap.get("errors"))
    for e in errors[:MAX_ROWS]:
        console.print(escape(f"error: {_short(e)}"))
    if len(errors) > MAX_ROWS:
        console.print(f"... and {len(errors) - MAX_ROWS} more errors (view --json)")
    hu = snap.get("host_uncertainty")
    if isinstance(hu, dict):
        console.print(escape(_short(describe_uncertainty(hu))))


def describe_uncertainty(hu: dict[str, Any]) -> str:
    """The host's timing uncertainty in one readable line (the record's
    ``host_uncertainty``: seconds, source, how it was measured)."""
    if hu.get("source") == "simulated time":
        return "host timing uncertainty: none (simulated time)"
    try:
        p99, top = float(hu["seconds"]), float(hu["seconds_max"])
        figure = f"{p99 * 1e3:.3g} ms (p99), {top * 1e3:.3g} ms (max)"
    except (KeyError, TypeError, ValueError):
        figure = "not recorded"
    return f"host timing uncertainty: {figure}, {hu.get('source')}"


__all__ = ["Live", "live_options", "print_snapshot", "view"]
