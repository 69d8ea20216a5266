"""What the security pack is run against: a :class:`Target` (the device's base id, device id,
the lab's command key for it, the vendor's packages, a second device of the same model), and
the simulated targets: the hardened reference device and the flawed devices of
:data:`FLAWED_DEVICES`, each a batch shuffler whose flaws are declared
(:class:`feltlab.rig.devices.security.FlawSet`)."""

from __future__ import annotations

import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from feltlab.inputs import read_regular, read_text_regular
from feltlab.rig.bus.simbus import sim_wire
from feltlab.rig.clock import Clock, SimClock
from feltlab.rig.devices import MAX_PROFILE_BYTES, BatchShuffler, Timing
from feltlab.rig.devices.security import Flaw, FlawSet, SecurityConfig, SimVendor
from feltlab.rig.devices.seeding import parse_seeding
from feltlab.rig.errors import ProfileError, RigError
from feltlab.rig.protocol.firmware import FirmwarePackage
from feltlab.rig.protocol.secoc import load_key
from feltlab.rig.security.shuffler import Declaration, declaration_from_table

FLAWED_DEVICES: dict[str, frozenset[Flaw]] = {
    "hardened": frozenset(),
    "unsigned-update": frozenset({Flaw.UNSIGNED_UPDATE}),
    "rollback": frozenset({Flaw.ROLLBACK}),
    "any-device": frozenset({Flaw.ANY_DEVICE}),
    "shared-key": frozenset({Flaw.SHARED_KEY}),
    "truncated-mac": frozenset({Flaw.TRUNCATED_MAC}),
    "unauthenticated": frozenset({Flaw.UNAUTHENTICATED}),
    "replayable": frozenset({Flaw.NO_FRESHNESS}),
    "leaking": frozenset({Flaw.STATUS_CARD, Flaw.ORDER_TIMING}),
    "debug-port": frozenset({Flaw.DEBUG_PORT}),
    "timer-seeded": frozenset(),
    "mt19937": frozenset(),
}
"""The simulated devices of ``feltlab certify security --device NAME``: the hardened reference
device (no flaw) and one device per Deck Mate 2 finding; the timer-seeded and MT19937
shufflers' flaw is their seeding (:data:`SEEDINGS`)."""

SEEDINGS: dict[str, str] = {
    "timer-seeded": "msvc-rand:timer-ms:20",
    "mt19937": "mt19937:timer-ms:32",
}
"""The simulated devices that deal from a predictable seed (the batch shuffler's ``seeding``,
:mod:`feltlab.rig.devices.seeding`): ``rand()`` of Microsoft's C library reseeded at each
shuffle from the low 20 bits of the milliseconds since power-up, and MT19937 from all 32.
Every other simulated device shuffles with its ChaCha20 generator, declared keyed by 256
bits of entropy (:data:`HARDENED_DECLARATION`)."""

HARDENED_DECLARATION = {"generator": "chacha20", "seed_bits": 256, "seed_source": "entropy"}
"""What a simulated device without a seeding declares: ChaCha20 keyed from 256 bits of an
entropy source (the simulator keys it from its 64-bit seed so that a run repeats: the
declaration is the device's design, the key a test fixture)."""

#: the firmware versions of the simulated vendor's packages
INSTALLED, OLDER, NEXT, OTHER = 3, 2, 4, 5
#: the simulated device ids (the second device: the shared-key check's)
DEVICE_ID, SECOND_ID = 0x0F3A_0001, 0x0F3A_0002
IMAGE = bytes(range(256)) * 2  # a 512-byte simulated firmware image


@dataclass(frozen=True)
class Packages:
    """The vendor's packages the update checks send: ``next`` (this device, newer than the
    installed), ``older`` (this device, older), ``other`` (another device's, newer) and
    ``second`` (the second device's own, for the shared-key check)."""

    next: FirmwarePackage
    older: FirmwarePackage
    other: FirmwarePackage
    second: FirmwarePackage | None = None


