"""The plugin manager's PluginError paths and its refusal of pluggy wrappers.

feltlab calls each hook implementation's function itself (one plugin at a time), so a pluggy
wrapper (``wrapper=True`` or ``hookwrapper=True``) could never run; it is refused with an error
naming the plugin, at registration on feltlab's manager and at call time on any other.
"""

from __future__ import annotations

import importlib.metadata
import textwrap
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from feltlab import hookimpl, hookspecs
from feltlab.engine import Table
from feltlab.errors import PluginError, WagerError
from feltlab.hookspecs import PROJECT
from feltlab.plugin_manager import (
    BUILTIN_PLUGINS,
    call_isolated,
    collect,
    collect_wagers,
    get_plugin_manager,
    implementations,
)
from feltlab.registry import Registry
from feltlab.tournament import (
    BettingStrategy,
    StrategyRegistry,
    TournamentError,
    collect_strategies,
)
from feltlab.wagers import WagerRegistry, WagerType


class NewStyleWrapper:
    @hookimpl(wrapper=True)
    def feltlab_card_dealt(self, card: int) -> Generator[None, None, None]:
        yield


class OldStyleWrapper:
    @hookimpl(hookwrapper=True)
    def feltlab_register_wagers(self) -> Generator[None, None, None]:
        yield


class Counter:
    def __init__(self) -> None:
        self.cards: list[int] = []

    @hookimpl
    def feltlab_card_dealt(self, card: int) -> None:
        self.cards.append(card)


def _plain_manager() -> pluggy.PluginManager:
    """A pluggy manager with feltlab's hookspecs but none of feltlab's registration checks,
    as a caller might build by hand."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


@pytest.mark.parametrize(
    ("plugin", "option", "hook"),
    [
        (NewStyleWrapper, "wrapper=True", "feltlab_card_dealt"),
        (OldStyleWrapper, "hookwrapper=True", "feltlab_register_wagers"),
    ],
)
def test_wrapper_is_refused_at_registration_naming_the_plugin(
    plugin: type[Any], option: str, hook: str
) -> None:
    pm = get_plugin_manager(entry_points=False)
    with pytest.raises(PluginError) as err:
        pm.register(plugin(), name="acme_wrapper")
    message = str(err.value)
    assert f"plugin 'acme_wrapper' implements {hook} with @hookimpl({option})" in message
    assert "drop the option" in message
    assert pm.get_plugin("acme_wrapper") is None  # not kept half-registered
    assert collect_wagers(pm).names()[0] == "main"  # the manager still works


def test_wrapper_on_a_plain_manager_is_refused_at_call_time() -> None:
    pm = _plain_manager()
    counter = Counter()
    pm.register(counter, name="acme_counter")
    pm.register(NewStyleWrapper(), name="acme_wrapper")
    failures = call_isolated(pm.hook.feltlab_card_dealt, table=None, card=7, to="box", box=0)
    assert [(f.plugin, f.hook) for f in failures] == [("acme_wrapper", "feltlab_card_dealt")]
    assert "wrapper=True" in failures[0].error
    assert counter.cards == [7]  # the other observer still ran

    pm.register(OldStyleWrapper(), name="acme_old")
    with pytest.raises(PluginError, match=r"'acme_old' implements feltlab_register_wagers"):
        collect_wagers(pm)
    with pytest.raises(PluginError, match="acme_old"):
        implementations(pm.hook.feltlab_register_wagers)


def test_implementations_are_in_registration_order() -> None:
    pm = get_plugin_manager(entry_points=False)
    names = [i.plugin_name for i in implementations(pm.hook.feltlab_register_wagers)]
    assert names == [m for m in BUILTIN_PLUGINS if m != "feltlab.plugins.tournament"]


class _Dist:
    """Just enough of an importlib.metadata.Distribution for pluggy's entry-point loader."""

    def __init__(self, *entry_points: importlib.metadata.EntryPoint) -> None:
        self.entry_points = list(entry_points)
        self.metadata = {"name": "acme-plugins"}
        self.version = "1.0"


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[..., None]]:
    """Install fake ``feltlab`` entry points: ``entry_points(name=module_source, ...)`` writes
    each module under tmp_path and makes it the only distribution pluggy sees."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(**modules: str | None) -> None:
        eps = []
        for name, source in modules.items():
            if source is not None:
                (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
            eps.append(importlib.metadata.EntryPoint(name, name, PROJECT))
        monkeypatch.setattr(importlib.metadata, "distributions", lambda: [_Dist(*eps)])

    yield install


def test_entry_point_that_fails_to_import_is_a_plugin_error(
    entry_points: Callable[..., None],
) -> None:
    entry_points(acme_missing_module=None)
    with pytest.raises(PluginError, match=r"entry-point group, .* failed to load") as err:
        get_plugin_manager(strict=True)
    assert "acme_missing_module" in str(err.value)
    assert isinstance(err.value.__cause__, ImportError)
    # without entry points the built-ins still load
    assert "main" in collect_wagers(get_plugin_manager(entry_points=False))


def test_entry_point_with_an_unknown_hook_names_the_plugin(
    entry_points: Callable[..., None],
) -> None:
    entry_points(
        acme_typo="""
        from feltlab import hookimpl

        @hookimpl
        def feltlab_regster_wagers(register):  # misspelt
            pass
        """
    )
    with pytest.raises(PluginError, match=r"implements an unknown hook") as err:
        get_plugin_manager(strict=True)
    assert "acme_typo" in str(err.value) and "feltlab_regster_wagers" in str(err.value)


def test_entry_point_wrapper_is_refused_naming_the_plugin(
    entry_points: Callable[..., None],
) -> None:
    entry_points(
        acme_wrap="""
        from feltlab import hookimpl

        @hookimpl(wrapper=True)
        def feltlab_round_settled(result):
            yield
        """
    )
    with pytest.raises(PluginError, match=r"'acme_wrap' implements feltlab_round_settled"):
        get_plugin_manager(strict=True)


@pytest.mark.parametrize(
    "source",
    [
        "raise RuntimeError('boom')",
        "raise SystemExit(3)",  # once: every command exited 3
        "raise KeyboardInterrupt",  # once: every command printed 'Aborted!'
        "from feltlab import hookimpl\n@hookimpl\ndef feltlab_regster_wagers(register): pass",
        "from feltlab import hookimpl\n@hookimpl\ndef feltlab_register_wagers(registry): pass",
        "from feltlab import hookimpl\n@hookimpl(wrapper=True)\ndef feltlab_round_settled(r):\n"
        "    yield",
    ],
)
def test_a_broken_installed_plugin_is_left_out_and_the_others_still_load(
    entry_points: Callable[..., None], source: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 41: one broken package gave a traceback, 'Aborted!' or exit 3 on every command,
    and the entry points after it (the rig's among them) were never loaded."""
    entry_points(
        acme_broken=source,
        acme_good="""
        from feltlab import hookimpl

        @hookimpl
        def feltlab_register_commands(cli):
            pass
        """,
    )
    with caplog.at_level("WARNING", logger="feltlab.plugin_manager"):
        pm = get_plugin_manager()
    assert pm.get_plugin("acme_broken") is None
    assert pm.get_plugin("acme_good") is not None  # loaded after the broken one
    assert "main" in collect_wagers(pm)
    warned = [r.getMessage() for r in caplog.records if "acme_broken" in r.getMessage()]
    assert len(warned) <= 1 and all("\n" not in w for w in warned)


