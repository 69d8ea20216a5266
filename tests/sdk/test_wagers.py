"""Built-in wagers: classifiers on numpy batches, paytables, and live settlement."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from feltlab import Rules, ScriptedPolicy, Table, play_round
from feltlab.errors import RulesError, WagerError
from feltlab.jackpot import EMPLOYEE, FakeJackpotPanel, JackpotPanel
from feltlab.plugins.insurance import Insurance
from feltlab.plugins.madness21 import Madness21
from feltlab.plugins.main import Main
from feltlab.plugins.perfect_pairs import PerfectPairs
from feltlab.plugins.super_sevens import SuperSevens
from feltlab.shoe import FixedCards


def _batch(cards: Callable[[str], list[int]], *rows: str) -> npt.NDArray[np.uint8]:
    return np.array([cards(r) for r in rows], dtype=np.uint8)


def test_perfect_pairs_classifier_uses_the_rules_definitions(
    cards: Callable[[str], list[int]],
) -> None:
    pp = PerfectPairs()
    out = pp.classify(_batch(cards, "JH QH", "8C 8D", "8H 8D", "8S 8C", "8H 8H", "AS KS"))
    # rule 2.2 face value: J-Q no pair; 2.3 mixed (red+black), coloured (same colour,
    # different suits), perfect (same suit)
    names = [pp.paytable.outcomes[i] for i in out]
    assert names == ["lose", "mixed_pair", "coloured_pair", "coloured_pair", "perfect_pair", "lose"]


def test_perfect_pairs_counts_over_all_ordered_pairs_of_codes() -> None:
    codes = np.arange(52, dtype=np.uint8)
    grid = np.stack(np.meshgrid(codes, codes, indexing="ij"), -1).reshape(-1, 2).copy()
    counts = np.bincount(PerfectPairs().classify(grid), minlength=4)
    # per first card: 1 same card (perfect), 1 same-colour other suit, 2 other colour
    assert counts.tolist() == [2704 - 208, 104, 52, 52]


@pytest.mark.parametrize(
    ("scale", "expected"),
    [("one", [-500, 2500, 5000, 15000]), ("two", [-500, 3000, 6000, 12500])],
)
def test_perfect_pairs_pay_scales_15b_7(scale: str, expected: list[int]) -> None:
    pt = PerfectPairs(paytable=scale).paytable
    assert [pt.net(i, 500) for i in range(4)] == expected


def test_perfect_pairs_settled_at_completion_of_the_initial_deal(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    # rule 15B.6: decided before any player decision
    t = make_table(vegas, "8H 10C 8D 9S 5C", perfect_pairs={"paytable": "two"})
    play_round(
        t,
        [(0, "a", "main", 1000), (0, "a", "perfect_pairs", 500)],
        ScriptedPolicy({(0, 0): ["stand"]}),
    )
    kinds = [e.kind for e in t.log]
    settled = next(e for e in t.log if e.kind == "wager_settled")
    assert settled.data["wager"] == "perfect_pairs" and settled.data["net"] == 6000
    assert kinds.index("wager_settled") < kinds.index("decision")


def test_super_sevens_classifier_and_default_paytable(cards: Callable[[str], list[int]]) -> None:
    ss = SuperSevens()
    rows = _batch(cards, "8C 7D 7H", "7C 8D 7H", "7C 7D 2H", "7H 7H 2S", "7C 7D 7H", "7S 7S 7S")
    out = ss.classify(rows)
    assert [ss.paytable.net(int(i), 500) for i in out] == [
        -500,
        1500,  # one seven 3 to 1
        25000,  # two unsuited 50 to 1
        50000,  # two suited 100 to 1
        250000,  # three unsuited 500 to 1
        2500000,  # three suited 5000 to 1
    ]
    no_third = np.array([[cards("7C")[0], cards("7D")[0], 255]], dtype=np.uint8)
    assert ss.paytable.outcomes[ss.classify(no_third)[0]] == "two_sevens_unsuited"


def test_super_sevens_needs_six_to_eight_decks() -> None:
    with pytest.raises(RulesError, match="6 to 8 decks"):
        Table(Rules.preset("nz", decks=4), FixedCards([]), [Main(), SuperSevens()])


def test_super_sevens_decided_on_the_third_card(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(vegas, "7C 10C 7D 9S 7H")
    play_round(
        t,
        [(0, "a", "main", 1000), (0, "a", "super_sevens", 100)],
        ScriptedPolicy({(0, 0): ["hit"]}),  # 7+7+7 = 21: done
    )
    s = next(e for e in t.log if e.kind == "wager_settled" and e.data["wager"] == "super_sevens")
    assert (s.data["outcome"], s.data["net"]) == ("three_sevens_unsuited", 50000)


def test_insurance_classifier(cards: Callable[[str], list[int]]) -> None:
    out = Insurance().classify(_batch(cards, "AS KD", "AS 9D", "KD AS", "AH 10C"))
    assert out.tolist() == [1, 0, 0, 1]


def test_classifiers_reject_the_wrong_shape(cards: Callable[[str], list[int]]) -> None:
    with pytest.raises(WagerError, match=r"\(n, 3\) uint8"):
        SuperSevens().classify(_batch(cards, "7C 7D"))
    with pytest.raises(WagerError, match="no card-only classifier"):
        Main().classify(_batch(cards, "7C 7D"))


def _m21_table(
    rules: Rules, cards_text: str, cards: Callable[[str], list[int]], panel: JackpotPanel
) -> Table:
    return Table(rules, FixedCards(cards(cards_text)), [Main(), Madness21()], panel=panel)


def test_madness21_wins_the_panel_prize_even_against_a_dealer_blackjack(
    vegas: Rules, cards: Callable[[str], list[int]]
) -> None:
    # rule 15A.8: both blackjack, main stands off, Madness 21 valid; 15A.7 each winning
    # wager on the box receives the displayed prize individually, from one press
    panel = FakeJackpotPanel([(12_345, 1)], seed=1)
    t = _m21_table(vegas, "AS AD KH QC", cards, panel)
    r = play_round(
        t,
        [
            (0, "ann", "main", 1000),
            (0, "bob", "main", 1000),
            (0, "ann", "madness21", 500),
            (0, "bob", "madness21", 500),
        ],
        ScriptedPolicy({}),
    )
    assert r.find(0, "ann", "main").net == 0
    assert r.find(0, "ann", "madness21").net == 12_345
    assert r.find(0, "bob", "madness21").net == 12_345
    assert panel.presses == 1
    press = next(e for e in t.log if e.kind == "jackpot_pressed")
    assert press.data["by"] == "ann"  # the controller (rule 15A.9)


def test_madness21_presser_nominee_employee_or_refused(
    vegas: Rules, cards: Callable[[str], list[int]]
) -> None:
    bets = [(0, "ann", "main", 1000), (0, "bob", "main", 1000), (0, "bob", "madness21", 500)]
    for presser in ("bob", EMPLOYEE):
        t = _m21_table(vegas, "AS 9D KH 8C", cards, FakeJackpotPanel([(5000, 1)]))
        r = play_round(t, bets, ScriptedPolicy({}), jackpot_pressers={0: presser})
        assert r.find(0, "bob", "madness21").net == 5000
    t = _m21_table(vegas, "AS 9D KH 8C", cards, FakeJackpotPanel([(5000, 1)]))
    with pytest.raises(WagerError, match=r"15A\.9"):
        play_round(t, bets, ScriptedPolicy({}), jackpot_pressers={0: "carol"})


def test_madness21_panel_failure_pays_25_dollars_and_withdraws_the_option(
    vegas: Rules, cards: Callable[[str], list[int]]
) -> None:
    panel = FakeJackpotPanel([(5000, 1)], fail_on=[1])
    t = _m21_table(vegas, "AS 9D KH 8C 10H 10C 9D 8S", cards, panel)
    bets = [(0, "a", "main", 1000), (0, "a", "madness21", 500)]
    r = play_round(t, bets, ScriptedPolicy({}))
    s = r.find(0, "a", "madness21")
    assert (s.net, s.rule) == (2500, "16.12")
    assert any(e.kind == "device_fault" for e in t.log)
    t.begin_round()
    t.place(0, "a", "main", 1000)
    with pytest.raises(WagerError, match=r"16\.12"):
        t.place(0, "a", "madness21", 500)
    t.repair_device("jackpot_panel")
    t.place(0, "a", "madness21", 500)


def test_madness21_loses_without_a_blackjack(
    vegas: Rules, cards: Callable[[str], list[int]]
) -> None:
    t = _m21_table(vegas, "10H 10C 9D 8S", cards, FakeJackpotPanel())
    r = play_round(
        t, [(0, "a", "main", 1000), (0, "a", "madness21", 500)], ScriptedPolicy(["stand"])
    )
    assert r.find(0, "a", "madness21").net == -500


def test_describe_declares_the_wager() -> None:
    d = PerfectPairs().describe()
    assert (d["placed"], d["decided"], d["card_roles"]) == (
        "before_deal",
        "initial_deal",
        ["P1", "P2"],
    )
    assert d["paytables"][0]["outcomes"][3] == {"outcome": "perfect_pair", "pays": "30:1"}
    assert SuperSevens().describe()["decks"] == [6, 8]
