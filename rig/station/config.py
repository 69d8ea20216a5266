"""The station file (``STATION.toml``): the station's name and folder, and its sockets, each a
device (kind, profile, bus spec or the simulated device, seed) and its campaign (samples in the
kind's unit, standard, batch section).  docs/station.md gives every key.

A socket's campaign is the ``feltlab certify`` command line :meth:`Socket.certify_args` builds:
the same arguments a lab would type for a lone campaign of that device and seed.
"""

from __future__ import annotations

import errno
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feltlab.inputs import read_text_regular
from feltlab.rig.certify.profile_check import MAX_PART_SAMPLES
from feltlab.rig.devices.models import parse_model
from feltlab.rig.errors import ModelError, RigError
from feltlab.rig.kinds import get_kind, kinds
from feltlab.rig.profiles import resolve_profile
from feltlab.seeds import U64_MAX

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A station's, socket's or device's name: a letter or digit, then up to 63 letters, digits,
dots, dashes or underscores (it names a folder and a lock file)."""

STATION_KEYS = frozenset({"name", "out", "live", "poll"})
SOCKET_KEYS = frozenset(
    {
        "name",
        "device",
        "profile",
        "model",
        "bus",
        "seed",
        "standard",
        "batch",
        "seconds_per_sample",
        "frames_per_sample",
    }
)
MAX_SOCKETS = 256
"""Sockets one station file may name (no fixed limit in the design; a bound on bad input)."""
MAX_STATION_BYTES = 1 << 20
"""The largest station file read (bytes): 256 sockets of a dozen keys are some 150 kB."""


class StationError(RigError):
    """A station file, a station folder or a station request that cannot be used; the message
    names the problem and the fix."""


@dataclass(frozen=True)
class Socket:
    """One socket of a station: its device and its campaign.

    ``size`` is in the kind's unit (``shoes``, ``deals``, ``draws``: the key the station file
    gives); ``bus`` is a python-can spec, None for the simulated device on an in-process bus
    of its own (simulated time); ``batch`` names the batch section the socket belongs to
    (None: it starts and ends on its own)."""

    name: str
    device: str
    kind: str
    command: str
    unit: str
    profile: str
    seed: int
    size: int | None
    model: str | None = None
    bus: str | None = None
    standard: str | None = None
    batch: str | None = None
    seconds_per_sample: float | None = None
    frames_per_sample: float | None = None

    def certify_args(self, out: Path, *, live: bool = False) -> list[str]:
        """The ``feltlab certify`` arguments (after ``feltlab``) of this socket's campaign
        into ``out``: those of the lone campaign for the same seed (plus ``--live
        127.0.0.1:0`` when ``live``, which changes nothing in the folder)."""
        args = ["certify", self.command, "--profile", self.profile, "--seed", str(self.seed)]
        if self.size is not None:
            args += [f"--{self.unit}", str(self.size)]
        for opt, value in (("--model", self.model), ("--bus", self.bus)):
            if value is not None:
                args += [opt, value]
        if self.standard is not None:
            args += ["--standard", self.standard]
        args += ["--out", str(out)]
        if live:
            args += ["--live", "127.0.0.1:0"]
        return args

    def resume_args(self, out: Path, *, live: bool = False) -> list[str]:
        """The ``feltlab certify ... --resume`` arguments that continue this socket's
        interrupted campaign in ``out`` from its journal."""
        args = ["certify", self.command, "--resume", str(out)]
        if live:
            args += ["--live", "127.0.0.1:0"]
        return args


@dataclass(frozen=True)
class Station:
    """A parsed station file: ``path`` (the file), ``name``, ``out`` (the station folder:
    the sockets' campaign folders, the record, the batch report), ``live`` (each socket
    serves its own live page), ``poll`` (seconds between the supervisor's looks) and the
    sockets in file order."""

    path: Path
    name: str
    out: Path
    sockets: tuple[Socket, ...]
    live: bool = True
    poll: float = 0.2
    batches: tuple[str, ...] = field(default=())

    def socket(self, name: str) -> Socket:
        """The socket called ``name``.  Raises StationError naming the station's sockets."""
        for s in self.sockets:
            if s.name == name:
                return s
        names = ", ".join(s.name for s in self.sockets)
        raise StationError(f"station {self.name!r} has no socket {name!r}: its sockets are {names}")

    def folder(self, socket: str) -> Path:
        """The campaign folder of socket ``socket``."""
        return self.out / "sockets" / socket


def _name(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise StationError(
            f"{where}: {what} {value!r} is not a name: give 1 to 64 letters, digits, '.', '-' "
            "or '_', starting with a letter or digit"
        )
    return value


def _socket(raw: Any, index: int, base: Path) -> Socket:
    """Socket ``index`` (1-based) of the file, its profile read to find its kind."""
    from feltlab.rig.certify.profile import load_profile  # start-up

    where = f"socket {index}"
    if not isinstance(raw, dict):
        raise StationError(f"{where}: give a [[socket]] table")
    name = _name(raw.get("name"), "name", where)
    where = f"socket {name!r}"
    profile_ref = raw.get("profile")
    if not isinstance(profile_ref, str):
        typos = sorted(set(raw) - SOCKET_KEYS - {k.unit for k in kinds()})
        said = f"unknown key(s) {', '.join(typos)}; " if typos else ""
        raise StationError(f'{where}: {said}give its device profile (profile = "batch6" or a file)')
    ref = resolve_profile(profile_ref)
    path = ref if ref.is_absolute() or ref.exists() else base / profile_ref
    try:
        prof = load_profile(path if path.exists() else ref)
    except RigError as exc:
        raise StationError(f"{where}: {exc}") from None

    kind = get_kind(prof.kind)
    unknown = sorted(set(raw) - SOCKET_KEYS - {kind.unit})
    if unknown:
        raise StationError(
            f"{where}: unknown key(s) {', '.join(unknown)}; a {kind.label} socket takes "
            f"{', '.join(sorted(SOCKET_KEYS | {kind.unit}))}"
        )
    seed = raw.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= U64_MAX:
        raise StationError(f"{where}: give its campaign seed, seed = 0..{U64_MAX}")
    size = raw.get(kind.unit)
    if size is not None and (
        not isinstance(size, int) or isinstance(size, bool) or not 2 <= size <= MAX_PART_SAMPLES
    ):  # the range feltlab certify --<unit> takes: refused here, not in the socket's log
        raise StationError(
            f"{where}: {kind.unit} = {size!r} is not a whole number in 2..{MAX_PART_SAMPLES} "
            f"(16-bit shoe and draw numbers); give {kind.unit} = 2..{MAX_PART_SAMPLES}"
        )
    floats: dict[str, float | None] = {}
    for key in ("seconds_per_sample", "frames_per_sample"):
        v = raw.get(key)
        if v is not None and (not isinstance(v, int | float) or isinstance(v, bool) or v <= 0):
            raise StationError(f"{where}: {key} must be a positive number")
        floats[key] = float(v) if v is not None else None
    strings: dict[str, str | None] = {}
    for key in ("model", "bus", "standard"):
        v = raw.get(key)
        if v is not None and not isinstance(v, str):
            raise StationError(f"{where}: {key} must be a string")
        strings[key] = v
    if strings["model"] is not None:  # refused here, naming the socket, not in its log
        try:
            parse_model(strings["model"])
        except ModelError as exc:
            raise StationError(f"{where}: {exc}") from None
    batch = raw.get("batch")
    return Socket(
        name=name,
        device=_name(raw.get("device", name), "device", where),
        kind=kind.name,
        command=kind.command,
        unit=kind.unit,
        profile=str(Path(prof.path).resolve()) if prof.path else profile_ref,
        seed=seed,
        size=size,
        batch=None if batch is None else _name(batch, "batch", where),
        model=strings["model"],
        bus=strings["bus"],
        standard=strings["standard"],
        seconds_per_sample=floats["seconds_per_sample"],
        frames_per_sample=floats["frames_per_sample"],
    )


def _check_out(out: Path, p: Path) -> None:
    """Refuse a station folder ``out`` that is a file, or below one (it could never be made)."""
    fix = f'give a folder for the station\'s campaigns (out = "{p.stem}.station")'
    where = out
    try:
        while not where.exists() and where.parent != where:
            where = where.parent
        a_file = where.exists() and not where.is_dir()
    except OSError as exc:
        raise StationError(f"{p}: [station] out {out}: {exc.strerror or exc}; {fix}") from None
    if a_file:
        below = "" if where == out else f" ({where} is a file)"
        raise StationError(f"{p}: [station] out {out} is not a folder{below}; {fix}")


def make_out(station: Station) -> None:
    """Make the station folder (and its parents) before any work.  Raises StationError naming
    ``out`` for one that cannot be made or written (``/proc/nope/x``, a read-only disk)."""
    out = station.out
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        raise StationError(
            f"{station.path}: [station] out {out} cannot be made or written "
            f"({exc.strerror or exc}); give a folder you can write "
            f'(out = "{station.path.stem}.station")'
        ) from None


def load_station(path: str | Path) -> Station:
    """The station file at ``path`` (TOML: a ``[station]`` table and ``[[socket]]`` tables).
    A relative ``out`` or profile path is relative to the file; ``out`` defaults to
    ``<file stem>.station`` beside it.  Raises StationError naming the first problem."""
    p = Path(path)
    try:  # bounded and non-blocking: /dev/zero, a FIFO or a folder is refused, never waited on
        text = read_text_regular(p, "station file", MAX_STATION_BYTES, error=StationError)
    except StationError as exc:
        said = str(exc)
        raise StationError(
            said if "; give" in said else f"{said}; give a STATION.toml (UTF-8 TOML text)"
        ) from None
    if text is None:
        raise StationError(f"{p}: no such station file; give a STATION.toml")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StationError(f"{p}: not valid TOML ({exc})") from None
    head = data.get("station", {})
    if not isinstance(head, dict):
        raise StationError(f"{p}: [station] must be a table")
    unknown = sorted(set(head) - STATION_KEYS)
    if unknown or set(data) - {"station", "socket"}:
        extra = unknown + sorted(set(data) - {"station", "socket"})
        raise StationError(
            f"{p}: unknown key(s) {', '.join(extra)}; [station] takes "
            f"{', '.join(sorted(STATION_KEYS))}, then [[socket]] tables"
        )
    name = _name(head.get("name", p.stem), "station name", str(p))
    raw_sockets = data.get("socket")
    if not isinstance(raw_sockets, list) or not raw_sockets:
        raise StationError(f"{p}: name at least one socket ([[socket]] with name, profile, seed)")
    if len(raw_sockets) > MAX_SOCKETS:
        raise StationError(f"{p}: {len(raw_sockets)} sockets, at most {MAX_SOCKETS} a station")
    base = p.parent
    sockets = tuple(_socket(s, i, base) for i, s in enumerate(raw_sockets, 1))
    for key in ("name", "device"):
        seen: set[str] = set()
        for s in sockets:
            value = getattr(s, key)
            if value in seen:
                raise StationError(f"{p}: two sockets name {key} {value!r}: each is one")
            seen.add(value)
    out_ref = head.get("out", f"{p.stem}.station")
    if not isinstance(out_ref, str) or not out_ref.strip() or "\0" in out_ref:
        raise StationError(f'{p}: [station] out must be a folder path (out = "{p.stem}.station")')
    out = Path(out_ref)
    live = head.get("live", True)
    poll = head.get("poll", 0.2)
    if not isinstance(live, bool):
        raise StationError(f"{p}: [station] live must be true or false")
    if not isinstance(poll, int | float) or isinstance(poll, bool) or not 0.01 <= poll <= 60:
        raise StationError(f"{p}: [station] poll must be 0.01..60 seconds")
    batches = tuple(dict.fromkeys(s.batch for s in sockets if s.batch is not None))
    out = (out if out.is_absolute() else base / out).resolve()
    _check_out(out, p)
    return Station(
        path=p.resolve(),
        name=name,
        out=out,
        sockets=sockets,
        live=live,
        poll=float(poll),
        batches=batches,
    )


__all__ = [
    "MAX_SOCKETS",
    "MAX_STATION_BYTES",
    "NAME",
    "Socket",
    "Station",
    "StationError",
    "load_station",
    "make_out",
]
