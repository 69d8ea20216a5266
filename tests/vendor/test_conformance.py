"""The conformance kit (feltlab.conformance), run by pytester on a good plugin and on one
deliberately broken plugin per check: each must fail that check, with a readable message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pytest import Pytester, TempPathFactory

from feltlab import native

pytest_plugins = ["pytester"]
HAS_COUNTER = hasattr(native, "simulate_counted")

GOOD = '''
from fractions import Fraction
from typing import ClassVar
import numpy as np
from feltlab import Limits, Paytable, Settlement, WagerType, hookimpl
from feltlab.wagers import as_pays


class Lucky7(WagerType):
    """The box's first card is a seven: 11 to 1 (a suited 7-7 pays 50 to 1)."""

    name = "lucky7"
    title = "Lucky 7"
    card_roles = ("P1", "P2")
    default_limits = Limits(100, 1000)
    paytables: ClassVar = {
        "std": Paytable("std", ("lose", "seven", "suited_sevens"), as_pays([-1, 11, 50])),
        "half": Paytable("half", ("lose", "seven", "suited_sevens"),
                         (Fraction(-1), Fraction(21, 2), Fraction(45))),
    }

    def classify(self, cards):
        c = self._checked(cards)
        seven = (c >> 2) == 6
        out = seven[:, 0].astype(np.uint8)
        out[seven[:, 0] & seven[:, 1] & ((c[:, 0] & 3) == (c[:, 1] & 3))] = 2
        return out


def plugin(wager_type):
    class Plugin:
        @hookimpl
        def feltlab_register_wagers(self, register):
            register(wager_type)
    return Plugin()


good = plugin(Lucky7)


class BadHooks:
    @hookimpl
    def feltlab_register_wagers(self, register):
        register(Lucky7)

    @hookimpl
    def feltlab_round_setled(self, table, result):  # misspelt
        pass


bad_hooks = BadHooks()


class FloatPays(Lucky7):
    paytables: ClassVar = {
        "std": Paytable("std", ("lose", "seven", "suited_sevens"), (Fraction(-1), 10.5, 50)),
    }


bad_paytable = plugin(FloatPays)


class WrongSettle(Lucky7):
    def settle(self, view, bet):
        out = super().settle(view, bet)
        if out is not None and out.outcome == "seven":
            return Settlement("seven", 10 * bet.amount)  # hard-coded 10 to 1, table says 11
        return out


bad_settlement = plugin(WrongSettle)


class ScratchBuffer(Lucky7):
    def classify(self, cards):
        out = super().classify(cards)
        out[10_000:] = 1  # a fixed 10,000-row scratch buffer: later rows all "win"
        return out


bad_monte_carlo = plugin(ScratchBuffer)


class AnyDecks(Lucky7):
    min_decks = 6

    def check_rules(self, rules):
        pass  # forgets to refuse 4 and 5 decks


bad_decks = plugin(AnyDecks)


class FloatMoney(Lucky7):
    def settle(self, view, bet):
        out = super().settle(view, bet)
        if out is None:
            return None
        return Settlement(out.outcome, out.net * 1.0)  # float cents


bad_money = plugin(FloatMoney)


class Mutating(Lucky7):
    def classify(self, cards):
        c = self._checked(cards)
        c >>= 0  # looks harmless ...
        c |= 0
        out = super().classify(c)
        cards[:, 1] = (cards[:, 1] + 4) % 52  # ... but writes into the caller's array
        return out


bad_determinism = plugin(Mutating)


class Overpays(Lucky7):
    paytables: ClassVar = {
        "std": Paytable("std", ("lose", "seven", "suited_sevens"), as_pays([-1, 20, 50])),
    }


bad_edge = plugin(Overpays)


class TenUp(Lucky7):
    """The box's first card is ten-valued: 11 to 5 (house edge 1/65): rich in tens at a
    high Hi-Lo count, it pays the player there."""

    paytables: ClassVar = {
        "std": Paytable("std", ("lose", "ten"), (Fraction(-1), Fraction(11, 5))),
    }

    def classify(self, cards):
        c = self._checked(cards)
        return ((c[:, 0] >> 2) >= 9).astype(np.uint8)


