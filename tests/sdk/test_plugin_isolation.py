"""A third-party plugin that raises in a hook is reported by name and corrupts nothing."""

import logging
from collections.abc import Callable
from typing import Any

import pytest
from pytest import LogCaptureFixture

from feltlab import hookimpl, native
from feltlab.engine import RoundResult, Table, play_round
from feltlab.errors import PluginError
from feltlab.math.strategy_tables import TablePolicy, strategy_tables
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.plugins.main import Main
from feltlab.rules import Rules
from feltlab.shoe import Shoe
from feltlab.wagers import WagerType


class Exploding:
    """Raises in two observer hooks."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def feltlab_card_dealt(self, table: Table, card: int, to: str, box: int | None) -> None:
        self.calls += 1
        raise RuntimeError("boom in card_dealt")

    @hookimpl
    def feltlab_round_settled(self, table: Table, result: RoundResult) -> None:
        raise ValueError("boom in round_settled")


class Counting:
    def __init__(self) -> None:
        self.cards = 0

    @hookimpl
    def feltlab_card_dealt(self, table: Table, card: int, to: str, box: int | None) -> None:
        self.cards += 1


def _rounds(hook: Any, n: int = 30) -> tuple[Table, list[int]]:
    rules = Rules.preset("nz")
    table = Table(rules, Shoe(rules, native.Xoshiro256StarStar(4)), [Main()], boxes=1, hook=hook)
    policy = TablePolicy(strategy_tables(rules))
    nets = [play_round(table, [(0, "p", "main", 1000)], policy).net() for _ in range(n)]
    return table, nets


def test_observer_exception_is_reported_and_the_round_is_intact(caplog: LogCaptureFixture) -> None:
    pm = get_plugin_manager(entry_points=False)
    bad, good = Exploding(), Counting()
    pm.register(bad, name="acme_exploding")
    pm.register(good, name="acme_counting")
    with caplog.at_level(logging.ERROR, logger="feltlab.plugin_manager"):
        table, nets = _rounds(pm.hook)
    _, clean = _rounds(None)
    assert nets == clean  # the same rounds, to the cent, as with no plugin at all
    assert good.cards == bad.calls > 0  # the other observer saw every card
    failures = table.plugin_failures
    assert {f.plugin for f in failures} == {"acme_exploding"}
    assert {f.hook for f in failures} == {"feltlab_card_dealt", "feltlab_round_settled"}
    assert "acme_exploding" in caplog.text and "boom in card_dealt" in caplog.text


def test_failing_wager_registration_names_the_plugin() -> None:
    class BadRegistrar:
        @hookimpl
        def feltlab_register_wagers(self, register: Callable[[type[WagerType]], None]) -> None:
            raise KeyError("no such paytable")

    pm = get_plugin_manager(entry_points=False)
    pm.register(BadRegistrar(), name="acme_bad_wagers")
    with pytest.raises(PluginError, match=r"acme_bad_wagers.*feltlab_register_wagers"):
        collect_wagers(pm)
