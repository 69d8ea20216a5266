"""Every hook has a test here named ``test_hook_<hookname>``, and every hook is documented in
docs/plugins.md (both enforced by the last two tests)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import click
import numpy as np
import numpy.typing as npt
import pytest

from feltlab import Rules, ScriptedPolicy, Table, hookimpl, hookspecs, play_round
from feltlab.engine import RoundResult
from feltlab.errors import PluginError
from feltlab.events import Event
from feltlab.jackpot import FakeJackpotPanel
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.plugins.madness21 import Madness21
from feltlab.plugins.main import Main
from feltlab.shoe import FixedCards
from feltlab.tournament import BettingView
from feltlab.wagers import Limits, Paytable, WagerType, as_pays

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(
    n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("feltlab_")
)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    @hookimpl
    def feltlab_table_event(self, event: Event) -> None:
        self.calls.append(("event", event.kind))

    @hookimpl
    def feltlab_round_started(self, round_no: int) -> None:
        self.calls.append(("round_started", round_no))

    @hookimpl
    def feltlab_card_dealt(self, card: int, to: str, box: int | None) -> None:
        self.calls.append(("card_dealt", card, to, box))

    @hookimpl
    def feltlab_cut_card_reached(self, round_no: int) -> None:
        self.calls.append(("cut_card_reached", round_no))

    @hookimpl
    def feltlab_shoe_shuffled(self, reason: str) -> None:
        self.calls.append(("shoe_shuffled", reason))

    @hookimpl
    def feltlab_round_settled(self, result: RoundResult) -> None:
        self.calls.append(("round_settled", result.net()))

    @hookimpl
    def feltlab_device_fault(self, device: str, message: str) -> None:
        self.calls.append(("device_fault", device))


Recorded = tuple[list[tuple[Any, ...]], Table]


@pytest.fixture
def recorded(cards: Callable[[str], list[int]]) -> Recorded:
    pm = get_plugin_manager(entry_points=False)
    rec = Recorder()
    pm.register(rec)
    rules = Rules.preset("vegas_s17")
    # player A+K blackjack v dealer 9+8; the cutting card comes out after 3 cards
    t = Table(
        rules,
        FixedCards(cards("AS 9C KD 8S"), cut_after=3),
        [Main(), Madness21()],
        panel=FakeJackpotPanel(fail_on=[1]),
        hook=pm.hook,
    )
    play_round(t, [(0, "a", "main", 1000), (0, "a", "madness21", 500)], ScriptedPolicy({}))
    return rec.calls, t


def test_hook_feltlab_table_event(recorded: Recorded) -> None:
    calls, t = recorded
    assert [c[1] for c in calls if c[0] == "event"] == [e.kind for e in t.log]


def test_hook_feltlab_round_started(recorded: Recorded) -> None:
    assert ("round_started", 1) in recorded[0]


def test_hook_feltlab_card_dealt(recorded: Recorded, cards: Callable[[str], list[int]]) -> None:
    dealt = [c[1:] for c in recorded[0] if c[0] == "card_dealt"]
    a, nine, k, eight = cards("AS 9C KD 8S")
    assert dealt == [(a, "box", 0), (nine, "dealer", None), (k, "box", 0), (eight, "dealer", None)]


def test_hook_feltlab_cut_card_reached(recorded: Recorded) -> None:
    assert ("cut_card_reached", 1) in recorded[0]


def test_hook_feltlab_shoe_shuffled(recorded: Recorded) -> None:
    assert ("shoe_shuffled", "cutting_card") in recorded[0]  # rule 5.7(b)


def test_hook_feltlab_round_settled(recorded: Recorded) -> None:
    # blackjack +1500, Madness 21 won during a panel failure: $25 (rule 16.12)
    assert ("round_settled", 1500 + 2500) in recorded[0]


def test_hook_feltlab_device_fault(recorded: Recorded) -> None:
    assert ("device_fault", "jackpot_panel") in recorded[0]


class Lucky7(WagerType):
    """A vendor's wager: the first card is a 7."""

    name = "lucky7"
    title = "Lucky 7"
    card_roles = ("P1",)
    default_limits = Limits(100, 1000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "std": Paytable("std", ("lose", "seven"), as_pays([-1, 11]))
    }

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        out: npt.NDArray[np.uint8] = ((cards[:, 0] >> 2) == 6).astype(np.uint8)
        return out


class VendorPlugin:
    @hookimpl
    def feltlab_register_wagers(self, register: Callable[[type[WagerType]], None]) -> None:
        register(Lucky7)


