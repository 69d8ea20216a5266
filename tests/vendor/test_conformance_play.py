"""The conformance kit on play-decided wagers (round_fields, classify_round), run by
pytester on a good plugin and on broken ones: each fails its check with a readable message,
never an internal error (a wager with neither card_roles nor round_fields used to fail with
"exact enumeration handles 1 to 4 cards, got 0")."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pytest import Pytester, TempPathFactory

pytest_plugins = ["pytester"]

PLUGINS = '''
from typing import ClassVar
import numpy as np
from feltlab import Decided, Limits, Paytable, Settlement, WagerType, hookimpl
from feltlab.wagers import as_pays


class Busts(WagerType):
    """The dealer busts: 2 to 1, 6 to 1 with five cards or more (the dealer plays out)."""

    name = "busts"
    title = "Busts"
    decided = Decided.ROUND_END
    round_fields = ("dealer_bust", "dealer_n_cards")
    dealer_plays_out = True
    default_limits = Limits(100, 1000)
    paytables: ClassVar = {
        "std": Paytable("std", ("lose", "bust", "big_bust"), as_pays([-1, 2, 6]), "test"),
    }

    def classify_round(self, records):
        r = self._checked_record(records)
        bust = r["dealer_bust"].astype(bool)
        out = bust.astype(np.uint8)
        out[bust & (r["dealer_n_cards"] >= 5)] = 2
        return out


def plugin(wager_type):
    class Plugin:
        @hookimpl
        def feltlab_register_wagers(self, register):
            register(wager_type)
    return Plugin()


good = plugin(Busts)


class NoInputs(Busts):
    round_fields = ()

    def settle(self, view, bet):
        return Settlement("lose", -bet.amount)


no_inputs = plugin(NoInputs)


class WrongSettle(Busts):
    def settle(self, view, bet):
        out = super().settle(view, bet)
        if out is not None and out.outcome == "big_bust":
            return Settlement("big_bust", 5 * bet.amount)  # the paytable says 6 to 1
        return out


bad_settlement = plugin(WrongSettle)


class ReadsUndeclared(Busts):
    def classify_round(self, records):
        out = super().classify_round(records)
        out[records["dealer_cards"][:, 1] == 255] = 0  # a field it does not declare
        return out


bad_monte_carlo = plugin(ReadsUndeclared)


class Overpays(Busts):
    paytables: ClassVar = {
        "std": Paytable("std", ("lose", "bust", "big_bust"), as_pays([-1, 3, 6]), "test"),
    }


bad_edge = plugin(Overpays)
'''

TESTS = """
from feltlab.conformance import WagerConformance


class Base(WagerConformance):
    wager = "busts"
    rounds = 200_000


class TestGood(Base):
    plugin = "vendor_busts:good"


class TestNoInputs(Base):
    plugin = "vendor_busts:no_inputs"


class TestBadSettlement(Base):
    plugin = "vendor_busts:bad_settlement"


class TestBadMonteCarlo(Base):
    plugin = "vendor_busts:bad_monte_carlo"


class TestBadEdge(Base):
    plugin = "vendor_busts:bad_edge"
"""

CHECKS = {
    "TestNoInputs": ("test_hooks_valid", ["declares neither card_roles nor round_fields"]),
    "TestBadSettlement": (
        "test_settlement_matches_classifier[std]",
        ["settled 'big_bust' net 500", "net 600", "classify_round()", "dealer"],
    ),
    "TestBadMonteCarlo": (
        "test_house_edge_matches_monte_carlo[std]",
        ["exact house edge", "C round simulator", "round_fields"],
    ),
    "TestBadEdge": ("test_house_keeps_an_edge[std]", ["pays the player on average"]),
}


@pytest.fixture(scope="module")
def kit(tmp_path_factory: TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("kit_play")
    (d / "vendor_busts.py").write_text(textwrap.dedent(PLUGINS))
    (d / "test_vendor_busts.py").write_text(textwrap.dedent(TESTS))
    return d


def test_kit_checks_play_decided_wagers_readably(pytester: Pytester, kit: Path) -> None:
    for f in kit.iterdir():
        (pytester.path / f.name).write_text(f.read_text())
    pytester.syspathinsert()
    rec = pytester.inline_run("-p", "no:cacheprovider", "-q")
    reports: dict[tuple[str, str], tuple[str, str]] = {}
    for rep in rec.getreports("pytest_runtest_logreport"):
        if rep.when == "call" or rep.outcome != "passed":
            cls, _, name = rep.nodeid.split("::", 1)[1].partition("::")
            reports[(cls, name)] = (rep.outcome, rep.longreprtext)
    good = {k: v for k, v in reports.items() if k[0] == "TestGood"}
    assert len(good) == 9, sorted(good)  # the 9 checks, one paytable
    assert all(v[0] == "passed" for v in good.values()), good
    for cls, (check, needles) in CHECKS.items():
        outcome, text = reports[(cls, check)]
        assert outcome == "failed", (cls, check, text)
        for needle in needles:
            assert needle in text, (cls, check, needle, text)
        assert len(text) < 1200, text
    for (cls, name), (_outcome, text) in reports.items():  # never an internal error
        assert "Traceback" not in text and "exact enumeration handles" not in text, (cls, name)
    # a wrong settlement shows at every stake, so the money check (sessions at other stakes)
    # names it too; nothing else fails
    failed = sorted(
        k[1] for k, v in reports.items() if k[0] == "TestBadSettlement" and v[0] == "failed"
    )
    assert failed == ["test_money_integer_cents[std]", "test_settlement_matches_classifier[std]"]
