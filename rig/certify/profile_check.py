"""The range of every field of a device profile (docs/certification.md), checked once where the
profile is read (:func:`feltlab.rig.certify.profile.profile_from_dict`, ``feltlab device
run``), so that
no value of the wrong type, out of range, NaN or infinite reaches a device, a wait or a
simulation loop.  Each refusal is one :class:`~feltlab.rig.errors.ProfileError` naming the
table, the field, the value and the allowed range.

Ceilings (issue 14): :data:`HEARTBEAT_PERIOD_CEILING` (a declared heartbeat period above it,
or above the profile's ``[limits] heartbeat_period_max``, is refused: lost detection is 3
periods), :data:`MAX_PART_SAMPLES` (a campaign of more shoes, deals or draws is refused, since
the protocol's 16-bit shoe and draw numbers would wrap within a part), and
:data:`LIMIT_CEILING` for every timing limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from feltlab.errors import nearest_name
from feltlab.rig.devices.models import ModelKind, parse_model
from feltlab.rig.devices.seeding import parse_seeding
from feltlab.rig.errors import DeclarationError, ProfileError
from feltlab.rig.security.shuffler import declaration_from_table

HEARTBEAT_PERIOD_CEILING = 5.0
"""Seconds: the longest heartbeat period a profile may declare (lost detection after three
missed periods, so within 15 s)."""

MAX_PART_SAMPLES = 65_535
"""The most shoes (deals, draws) a campaign may collect: shoe and draw numbers are 16-bit
fields (docs/protocol.md) and must never wrap within a collection part, so a larger campaign
is refused (run several campaigns), not split."""

LIMIT_CEILING = 600.0
"""Seconds: the largest timing limit a profile may declare (the clients' wait ceiling)."""

MAX_REPLICATES = 10_000
"""The most power or null Monte Carlo replicates a profile may ask for."""


@dataclass(frozen=True)
class Num:
    """A number field: ``integer`` or real, within ``low..high`` (``open_low``: > low)."""

    low: float
    high: float
    integer: bool = False
    open_low: bool = False
    open_high: bool = False

    def describe(self) -> str:
        lo = f"{self.low:g}" if not self.integer else f"{int(self.low)}"
        hi = f"{self.high:g}" if not self.integer else f"{int(self.high)}"
        kind = "an integer" if self.integer else "a finite number"
        left = "(" if self.open_low else "["
        right = ")" if self.open_high else "]"
        return f"{kind} in {left}{lo}, {hi}{right}"

    def ok(self, v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return False
        if self.integer and not isinstance(v, int):
            return False
        if isinstance(v, float) and not math.isfinite(v):
            return False
        above = v > self.low if self.open_low else v >= self.low
        below = v < self.high if self.open_high else v <= self.high
        return above and below


@dataclass(frozen=True)
class Kind:
    """A field of one Python type (``str``, ``bool`` or ``list``)."""

    type: type
    name: str

    def describe(self) -> str:
        return self.name

    def ok(self, v: Any) -> bool:
        if self.type is not bool and isinstance(v, bool):
            return False
        return isinstance(v, self.type)


SECONDS = Num(0, 60)
SAMPLES = Num(2, MAX_PART_SAMPLES, integer=True)
TEXT = Kind(str, "a string")
FLAG = Kind(bool, "true or false")

DEVICE: dict[str, Num | Kind] = {
    "kind": TEXT,
    "name": TEXT,
    "description": TEXT,
    "base": Num(0, 0x7F0, integer=True),
    "decks": Num(1, 8, integer=True),
    "bitrate": Num(5_000, 1_000_000, integer=True),
    "fd": FLAG,  # since protocol 2.2: the bus is CAN FD (the raw channel's 64-byte frames)
    "data_bitrate": Num(5_000, 8_000_000, integer=True),  # CAN FD's data phase, bit/s
    "heartbeat_period": Num(0.001, HEARTBEAT_PERIOD_CEILING),
    "reports_decks": FLAG,
    "slots": Num(1, 1024, integer=True),
    "prize_table": Kind(list, "a list of [cents, weight] rows"),
    "authenticate": FLAG,
    "key": TEXT,
    "key_file": TEXT,
    "key_id": TEXT,
    "seed": Num(0, 2**64 - 1, integer=True),
    "penetration": Num(0, 1, open_low=True, open_high=True),
    "protocol_major": Num(0, 255, integer=True),
    "model": TEXT,
    "seeding": TEXT,  # a batch shuffler's predictable seeding (issue 40)
    "shuffle_duration": SECONDS,
    "card_latency": SECONDS,
    "button_latency": SECONDS,
    "boot_time": SECONDS,
}
"""The fields of ``[device]`` and ``[simulation]`` (which may override device fields)."""

CAMPAIGN: dict[str, Num | Kind] = {
    "shoes": SAMPLES,
    "deals": SAMPLES,
    "draws": SAMPLES,
    "alpha": Num(0, 1, open_low=True, open_high=True),
    "ping_every": Num(1, MAX_PART_SAMPLES, integer=True),
    "power_alternatives": Kind(list, "a list of shuffle model names"),
    "power_replicates": Num(0, MAX_REPLICATES, integer=True),  # ignored: power is analytic
    "power_required": Num(0, 1, open_low=True, open_high=True),
    "power_shoes": Num(40, 1_000_000, integer=True),
    "standard": TEXT,
    "null_replicates": Num(1, MAX_REPLICATES, integer=True),
    "box": Num(1, 7, integer=True),
    "timeout": Num(0, 60, open_low=True),
    "online_timeout": Num(0, LIMIT_CEILING, open_low=True),
    "inject_faults": FLAG,
    "freshness_state": TEXT,
    "freshness_counter": TEXT,
}

LIMIT = Num(0, LIMIT_CEILING)
FRACTION_LIMITS = {"heartbeat_period_tolerance": Num(0, 1)}


def _refuse(where: str, table: str, key: str, value: Any, spec: Num | Kind) -> ProfileError:
    return ProfileError(
        f"{where}: [{table}] {key} = {value!r} is out of range: give {spec.describe()}"
    )


def _check_table(
    where: str, table: str, data: Mapping[str, Any], fields: Mapping[str, Num | Kind]
) -> None:
    for key, value in data.items():
        spec = fields.get(key)
        if spec is not None and not spec.ok(value):
            raise _refuse(where, table, key, value, spec)


def _check_prizes(where: str, rows: list[Any]) -> None:
    from feltlab.math.prizes import MAX_PRIZE_CENTS, MAX_PRIZE_WEIGHT  # start-up

    cents = Num(1, MAX_PRIZE_CENTS, integer=True)
    weight = Num(1, MAX_PRIZE_WEIGHT, integer=True)
    if not rows:
        raise ProfileError(f"{where}: [device] prize_table is empty: give [cents, weight] rows")
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and cents.ok(row[0]) and weight.ok(row[1])):
            raise ProfileError(
                f"{where}: [device] prize_table row {row!r} is malformed: give [cents, weight] "
                f"with cents {cents.describe()} and weight {weight.describe()}"
            )


def check_device_table(where: str, table: str, data: Mapping[str, Any]) -> None:
    """Refuse a ``[device]`` (or ``[simulation]``) field of the wrong type or out of range.

    Raises :class:`ProfileError` naming the table, field, value and range.
    """
    _check_table(where, table, data, DEVICE)
    if "prize_table" in data:
        _check_prizes(where, data["prize_table"])
    if "model" in data:
        try:
            parse_model(data["model"])
        except ValueError as exc:
            raise ProfileError(f"{where}: [{table}] model: {exc}") from None
    if "seeding" in data:
        try:
            parse_seeding(data["seeding"])
        except ValueError as exc:
            raise ProfileError(f"{where}: [{table}] {exc}") from None


TABLES = (
    "profile_version",
    "device",
    "model",
    "limits",
    "campaign",
    "simulation",
    "faults",
    "predictability",
)
"""The top-level entries of a profile (docs/certification.md; ``[model]`` documents the
declared shuffling model of a continuous shuffler, ``[predictability]`` a seeded shuffler's
generator and seeding: docs/security.md)."""


def _unknown(where: str, table: str, keys: Any, known: set[str], what: str) -> None:
    """Refuse the first of ``keys`` not in ``known``, suggesting the nearest known name."""

    for key in keys:
        if key not in known:
            near = nearest_name(str(key), known)
            hint = f"did you mean {near!r}? " if near else ""
            raise ProfileError(
                f"{where}: unknown {what} {key!r}{'' if table == '' else f' in [{table}]'}; "
                f"{hint}known: {', '.join(sorted(known))}"
            )


def check_known_names(
    where: str,
    data: Mapping[str, Any],
    *,
    device_keys: frozenset[str] = frozenset(),
    unit: str | None = None,
    limits: frozenset[str] | None = None,
) -> None:
    """Refuse a profile entry feltlab does not know, so that a typo never passes unnoticed
    (a misspelt ``[limtis]`` would otherwise certify with no timing limit at all): a
    top-level table outside :data:`TABLES`; a ``[device]`` or ``[simulation]`` key outside
    :data:`DEVICE` and the kind's ``device_keys``; a ``[campaign]`` key outside
    :data:`CAMPAIGN` and the kind's sample ``unit``; a ``[limits]`` name outside ``limits``
    (the names its kind's bundled profile declares; None: not checked).

    Raises :class:`ProfileError` naming the entry and the nearest known name.
    """
    _unknown(where, "", data.keys(), set(TABLES), "table")
    for table in ("device", "simulation"):
        sub = data.get(table)
        if isinstance(sub, Mapping):
            _unknown(where, table, sub.keys(), set(DEVICE) | set(device_keys), "key")
    camp = data.get("campaign")
    if isinstance(camp, Mapping):
        known = set(CAMPAIGN) | ({unit} if unit else set())
        _unknown(where, "campaign", camp.keys(), known, "key")
    lim = data.get("limits")
    if limits is not None and isinstance(lim, Mapping):
        _unknown(where, "limits", lim.keys(), set(limits), "limit")


def check_profile(where: str, data: Mapping[str, Any]) -> None:
    """Refuse any field of a parsed profile TOML of the wrong type or out of range: the
    ``[device]``, ``[simulation]``, ``[campaign]`` and ``[limits]`` tables (ranges in this
    module), and a declared heartbeat period above the ceiling.

    Raises :class:`ProfileError` naming the table, field, value and range.
    """
    pred = data.get("predictability")  # refused before a collection, not after it
    if pred is not None:
        if not isinstance(pred, Mapping):
            raise ProfileError(f"{where}: [predictability] must be one table")
        try:
            declaration_from_table(pred, where=where)
        except DeclarationError as exc:
            raise ProfileError(str(exc)) from None
    dev = data.get("device")
    if isinstance(dev, Mapping):
        check_device_table(where, "device", dev)
    sim = data.get("simulation")
    if isinstance(sim, Mapping):
        check_device_table(where, "simulation", sim)
    camp = data.get("campaign")
    if isinstance(camp, Mapping):
        _check_table(where, "campaign", camp, CAMPAIGN)
        alts = camp.get("power_alternatives", [])

        for alt in alts:
            if not isinstance(alt, str):
                raise ProfileError(
                    f"{where}: [campaign] power_alternatives holds {alt!r}: give model names "
                    'such as "riffle:k=7"'
                )
            try:
                model = parse_model(alt)
                decks = dev.get("decks", 6) if isinstance(dev, Mapping) else 6
                if isinstance(decks, int) and not isinstance(decks, bool):
                    model.check_fits(decks * 52)
            except ValueError as exc:
                raise ProfileError(f"{where}: [campaign] power_alternatives: {exc}") from None
            if model.kind in (ModelKind.FISHER_YATES, ModelKind.MISSING, ModelKind.DUPLICATE):
                why = (
                    "is the fair shuffle itself, which no check can tell from uniform"
                    if model.kind == ModelKind.FISHER_YATES
                    else "drops or repeats a card, which the integrity check catches at its "
                    "first shoe"
                )
                raise ProfileError(
                    f"{where}: [campaign] power_alternatives: {alt} {why}: name a flawed "
                    "machine the battery must catch (feltlab certify plan)"
                )
    sim_buffer = isinstance(sim, Mapping) and "buffer" in sim
    if "model" in data or sim_buffer:
        from feltlab.rig.certify.csm_model import check_model_table  # start-up

        check_model_table(where, data)
    limits = data.get("limits")
    if isinstance(limits, Mapping):
        for key, value in limits.items():
            spec = FRACTION_LIMITS.get(key, LIMIT)
            if not spec.ok(value):
                raise ProfileError(
                    f"{where}: [limits] {key} = {value!r} is out of range: give "
                    f"{spec.describe()} (seconds, or a fraction for a tolerance)"
                )
        ceiling = limits.get("heartbeat_period_max")
        if isinstance(dev, Mapping) and isinstance(ceiling, int | float):
            period = dev.get("heartbeat_period", 0.1)
            if period > ceiling:
                raise ProfileError(
                    f"{where}: [device] heartbeat_period = {period!r} is above the profile's "
                    f"[limits] heartbeat_period_max = {ceiling!r}: declare a shorter period"
                )


__all__ = [
    "HEARTBEAT_PERIOD_CEILING",
    "LIMIT_CEILING",
    "MAX_PART_SAMPLES",
    "MAX_REPLICATES",
    "TABLES",
    "check_device_table",
    "check_known_names",
    "check_profile",
]
