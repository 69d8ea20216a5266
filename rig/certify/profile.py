"""Certification profiles: :class:`Profile` (a device profile's TOML), reading one
(:func:`profile_from_dict`, :func:`load_profile`, :func:`quick_profile`; a campaign's own,
:func:`recorded_profile`) and the redaction of its secrets (:func:`redact_secrets`); also the
campaign's error, progress protocol and the tables every part of
:mod:`feltlab.rig.certify.campaign` shares."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.profile_check import check_known_names, check_profile
from feltlab.rig.devices import read_profile_toml
from feltlab.rig.errors import (
    DeviceKeyError,
    ProfileError,
    RigError,
)
from feltlab.rig.kinds import DEFAULT_KIND, DeviceKind, UnknownDeviceKind, get_kind
from feltlab.rig.kinds import available_names as kind_names
from feltlab.rig.profiles import profile_hint, resolve_profile, shown_profile
from feltlab.rig.protocol.secoc import DeviceKey, load_key

log = logging.getLogger("feltlab.rig.certify")  # the campaign's logger, as before the split

"""The bundled profiles (``rig/certify/profiles/<name>.toml``); each device kind names its
default (:attr:`feltlab.rig.kinds.base.DeviceKind.profile`)."""

EXIT_CODES = {Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.INCONCLUSIVE: 3}
"""Exit code of a verdict; anything else (ERROR, ABORTED) is 2."""


class CampaignError(RigError):
    """A campaign cannot start or continue (bad profile, bad options, nothing to resume)."""


class Progress(Protocol):
    """What a campaign reports its progress to (the CLI draws a rich progress bar)."""

    def start(self, description: str, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class NoProgress:
    """A progress sink that only logs: the campaign's progress when no display is given."""

    def start(self, description: str, total: int | None) -> None:
        log.info("%s (%s)", description, total)

    def advance(self, n: int = 1) -> None:
        pass


@dataclass(frozen=True)
class Profile:
    """A device profile (TOML; fields in docs/certification.md): what the device declares
    (``device``: kind, name, base, decks, bitrate, heartbeat period, prize table, slots),
    the timing ``limits`` (seconds), the ``campaign`` plan, and ``simulation`` options used only
    when feltlab starts the simulated device.  ``path`` is None for a profile read from a
    campaign record."""

    kind: str
    name: str
    device: dict[str, Any]
    limits: dict[str, float]
    campaign: dict[str, Any]
    simulation: dict[str, Any]
    raw: dict[str, Any]
    path: str | None = None

    @property
    def device_kind(self) -> DeviceKind:
        """The profile's device kind, from the registry (:mod:`feltlab.rig.kinds`)."""
        return get_kind(self.kind)

    @property
    def base(self) -> int:
        return int(self.device.get("base", self.device_kind.base))

    @property
    def heartbeat_period(self) -> float:
        return float(self.device.get("heartbeat_period", 0.1))

    @property
    def seeding(self) -> str | None:
        """A seeded batch shuffler's ``seeding`` (``[simulation]`` over ``[device]``; issue 40:
        it replaces the shuffle model), or None."""
        value = {**self.device, **self.simulation}.get("seeding")
        return str(value) if value else None

    @property
    def authenticate(self) -> bool:
        """The profile requires authenticated jackpot results (``authenticate = true``)."""
        return bool(self.device.get("authenticate", False))

    def key(self) -> DeviceKey | None:
        """The device's key (``key`` hex, or ``key_file`` relative to the profile's folder;
        named by ``key_id``), or None.  Raises :class:`CampaignError` when the profile
        requires authentication without a key, or the key is bad (naming its id, never
        the key)."""
        base_dir = Path(self.path).parent if self.path else None
        if self.device.get("key") == REDACTED:
            raise CampaignError(
                "the campaign's profile had an inline key, which is never written to the "
                "campaign directory: give the profile with the key (--profile), or use "
                "key_file, to resume or analyse it"
            )
        try:
            key = load_key(self.device, base_dir)
        except DeviceKeyError as exc:
            raise CampaignError(f"{self.path or 'profile'}: [device] {exc}") from exc
        if key is None and self.authenticate:
            raise CampaignError(
                f"{self.path or 'profile'}: [device] authenticate = true needs the panel's "
                "key: key (hex digits) or key_file, with key_id"
            )
        return key

    @property
    def key_id(self) -> str | None:
        """The public id of the device's key (never the key), or None."""
        if "key" not in self.device and "key_file" not in self.device:
            return None
        return str(
            self.device.get("key_id")
            or (Path(str(self.device["key_file"])).name if "key_file" in self.device else None)
            or "profile"
        )

    def device_options(self, *, simulated: bool) -> dict[str, Any]:
        """Options for :func:`feltlab.rig.devices.make_device` (the key as a DeviceKey)."""
        skip = ("kind", "name", "description", "authenticate", "key", "key_file", "key_id")
        opts = {k: v for k, v in self.device.items() if k not in skip}
        if simulated:
            model = self.raw.get("model")  # a continuous shuffler's declared buffer
            if isinstance(model, dict) and "buffer" in self.device_kind.device_keys:
                opts.setdefault("buffer", model.get("buffer", 0))
            opts.update(self.simulation)
        if self.device_kind.keyed:
            key = self.key()
            if key is not None:
                opts["key"] = key
        return opts

    def to_dict(self) -> dict[str, Any]:
        """The profile for records and ``campaign.json``: every secret, wherever it sits in
        the profile (a ``key``, ``secret``, ``password`` or ``token`` field, or one ending in
        ``_key``, in any table) is redacted (only ``key_id`` is shown); a ``key_file`` is
        kept as an absolute path."""
        raw = redact_secrets(dict(self.raw))
        dev = raw.get("device")
        if isinstance(dev, dict) and ("key" in dev or "key_file" in dev):
            dev = dict(dev)
            if "key" in dev:
                dev["key"] = REDACTED
            if "key_file" in dev and self.path:
                dev["key_file"] = str((Path(self.path).parent / str(dev["key_file"])).resolve())
            raw["device"] = dev
        return {"path": self.path, "name": self.name, "kind": self.kind, "data": raw}