bad_countable = plugin(TenUp)
'''

TESTS = """
from feltlab.conformance import WagerConformance


class Base(WagerConformance):
    wager = "lucky7"
    rounds = 60_000


class TestGood(Base):
    plugin = "vendor_lucky7:good"


class TestBadHooks(Base):
    plugin = "vendor_lucky7:bad_hooks"


class TestBadPaytable(Base):
    plugin = "vendor_lucky7:bad_paytable"


class TestBadSettlement(Base):
    plugin = "vendor_lucky7:bad_settlement"


class TestBadMonteCarlo(Base):
    plugin = "vendor_lucky7:bad_monte_carlo"


class TestBadDecks(Base):
    plugin = "vendor_lucky7:bad_decks"


class TestBadMoney(Base):
    plugin = "vendor_lucky7:bad_money"


class TestBadDeterminism(Base):
    plugin = "vendor_lucky7:bad_determinism"


class TestBadEdge(Base):
    plugin = "vendor_lucky7:bad_edge"


class TestBadCountable(Base):
    plugin = "vendor_lucky7:bad_countable"
    allow_countable = False


class TestMissing(WagerConformance):
    wager = "no_such_wager"
    plugin = "vendor_lucky7:good"
"""

CHECKS = {
    "TestBadHooks": ("test_hooks_valid", ["feltlab_round_setled", "feltlab_round_settled"]),
    "TestBadPaytable": ("test_paytable_exact[std]", ["10.5", "float", "Fraction"]),
    "TestBadSettlement": (
        "test_settlement_matches_classifier[std]",
        ["settled 'seven' net 1000 cents", "net 1100 cents", "P1=7"],
    ),
    "TestBadMonteCarlo": (
        "test_house_edge_matches_monte_carlo[std]",
        ["exact house edge", "C round simulator", "batch size"],
    ),
    "TestBadDecks": ("test_deck_limits_honoured", ["accepted it with 4 decks", "RulesError"]),
    "TestBadMoney": ("test_money_integer_cents[std]", ["(float)", "must be an int of cents"]),
    "TestBadEdge": (
        "test_house_keeps_an_edge[std]",
        ["the wager pays the player on average", "allow_player_edge"],
    ),
    "TestBadDeterminism": (
        "test_deterministic_for_seed[std]",
        ["changed the array it was given"],
    ),
}
if HAS_COUNTER:
    CHECKS["TestBadCountable"] = (
        "test_protection_summary[std]",
        ["a counter beats it with hilo", "countable: +", "allow_countable is False"],
    )


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: TempPathFactory) -> Path:
    """Run the kit once over every class above (in process) and collect each test's
    outcome and message."""
    pytester_dir = tmp_path_factory.mktemp("kit")
    (pytester_dir / "vendor_lucky7.py").write_text(textwrap.dedent(GOOD))
    (pytester_dir / "test_vendor.py").write_text(textwrap.dedent(TESTS))
    return pytester_dir


def _run(pytester: Pytester, kit_dir: Path) -> dict[tuple[str, str], tuple[str, str]]:
    for f in kit_dir.iterdir():
        (pytester.path / f.name).write_text(f.read_text())
    pytester.syspathinsert()
    rec = pytester.inline_run("-p", "no:cacheprovider", "-q")
    reports: dict[tuple[str, str], tuple[str, str]] = {}
    for rep in rec.getreports("pytest_runtest_logreport"):
        if rep.when == "call" or rep.outcome != "passed":
            cls, _, name = rep.nodeid.split("::", 1)[1].partition("::")
            reports[(cls, name)] = (rep.outcome, rep.longreprtext)
    return reports


def test_kit_passes_a_good_plugin_and_fails_each_broken_one_readably(
    pytester: Pytester, outcomes: Path
) -> None:
    reports = _run(pytester, outcomes)
    good = {k: v for k, v in reports.items() if k[0] == "TestGood"}
    assert len(good) == 16, sorted(good)  # 3 checks + 6 checks x 2 paytables + 1
    failed = {
        k: v[1]
        for k, v in good.items()
        if v[0] != "passed" and (HAS_COUNTER or not k[1].startswith("test_protection_summary"))
    }
    assert not failed, failed
    for cls, (check, needles) in CHECKS.items():
        outcome, text = reports[(cls, check)]
        assert outcome == "failed", (cls, check, text)
        for needle in needles:
            assert needle in text, (cls, check, needle, text)
        assert "Traceback" not in text and "During handling" not in text, text
        assert len(text) < 1200, text  # one readable paragraph
        base = check.partition("[")[0]
        others = [
            k[1]
            for k, v in reports.items()
            if k[0] == cls and not k[1].startswith(base) and v[0] == "failed"
        ]
        assert not others, f"{cls} should fail only {check}, also failed {others}"
    outcome, text = reports[("TestMissing", "test_hooks_valid")]
    assert outcome == "failed" and "no wager 'no_such_wager' is registered" in text


def test_kit_marks_and_parametrises_its_checks(pytester: Pytester, outcomes: Path) -> None:
    for f in outcomes.iterdir():
        (pytester.path / f.name).write_text(f.read_text())
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess(
        "--collect-only", "-q", "-m", "feltlab_conformance", "-k", "TestGood"
    )
    out = result.stdout.str()
    assert "TestGood::test_house_edge_matches_monte_carlo[std]" in out
    assert "TestGood::test_house_edge_matches_monte_carlo[half]" in out
    assert "16 tests collected" in out or "16/" in out
    assert "TestGood::test_protection_summary[half]" in out
