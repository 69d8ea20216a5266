"""The round engine: deal order, decisions, players per box, insurance, shoe handling,
irregularities (rules 16.3, 16.5, 16.10), event log and replay."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from feltlab import Decision, Phase, Rules, ScriptedPolicy, Table, play_round
from feltlab.engine.replay import replay_round
from feltlab.errors import (
    IllegalDecisionError,
    ReplayError,
    RoundStateError,
    RulesError,
    ShoeError,
    WagerError,
)
from feltlab.events import read_jsonl
from feltlab.native import ChaCha20
from feltlab.shoe import ContinuousShuffler, Shoe


def _dealt(table: Table) -> list[tuple[str, int | None]]:
    return [(e.data["to"], e.data.get("box")) for e in table.log if e.kind == "card_dealt"]


def test_peek_deal_order_is_boxes_dealer_boxes_hole_card(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(vegas, "2C 3C 4C 5C 6C 7C")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.place(2, "c", "main", 1000)  # box 1 empty: skipped
    t.deal()
    assert _dealt(t) == [
        ("box", 0),
        ("box", 2),
        ("dealer", None),
        ("box", 0),
        ("box", 2),
        ("dealer", None),
    ]
    assert t.phase is Phase.PLAYING and t.current == (0, 0)


def test_no_hole_card_dealer_gets_one_card_in_the_initial_deal(
    nz: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(nz, "2C 3C 4C 5C 6C")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.place(1, "b", "main", 1000)
    t.deal()
    assert _dealt(t) == [("box", 0), ("box", 1), ("dealer", None), ("box", 0), ("box", 1)]


def test_illegal_decisions_name_the_legal_ones(
    nz: Rules, make_table: Callable[..., Table], cards: Callable[[str], list[int]]
) -> None:
    # A+6 soft 17: nz doubles hard totals only
    t = make_table(nz, "AH 9C 6D 10S")
    with pytest.raises(RoundStateError, match="phase playing"):
        t.decide("hit")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal()
    assert t.legal_decisions() == {Decision.HIT, Decision.STAND}
    with pytest.raises(IllegalDecisionError, match="legal now: hit, stand"):
        t.decide("double")
    with pytest.raises(IllegalDecisionError, match="not a decision"):
        t.decide("fold")
    with pytest.raises(IllegalDecisionError, match="surrender is not allowed"):
        t.decide("surrender")  # the nz preset offers no surrender
    t.decide("hit")  # A+6+10 = hard 17
    with pytest.raises(IllegalDecisionError, match="double is not allowed"):
        t.decide("double")


def test_split_limit_and_one_card_to_split_aces(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    # vegas: split to 4 hands, no resplit of aces; A,A split gets one card each
    t = make_table(vegas, "AH 9C AD 10S AC 5D")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal()
    t.decide("split")
    # hand 0 received AC: a pair of aces again, but resplitting aces is not allowed
    assert t.phase is Phase.DEALER
    hands = [h.cards for h in t.boxes[0].hands]
    assert len(hands) == 2 and all(len(h) == 2 for h in hands)


def test_max_split_hands_is_enforced(nz: Rules, make_table: Callable[..., Table]) -> None:
    # nz: three hands at most.  8,8 -> split; hand 0 gets 8 -> split; hand 0 gets 8 again
    t = make_table(nz, "8H 9C 8D 8S 8C 2D")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal()
    t.decide("split")
    t.decide("split")
    assert len(t.boxes[0].hands) == 3
    with pytest.raises(IllegalDecisionError, match="split is not allowed"):
        t.decide("split")


def test_several_players_on_a_box_follow_the_controller(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    # ann controls box 0 (first main wager), bob backs it; 5+6 doubles, draws 10: 21 v 20
    t = make_table(vegas, "5H 10C 6D QS 10D")
    r = play_round(
        t,
        [(0, "ann", "main", 1000), (0, "bob", "main", 2000)],
        ScriptedPolicy({(0, 0): ["double"]}),
    )
    assert t.boxes[0].controller == "ann"
    assert [e.data["by"] for e in t.log if e.kind == "decision"] == ["ann"]
    assert (r.net("ann"), r.net("bob")) == (2000, 4000)


def test_wagers_are_checked_against_the_limits_and_phase(
    nz: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(nz, "5H 10C 6D QS 10D")
    t.begin_round()
    with pytest.raises(WagerError, match=r"outside the table limits 1000\.\.500000"):
        t.place(0, "a", "main", 500)
    with pytest.raises(WagerError, match=r"needs 'a''s main wager.*15B.2"):
        t.place(0, "a", "perfect_pairs", 500)
    with pytest.raises(WagerError, match="not offered"):
        t.place(0, "a", "keno", 500)
    t.place(0, "a", "main", 1000)
    with pytest.raises(WagerError, match="already has"):
        t.place(0, "a", "main", 1000)
    t.deal()
    with pytest.raises(RoundStateError, match="phase betting"):
        t.place(0, "a", "perfect_pairs", 500)  # rule 15B.3: before any card is dealt


def test_insurance_pays_2_to_1_on_a_dealer_blackjack(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(vegas, "10H AS 9D KC")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal()
    assert t.phase is Phase.INSURANCE
    with pytest.raises(WagerError, match="exceeds half the main wager"):
        t.place(0, "a", "insurance", 600)
    t.place(0, "a", "insurance", 500)
    t.close_insurance()
    r = t.settle()
    assert r.find(0, "a", "insurance").net == 1000
    assert r.find(0, "a", "main").net == -1000  # rule 5.1(g)
    assert r.net("a") == 0


def test_cut_card_means_a_shuffle_after_the_round(
    nz: Rules, make_table: Callable[..., Table]
) -> None:
    # rule 5.7(b): the cutting card comes out after the 3rd card; the round completes first
    t = make_table(nz, "10H 6C 8D 5S 10S 9C 7D 9H", cut_after=3)
    play_round(t, [(0, "a", "main", 1000)], ScriptedPolicy({(0, 0): ["stand"]}))
    kinds = [e.kind for e in t.log]
    assert kinds.index("cut_card_reached") < kinds.index("round_settled")
    last = t.log.events[-1]
    assert (last.kind, last.data["reason"], last.data["rule"]) == (
        "shoe_shuffled",
        "cutting_card",
        "5.7(b)",
    )


def test_shoe_shuffles_after_the_round_that_reached_the_cutting_card() -> None:
    rules = Rules.preset("nz", decks=4, cut_card_from_back=104)  # 104 cards behind the card
    shoe = Shoe(rules, ChaCha20(7))
    from feltlab.plugins.main import Main

    t = Table(rules, shoe, [Main()], boxes=3)
    from feltlab.math.strategy import BasicStrategy

    rounds_to_cut = None
    for i in range(60):
        play_round(t, [(b, "p", "main", 1000) for b in range(3)], BasicStrategy(rules))
        if any(e.kind == "cut_card_reached" for e in t.log.round_events(t.round_no)):
            rounds_to_cut = i
            break
    assert rounds_to_cut is not None
    assert t.log.events[-1].data["reason"] == "cutting_card"
    assert shoe.remaining == 208 and not shoe.needs_shuffle  # a fresh shoe


def test_missing_cutting_card_reshuffles_at_the_end_of_the_round(
    nz: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(nz, "10H 6C 8D 5S 10S 9C 7D 9H")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal()
    t.report_missing_cutting_card()  # rule 16.10
    t.decide("stand")
    t.play_dealer()
    t.settle()
    last = t.log.events[-1]
    assert (last.kind, last.data["reason"], last.data["rule"]) == (
        "shoe_shuffled",
        "missing_cutting_card",
        "16.10",
    )


def test_continuous_shuffler_returns_the_cards_and_refuses_rule_16_10() -> None:
    with pytest.raises(RulesError, match="continuous"):
        Shoe(Rules.preset("nz", shuffler="continuous", cutting_cards=0), ChaCha20(1))
    rules = Rules.preset("nz", shuffler="continuous", cutting_cards=0)
    csm = ContinuousShuffler(rules, ChaCha20(1))
    from feltlab.math.strategy import BasicStrategy
    from feltlab.plugins.main import Main

    t = Table(rules, csm, [Main()])
    play_round(t, [(0, "a", "main", 1000)], BasicStrategy(rules))
    assert len(csm._pool) == 312  # every card back in the machine
    t.begin_round()
    with pytest.raises(ShoeError, match=r"16\.10 does not apply"):
        t.report_missing_cutting_card()


def test_rule_16_3_card_exposed_to_the_completed_dealer_hand_is_removed(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(vegas, "10H 10C 9D 8S KD")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal()
    t.decide("stand")
    t.play_dealer()
    with pytest.raises(RoundStateError):
        t.decide("hit")
    card = t.remove_exposed_card()
    assert t.log.events[-1].kind == "card_removed" and t.log.events[-1].data["rule"] == "16.3"
    r = t.settle()
    assert card not in r.dealer_cards and r.find(0, "a", "main").net == 1000  # 19 v 18


def test_rule_16_5_reconstruction_gives_the_round_it_should_have_had(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    deal = "10H 9C 10C 8D 7S 8S"  # box0 10, box1 9, dealer 10, box0 8, box1 7, hole 8
    script = ScriptedPolicy({(0, 0): ["stand"], (1, 0): ["stand"]})
    clean = play_round(
        make_table(vegas, deal), [(0, "a", "main", 1000), (1, "b", "main", 1000)], script
    )

    t = make_table(vegas, deal)
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.place(1, "b", "main", 1000)
    t.deal_step()
    t.deal_step()
    t.misdeal(to=1)  # the dealer's up card went to box 1 in error
    assert t.phase is Phase.MISDEALT
    with pytest.raises(RoundStateError):
        t.deal_step()
    t.reconstruct()
    t.deal()
    t.decide("stand")
    t.decide("stand")
    t.play_dealer()
    fixed = t.settle()
    assert [(b, s.net) for b, s in fixed.settlements] == [(b, s.net) for b, s in clean.settlements]
    assert fixed.dealer_cards == clean.dealer_cards


def test_rule_16_5_void_a_hand_returns_its_wagers_others_stand(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    t = make_table(vegas, "10H 9C 10C 8D 7S 8S 9S")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.place(0, "a", "perfect_pairs", 500)
    t.place(1, "b", "main", 1000)
    t.deal_step()
    t.misdeal(to=0)  # box 1's card landed on box 0
    t.void_box(0)
    t.deal()
    while t.phase is Phase.PLAYING:
        t.decide("stand")
    t.play_dealer()
    r = t.settle()
    assert {(b.wager, s.outcome, s.net) for b, s in r.settlements if b.box == 0} == {
        ("main", "void", 0),
        ("perfect_pairs", "void", 0),
    }
    assert r.find(1, "b", "main").outcome in ("win", "lose", "stand_off")


def test_rule_16_5_void_the_round(vegas: Rules, make_table: Callable[..., Table]) -> None:
    t = make_table(vegas, "10H 9C 10C")
    t.begin_round()
    t.place(0, "a", "main", 1000)
    t.deal_step()
    t.misdeal(to=None)
    r = t.void_round()
    assert r.void and r.net() == 0 and t.phase is Phase.IDLE


def test_event_log_replays_a_round_to_the_identical_outcome(
    vegas: Rules, make_table: Callable[..., Table]
) -> None:
    deal = "8H 7S 8D 10C 10D 5C 3H 2S"  # split 8s v 17: 18 stands, 8+5 hits 3
    t = make_table(vegas, deal)
    script = ScriptedPolicy({(0, 0): ["split", "stand"], (0, 1): ["hit", "stand"]})
    r = play_round(t, [(0, "a", "main", 1000), (0, "a", "perfect_pairs", 500)], script)
    assert r.find(0, "a", "main").net == 0  # 18 v 17 wins, 16 v 17 loses
    lines = t.log.to_jsonl()
    again, events = replay_round(lines, vegas, list(t.wagers.values()), boxes=3)
    assert again == r
    assert [e.to_json() for e in events] == lines.splitlines()
    tampered = lines.replace('"decision":"stand"', '"decision":"hit"', 1)
    with pytest.raises((ReplayError, IllegalDecisionError, ShoeError)):
        replay_round(tampered, vegas, list(t.wagers.values()), boxes=3)


def test_replay_rejects_a_multi_round_log(vegas: Rules, make_table: Callable[..., Table]) -> None:
    t = make_table(vegas, "10H 10C 9D 8S 10H 10C 9D 8S")
    for _ in range(2):
        play_round(t, [(0, "a", "main", 1000)], ScriptedPolicy({(0, 0): ["stand"]}))
    with pytest.raises(ReplayError, match="one round"):
        replay_round(t.log.to_jsonl(), vegas, list(t.wagers.values()))
    one = t.log.to_jsonl(t.log.round_events(2))
    assert replay_round(one, vegas, list(t.wagers.values()), boxes=3)[0].round == 2
    assert read_jsonl(one)[0].kind == "round_started"


def test_same_seed_same_events(nz: Rules) -> None:
    from feltlab.math.strategy import BasicStrategy
    from feltlab.plugins.main import Main

    def run(seed: int) -> str:
        t = Table(nz, Shoe(nz, ChaCha20(seed)), [Main()])
        for _ in range(5):
            play_round(t, [(0, "a", "main", 1000), (1, "b", "main", 1000)], BasicStrategy(nz))
        return t.log.to_jsonl()

    assert run(3) == run(3)
    assert run(3) != run(4)