REDACTED = "(redacted: see key_id)"

_SECRET_FIELDS = ("key", "secret", "password", "passphrase", "token")


def _is_secret_field(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_FIELDS or low.endswith(tuple("_" + f for f in _SECRET_FIELDS))


def redact_secrets(obj: Any) -> Any:
    """``obj`` (tables, arrays, values of a profile) with every secret field's value
    replaced by :data:`REDACTED`, at any depth."""
    if isinstance(obj, dict):
        return {
            k: REDACTED if isinstance(k, str) and _is_secret_field(k) else redact_secrets(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [redact_secrets(v) for v in obj]
    return obj


_LIMIT_NAMES: dict[str, frozenset[str] | None] = {}


def _kind_limits(dk: DeviceKind, path: str | None) -> frozenset[str] | None:
    """The ``[limits]`` names a profile of kind ``dk`` may declare: those of the kind's
    bundled profile (its checks' limits), plus ``heartbeat_period_max`` (issue 14's ceiling);
    None (not checked) when that profile is the one being read or cannot be read."""
    p = resolve_profile(dk.profile)
    if path is not None and Path(path).resolve() == p.resolve():
        return None
    key = str(p)
    if key not in _LIMIT_NAMES:
        try:
            raw = read_profile_toml(p, error=CampaignError, hint="")
            lim = raw.get("limits", {})
            _LIMIT_NAMES[key] = frozenset(lim) | {"heartbeat_period_max"}
        except (CampaignError, OSError):
            _LIMIT_NAMES[key] = None
    return _LIMIT_NAMES[key]


def profile_from_dict(
    data: dict[str, Any], path: str | None = None, *, where: str | None = None
) -> Profile:
    """A :class:`Profile` from parsed TOML (read from ``path``).  Raises
    :class:`CampaignError` naming the field, after ``where`` (default: ``path``)."""
    where = where or path or "profile"
    dev = data.get("device")
    if not isinstance(dev, dict):
        raise CampaignError(f"{where}: needs a [device] table (see docs/certification.md)")
    kind = dev.get("kind")
    if not isinstance(kind, str):
        raise CampaignError(
            f"{where}: [device] kind must be one of {', '.join(kind_names())}, got {kind!r}"
        )
    try:
        dk = get_kind(kind)
    except UnknownDeviceKind as exc:
        raise CampaignError(f"{where}: [device] {exc}") from None
    for table in ("campaign", "simulation", "faults"):
        if table in data and not isinstance(data[table], dict):
            raise CampaignError(
                f"{where}: [{table}] must be a table (a [{table}] section), "
                f"got {type(data[table]).__name__} {data[table]!r}"
            )
    try:
        check_known_names(
            where,
            data,
            device_keys=dk.device_keys,
            unit=dk.unit,
            limits=_kind_limits(dk, path),
        )
        check_profile(where, data)
    except ProfileError as exc:
        raise CampaignError(str(exc)) from None
    limits = data.get("limits", {})
    if not isinstance(limits, dict) or not all(
        isinstance(v, int | float) and v >= 0 for v in limits.values()
    ):
        raise CampaignError(f"{where}: [limits] must map names to non-negative seconds")
    return Profile(
        kind=str(kind),
        name=str(dev.get("name", f"{kind} device")),
        device=dict(dev),
        limits={k: float(v) for k, v in limits.items()},
        campaign=dict(data.get("campaign", {})),
        simulation=dict(data.get("simulation", {})),
        raw=data,
        path=path,
    )


def recorded_profile(state: dict[str, Any], directory: Path) -> Profile:
    """The profile the campaign in ``directory`` recorded in its ``campaign.json`` (its
    parsed ``state``): a bad value is named in ``<directory>/campaign.json``, where it is,
    not in the file the profile was read from when the campaign began (a bundled profile's
    path inside the installed package).  Raises :class:`CampaignError`."""
    recorded = state["profile"]
    path = recorded.get("path")
    source = f" (read from {shown_profile(path)})" if path else ""
    return profile_from_dict(
        recorded["data"], path, where=f"{directory / 'campaign.json'}: its profile{source}"
    )


def load_profile(ref: str | Path | None, kind: str = DEFAULT_KIND) -> Profile:
    """The profile at path ``ref``, or the bundled profile named ``ref`` (``batch6``,
    ``continuous``, ``jackpot``), or (``ref`` None) the default profile of device ``kind``
    (:attr:`feltlab.rig.kinds.base.DeviceKind.profile`).

    Raises :class:`CampaignError` for a missing or malformed file.
    """
    if ref is None:
        try:
            ref = get_kind(kind).profile
        except UnknownDeviceKind as exc:
            raise CampaignError(str(exc)) from None
    p = resolve_profile(ref)
    data = read_profile_toml(p, error=CampaignError, hint=profile_hint())
    return profile_from_dict(data, str(p))


#: The named alternatives of a quick profile: 7 GSR riffles and DFH's 10-shelf machine, which
#: 2 shoes of 6 decks catch with power 0.99 (``feltlab certify plan``); the bundled profile's
#: full set needs 15 shoes (10 riffles), more than most test campaigns collect.
QUICK_ALTERNATIVES = ("riffle:k=7", "shelf:m=10")


def quick_profile(
    kind: str = DEFAULT_KIND,
    *,
    faults: dict[str, Any] | None = None,
    power_shoes: int = 400,
    power_alternatives: tuple[str, ...] = QUICK_ALTERNATIVES,
    null_replicates: int | None = None,
    **device: Any,
) -> Profile:
    """The bundled profile of ``kind`` made quick, for tests and dry runs: unpaced (no
    bitrate), with ``power_shoes`` simulated shoes per named alternative of
    ``power_alternatives`` (default :data:`QUICK_ALTERNATIVES`: what a dozen shoes catch)
    and ``null_replicates`` simulations; ``device`` overrides [device] fields and ``faults``
    sets a fault plan."""
    prof = load_profile(None, kind)
    dev = {k: v for k, v in prof.device.items() if k != "bitrate"}
    dev.update(device)
    camp = dict(prof.campaign, power_shoes=power_shoes, power_alternatives=list(power_alternatives))
    if null_replicates is not None:
        camp["null_replicates"] = null_replicates
    raw = dict(prof.raw, device=dev, campaign=camp)
    if faults is not None:
        raw["faults"] = faults
    return replace(prof, device=dev, campaign=camp, raw=raw)