def test_hook_feltlab_register_wagers(cards: Callable[[str], list[int]]) -> None:
    pm = get_plugin_manager(entry_points=False)
    pm.register(VendorPlugin())
    registry = collect_wagers(pm)
    assert registry.names() == [
        "main",
        "insurance",
        "perfect_pairs",
        "super_sevens",
        "madness21",
        "lucky7",
    ]
    t = Table(
        Rules.preset("nz"), FixedCards(cards("7H 9C 5D 10S")), [Main(), registry.create("lucky7")]
    )
    r = play_round(t, [(0, "a", "main", 1000), (0, "a", "lucky7", 100)], ScriptedPolicy(["stand"]))
    assert r.find(0, "a", "lucky7").net == 1100

    class Clash:
        @hookimpl
        def feltlab_register_wagers(self, register: Callable[[type[WagerType]], None]) -> None:
            class Fake(Lucky7):
                name = "main"

            register(Fake)

    pm.register(Clash())
    with pytest.raises(PluginError, match="'main' is registered by both"):
        collect_wagers(pm)


def test_hook_feltlab_register_tournament_strategies() -> None:
    from feltlab.tournament import BettingStrategy, collect_strategies

    pm = get_plugin_manager(entry_points=False)
    assert collect_strategies(pm).names() == [
        "flat",
        "proportional",
        "martingale",
        "chaser",
        "random",
    ]

    class Timid(BettingStrategy):
        name = "timid"

        def wager(self, view: BettingView) -> int:
            return view.limits.minimum

    class Vendor:
        @hookimpl
        def feltlab_register_tournament_strategies(
            self, register: Callable[[type[BettingStrategy]], None]
        ) -> None:
            register(Timid)

    pm.register(Vendor(), name="acme_bots")
    assert "timid" in collect_strategies(pm)

    class Clash(Timid):
        name = "flat"

    class Bad:
        @hookimpl
        def feltlab_register_tournament_strategies(
            self, register: Callable[[type[BettingStrategy]], None]
        ) -> None:
            register(Clash)

    pm.register(Bad(), name="acme_clash")
    with pytest.raises(PluginError):
        collect_strategies(pm)


def test_hook_feltlab_register_panel_profiles(tmp_path: Path) -> None:
    from feltlab.math.prizes import panel_profiles

    pm = get_plugin_manager(entry_points=False)
    assert panel_profiles(pm) == {}  # the rig, an entry-point plugin, is not loaded

    class Vendor:
        @hookimpl
        def feltlab_register_panel_profiles(self, register: Callable[[str, Path], None]) -> None:
            register("acme", tmp_path / "acme.toml")

    pm.register(Vendor(), name="acme_panels")
    assert panel_profiles(pm) == {"acme": tmp_path / "acme.toml"}

    class Clash:
        @hookimpl
        def feltlab_register_panel_profiles(self, register: Callable[[str, Path], None]) -> None:
            register("acme", tmp_path / "other.toml")

    pm.register(Clash(), name="acme_clash")
    with pytest.raises(PluginError, match="registered as both"):
        panel_profiles(pm)


def test_hook_feltlab_register_commands() -> None:
    pm = get_plugin_manager(entry_points=False)

    class Commands:
        @hookimpl
        def feltlab_register_commands(self, cli: click.Group) -> None:
            cli.add_command(click.Command("hello", callback=lambda: None))

    pm.register(Commands())
    group = click.Group("feltlab")
    pm.hook.feltlab_register_commands(cli=group)
    assert "hello" in group.commands


def test_unknown_hook_fails_check_pending() -> None:
    pm = get_plugin_manager(entry_points=False)

    class Typo:
        @hookimpl
        def feltlab_regster_wagers(
            self, register: Callable[[type[WagerType]], None]
        ) -> None:  # misspelt
            pass

    pm.register(Typo())
    with pytest.raises(Exception, match="unknown hook"):
        pm.check_pending()


def test_every_hook_has_its_own_test() -> None:
    names = {n for n, f in globals().items() if callable(f) and n.startswith("test_hook_")}
    missing = [h for h in HOOKS if f"test_hook_{h}" not in names]
    assert not missing, f"add a test_hook_<name> test for {missing}"


def test_every_hook_is_documented_in_docs_plugins_md() -> None:
    doc = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `(feltlab_\w+)", doc, flags=re.M))
    assert headings == set(HOOKS), f"docs/plugins.md: document {set(HOOKS) - headings}"
    assert len(HOOKS) == 11
