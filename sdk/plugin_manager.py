"""The pluggy plugin manager: built-ins first, then third-party entry points, then a check.

Project name and entry-point group are both ``feltlab`` (pluggy's convention, as in pytest,
tox and llm).
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import Any

import pluggy

from feltlab import hookspecs
from feltlab.errors import PluginError
from feltlab.wagers import WagerRegistry

PROJECT = "feltlab"
hookimpl = pluggy.HookimplMarker(PROJECT)
log = logging.getLogger(__name__)


def get_plugin_manager(*, entry_points: bool = True) -> pluggy.PluginManager:
    """A new manager with feltlab's hookspecs, the built-in plugins and (unless
    ``entry_points=False``) every installed plugin of the ``feltlab`` entry-point group.

    Raises :class:`PluginError` naming the plugin when one fails to import or implements a hook
    that does not exist (``check_pending``).
    """
    from feltlab.plugins import BUILTIN_PLUGINS

    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    for modname in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(modname), name=modname)
    if entry_points:
        try:
            pm.load_setuptools_entrypoints(PROJECT)
        except Exception as exc:  # an installed plugin failed to import
            raise PluginError(
                f"a plugin of the '{PROJECT}' entry-point group failed to load: {exc!r}; "
                "fix or uninstall that package"
            ) from exc
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {exc.plugin!r} implements an unknown hook: {exc}") from exc
    return pm


def plugin_summary(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """One dict per registered plugin: name, hooks implemented, and distribution version."""
    dists = {id(p): d for p, d in pm.list_plugin_distinfo()}
    rows: list[dict[str, Any]] = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        dist = dists.get(id(plugin))
        rows.append(
            {
                "name": name,
                "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or []),
                "distribution": dist.project_name if dist is not None else "feltlab (built-in)",
                "version": dist.version if dist is not None else None,
            }
        )
    return rows


def collect_wagers(pm: pluggy.PluginManager) -> WagerRegistry:
    """Call ``feltlab_register_wagers`` on every plugin (built-ins first) and return the
    registry.  Raises :class:`PluginError` naming the plugin when one fails while registering
    or two plugins register the same name."""
    registry = WagerRegistry()
    # pluggy calls the newest registration first; registering in registration order keeps
    # the built-ins first in the registry, as they were loaded first.
    for impl in pm.hook.feltlab_register_wagers.get_hookimpls():
        try:
            impl.function(register=registry.register)
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(
                f"plugin {impl.plugin_name!r} failed in feltlab_register_wagers: {exc!r}; "
                "fix or uninstall that plugin"
            ) from exc
    return registry


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
    corrupted by an observer).  Each failure is logged with the plugin's name and returned.
    Return values are discarded: use this only for hooks whose results are ignored."""
    failures: list[PluginFailure] = []
    for impl in reversed(caller.get_hookimpls()):  # registration order, built-ins first
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames if k in kwargs})
        except Exception as exc:
            failure = PluginFailure(impl.plugin_name, caller.name, repr(exc))
            log.error("%s", failure)
            failures.append(failure)
    return failures
