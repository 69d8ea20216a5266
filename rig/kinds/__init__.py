"""The device-kind registry: one :class:`DeviceKind` per kind of device the rig certifies
(docs/design.md, "How to add a device kind").

A kind is everything the rig needs to know about one kind of device: its name and label, its
simulator and client classes, its default base CAN id, its bundled profile, the unit of its
samples, its collection and analysis functions.  The rig looks a kind up by the profile's
``[device] kind`` (:func:`get_kind`) and never branches on the name.

Every kind is a plugin found through the ``feltlab.rig.kinds`` entry-point group, read on the
first lookup (as python-can finds its interfaces through ``can.interface``): an entry point names
a :class:`DeviceKind` object (``acme = "acme_rig.kind:ACME"``), and the registry registers it.
The built-in kinds (batch and continuous shufflers, the jackpot prize panel) are feltlab's own
entry points, :data:`BUILTIN_KINDS`, registered first in that order; a vendor's kind, installed
with pip, is found the same way without feltlab importing it by name.  :func:`register_kind`
adds a kind at run time (a test, a notebook).  This module imports nothing of the rig's stages
at run time, so every stage may use it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import random
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from feltlab.rig.errors import RigError

if TYPE_CHECKING:
    import threading

    from feltlab.rig.certify.analyze import Analysis
    from feltlab.rig.certify.collect import CampaignOptions, Collected
    from feltlab.rig.certify.decode import CaptureData
    from feltlab.rig.certify.faults import FaultRunner
    from feltlab.rig.certify.profile import Profile, Progress
    from feltlab.rig.certify.uncertainty import HostUncertainty
    from feltlab.rig.devices.misbehaving import GroundTruth, Misbehaviour

ENTRY_POINT_GROUP = "feltlab.rig.kinds"
"""The entry-point group a device kind plugin registers under (pyproject.toml:
``[project.entry-points."feltlab.rig.kinds"]``), its value a :class:`DeviceKind` object."""

BUILTIN_KINDS = ("batch", "continuous", "jackpot")
"""feltlab's own entry points in ``feltlab.rig.kinds``, registered first, in this order."""


class UnknownDeviceKind(RigError):
    """No device kind of that name is registered."""


class Collect(Protocol):
    """A kind's collection loop: collect ``want`` samples from ``client`` into ``result``
    (:class:`~feltlab.rig.certify.collect.Collected`), reporting to ``progress``, stopping
    cleanly when ``stop`` is set.  ``faults``: the fault runner of a fault campaign (kinds
    with ``fault_campaigns``), else None; ``directory`` and ``part``: the campaign folder and
    the collection part (1-based)."""

    def __call__(
        self,
        opts: CampaignOptions,
        client: Any,
        want: int,
        result: Collected,
        progress: Progress,
        stop: threading.Event,
        *,
        faults: FaultRunner | None,
        directory: Path,
        part: int,
    ) -> None: ...


class Analyze(Protocol):
    """A kind's analysis: every check of a campaign from its decoded capture ``data`` and
    profile, at family-wise level ``alpha``, with the campaign ``seed`` (power and null
    simulations), the campaign ``directory`` (None offline from a lone file), the host's timing
    uncertainty ``host``."""

    def __call__(
        self,
        data: CaptureData,
        prof: Profile,
        *,
        alpha: float,
        seed: int,
        directory: Path | None,
        progress: Progress,
        host: HostUncertainty | None,
    ) -> Analysis: ...


#: makes a misbehaving subclass's methods: (the simulator class, the ground truth, the
#: misbehaviour or None) -> the methods to override (name -> function)
Misbehave = Callable[[Any, "GroundTruth", "Misbehaviour | None"], dict[str, Any]]


