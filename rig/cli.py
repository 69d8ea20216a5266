"""The rig's command-line commands, added to ``feltlab`` through the
``feltlab_register_commands`` hook (see :mod:`feltlab.rig.plugin`).

``feltlab device run KIND --model MODEL --bus SPEC [--profile device.toml]`` runs one simulated
device in this process until interrupted; ``feltlab capture decode FILE`` prints a capture's
decoded messages; ``feltlab capture record FILE --bus SPEC`` records a bus.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import click

from feltlab.rig.capture import FORMATS, decode_capture, format_record
from feltlab.rig.devices import DEVICE_KINDS, make_device
from feltlab.rig.errors import RigError
from feltlab.rig.models import MODEL_NAMES
from feltlab.rig.transport import DEFAULT_UDP_GROUP, BusSpec, Node

BUS_HELP = (
    "python-can bus as key=value pairs, e.g. "
    f"interface=udp_multicast,channel={DEFAULT_UDP_GROUP} or interface=virtual,channel=rig "
    "(add bitrate=500000 to pace frames)."
)


def _int_auto(value: str | None) -> int | None:
    return None if value is None else int(value, 0)


def load_profile(path: str | Path) -> dict[str, Any]:
    """The device options of a profile TOML: its ``[device]`` table (or the top level),
    without the descriptive keys ``kind``, ``name`` and ``description``.

    Raises :class:`RigError` for a missing or malformed file.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RigError(f"cannot read device profile {p}: {exc}") from exc
    table = data.get("device", data)
    if not isinstance(table, dict):
        raise RigError(f"device profile {p}: [device] must be a table")
    return {k: v for k, v in table.items() if k not in ("kind", "name", "description")}


@click.group()
def device() -> None:
    """Run simulated devices (batch shuffler, continuous shuffler, jackpot panel)."""


@device.command("run")
@click.argument("kind", type=click.Choice(sorted(DEVICE_KINDS)))
@click.option("--model", default=None, help=f"Shuffle model (batch): {', '.join(MODEL_NAMES)}.")
@click.option("--bus", "bus", required=True, help=BUS_HELP)
@click.option(
    "--profile",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Device profile TOML ([device] table: base, decks, seed, timing, ...).",
)
@click.option("--base", default=None, help="Base arbitration id, e.g. 0x100.")
@click.option("--seed", type=int, default=None, help="ChaCha20 seed (default: fresh entropy).")
@click.option("--decks", type=click.IntRange(1, 8), default=None)
@click.option(
    "--duration",
    type=float,
    default=None,
    help="Stop after this many seconds (default: run until interrupted).",
)
def device_run(
    kind: str,
    model: str | None,
    bus: str,
    profile: str | None,
    base: str | None,
    seed: int | None,
    decks: int | None,
    duration: float | None,
) -> None:
    """Run one simulated device of KIND on the bus until interrupted (Ctrl-C or SIGTERM)."""
    try:
        opts = load_profile(profile) if profile else {}
        spec = BusSpec.parse(bus)
        extra: dict[str, Any] = {
            "base": _int_auto(base),
            "seed": seed,
            "decks": decks,
            "model": model,
        }
        if kind != "batch" and model is not None:
            raise RigError(f"--model applies to the batch shuffler, not {kind}")
        if kind == "jackpot":
            extra.pop("decks")
        dev = make_device(kind, spec, opts, **extra)
    except (RigError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    dev.start()
    click.echo(f"device {kind} at 0x{dev.base:03X} on {spec} ready", err=False)
    sys.stdout.flush()
    t_end = None if duration is None else time.monotonic() + duration
    try:
        while not stop.wait(0.1):
            if t_end is not None and time.monotonic() >= t_end:
                break
    finally:
        dev.stop()
    click.echo(f"device {kind} at 0x{dev.base:03X} stopped")


@click.group()
def capture() -> None:
    """Record and decode CAN captures (BLF, ASC, candump .log)."""


@capture.command("decode")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--base", "bases", multiple=True, help="Only devices at these base ids.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def capture_decode(file: str, bases: tuple[str, ...], as_json: bool) -> None:
    """Print the decoded messages of a capture FILE (.blf, .asc or .log)."""
    wanted = [int(b, 0) for b in bases] or None
    try:
        for rec in decode_capture(file, wanted):
            if as_json:
                item: dict[str, Any] = {
                    "timestamp": rec.timestamp,
                    "base": rec.base,
                    "kind": rec.kind,
                    "name": rec.name,
                    "fields": rec.fields,
                    "error": rec.error,
                }
                if rec.value is not None and hasattr(rec.value, "codes"):
                    item["codes"] = [int(c) for c in rec.value.codes]
                click.echo(json.dumps(item))
            else:
                click.echo(format_record(rec))
    except RigError as exc:
        raise click.ClickException(str(exc)) from exc


@capture.command("record")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--bus", "bus", required=True, help=BUS_HELP)
@click.option("--duration", type=float, default=10.0, show_default=True, help="Seconds.")
def capture_record(file: str, bus: str, duration: float) -> None:
    """Record every frame on the bus to FILE (format from the suffix: .blf, .asc, .log)."""
    if Path(file).suffix.lower() not in FORMATS:
        raise click.ClickException("FILE must end in .blf, .asc or .log")
    try:
        node = Node(bus, pace=False, capture=file)
    except RigError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        time.sleep(duration)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass
    finally:
        node.close()
    click.echo(f"{node.capture.frames} frames written to {file}")


COMMANDS = (device, capture)
