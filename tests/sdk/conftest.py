"""Shared helpers for the SDK tests: cards from text, the built-in wagers, a table."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from feltlab.cards import card_code
from feltlab.engine import Table
from feltlab.jackpot import JackpotPanel
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.shoe import FixedCards
from feltlab.wagers import WagerType


def cards(text: str) -> list[int]:
    """Card codes of ``"10H 9S AD"``."""
    return [card_code(t) for t in text.split()]


def builtin_wagers(rules: Rules, **config: dict[str, object]) -> list[WagerType]:
    """An instance of every built-in wager type allowed with ``rules``."""
    registry = collect_wagers(get_plugin_manager(entry_points=False))
    out = []
    for name in registry.names():
        w = registry.create(name, **config.get(name, {}))
        if w.min_decks <= rules.decks <= w.max_decks:
            out.append(w)
    return out


def make_table(
    rules: Rules,
    deal: str | Sequence[int],
    *,
    boxes: int = 3,
    panel: JackpotPanel | None = None,
    cut_after: int | None = None,
    **config: dict[str, object],
) -> Table:
    seq = cards(deal) if isinstance(deal, str) else list(deal)
    return Table(
        rules,
        FixedCards(seq, cut_after=cut_after),
        builtin_wagers(rules, **config),
        boxes=boxes,
        panel=panel,
    )


@pytest.fixture
def vegas() -> Rules:
    return Rules.preset("vegas_s17")


@pytest.fixture
def nz() -> Rules:
    return Rules.preset("nz")


@pytest.fixture(name="make_table")
def make_table_fixture() -> Callable[..., Table]:
    """The :func:`make_table` helper: ``make_table(rules, "10H 9S ...", boxes=3, ...)``."""
    return make_table


@pytest.fixture(name="cards")
def cards_fixture() -> Callable[[str], list[int]]:
    """The :func:`cards` helper: card codes of ``"10H 9S AD"``."""
    return cards