@dataclass
class Target:
    """A device under test: its bus ``spec`` and ``clock``, ``base`` id, ``device_id``, the
    lab's command ``key``, its ``packages`` and optionally a second device of the model
    (``second_base``, ``second_id``) on the same bus.  ``description`` says what it is;
    ``heartbeat_period`` (s) is the device's declared period; ``freshness_start`` the last
    freshness value the lab's commands continue from; ``predictability`` its declared
    generator and seeding (the ``seed.predictable`` check's; None: NOT_RUN)."""

    spec: str
    clock: Clock | None
    base: int
    device_id: int
    key: bytes = field(repr=False)
    packages: Packages | None
    description: str
    second_base: int | None = None
    second_id: int | None = None
    flaws: list[str] = field(default_factory=list)
    heartbeat_period: float = 0.5
    freshness_start: int = 0
    #: the seeded shuffler the device declares (its ``[predictability]`` table), or None
    predictability: Declaration | None = None


@contextmanager
def simulated_target(
    flaws: FlawSet,
    *,
    seeding: str | None = None,
    seed: int = 40,
    decks: int = 4,
    channel: str | None = None,
) -> Iterator[Target]:
    """A simulated batch shuffler in security mode with ``flaws`` declared (and a second of
    the same model at base 0x110), on a simulated bus in simulated time, stopped on exit.
    The shuffle takes 0.2 s of simulated time, heartbeats every 0.5 s.  ``seeding``
    (``GENERATOR:SOURCE:BITS``): the device deals from a predictable seed, and declares it;
    None: ChaCha20, declared as :data:`HARDENED_DECLARATION`.  Raises ValueError for a bad
    seeding."""
    seeded = parse_seeding(seeding) if seeding is not None else None
    declared = seeded.declaration() if seeded is not None else HARDENED_DECLARATION
    clock = SimClock()
    name = channel or f"feltlab-sec-{id(clock):x}"
    spec = f"interface=virtual,channel={name},bitrate=500000"
    sim_wire(clock, name, 500_000).data_bitrate = 2_000_000  # AuthCommand: CAN FD
    vendor = SimVendor(seed)
    timing = Timing(heartbeat_period=0.5, shuffle_duration=0.2)
    devices = []
    try:
        for base, dev_id, dev_seed in ((0x100, DEVICE_ID, seed), (0x110, SECOND_ID, seed + 1)):
            dev = BatchShuffler(
                spec,
                base=base,
                seed=dev_seed,
                clock=clock,
                decks=decks,
                timing=timing,
                test_mode=False,
                seeding=seeded,
            )
            devices.append(dev)
            dev.start()
            dev.enable_security(SecurityConfig.simulated(vendor, dev_id, flaws, INSTALLED))
        names = flaws.names() + ([f"seeding {seeded}"] if seeded is not None else [])
        packages = Packages(
            next=vendor.package(DEVICE_ID, NEXT, IMAGE, flaws),
            older=vendor.package(DEVICE_ID, OLDER, IMAGE, flaws),
            other=vendor.package(SECOND_ID, OTHER, IMAGE, flaws),
            second=vendor.package(SECOND_ID, NEXT, IMAGE, flaws),
        )
        yield Target(
            spec,
            clock,
            0x100,
            DEVICE_ID,
            vendor.device_key(DEVICE_ID, flaws),
            packages,
            f"simulated batch shuffler ({decks} decks), flaws: " + (", ".join(names) or "none"),
            0x110,
            SECOND_ID,
            names,
            predictability=declaration_from_table({**declared, "decks": decks}),
        )
    finally:
        for dev in devices:
            dev.stop()


def seeding_of(device: str) -> str | None:
    """The seeding of the simulated device named ``device`` (:data:`SEEDINGS`), or None."""
    return SEEDINGS.get(device)


def flaws_of(device: str) -> FlawSet:
    """The flaws of the simulated device named ``device`` (:data:`FLAWED_DEVICES`).
    Raises RigError naming the known devices."""
    try:
        return FlawSet(FLAWED_DEVICES[device])
    except KeyError:
        raise RigError(
            f"unknown simulated device {device!r}; choose from {', '.join(FLAWED_DEVICES)}"
        ) from None