def test_an_installed_plugin_failing_while_registering_is_left_out(
    entry_points: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    entry_points(
        acme_broken_wagers="""
        from feltlab import hookimpl

        @hookimpl
        def feltlab_register_wagers(register):
            raise RuntimeError("paytable file missing")
        """
    )
    pm = get_plugin_manager()
    with caplog.at_level("WARNING", logger="feltlab.plugin_manager"):
        wagers = collect_wagers(pm)
    assert "perfect_pairs" in wagers
    assert any(
        "'acme_broken_wagers' failed in feltlab_register_wagers" in r.getMessage()
        for r in caplog.records
    )
    with pytest.raises(PluginError, match="'acme_broken_wagers' failed"):
        collect_wagers(get_plugin_manager(strict=True))


def test_failing_strategy_registration_names_the_plugin() -> None:
    class Broken:
        @hookimpl
        def feltlab_register_tournament_strategies(
            self, register: Callable[[type[BettingStrategy]], None]
        ) -> None:
            raise RuntimeError("strategy table missing")

    pm = get_plugin_manager(entry_points=False, strict=True)
    pm.register(Broken(), name="acme_bots")
    with pytest.raises(
        PluginError, match=r"'acme_bots' failed in feltlab_register_tournament_strategies"
    ) as err:
        collect_strategies(pm)
    assert isinstance(err.value.__cause__, RuntimeError)


def test_registry_refuses_what_is_not_a_named_subclass() -> None:
    wagers = WagerRegistry()
    with pytest.raises(PluginError, match=r"register\(\) takes a WagerType subclass, got 5"):
        wagers.register(5)  # type: ignore[arg-type]

    class Nameless(WagerType):
        pass

    with pytest.raises(PluginError, match="Nameless has no name"):
        wagers.register(Nameless)
    with pytest.raises(PluginError, match="takes a BettingStrategy subclass"):
        StrategyRegistry().register(Nameless)  # type: ignore[arg-type]


def test_registry_unknown_names_raise_the_registry_error_listing_the_names() -> None:
    pm = get_plugin_manager(entry_points=False)
    with pytest.raises(WagerError, match=r"no wager type 'nope' is registered; loaded: \["):
        collect_wagers(pm)["nope"]
    with pytest.raises(TournamentError, match=r"no betting strategy 'nope' is registered"):
        collect_strategies(pm).create("nope", rng=None)  # type: ignore[arg-type]


def test_collect_fills_any_registry_through_its_hook() -> None:
    class Observed(Table):
        name = "observed"

    registry: Registry[Table] = Registry(Table, noun="table", unknown=WagerError)
    pm = _plain_manager()

    class Provider:
        @hookimpl
        def feltlab_register_wagers(self, register: Callable[[type[Table]], None]) -> None:
            register(Observed)

    pm.register(Provider(), name="acme_tables")
    assert collect(pm, "feltlab_register_wagers", registry) is registry
    assert registry.names() == ["observed"] and registry["observed"] is Observed
    assert "observed" in registry and len(registry) == 1 and list(registry) == ["observed"]
