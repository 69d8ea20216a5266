"""The device-kind registry: one :class:`~feltlab.rig.kinds.base.DeviceKind` per kind of device
the rig certifies (docs/design.md, "How to add a device kind").

A kind is a package: a subclass of :class:`~feltlab.rig.kinds.base.DeviceKind` (its name and
label, its simulator and client classes, its default base CAN id, its bundled profile, the unit
of its samples) whose methods hold its collection loop, analysis, explorer draws and
misbehaviours.  The rig looks a kind up by the profile's ``[device] kind`` (:func:`get_kind`)
and calls it at the base class's named points; it never branches on the name.

Every kind is a plugin found through the ``feltlab.rig.kinds`` entry-point group (as python-can
finds its interfaces through ``can.interface``): an entry point, named after its kind, names a
:class:`~feltlab.rig.kinds.base.DeviceKind` subclass or instance (``acme =
"acme_rig.kind:AcmeKind"``), and the registry registers it.  The built-in kinds (batch and
continuous shufflers, the jackpot prize panel: ``rig/kinds/<name>/``) are feltlab's own entry
points, :data:`BUILTIN_KINDS`, registered on the first lookup in that order; a vendor's kind,
installed with pip, is found the same way without feltlab importing it by name.
:func:`register_kind` adds a kind at run time (a test's fixture, a notebook).  This module and
the base class import nothing of the rig's stages, so every stage may use them.

A vendor's plugin is imported only when it is needed (issue 41): :func:`get_kind` imports the
one entry point of the name asked for, and only :func:`kinds` (a listing: ``certify --help``,
the explorer) imports them all.  Each import runs in a thread of its own and is given
:func:`import_seconds` (10 s; ``$FELTLAB_KIND_IMPORT_SECONDS``): a plugin whose import blocks
(a driver waiting for hardware, a licence server that does not answer) is left out and named,
and every other kind, the built-ins above all, works as if it were not installed.  A vendor's
entry point named like a built-in kind is never loaded, and is named in a warning.
"""

from __future__ import annotations

import importlib.metadata
import logging
import math
import os
import threading
from typing import Any

from feltlab.rig.errors import RigError
from feltlab.rig.kinds.base import DeviceKind

ENTRY_POINT_GROUP = "feltlab.rig.kinds"
"""The entry-point group a device kind plugin registers under (pyproject.toml:
``[project.entry-points."feltlab.rig.kinds"]``), its value a
:class:`~feltlab.rig.kinds.base.DeviceKind` subclass or instance."""

BUILTIN_KINDS = ("batch", "continuous", "jackpot")
"""feltlab's own entry points in ``feltlab.rig.kinds``, registered first, in this order."""

IMPORT_SECONDS = 10.0
"""Seconds a vendor's device-kind plugin may take to import (its entry point's ``load``)
before it is left out as blocked; ``$FELTLAB_KIND_IMPORT_SECONDS`` sets another
(:func:`import_seconds`)."""

DEFAULT_KIND = BUILTIN_KINDS[0]
"""The kind a loader or command uses when it is given none (the first built-in, the batch
shuffler: a profile without ``[device] kind`` before there were kinds, a campaign folder that
records none)."""


class UnknownDeviceKind(RigError):
    """No device kind of that name is registered."""


log = logging.getLogger("feltlab.rig.kinds")

_KINDS: dict[str, DeviceKind] = {}
_BROKEN: dict[str, str] = {}  # entry point name -> why it could not be loaded
_builtins_loaded = False
_tried: set[str] = set()  # the vendors' entry points already imported (or left out)
_plugins: list[importlib.metadata.EntryPoint] | None = None  # the vendors' usable entry points


