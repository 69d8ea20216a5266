"""The command-line side of the live view: ``--live [HOST:]PORT`` and ``--live-linger`` of
``feltlab certify``, and ``feltlab view DIR [--live [HOST:]PORT]``."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from feltlab.clitypes import make_console
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
        type=click.FloatRange(0, 86_400),
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
        from feltlab.rig.live.observer import CampaignObserver, LiveFeed
        from feltlab.rig.live.server import LiveServer, parse_address

        host, port = parse_address(address)
        self.feed = LiveFeed()
        self.observer = CampaignObserver(self.feed)
        self.server = LiveServer(self.feed, host, port)

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
    type=click.FloatRange(0, 86_400, min_open=True),
    default=None,
    help="With --live: stop serving after this many seconds (default: until Ctrl-C).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the campaign's state as JSON.")
def view(directory: str, live: str | None, live_linger: float | None, as_json: bool) -> None:
    """Show a finished or interrupted campaign: its record (record.json), or when none was
    written its campaign.json and capture; in the browser with --live."""
    from feltlab.rig.live.observer import LiveFeed, snapshot_from_directory
    from feltlab.rig.live.server import LiveServer, LiveServerError, parse_address

    path = Path(directory)
    try:
        server = None
        address = parse_address(live) if live is not None else None
        snap = snapshot_from_directory(path)
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


def print_snapshot(snap: dict[str, Any]) -> None:
    """The campaign's state as text: who, progress, verdict and each check."""
    from rich.table import Table

    console = make_console()
    camp = snap.get("campaign") or {}
    prog = snap.get("progress") or {}
    verdict = snap.get("verdict") or "no verdict (no record)"
    table = Table(title=f"{camp.get('device')}: {verdict}")
    for col in ("check", "value", "limits / p", "verdict"):
        table.add_column(col)
    for c in snap.get("checks", []):
        value = c.get("value")
        shown = "" if value is None else f"{value} {c.get('unit') or ''}".strip()
        if value is None and c.get("reason"):
            shown = f"not measured: {c['reason']}"
        table.add_row(c["name"], shown, c.get("limits") or "", c["verdict"])
    console.print(
        f"campaign {camp.get('id')} in {camp.get('directory')}: {snap.get('state')}, "
        f"{prog.get('done')} of {prog.get('total')} {camp.get('unit')} collected, "
        f"clock {camp.get('clock')}"
    )
    if snap.get("checks"):
        console.print(table)
    for e in snap.get("errors", []):
        console.print(f"error: {e}")
    if snap.get("host_uncertainty") is not None:
        console.print(f"host timing uncertainty: {json.dumps(snap['host_uncertainty'])}")


__all__ = ["Live", "live_options", "print_snapshot", "view"]
