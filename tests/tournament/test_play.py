"""Rules for tournament play, Division XI rules 5.2-5.10 and 2.4(b)."""

from __future__ import annotations

import pytest

from feltlab.tournament import SessionTable, TournamentError, TournamentWagerError

from .conftest import Stacked, definition, lose, one_shoe, played, session, win


def wager_order(st: SessionTable, rnd: int) -> list[str]:
    return [e.data["player"] for e in st.log.of("wager") if e.round == rnd]


@pytest.mark.parametrize("n", [3, 8])
def test_rule_5_4_four_to_seven_players_at_commencement(n: int) -> None:
    with pytest.raises(TournamentError, match=r"rule 5\.4"):
        session(definition(), one_shoe(win(4)), n=n)


def test_rule_5_4_does_not_bind_a_playoff_of_two() -> None:
    st = session(definition(), one_shoe(win(2)), n=2, playoff=True)
    assert played(st).wagers == {"P1": 10, "P2": 10}


def test_rule_5_2_each_player_has_their_own_box() -> None:
    from feltlab.tournament import SessionTable

    from .conftest import Script

    d = definition()
    seats = [("A", 0, Script()), ("B", 0, Script()), ("C", 1, Script()), ("D", 2, Script())]
    with pytest.raises(TournamentError, match=r"\(5.2\)"):
        SessionTable(d, seats, one_shoe(win(4)), dict.fromkeys("ABCD", 100))


def test_rule_5_5_player_wagers_only_on_their_own_box() -> None:
    st = session(definition(), one_shoe(win(4)))
    st.check_box("P2", 1)
    with pytest.raises(TournamentWagerError, match=r"rule 5.5"):
        st.check_box("P2", 0)


def test_rule_5_8_marker_starts_farthest_left_and_wagers_go_clockwise() -> None:
    st = session(definition(), one_shoe(win(4)))
    st.play_round()
    first = st.log.of("betting_marker")[0]
    assert (first.rule, first.data) == ("5.8", {"player": "P1", "box": 0})
    assert wager_order(st, 1) == ["P1", "P2", "P3", "P4"]


def test_rule_5_9_marker_moves_clockwise_after_each_round() -> None:
    st = session(definition(session={"rounds": 5}), one_shoe(*[win(4)] * 5))
    st.run()
    assert wager_order(st, 2) == ["P2", "P3", "P4", "P1"]
    assert wager_order(st, 3) == ["P3", "P4", "P1", "P2"]
    assert wager_order(st, 5) == ["P1", "P2", "P3", "P4"]
    assert [e.rule for e in st.log.of("betting_marker")][1:] == ["5.9"] * 4


def test_rule_5_9_marker_skips_an_eliminated_player() -> None:
    # round 1: P2 loses all 50 chips (the others win 10); round 2: P3 holds the marker
    from .conftest import cards

    r1 = cards("KS KS KS KS KH QS 7S QS QS 8D")  # box 1 holds 17 and loses to 18
    st = session(definition(), one_shoe(r1, win(3), win(3)), [[10], [50], [10], [10]], chips=50)
    st.play_round()
    st.play_round()
    assert wager_order(st, 2) == ["P3", "P4", "P1"]


def test_rule_5_7_a_shuffle_immediately_before_the_session() -> None:
    st = session(definition(), one_shoe(win(4), win(4), win(4)))
    st.run()
    shuffles = st.log.of("shuffle")
    assert [(e.rule, e.round, e.data["shoe_number"]) for e in shuffles] == [("5.7(a)", 1, 1)]


def test_rule_5_7_b_shuffle_after_the_round_following_the_cutting_card() -> None:
    # the cutting card comes out in round 1 (after 5 of its 10 cards); round 2 is still dealt
    # from the first shoe; the shuffle comes before round 3
    src = Stacked([(win(4) + win(4), 5), (win(4), None)])
    st = session(definition(), src)
    st.run()
    assert [(e.rule, e.round) for e in st.log.of("shuffle")] == [("5.7(a)", 1), ("5.7(b)", 3)]
    assert [r.shoe_number for r in st.rounds] == [1, 1, 2]
    assert [e.round for e in st.log.of("cutting_card")] == [1]
    engine_cut = [e for e in st.log.of("table_event") if e.data["event"] == "cut_card_reached"]
    assert len(engine_cut) == 1


def test_rule_5_7_c_shuffle_when_play_recommences_after_the_table_was_vacant() -> None:
    src = Stacked([(win(4), None), (win(4) + win(4), None)])
    st = session(definition(), src)
    st.play_round()
    st.vacate()
    st.run()
    assert [(e.rule, e.round) for e in st.log.of("shuffle")] == [("5.7(a)", 1), ("5.7(c)", 2)]


def test_rule_2_4_b_shoe_number_indicator() -> None:
    src = Stacked([(win(4) + win(4), 5), (win(4) + win(4), 5), (win(4), None)])
    st = session(definition(session={"length": "shoes", "shoes": 2, "rounds": None}), src)
    st.run()
    assert [e.data["shoe_number"] for e in st.log.of("shoe_completed")] == [1, 2]


def test_rule_5_10_concealing_chips_disqualifies() -> None:
    st = session(definition(), one_shoe(win(4), win(3), win(3), win(3)))
    st.play_round()
    st.disqualify("P4", "pocketed chips", "5.10")
    r = st.run()
    assert r.disqualified == {"P4": "pocketed chips"} and "P4" not in r.chips


def test_rule_2_1_play_is_division_ii_blackjack_on_the_engine() -> None:
    # a lost round settles through the engine's rule 5.1 settlement
    st = session(definition(), one_shoe(lose(4)))
    st.play_round()
    settled = [e for e in st.log.of("table_event") if e.data["event"] == "wager_settled"]
    assert [e.data["net"] for e in settled] == [-10] * 4