def import_seconds() -> float:
    """The time limit of one plugin's import, in seconds: ``$FELTLAB_KIND_IMPORT_SECONDS``
    when it is a positive finite number, else :data:`IMPORT_SECONDS`."""
    raw = os.environ.get("FELTLAB_KIND_IMPORT_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return IMPORT_SECONDS
    return value if math.isfinite(value) and value > 0 else IMPORT_SECONDS


def _where(ep: importlib.metadata.EntryPoint) -> str:
    return f"{ep.value} ({ep.dist.name if ep.dist else 'unknown distribution'})"


def _is_builtin(ep: importlib.metadata.EntryPoint) -> bool:
    return ep.dist is not None and ep.dist.name == "feltlab" and ep.name in BUILTIN_KINDS


_EntryPoints = list[importlib.metadata.EntryPoint]


def _entry_points() -> tuple[_EntryPoints, _EntryPoints]:
    """The group's entry points: (feltlab's built-ins in :data:`BUILTIN_KINDS` order, every
    vendor's by name).  Reading them imports nothing.  A vendor's entry point named like a
    built-in kind is left out of both, with a warning naming it."""
    eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    own = sorted((ep for ep in eps if _is_builtin(ep)), key=lambda ep: BUILTIN_KINDS.index(ep.name))
    vendors: list[importlib.metadata.EntryPoint] = []
    for ep in sorted((ep for ep in eps if not _is_builtin(ep)), key=lambda ep: ep.name):
        if ep.name in BUILTIN_KINDS:
            log.warning(
                "the device-kind plugin %s = %s is named like feltlab's built-in kind %r and "
                "is not loaded: rename its entry point (and its kind), or uninstall it",
                ep.name,
                _where(ep),
                ep.name,
            )
            continue
        vendors.append(ep)
    return own, vendors


def _load_builtins() -> None:
    """Register feltlab's own kinds, once (and read the vendors' entry points, importing none)."""
    global _builtins_loaded, _plugins
    if _builtins_loaded:
        return
    _builtins_loaded = True
    own, _plugins = _entry_points()
    for ep in own:
        try:
            kind = ep.load()
        except Exception as exc:  # pragma: no cover - an installation of feltlab itself damaged
            _BROKEN[ep.name] = f"{_where(ep)} failed to load: {type(exc).__name__}: {exc}"
            continue
        _register_loaded(ep, kind() if isinstance(kind, type) else kind)


def _import_timed(ep: importlib.metadata.EntryPoint, limit: float) -> tuple[str, Any]:
    """``ep.load()`` in a daemon thread of its own, waited for ``limit`` seconds: ("ok",
    object), ("error", exception) or ("blocked", None).  A blocked import is left to its
    thread (Python cannot stop it) and never touched again."""
    box: list[tuple[str, Any]] = []

    def run() -> None:
        try:
            box.append(("ok", ep.load()))
        except BaseException as exc:  # SystemExit and the like stop the plugin, not feltlab
            box.append(("error", exc))

    worker = threading.Thread(target=run, name=f"feltlab-kind-import-{ep.name}", daemon=True)
    worker.start()
    worker.join(limit)
    return box[0] if box else ("blocked", None)


def _load_plugin(ep: importlib.metadata.EntryPoint, *, warn: bool) -> None:
    """Import the vendor's entry point ``ep`` within :func:`import_seconds` and register its
    kind; a failure of any sort is kept in ``_BROKEN`` (the error :func:`get_kind` raises for
    it) and, with ``warn`` (a listing, where no error follows), logged once."""
    _tried.add(ep.name)
    limit = import_seconds()
    outcome, value = _import_timed(ep, limit)
    why: str | None = None
    if outcome == "blocked":
        why = (
            f"{_where(ep)} did not finish importing within {limit:g} s (its import blocks: "
            "waiting for a device, a network or a lock?); $FELTLAB_KIND_IMPORT_SECONDS sets "
            "the limit"
        )
    elif outcome == "error":
        why = f"{_where(ep)} failed to load: {type(value).__name__}: {value}"
    else:
        why = _checked_register(ep, value)
    if why is not None:
        _BROKEN[ep.name] = why
        if warn:
            log.warning("device kind %r left out: %s", ep.name, why)


def _checked_register(ep: importlib.metadata.EntryPoint, value: Any) -> str | None:
    """Register the kind a vendor's entry point loaded (a DeviceKind subclass or instance,
    named as its entry point); the reason it cannot be, or None."""
    try:
        kind = value() if isinstance(value, type) and issubclass(value, DeviceKind) else value
    except Exception as exc:
        return f"{_where(ep)} failed to load: {type(exc).__name__}: {exc}"
    if not isinstance(kind, DeviceKind):
        return f"{_where(ep)} is a {type(kind).__name__}, not a DeviceKind"
    if kind.name != ep.name:
        return (
            f"the entry point {ep.name!r} ({_where(ep)}) names a kind called {kind.name!r}: "
            "name the entry point after its kind"
        )
    return _register_loaded(ep, kind)


def _register_loaded(ep: importlib.metadata.EntryPoint, kind: Any) -> str | None:
    """Register a loaded entry point's kind; the reason it cannot be, or None."""
    if not isinstance(kind, DeviceKind):
        return f"{_where(ep)} is a {type(kind).__name__}, not a DeviceKind"
    if kind.name in _KINDS:
        return None  # registered at run time already (register_kind before the first lookup)
    try:
        register_kind(kind)
    except RigError as exc:
        return f"{_where(ep)}: {exc}"
    return None


def _load_plugins(name: str | None = None) -> None:
    """Register the built-ins, then the vendor's entry point ``name`` (None: every vendor's,
    by name), each imported once, within its time limit."""
    _load_builtins()
    for ep in _plugins or ():
        if ep.name not in _tried and (name is None or ep.name == name):
            _load_plugin(ep, warn=name is None)


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
    """The registered kind ``name`` (importing only the plugin of that name, within its time
    limit, when it is no built-in).  Raises :class:`UnknownDeviceKind` naming the known kinds,
    or why an installed one is unusable (it failed, or blocked, on import)."""
    _load_builtins()
    kind = _KINDS.get(name) if isinstance(name, str) else None
    if kind is None and isinstance(name, str):
        _load_plugins(name)
        kind = _KINDS.get(name)
    if kind is None:
        if isinstance(name, str) and name in _BROKEN:
            raise UnknownDeviceKind(
                f"device kind {name!r} is installed but unusable: {_BROKEN[name]}; fix or "
                "uninstall the package that provides it"
            )
        raise UnknownDeviceKind(
            f"unknown device kind {name!r}; choose one of {', '.join(available_names())}"
        )
    return kind


def _ordered() -> tuple[DeviceKind, ...]:
    """The registered kinds: the built-ins in :data:`BUILTIN_KINDS` order, then every other
    by name (the same order whichever command imported which plugin first)."""
    own = [_KINDS[n] for n in BUILTIN_KINDS if n in _KINDS]
    return (*own, *(_KINDS[n] for n in sorted(_KINDS) if n not in BUILTIN_KINDS))


def kinds() -> tuple[DeviceKind, ...]:
    """Every registered kind (every installed plugin imported, each within its time limit):
    the built-ins first, then the others by name."""
    _load_plugins()
    return _ordered()


def registered_kinds() -> tuple[DeviceKind, ...]:
    """The kinds registered so far (the built-ins, any kind registered at run time and the
    plugins already imported), in :func:`kinds` order, importing no plugin."""
    _load_builtins()
    return _ordered()


def names() -> tuple[str, ...]:
    """The names of every registered kind, in :func:`kinds` order."""
    return tuple(k.name for k in kinds())


def available_names() -> tuple[str, ...]:
    """The names of the kinds registered and of the installed plugins not yet imported (an
    entry point is named after its kind), without importing any plugin: the choices a
    command line offers.  A plugin found unusable is left out."""
    known = [k.name for k in registered_kinds()]
    pending = [ep.name for ep in _plugins or () if ep.name not in _KINDS]
    return (*known, *(n for n in pending if n not in _BROKEN and n not in known))


def by_heartbeat(code: int | None) -> DeviceKind | None:
    """The kind whose Heartbeat announces ``Kind`` = ``code``, or None (the kinds registered
    first; the installed plugins imported only when none of those is it)."""
    if not code:
        return None
    for group in (registered_kinds, kinds):
        found = next((k for k in group() if getattr(k.client, "kind", None) == code), None)
        if found is not None:
            return found
    return None


__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_KIND",
    "ENTRY_POINT_GROUP",
    "IMPORT_SECONDS",
    "DeviceKind",
    "UnknownDeviceKind",
    "available_names",
    "by_heartbeat",
    "get_kind",
    "import_seconds",
    "kinds",
    "names",
    "register_kind",
    "registered_kinds",
    "unregister_kind",
]