def lazy(module: str, name: str) -> Any:
    """A function that imports ``module`` on its first call and calls its ``name`` with every
    argument: a kind names its collect and analyze stages with it, so that a simulated device
    or a client alone imports neither the certify nor the explore stage.  The name is looked
    up at each call, so a test may replace it in ``module``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{module}.{name}, imported when first called"
    return call


def _profile_name(prof: Profile, model: str) -> str:
    return prof.name


@dataclass(frozen=True)
class DeviceKind:
    """One kind of device (docs/design.md, "How to add a device kind").

    - ``name``: the profile's ``[device] kind`` (``batch``); ``label``: what it is called in
      records, reports and errors (``batch shuffler``).
    - ``simulator``: the simulated device class (a :class:`~feltlab.rig.devices.SimDevice`
      subclass, built by :func:`feltlab.rig.devices.make_device` with the profile's options);
      ``device_keys``: the profile keys it takes beyond the common ones; ``client``: the
      host-side client class (a :class:`~feltlab.rig.clients.DeviceClient` subclass; its
      ``kind`` is the ``Kind`` the device's Heartbeat announces, docs/protocol.md).
    - ``base``: the default base CAN id (a multiple of 0x10 in 0x010..0x7F0, docs/protocol.md);
      ``profile``: the bundled default profile (a name in ``rig/certify/profiles/`` or a path
      to a TOML file); ``unit``: what a sample is called (``shoes``; the profile's
      ``[campaign]`` size key and ``--<unit>``); ``command``: the ``feltlab certify``
      command that certifies it.
    - ``collect``, ``analyze``: its collection loop and analysis (:class:`Collect`,
      :class:`Analyze`); ``count``: its samples in a decoded capture.
    - ``keyed``: its profile carries the device's key (SecOC-authenticated results);
      ``models``: its simulator takes a shuffle model (``--model``); ``fault_campaigns``: it
      runs fault campaigns (``[faults]``, ``--faults``).
    - ``simulated_name(prof, model)``: the simulated device's name in a record (default: the
      profile's name); ``misbehave``: the explorer's misbehaving-device methods (None: only
      the misbehaviours every kind has); ``draw_scenario(r, base, shoes_max, small)``: the
      explorer's scenario of this kind, drawn with weight ``explore_weight`` (None: the
      explorer leaves the kind out); ``check_truth(record, truth, directory, violate)``: the
      explorer's invariant against the device's ground truth (the batch shuffler's
      ``genuine``).
    - ``plan_ahead(prof, size, alpha, seed)``: the pure computations its analysis will run
      that the capture does not change (:class:`feltlab.rig.certify.ahead.Job`: the batch
      shuffler's power estimates), computed by a helper process during collection (None:
      nothing to do ahead).
    """

    name: str
    label: str
    simulator: type[Any]
    client: type[Any]
    base: int
    profile: str | Path
    unit: str
    command: str
    collect: Collect
    analyze: Analyze
    count: Callable[[CaptureData], int]
    device_keys: frozenset[str] = frozenset()
    keyed: bool = False
    models: bool = False
    fault_campaigns: bool = False
    simulated_name: Callable[[Profile, str], str] = field(default=_profile_name)
    misbehave: Misbehave | None = None
    explore_weight: float = 0.0
    draw_scenario: Callable[[random.Random, dict[str, Any], int, int], Any] | None = None
    check_truth: Callable[[dict[str, Any], Any, Path, Callable[[str, str], None]], None] | None = (
        None
    )
    plan_ahead: Callable[[Profile, int, float, int], Sequence[Any]] | None = None

    def __post_init__(self) -> None:
        for what, word in (("name", self.name), ("command", self.command), ("unit", self.unit)):
            if not isinstance(word, str) or not word.replace("_", "").replace("-", "").isalnum():
                raise RigError(f"a device kind's {what} must be a word, got {word!r}")
        if self.unit in RESERVED_UNITS:
            raise RigError(
                f"device kind {self.name!r}: unit {self.unit!r} is a certify option's name "
                f"(--{self.unit}); choose another unit (e.g. shoes, draws, rolls)"
            )
        for what in ("simulator", "client"):
            if not isinstance(getattr(self, what), type):
                raise RigError(
                    f"device kind {self.name!r}: {what} must be a class, got "
                    f"{getattr(self, what)!r}"
                )


RESERVED_UNITS = frozenset(
    {
        "profile",
        "bus",
        "alpha",
        "seed",
        "out",
        "resume",
        "clock",
        "device-on-host",
        "json",
        "live",
        "live-linger",
        "help",
        "model",
        "faults",
        "standard",
    }
)
"""Names a kind's ``unit`` may not take: the common options of ``feltlab certify`` (a kind's
sample size is the option ``--<unit>``)."""

_KINDS: dict[str, DeviceKind] = {}
_BROKEN: dict[str, str] = {}  # entry point name -> why it could not be loaded
_plugins_loaded = False


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    """The group's entry points: feltlab's built-ins first (in :data:`BUILTIN_KINDS` order),
    then every other by name."""
    eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    order = {name: i for i, name in enumerate(BUILTIN_KINDS)}

    def key(ep: importlib.metadata.EntryPoint) -> tuple[int, str]:
        own = ep.dist is not None and ep.dist.name == "feltlab" and ep.name in order
        return (order[ep.name] if own else len(order), ep.name)

    return sorted(eps, key=key)


def _load_plugins() -> None:
    """Register every kind of the entry-point group, once.  A plugin that fails to load (or
    names no :class:`DeviceKind`) is left out and named when its kind is looked up; the other
    kinds work."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in _entry_points():
        where = f"{ep.value} ({ep.dist.name if ep.dist else 'unknown distribution'})"
        try:
            kind = ep.load()
        except (Exception, SystemExit) as exc:  # a vendor's broken plugin stops no other kind
            _BROKEN[ep.name] = f"{where} failed to load: {type(exc).__name__}: {exc}"
            continue
        if not isinstance(kind, DeviceKind):
            _BROKEN[ep.name] = f"{where} is a {type(kind).__name__}, not a DeviceKind"
            continue
        if kind.name in _KINDS:
            continue  # registered at run time already (register_kind before the first lookup)
        try:
            register_kind(kind)
        except RigError as exc:
            _BROKEN[ep.name] = f"{where}: {exc}"


