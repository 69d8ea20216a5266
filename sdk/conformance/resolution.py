"""The wager under test for the conformance kit (:mod:`feltlab.conformance`): how a
:class:`~feltlab.conformance.WagerConformance` subclass is resolved to a registered wager
through the plugin manager (:func:`resolve`), and how the kit fails (:func:`fail`: one
paragraph naming the wager)."""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, NoReturn

import pluggy
import pytest

from feltlab.errors import FeltlabError, PluginError

NO_INPUTS = (
    "declares neither card_roles nor round_fields, so nothing says what decides it: a "
    "card-decided wager names the cards its classify() reads (card_roles), a wager decided by "
    "the round's play names the round-record fields its classify_round() reads (round_fields, "
    "docs/writing-a-wager.md)"
)
"""What the kit says of a wager that names neither its cards nor its round fields."""


# ===================================================================== resolution


class ConformanceError(Exception):
    """The kit cannot find or load the wager it was pointed at; the message says why."""


@dataclass(frozen=True)
class Spec:
    """What a :class:`WagerConformance` subclass points at (hashable, for caching)."""

    wager: str
    plugin: str | None
    rules: str
    decks: int | None


@dataclass(frozen=True)
class Target:
    """A resolved wager: its plugin manager, type, providing plugins, rules and deck count."""

    spec: Spec
    pm: pluggy.PluginManager
    wager_type: type[Any]
    providers: tuple[object, ...]
    base_rules: Any
    rules: Any
    decks: int
    main_type: type[Any]
    """The main wager's type, as the plugin manager registers it (a table needs one)."""

    @property
    def label(self) -> str:
        """``wager 'x' (module)`` for messages."""
        return (
            f"wager {self.spec.wager!r} ({self.wager_type.__module__}.{self.wager_type.__name__})"
        )

    @property
    def rules_name(self) -> str:
        """The rules preset's name."""
        return self.spec.rules

    @property
    def paytable_names(self) -> list[str]:
        """The wager type's paytable names."""
        return list(self.wager_type.paytables)

    def instance(self, paytable: str | None) -> Any:
        """An instance with ``paytable`` (None: the default)."""
        if paytable is not None and paytable not in self.wager_type.paytables:
            raise ConformanceError(
                f"{self.label} has no paytable {paytable!r}; it has {self.paytable_names}"
            )
        return self.wager_type(paytable=paytable)


def _load_plugin(path: str) -> object:
    modname, _, attr = path.partition(":")
    try:
        obj: object = importlib.import_module(modname)
    except Exception as exc:
        raise ConformanceError(f"plugin {path!r} failed to import: {exc!r}") from exc
    if attr:
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise ConformanceError(f"plugin module {modname!r} has no {attr!r}") from None
    return obj


def plugin_manager(plugin: str | None = None) -> pluggy.PluginManager:
    """feltlab's plugin manager as :func:`feltlab.get_plugin_manager` builds it, but without
    ``check_pending`` (the kit reports unknown hooks itself): built-ins, then ``plugin`` if
    given, else every ``feltlab`` entry point, strictly (a broken one is a
    :class:`ConformanceError` naming it, never left out)."""
    from feltlab.plugin_manager import get_plugin_manager  # pytest11

    extra = [] if plugin is None else [(plugin, _load_plugin(plugin))]
    try:
        return get_plugin_manager(
            entry_points=plugin is None, plugins=extra, check_pending=False, strict=True
        )
    except PluginError as exc:
        raise ConformanceError(str(exc)) from exc


@functools.cache
def resolve(spec: Spec) -> Target:
    from feltlab.plugin_manager import collect_wagers, implementations  # pytest11
    from feltlab.rules import Rules  # pytest11: kept light, loaded by every pytest run

    pm = plugin_manager(spec.plugin)
    try:
        registry = collect_wagers(pm)
    except FeltlabError as exc:
        raise ConformanceError(str(exc)) from exc
    if spec.wager not in registry:
        where = f"plugin {spec.plugin!r}" if spec.plugin else "the installed plugins"
        raise ConformanceError(
            f"no wager {spec.wager!r} is registered by {where}; registered: "
            f"{registry.names()} (is the package installed, with its `feltlab` entry point?)"
        )
    wager_type = registry[spec.wager]
    providers = []
    for impl in implementations(pm.hook.feltlab_register_wagers):
        seen: list[type[Any]] = []
        impl.function(register=seen.append)
        if wager_type in seen:
            providers.append(impl.plugin)
    try:
        base = Rules.preset(spec.rules)
    except FeltlabError as exc:
        raise ConformanceError(str(exc)) from exc
    lo, hi = wager_type.min_decks, wager_type.max_decks
    decks = spec.decks if spec.decks is not None else min(max(base.decks, lo), hi)
    try:
        rules = base.replace(decks=decks)
    except FeltlabError as exc:
        raise ConformanceError(f"rules {spec.rules!r} with {decks} decks: {exc}") from exc
    return Target(spec, pm, wager_type, tuple(providers), base, rules, decks, registry["main"])


def fail(message: str) -> NoReturn:
    pytest.fail(message, pytrace=False)


def z_score(confidence: float) -> float:

    return NormalDist().inv_cdf(0.5 + confidence / 2)
