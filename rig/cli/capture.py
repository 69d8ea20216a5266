"""The ``feltlab capture`` command group: ``capture decode`` and ``capture record``
(registered by :mod:`feltlab.rig.cli`)."""

from __future__ import annotations

import json
import signal
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import click

from feltlab.cli.options import Refused
from feltlab.rig.bus.capture import CaptureDecoder, format_record, read_capture
from feltlab.rig.bus.transport import Node
from feltlab.rig.bus.writer import FORMATS
from feltlab.rig.cli.options import bus_option, duration_option
from feltlab.rig.errors import RigError
from feltlab.rig.protocol.codec import check_base
from feltlab.strictjson import json_safe


@click.group()
def capture() -> None:
    """Record and decode CAN captures (BLF, ASC, candump .log)."""


@capture.command("decode")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--base", "bases", multiple=True, help="Only devices at these base ids.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def capture_decode(file: str, bases: tuple[str, ...], as_json: bool) -> None:
    """Print the decoded messages of a capture FILE (.blf, .asc or .log)."""
    wanted: list[int] | None = []
    for b in bases:
        try:
            wanted.append(check_base(int(b, 0)))  # type: ignore[union-attr]
        except (ValueError, RigError) as exc:
            raise click.BadParameter(
                f"{b!r} is not a device base id (a number such as 0x100, a multiple of 0x10: "
                f"{exc})",
                param_hint="--base",
            ) from exc
    wanted = wanted or None
    dec = CaptureDecoder(wanted, lost_transfers=True)
    frames = records = 0
    try:
        for msg in read_capture(file):
            frames += 1
            rec = dec.feed(msg)
            if rec is None:
                continue
            records += 1
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
                click.echo(json.dumps(json_safe(item), allow_nan=False))
            else:
                click.echo(format_record(rec))
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        _quiet_stdout()
        sys.exit(0)
    except RigError as exc:
        raise Refused(str(exc)) from exc
    except (ValueError, OSError, EOFError, struct.error) as exc:  # python-can's readers
        raise Refused(
            f"cannot read {file} as a CAN capture ({exc}); give a .blf, .asc or candump .log file"
        ) from exc
    if frames == 0:
        raise Refused(
            f"{file}: the capture holds no frame (empty, or not a {Path(file).suffix or 'CAN'} "
            "capture python-can can read)"
        )
    if records == 0:
        where = ", ".join(f"0x{b:03X}" for b in wanted) if wanted else "any base"
        raise Refused(
            f"{file}: the capture holds {frames} frame(s), none a feltlab device's ({where})"
        )
    cut = dec.unfinished()
    if dec.lost or cut:
        click.echo(
            f"{dec.lost + cut} payload transfer(s) lost a frame and were not decoded "
            f"({dec.lost} shown as errors above, {cut} cut off at the end of the capture): the "
            "capture missed frames (a bus error, a full buffer, a cut or edited file)",
            err=True,
        )


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the exit flush is silent."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests)
        pass


@capture.command("record")
@click.argument("file", type=click.Path(dir_okay=False))
@bus_option(required=True)
@duration_option(10.0, "Seconds.")
def capture_record(file: str, bus: str, duration: float) -> None:
    """Record every frame on the bus to FILE (format from the suffix: .blf, .asc, .log)."""
    if Path(file).suffix.lower() not in FORMATS:
        raise Refused("FILE must end in .blf, .asc or .log")
    if Path(file).exists():
        raise Refused(f"{file} exists: capture record never overwrites a capture; give a new FILE")
    stop = threading.Event()
    # SIGTERM (a service manager, timeout(1)) ends the recording as Ctrl-C does; handled from
    # before the capture file exists, so a SIGTERM at any moment leaves it closed whole
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        try:
            node = Node(bus, pace=False, capture=file)
        except RigError as exc:
            raise Refused(str(exc)) from exc
        except OSError as exc:  # the capture file cannot be created
            raise Refused(
                f"cannot write {file}: {exc.strerror or exc}; give a FILE in a writable folder"
            ) from exc
        try:
            stop.wait(duration)
        except KeyboardInterrupt:  # pragma: no cover - interactive
            pass
        finally:
            node.close()  # the capture closed whole: every frame in FILE, no journal left
    finally:
        signal.signal(signal.SIGTERM, previous)
    click.echo(f"{node.capture.frames} frames written to {file}")