def register_kind(kind: DeviceKind, *, replace_existing: bool = False) -> DeviceKind:
    """Register ``kind``; returns it.  Raises :class:`RigError` when a kind of that name is
    registered already (unless ``replace_existing``) or another kind uses the same default
    base id."""
    if kind.name in _KINDS and not replace_existing:
        raise RigError(
            f"a device kind named {kind.name!r} is registered already; choose another name "
            "or unregister it first"
        )
    for other in _KINDS.values():
        if other.name != kind.name and other.base == kind.base:
            raise RigError(
                f"device kind {kind.name!r}: base 0x{kind.base:03X} is the default base of "
                f"{other.name!r}; choose another base"
            )
    _KINDS[kind.name] = kind
    return kind


def unregister_kind(name: str) -> DeviceKind:
    """Remove the kind ``name`` from the registry; returns it.  Raises
    :class:`UnknownDeviceKind`."""
    kind = get_kind(name)
    del _KINDS[name]
    return kind


def get_kind(name: str) -> DeviceKind:
    """The registered kind ``name``.  Raises :class:`UnknownDeviceKind` naming the known
    kinds."""
    _load_plugins()
    kind = _KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        if isinstance(name, str) and name in _BROKEN:
            raise UnknownDeviceKind(
                f"device kind {name!r} is installed but unusable: {_BROKEN[name]}; fix or "
                "uninstall the package that provides it"
            )
        raise UnknownDeviceKind(f"unknown device kind {name!r}; choose one of {', '.join(names())}")
    return kind


def kinds() -> tuple[DeviceKind, ...]:
    """Every registered kind, in registration order (the built-ins first)."""
    _load_plugins()
    return tuple(_KINDS.values())


def names() -> tuple[str, ...]:
    """The names of every registered kind, in registration order."""
    return tuple(k.name for k in kinds())


def by_heartbeat(code: int | None) -> DeviceKind | None:
    """The kind whose Heartbeat announces ``Kind`` = ``code``, or None."""
    return next((k for k in kinds() if code and getattr(k.client, "kind", None) == code), None)


class FieldView(MutableMapping[str, Any]):
    """A live view of one field of every registered kind, by kind name: reading gives the
    field of the registered kind; setting replaces the registered kind by a copy with that
    field changed (``monkeypatch.setitem(devices.DEVICE_KINDS, "batch", Lagging)`` in a test
    swaps the batch simulator, and undoes it the same way).  The registry stays the one
    home: the view holds nothing."""

    def __init__(self, field_name: str) -> None:
        self._field = field_name

    def __getitem__(self, name: str) -> Any:
        try:
            return getattr(get_kind(name), self._field)
        except UnknownDeviceKind:
            raise KeyError(name) from None

    def __setitem__(self, name: str, value: Any) -> None:
        register_kind(replace(get_kind(name), **{self._field: value}), replace_existing=True)

    def __delitem__(self, name: str) -> None:
        raise TypeError("a kind is removed from the registry with unregister_kind(name)")

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(kinds())


__all__ = [
    "BUILTIN_KINDS",
    "ENTRY_POINT_GROUP",
    "Analyze",
    "Collect",
    "DeviceKind",
    "FieldView",
    "UnknownDeviceKind",
    "by_heartbeat",
    "get_kind",
    "kinds",
    "lazy",
    "names",
    "register_kind",
    "unregister_kind",
]
