"""The pluggy plugin manager: built-ins first, then third-party entry points, then a check.

Project name and entry-point group are both ``feltlab`` (pluggy's convention, as in pytest,
tox and llm).  This module is the only way the SDK and the rig reach plugins
(docs/design.md, "Rooms and arrows"): :data:`BUILTIN_PLUGINS` names the built-in modules.

feltlab calls each hook implementation's function itself, one plugin at a time (so that one
plugin's failure is reported with its name and, for observers, isolated from the others).
Pluggy's wrappers (``@hookimpl(wrapper=True)`` or ``hookwrapper=True``) need pluggy's own call
loop, so they are refused with a :class:`PluginError` naming the plugin rather than silently
never run.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import pluggy

from feltlab import hookspecs
from feltlab.errors import PluginError
from feltlab.hookspecs import PROJECT
from feltlab.wagers import WagerRegistry

log = logging.getLogger(__name__)


class Registers(Protocol):
    """What a register hook fills: an object whose ``register`` is the hook's callback
    (a :class:`feltlab.registry.Registry`, or any collection of what plugins provide)."""

    def register(self, *args: Any) -> None: ...


R = TypeVar("R", bound=Registers)

BUILTIN_PLUGINS: tuple[str, ...] = (
    "feltlab.plugins.main",
    "feltlab.plugins.insurance",
    "feltlab.plugins.perfect_pairs",
    "feltlab.plugins.super_sevens",
    "feltlab.plugins.madness21",
    "feltlab.plugins.tournament",
)
"""The built-in plugin modules, registered first and in this order."""


def _wrapper_error(impl: Any, hook: str) -> PluginError | None:
    """The refusal of a wrapper implementation (see the module docstring), else None."""
    kind = "wrapper=True" if getattr(impl, "wrapper", False) else None
    kind = kind or ("hookwrapper=True" if getattr(impl, "hookwrapper", False) else None)
    if kind is None:
        return None
    return PluginError(
        f"plugin {impl.plugin_name!r} implements {hook} with @hookimpl({kind}); feltlab calls "
        "each implementation on its own and does not run wrappers: drop the option and "
        "implement the hook as a plain function"
    )


def implementations(caller: Any) -> list[Any]:
    """The implementations of hook ``caller`` (``pm.hook.NAME``) in registration order,
    built-ins first.  Raises :class:`PluginError` naming the plugin for a wrapper."""
    impls = list(caller.get_hookimpls())  # pluggy lists them oldest first (and calls newest first)
    for impl in impls:
        error = _wrapper_error(impl, caller.name)
        if error is not None:
            raise error
    return impls


class FeltlabPluginManager(pluggy.PluginManager):
    """A :class:`pluggy.PluginManager` that refuses, at registration, a plugin implementing a
    hook as a wrapper (:class:`PluginError` naming the plugin; the plugin is not kept)."""

    def __init__(self, project_name: str, *, strict: bool = True) -> None:
        super().__init__(project_name)
        self.strict = strict
        """Raise :class:`PluginError` for a broken installed plugin (else leave it out)."""
        self.distributions: dict[str, importlib.metadata.Distribution] = {}
        """The distribution of each plugin loaded from an entry point, by plugin name."""

    def register(self, plugin: object, name: str | None = None) -> str | None:
        plugin_name = super().register(plugin, name)
        if plugin_name is None:  # blocked
            return None
        for caller in self.get_hookcallers(plugin) or []:
            for impl in caller.get_hookimpls():
                error = _wrapper_error(impl, caller.name) if impl.plugin is plugin else None
                if error is not None:
                    self.unregister(plugin)
                    raise error
        return plugin_name


def get_plugin_manager(
    *,
    entry_points: bool = True,
    plugins: Sequence[tuple[str, object]] = (),
    check_pending: bool = True,
    strict: bool = False,
) -> pluggy.PluginManager:
    """A new manager with feltlab's hookspecs, the built-in plugins, then ``plugins`` ((name,
    module or object) pairs, in order), then (unless ``entry_points=False``) every installed
    plugin of the ``feltlab`` entry-point group, each loaded on its own.
    ``check_pending=False`` leaves unknown hooks for the caller to report (the conformance
    kit names them itself).

    An installed plugin that fails to import (any exception, ``SystemExit`` or a
    ``KeyboardInterrupt`` raised by its module included), is invalid (pluggy's validation),
    implements a hook that does not exist or implements one as a wrapper is, by default,
    left out and named in one warning per process (logger ``feltlab.plugin_manager``): one
    broken package never takes the built-ins, the rig or another plugin with it, and
    :func:`collect` leaves out a plugin that fails while registering the same way.
    ``strict=True`` (the conformance kit, tests) raises :class:`PluginError` naming the
    plugin instead.  A plugin given in ``plugins`` always raises.
    """
    pm = FeltlabPluginManager(PROJECT, strict=strict)
    pm.add_hookspecs(hookspecs)
    for modname in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(modname), name=modname)
    for name, plugin in plugins:
        try:
            pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name!r} is invalid: {exc}") from exc
    if entry_points:
        _load_entry_points(pm)
    if not check_pending:
        return pm
    while True:
        try:
            pm.check_pending()
            return pm
        except pluggy.PluginValidationError as exc:
            error = PluginError(f"plugin {exc.plugin!r} implements an unknown hook: {exc}")
            if strict or exc.plugin in {name for name, _ in plugins}:
                raise error from exc
            pm.unregister(exc.plugin)
            left_out(error)


def _load_entry_points(pm: FeltlabPluginManager) -> None:
    """Load every ``feltlab`` entry point (as pluggy's ``load_setuptools_entrypoints`` does:
    each distribution's entry points of the group, a name already registered or blocked
    skipped), each on its own: see :func:`get_plugin_manager` for a failing one."""
    for dist in list(importlib.metadata.distributions()):
        for ep in dist.entry_points:
            if ep.group != PROJECT or pm.get_plugin(ep.name) or pm.is_blocked(ep.name):
                continue
            where = f"{ep.name} = {ep.value} (package {dist.metadata['name']} {dist.version})"
            cause: BaseException
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except PluginError as exc:
                error, cause = PluginError(f"plugin {where}: {exc}"), exc
            except pluggy.PluginValidationError as exc:
                error, cause = PluginError(f"plugin {where} is invalid: {exc}"), exc
            except (Exception, SystemExit, KeyboardInterrupt) as exc:  # its module's own raise
                error, cause = (
                    PluginError(
                        f"a plugin of the '{PROJECT}' entry-point group, {where}, failed to "
                        f"load: {exc!r}; fix or uninstall that package"
                    ),
                    exc,
                )
            else:
                pm.distributions[ep.name] = dist
                continue
            if pm.strict:
                raise error from cause
            left_out(error)


_LEFT_OUT: set[str] = set()


def left_out(error: PluginError) -> None:
    """Warn (once per process and message) that a plugin was left out because of ``error``."""
    text = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
    if text not in _LEFT_OUT:
        _LEFT_OUT.add(text)
        log.warning("%s; feltlab goes on without it", text)


def plugin_summary(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """One dict per registered plugin: name, hooks implemented, and distribution version."""
    dists: dict[str, importlib.metadata.Distribution] = getattr(pm, "distributions", {})
    rows: list[dict[str, Any]] = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        dist = dists.get(name)
        rows.append(
            {
                "name": name,
                "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or []),
                "distribution": dist.metadata["name"] if dist is not None else "feltlab (built-in)",
                "version": dist.version if dist is not None else None,
            }
        )
    return rows


def collect(pm: pluggy.PluginManager, hook: str, registry: R) -> R:
    """Call the register hook ``hook`` on every plugin (built-ins first) with
    ``register=registry.register`` and return ``registry`` (a :class:`feltlab.registry.
    Registry`, or any :class:`Registers`).  Raises :class:`PluginError` naming the plugin
    when one fails while registering (its exception chained), registers a name another plugin
    took, or is a wrapper; a manager made with ``strict=False`` (the default of
    :func:`get_plugin_manager`) leaves such a plugin loaded from an entry point out of what
    follows and warns (:func:`left_out`) instead."""
    strict = getattr(pm, "strict", True)
    installed: dict[str, Any] = getattr(pm, "distributions", {})
    for impl in implementations(getattr(pm.hook, hook)):
        try:
            impl.function(register=registry.register)
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, PluginError)
                else PluginError(
                    f"plugin {impl.plugin_name!r} failed in {hook}: {exc!r}; "
                    "fix or uninstall that plugin"
                )
            )
            if strict or impl.plugin_name not in installed:  # a built-in, or given by hand
                raise error from exc
            left_out(error)  # what it registered before the failure stays
    return registry


def collect_wagers(pm: pluggy.PluginManager) -> WagerRegistry:
    """The wager types every plugin registers through ``feltlab_register_wagers``
    (:func:`collect`).  Raises :class:`PluginError` naming the plugin when one fails while
    registering or two plugins register the same name."""
    return collect(pm, "feltlab_register_wagers", WagerRegistry())


@dataclass(frozen=True)
class PluginFailure:
    """An exception raised by one plugin's hook implementation, caught and reported:
    ``plugin`` (its registered name), ``hook`` and ``error`` (the exception's repr)."""

    plugin: str
    hook: str
    error: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r} raised in {self.hook}: {self.error}"


def call_isolated(caller: Any, **kwargs: Any) -> list[PluginFailure]:
    """Call every implementation of an observer hook one by one, so that an exception in one
    plugin neither stops the others nor reaches the caller (a round or a campaign must not be
    corrupted by an observer).  Each failure is logged with the plugin's name and returned; a
    wrapper implementation (registered on a plain pluggy manager) is not called and is
    reported the same way.  Return values are discarded: use this only for hooks whose
    results are ignored."""
    failures: list[PluginFailure] = []
    for impl in reversed(caller.get_hookimpls()):  # pluggy's call order: newest first
        refused = _wrapper_error(impl, caller.name)
        if refused is not None:
            failure = PluginFailure(impl.plugin_name, caller.name, str(refused))
            log.error("%s", failure)
            failures.append(failure)
            continue
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames if k in kwargs})
        except Exception as exc:
            failure = PluginFailure(impl.plugin_name, caller.name, repr(exc))
            log.error("%s", failure)
            failures.append(failure)
    return failures