__all__ = [
    "FLAWED_DEVICES",
    "HARDENED_DECLARATION",
    "SEEDINGS",
    "Packages",
    "Target",
    "flaws_of",
    "seeding_of",
    "simulated_target",
    "target_from_profile",
]


MAX_PACKAGE_BYTES = 16 << 20
"""The largest firmware package file read (bytes): a package is its image and a signature."""


def target_from_profile(path: str | Path, spec: str) -> Target:
    """A device on the bus ``spec`` described by the ``[security]`` table of the TOML file
    ``path``: ``base`` (default 0x100), ``device_id``, ``key`` (hex) or ``key_file``,
    ``heartbeat_period`` (s, default 0.1), the vendor's FIRMWARE payload files
    ``package_next``, ``package_older``, ``package_other`` and ``package_second`` (optional:
    without them the update checks are NOT_RUN), and ``second_base`` / ``second_id`` (a
    second device of the model on the bus, for key.shared); the file's ``[predictability]``
    table declares the device's generator and seeding (``seed.predictable``; without it
    NOT_RUN).

    Raises ProfileError for a missing or malformed entry, naming it."""
    p = Path(path)
    # bounded and non-blocking: /dev/zero filled the host's memory, a FIFO hung the command
    text = read_text_regular(p, "security profile", MAX_PROFILE_BYTES, error=ProfileError)
    if text is None:
        raise ProfileError(f"security profile {p} does not exist; give the path of a TOML file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"security profile {p}: cannot read it ({exc})") from None
    table = data.get("security")
    declared = data.get("predictability")
    try:
        decl = (
            declaration_from_table(declared, where=f"security profile {p}")
            if isinstance(declared, dict)
            else None
        )
    except RigError as exc:
        raise ProfileError(str(exc)) from None
    if not isinstance(table, dict):
        raise ProfileError(f"security profile {p}: no [security] table")

    def number(name: str, default: int | None, top: int) -> int | None:
        v = table.get(name, default)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= top:
            raise ProfileError(
                f"security profile {p}: [security] {name} = {v!r} must be a whole number in "
                f"0..{top:#x}"
            )
        return v

    if "device_id" not in table:
        raise ProfileError(f"security profile {p}: give device_id in [security]")
    device_id = number("device_id", None, 0xFFFFFFFF) or 0
    base = number("base", 0x100, 0x7FF) or 0
    second_base = number("second_base", None, 0x7FF)
    second_id = number("second_id", None, 0xFFFFFFFF)
    period = table.get("heartbeat_period", 0.1)
    if not isinstance(period, int | float) or isinstance(period, bool) or not 0.001 <= period <= 60:
        raise ProfileError(
            f"security profile {p}: [security] heartbeat_period = {period!r} must be seconds "
            "in 0.001..60"
        )
    if declared is not None and not isinstance(declared, dict):
        raise ProfileError(f"security profile {p}: [predictability] must be one table")
    key = load_key(table, p.parent)
    if key is None:
        raise ProfileError(f"security profile {p}: give key or key_file in [security]")

    def package(name: str) -> FirmwarePackage | None:
        f = table.get(name)
        if f is None:
            return None
        try:
            raw = read_regular(p.parent / str(f), name, MAX_PACKAGE_BYTES, error=ProfileError)
            if raw is None:
                raise ProfileError(f"{p.parent / str(f)} does not exist")
            return FirmwarePackage.decode(raw)
        except (OSError, RigError) as exc:
            raise ProfileError(f"security profile {p}: {name} {f}: {exc}") from None

    nxt, older, other = package("package_next"), package("package_older"), package("package_other")
    packages = None
    if nxt is not None and older is not None and other is not None:
        packages = Packages(nxt, older, other, package("package_second"))
    return Target(
        spec,
        None,
        base,
        device_id,
        key.key,
        packages,
        f"device on {spec} (device id 0x{device_id:08X}, profile {p.name})",
        second_base,
        second_id,
        heartbeat_period=float(period),
        # a timestamp freshness value (microseconds since 1970, as SecOC allows): greater than
        # any the device accepted in an earlier session, unless the host's clock went back
        freshness_start=int(time.time() * 1_000_000),
        predictability=decl,
    )
