"""The device-kind registry: one :class:`~feltlab.rig.kinds.base.DeviceKind` per kind of device
the rig certifies (docs/design.md, "How to add a device kind").

A kind is a package: a subclass of :class:`~feltlab.rig.kinds.base.DeviceKind` (its name and
label, its simulator and client classes, its default base CAN id, its bundled profile, the unit
of its samples) whose methods hold its collection loop, analysis, explorer draws and
misbehaviours.  The rig looks a kind up by the profile's ``[device] kind`` (:func:`get_kind`)
and calls it at the base class's named points; it never branches on the name.

Every kind is a plugin found through the ``feltlab.rig.kinds`` entry-point group, read on the
first lookup (as python-can finds its interfaces through ``can.interface``): an entry point names
a :class:`~feltlab.rig.kinds.base.DeviceKind` subclass or instance (``acme =
"acme_rig.kind:AcmeKind"``), and the registry registers it.  The built-in kinds (batch and
continuous shufflers, the jackpot prize panel: ``rig/kinds/<name>/``) are feltlab's own entry
points, :data:`BUILTIN_KINDS`, registered first in that order; a vendor's kind, installed with
pip, is found the same way without feltlab importing it by name.  :func:`register_kind` adds a
kind at run time (a test's fixture, a notebook).  This module and the base class import nothing
of the rig's stages, so every stage may use them.
"""

from __future__ import annotations

import importlib.metadata

from feltlab.rig.errors import RigError
from feltlab.rig.kinds.base import DeviceKind

ENTRY_POINT_GROUP = "feltlab.rig.kinds"
"""The entry-point group a device kind plugin registers under (pyproject.toml:
``[project.entry-points."feltlab.rig.kinds"]``), its value a
:class:`~feltlab.rig.kinds.base.DeviceKind` subclass or instance."""

BUILTIN_KINDS = ("batch", "continuous", "jackpot")
"""feltlab's own entry points in ``feltlab.rig.kinds``, registered first, in this order."""

DEFAULT_KIND = BUILTIN_KINDS[0]
"""The kind a loader or command uses when it is given none (the first built-in, the batch
shuffler: a profile without ``[device] kind`` before there were kinds, a campaign folder that
records none)."""


class UnknownDeviceKind(RigError):
    """No device kind of that name is registered."""


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
            if isinstance(kind, type) and issubclass(kind, DeviceKind):
                kind = kind()  # a kind's class: its one instance
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
    """Register ``kind`` (a :class:`~feltlab.rig.kinds.base.DeviceKind` instance); returns
    it.  Raises :class:`RigError` when ``kind`` is no DeviceKind, a kind of that name is
    registered already (unless ``replace_existing``) or another kind uses the same default
    base id."""
    if not isinstance(kind, DeviceKind):
        raise RigError(
            f"register_kind takes a DeviceKind instance, got {type(kind).__name__}; subclass "
            "feltlab.rig.kinds.base.DeviceKind and register an instance"
        )
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


__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_KIND",
    "ENTRY_POINT_GROUP",
    "DeviceKind",
    "UnknownDeviceKind",
    "by_heartbeat",
    "get_kind",
    "kinds",
    "names",
    "register_kind",
    "unregister_kind",
]
