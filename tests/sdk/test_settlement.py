"""The main wager settles exactly as rule 5.1 (a)-(g) and rule 5.4 say: one hand-checked
round per subparagraph, played through the engine from a fixed card sequence.

Deal order (peek, vegas_s17): box 0, box 1, ..., dealer up, box 0, box 1, ..., dealer hole,
then the players' draws in box order, then the dealer's draws.  Under no-hole-card (nz) the
dealer's second card comes after the players' draws.  Main wagers are $10 (1000 cents).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from feltlab import DealerBlackjackTakes, Rules, ScriptedPolicy, play_round
from feltlab.engine import RoundResult, Table
from feltlab.errors import SettlementError
from feltlab.settlement import HandSettlement
from feltlab.wagers import Settlement

_make_table: Callable[..., Table]


@pytest.fixture(autouse=True)
def _helpers(make_table: Callable[..., Table]) -> None:
    global _make_table
    _make_table = make_table


def _play(rules: Rules, deal: str, boxes: int, script: Any, **kw: Any) -> RoundResult:
    table = _make_table(rules, deal, **kw)
    bets = [(b, f"p{b}", "main", 1000) for b in range(boxes)]
    return play_round(table, bets, ScriptedPolicy(script))


def test_5_1_a_player_21_or_less_wins_when_dealer_exceeds_21(vegas: Rules) -> None:
    # player 10+8 = 18 stands; dealer 6+10 = 16 draws 6 -> 22: win 1 to 1 (rule 5.4)
    r = _play(vegas, "10H 6C 8D 10S 6D", 1, {(0, 0): ["stand"]})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net, s.rule) == ("win", 1000, "5.1(a)")


def test_5_1_b_higher_total_wins(vegas: Rules) -> None:
    # player 10+9 = 19, dealer 10+8 = 18
    r = _play(vegas, "10H 10C 9D 8S", 1, {(0, 0): ["stand"]})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net, s.rule) == ("win", 1000, "5.1(b)")


def test_5_1_c_blackjack_beats_a_dealer_21_of_three_cards_and_pays_3_to_2(vegas: Rules) -> None:
    # box 0: A+K blackjack; box 1: 10+7 stands so the dealer plays: 7+4, draws 10 -> 21
    r = _play(vegas, "AS 10H 7C KD 7H 4S 10C", 2, {(1, 0): ["stand"]})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net, s.rule) == ("blackjack", 1500, "5.1(c)")  # 3 to 2, rule 5.4
    assert r.find(1, "p1", "main").rule == "5.1(g)"


def test_5_1_d_dealer_blackjack_beats_a_three_card_21(nz: Rules) -> None:
    # no hole card: player 5+6, hits 10 -> 21 in 3 cards; dealer A, then K: blackjack
    r = _play(nz, "5H AS 6D 10C KD", 1, {(0, 0): ["hit"]})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net) == ("lose", -1000)
    assert s.rule == "5.1(d)"


def test_5_1_d_dealer_blackjack_beats_a_two_card_21_on_a_split_hand(nz: Rules) -> None:
    # A,A split (one card each): A+K = 21 on a split hand is no blackjack; dealer 10 then A.
    # Rules.dealer_blackjack_takes = all, so rule 5.1(d) alone decides both hands.
    rules = nz.replace(dealer_blackjack_takes=DealerBlackjackTakes.ALL)
    r = _play(rules, "AH 10S AD KC QC AC", 1, {(0, 0): ["split"]})
    s = r.find(0, "p0", "main")
    assert [d.rule for d in s.detail] == ["5.1(d)", "5.1(d)"]
    assert s.net == -2000


def test_5_1_e_equal_totals_stand_off(vegas: Rules) -> None:
    r = _play(vegas, "10H 10C 8D 8S", 1, {(0, 0): ["stand"]})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net, s.rule) == ("stand_off", 0, "5.1(e)")


def test_5_1_e_both_blackjack_stand_off(vegas: Rules) -> None:
    # peek: dealer A up with Q in the hole; insurance offered and declined
    r = _play(vegas, "AS AD KH QC", 1, {})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net, s.rule) == ("stand_off", 0, "5.1(e)")


def test_5_1_f_player_over_21_loses_even_when_the_dealer_busts_too(vegas: Rules) -> None:
    # box 0: 10+6 hits 10 -> 26; box 1: 10+7 stands; dealer 10+6 draws 10 -> 26
    r = _play(vegas, "10H 10D 10S 6C 7C 6S 10C 10D", 2, {(0, 0): ["hit"], (1, 0): ["stand"]})
    s0, s1 = r.find(0, "p0", "main"), r.find(1, "p1", "main")
    assert (s0.outcome, s0.net, s0.rule) == ("lose", -1000, "5.1(f)")
    assert (s1.outcome, s1.net, s1.rule) == ("win", 1000, "5.1(a)")


def test_5_1_g_dealer_higher_total_wins(vegas: Rules) -> None:
    r = _play(vegas, "10H 10C 7D 9S", 1, {(0, 0): ["stand"]})
    s = r.find(0, "p0", "main")
    assert (s.outcome, s.net, s.rule) == ("lose", -1000, "5.1(g)")


def test_5_4_a_split_ace_with_ten_is_21_paid_1_to_1_not_3_to_2(vegas: Rules) -> None:
    # A,A split, one card each: A+K, A+Q; dealer 10+10 = 20: two wins at 1 to 1
    r = _play(vegas, "AH 10S AD 10C KC QD", 1, {(0, 0): ["split"]})
    s = r.find(0, "p0", "main")
    assert [(d.outcome, d.net, d.rule) for d in s.detail] == [
        ("win", 1000, "5.1(b)"),
        ("win", 1000, "5.1(b)"),
    ]


def test_5_4_blackjack_odds_round_down_to_the_cent() -> None:
    # 6 to 5 (house setting under rule 10.3) on $10.01 is 1201.2 cents -> 1201
    rules = Rules.preset("vegas_s17", blackjack_pays="6:5", wager_unit=1)
    r = _play(rules, "AS 9C KD 8S", 1, {})
    assert r.find(0, "p0", "main").net == 1000 * 6 // 5
    table = _make_table(rules, "AS 9C KD 8S")
    res = play_round(table, [(0, "x", "main", 1001)], ScriptedPolicy({}))
    assert res.find(0, "x", "main").net == 1201


def test_no_hole_card_dealer_blackjack_takes_only_the_original_wager_of_a_double(nz: Rules) -> None:
    # player 5+6 doubles, draws 9 -> 20; dealer 10 then A: blackjack. Original only: -$10
    r = _play(nz, "5H 10S 6D 9C AD", 1, {(0, 0): ["double"]})
    assert r.find(0, "p0", "main").net == -1000
    rules = nz.replace(dealer_blackjack_takes=DealerBlackjackTakes.ALL)
    assert _play(rules, "5H 10S 6D 9C AD", 1, {(0, 0): ["double"]}).net() == -2000


def test_no_hole_card_dealer_blackjack_and_busted_split_hands(nz: Rules) -> None:
    # 8,8 split: hand 0 8+10 = 18 stands; hand 1 8+5 hits 10 -> 23 busted; dealer 10 then A
    deal = "8H 10S 8D 10C 5C 10D AD"
    script = {(0, 0): ["split", "stand"], (0, 1): ["hit"]}
    original = _play(nz, deal, 1, script)
    assert [d.net for d in original.find(0, "p0", "main").detail] == [-1000, 0]
    rules = nz.replace(dealer_blackjack_takes=DealerBlackjackTakes.ORIGINAL_AND_BUSTED)
    busted = _play(rules, deal, 1, script)
    assert [d.net for d in busted.find(0, "p0", "main").detail] == [-1000, -1000]


def test_settlement_detail_is_a_record_of_each_hand_in_cents(nz: Rules) -> None:
    # the 8,8 split of the test above, dealer blackjack taking the original wager only: the
    # record, its JSON form in the event log, and the summed net agree hand by hand
    deal = "8H 10S 8D 10C 5C 10D AD"
    r = _play(nz, deal, 1, {(0, 0): ["split", "stand"], (0, 1): ["hit"]})
    s = r.find(0, "p0", "main")
    assert s.detail == (
        HandSettlement(0, "lose", "5.1(g)", 1000, -1000),
        HandSettlement(
            1, "lose", "5.1(f), wager returned: dealer blackjack takes the original wager only",
            1000, 0,
        ),
    )  # fmt: skip
    assert s.detail[0].as_dict() == {
        "hand": 0, "outcome": "lose", "rule": "5.1(g)", "stake": 1000, "net": -1000,
    }  # fmt: skip
    assert s.net == sum(d.net for d in s.detail) == -1000


def test_dict_detail_of_a_vendor_plugin_still_works_for_one_release() -> None:
    # the 0.1 contract: detail as dicts, read as d["net"]; both warn and keep working
    legacy = {"hand": 0, "outcome": "win", "rule": "5.1(b)", "stake": 1000, "net": 1000}
    with pytest.warns(DeprecationWarning, match="HandSettlement records"):
        s = Settlement("win", 1000, "5.1(b)", (legacy,))  # type: ignore[arg-type]
    assert s.detail == (HandSettlement(0, "win", "5.1(b)", 1000, 1000),)
    with pytest.warns(DeprecationWarning, match=r'HandSettlement\["net"\] is deprecated'):
        assert s.detail[0]["net"] == 1000
    with pytest.raises(KeyError):
        s.detail[0]["payout"]
    with pytest.raises(TypeError, match=r"give feltlab\.settlement\.HandSettlement records"):
        Settlement("win", 1000, "5.1(b)", ({"net": 1000},))  # type: ignore[arg-type]


def test_detail_is_kept_whole_and_its_cents_never_rounded() -> None:
    """Found by a breaker: a generator lost its first hand (read twice), 1499.99 cents became
    1499, a dict with an extra key of 0.1 was refused; now every hand is kept, cents must be
    whole, and extra keys are left out with a warning that names them."""
    hands = [HandSettlement(i, "win", "5.1(b)", 1000, 1000) for i in range(3)]
    assert Settlement("win", 3000, "5.1(b)", (h for h in hands)).detail == tuple(hands)  # type: ignore[arg-type]
    legacy = {"hand": 0, "outcome": "win", "rule": "5.1(b)", "stake": 1000, "net": 1000}
    with pytest.warns(DeprecationWarning) as caught:
        s = Settlement("win", 1000, "5.1(b)", ({**legacy, "note": "x"},))  # type: ignore[arg-type]
    said = [str(w.message) for w in caught]
    assert any("keys note are left out" in m for m in said)
    assert any("detail as dicts is deprecated" in m for m in said)
    assert s.detail == (hands[0],)
    for field, bad in [("net", 1499.99), ("net", "1500"), ("stake", True), ("hand", 0.9)]:
        with pytest.raises(SettlementError, match=f"HandSettlement's {field} is"):
            Settlement("win", 1000, "5.1(b)", ({**legacy, field: bad},))  # type: ignore[arg-type]
    with pytest.raises(SettlementError, match="cannot be negative"):
        HandSettlement(0, "lose", "5.1(g)", -5, -5)
    with pytest.raises(SettlementError, match="lacks net, stake"):
        HandSettlement.of({"hand": 0, "outcome": "win", "rule": "5.1(b)"})
