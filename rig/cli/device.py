"""The ``feltlab device`` command group: ``device run`` runs one simulated device
(registered by :mod:`feltlab.rig.cli`)."""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from feltlab.cli.options import Refused, seed_option
from feltlab.rig.bus.transport import BusSpec
from feltlab.rig.certify.profile_check import check_device_table
from feltlab.rig.cli.options import KindChoice, bus_option, duration_option, profile_option
from feltlab.rig.devices import make_device, read_profile_toml
from feltlab.rig.devices.models import MODEL_NAMES
from feltlab.rig.errors import RigError
from feltlab.rig.kinds import get_kind
from feltlab.rig.profiles import profile_hint, resolve_profile
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS
from feltlab.seeds import U64_MAX


def _int_auto(value: str | None) -> int | None:
    return None if value is None else int(value, 0)


def device_options(path: str | Path) -> dict[str, Any]:
    """The device options of a profile TOML: its ``[device]`` table (or the top level),
    without the descriptive keys ``kind``, ``name`` and ``description``.

    Raises :class:`RigError` for a missing or malformed file.
    """
    p = resolve_profile(path)
    data = read_profile_toml(p, hint=profile_hint())
    table = data.get("device", data)
    if not isinstance(table, dict):
        raise RigError(f"device profile {p}: [device] must be a table")
    check_device_table(str(p), "device" if "device" in data else "profile", table)
    return {k: v for k, v in table.items() if k not in ("kind", "name", "description")}


def _stop_watchdog() -> bool:
    """Arm :data:`STOP_DEADLINE` on the process's real stderr (False: there is none, as
    under click's test runner)."""
    err = sys.__stderr__
    try:
        if err is None:
            return False
        err.fileno()
    except (OSError, ValueError, AttributeError):
        return False
    faulthandler.dump_traceback_later(STOP_DEADLINE, exit=True, file=err)
    return True


STOP_DEADLINE = 8.0
"""Seconds ``feltlab device run`` may take to stop once asked (SIGTERM, Ctrl-C, the end of
``--duration``) before it dumps its threads' stacks and exits."""


@click.group()
def device() -> None:
    """Run simulated devices (batch shuffler, continuous shuffler, jackpot panel)."""


@device.command("run")
@click.argument("kind", type=KindChoice())
@click.option("--model", default=None, help=f"Shuffle model (batch): {', '.join(MODEL_NAMES)}.")
@bus_option(required=True)
@profile_option("Its [device] table gives base, decks, seed, timing, ...")
@click.option("--base", default=None, help="Base arbitration id, e.g. 0x100.")
@seed_option(None, f"The device's ChaCha20 seed, 0..{U64_MAX} (default: fresh entropy).")
@click.option("--decks", type=click.IntRange(ANY_MIN_DECKS, MAX_DECKS), default=None)
@duration_option(None, "Stop after this many seconds (default: run until interrupted).")
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
        opts = device_options(profile) if profile else {}
        spec = BusSpec.parse(bus)
        extra: dict[str, Any] = {
            "base": _int_auto(base),
            "seed": seed,
            "decks": decks,
            "model": model,
        }
        dk = get_kind(kind)
        if not dk.models and model is not None:
            raise RigError(f"--model applies to the batch shuffler, not {kind}")
        if "decks" not in dk.device_keys:
            extra.pop("decks")
        dev = make_device(kind, spec, opts, **extra)
    except (RigError, ValueError) as exc:
        raise Refused(str(exc)) from exc
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        dev.start()
    except (RigError, OSError) as exc:  # the bus cannot be opened
        raise Refused(str(exc)) from exc
    click.echo(f"device {kind} at 0x{dev.base:03X} on {spec} ready", err=False)
    sys.stdout.flush()
    t_end = None if duration is None else time.monotonic() + duration
    try:
        while not stop.wait(0.1):
            if t_end is not None and time.monotonic() >= t_end:
                break
    finally:
        # stopping is bounded: a stop that hangs dumps every thread's stack on stderr and
        # ends the process (a device process must never outlive its SIGTERM)
        watchdog = _stop_watchdog()
        dev.stop()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
    click.echo(f"device {kind} at 0x{dev.base:03X} stopped")
