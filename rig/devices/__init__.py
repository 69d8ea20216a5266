"""Simulated devices speaking the rig protocol (docs/protocol.md): a batch shuffler, a
continuous shuffler and a jackpot prize panel.

A device is driven by its :class:`feltlab.rig.clock.Clock`, which owns all its state: every
heartbeat, command, timed completion (shuffle duration, card latency, button-to-result
latency), boot and injected fault is a callback scheduled on it.  On a
:class:`~feltlab.rig.clock.RealClock` the callbacks run on the clock's thread and frames are
paced to the bus bitrate (:class:`feltlab.rig.bus.transport.WireClock`); on a
:class:`~feltlab.rig.clock.SimClock` they run in simulated time on the simulated bus, where
each frame takes its bit time (:mod:`feltlab.rig.bus.simbus`), so a campaign is a pure function
of its seed.  Randomness is ChaCha20 (RFC 8439) from ``feltlab.native``, seeded.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import can

from feltlab.rig.bus.transport import BusSpec
from feltlab.rig.devices.base import DEFAULT_PRIZE_TABLE as DEFAULT_PRIZE_TABLE
from feltlab.rig.devices.base import SimDevice as SimDevice
from feltlab.rig.devices.base import Timing as Timing
from feltlab.rig.devices.panel import JackpotPanel as JackpotPanel
from feltlab.rig.devices.shufflers import BatchShuffler as BatchShuffler
from feltlab.rig.devices.shufflers import ContinuousShuffler as ContinuousShuffler
from feltlab.rig.errors import ProfileError, RigError
from feltlab.rig.kinds import get_kind
from feltlab.rig.protocol.inject import FAULT_NAMES as FAULT_NAMES
from feltlab.rig.protocol.inject import FAULTS as FAULTS
from feltlab.rig.protocol.secoc import load_key

log = logging.getLogger(__name__)


def make_device(
    kind: str,
    bus: str | BusSpec | can.BusABC,
    profile: dict[str, Any] | None = None,
    *,
    simulator: type[SimDevice] | None = None,
    **kw: Any,
) -> SimDevice:
    """A simulated device of ``kind`` (``batch``, ``continuous``, ``jackpot``) from a
    device-profile dict (the ``[device]`` table of a profile TOML: base, seed, decks, model,
    slots, bitrate, prize_table, heartbeat_period, shuffle_duration, card_latency,
    button_latency, reports_decks, penetration; for a panel ``key`` (hex) or ``key_file``,
    ``key_id``) overridden by keyword arguments; ``simulator``: a class to start instead of
    the kind's simulator (a subclass of it, such as the explorer's misbehaving devices).

    Raises :class:`RigError` for an unknown kind or profile key,
    :class:`~feltlab.rig.errors.ProfileError` for a value of the wrong type or out of range
    (:class:`~feltlab.rig.errors.DeviceKeyError` for a bad key).
    """
    dk = get_kind(kind)  # UnknownDeviceKind (a RigError) names the known kinds
    cls = simulator or dk.simulator
    opts: dict[str, Any] = dict(profile or {})
    opts.update({k: v for k, v in kw.items() if v is not None})
    timing_keys = {
        "heartbeat_period",
        "shuffle_duration",
        "card_latency",
        "button_latency",
        "boot_time",
    }
    try:
        timing = replace(
            opts.pop("timing", None) or Timing(),
            **{k: float(opts.pop(k)) for k in list(opts) if k in timing_keys},
        )
        if "prize_table" in opts:
            opts["prize_table"] = [tuple(r) for r in opts["prize_table"]]
        if dk.keyed:
            key = load_key(opts)
            for name in ("key", "key_file", "key_id"):
                opts.pop(name, None)
            if key is not None:
                opts["key"] = key
        allowed = {
            "base",
            "seed",
            "bitrate",
            "pace",
            "test_mode",
            "capture",
            "protocol_major",
            "clock",
            "plan",
        }
        allowed |= dk.device_keys
        unknown = set(opts) - allowed
        if unknown:
            raise RigError(
                f"unknown profile key(s) for a {kind} device: {', '.join(sorted(unknown))}; "
                f"allowed: {', '.join(sorted(allowed | timing_keys))}"
            )
        device: SimDevice = cls(bus, timing=timing, **opts)
        return device
    except RigError:
        raise
    except (TypeError, ValueError, OverflowError, KeyError) as exc:
        raise ProfileError(f"bad {kind} device profile: {exc}") from exc


MAX_PROFILE_BYTES = 1 << 20
"""The largest device profile read (bytes): a profile is a few kilobytes of TOML."""


def read_profile_toml(
    path: Path, *, error: type[RigError] = RigError, hint: str = ""
) -> dict[str, Any]:
    """The parsed TOML of the device profile at ``path``.  Raises ``error`` (a
    :class:`RigError`) naming the file for one that is missing, not UTF-8 or not TOML;
    ``hint`` is appended to the message."""
    try:
        if path.exists() and not path.is_file():
            raise error(f"cannot read device profile {path}: it is not a regular file{hint}")
        with path.open("rb") as fh:  # bounded: /dev/zero or a huge file is refused
            raw = fh.read(MAX_PROFILE_BYTES + 1)
        if len(raw) > MAX_PROFILE_BYTES:
            raise error(
                f"cannot read device profile {path}: it is larger than {MAX_PROFILE_BYTES} "
                "bytes; give a device profile TOML file"
            )
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise error(
            f"cannot read device profile {path}: it is not UTF-8 text (byte {exc.start}: "
            f"{exc.reason}); save the TOML file as UTF-8"
        ) from exc
    except FileNotFoundError as exc:
        raise error(f"device profile {path} does not exist{hint}") from exc
    except OSError as exc:
        raise error(f"cannot read device profile {path}: {exc.strerror or exc}{hint}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"cannot read device profile {path}: {exc}{hint}") from exc
