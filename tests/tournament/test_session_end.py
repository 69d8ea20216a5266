"""The end of a session exactly as the definition of "Session" says (Division XI rule 1.0,
(a)-(c)) or after its number of rounds (rule 3.2(f))."""

from __future__ import annotations

from feltlab.tournament import EndReason, TournamentDefinition

from .conftest import Stacked, cards, definition, one_shoe, session, win

# box 0 holds 20 and wins, boxes 1-3 hold 17 and lose, against the dealer's 18
ONE_WINS = cards("KS KS KS KS KH QS 7S 7S 7S 8D")


def test_session_by_rounds_ends_after_the_number_of_rounds() -> None:
    st = session(definition(session={"rounds": 3}), one_shoe(*[win(4)] * 3))
    r = st.run()
    assert r.reason is EndReason.ROUNDS and len(r.rounds) == 3


def test_session_a_ends_when_one_player_holds_at_least_the_minimum() -> None:
    st = session(definition(session={"rounds": 5}), one_shoe(ONE_WINS),
                 [[10], [50], [50], [50]], chips=50)  # fmt: skip
    r = st.run()
    assert r.reason is EndReason.ONE_LEFT and len(r.rounds) == 1
    assert r.chips == {"P1": 60, "P2": 0, "P3": 0, "P4": 0}


def test_session_a_players_below_the_minimum_do_not_hold_under_minimum_rule() -> None:
    st = session(definition(session={"rounds": 5}), one_shoe(ONE_WINS),
                 [[10], [10], [10], [10]], chips=[100, 15, 15, 15])  # fmt: skip
    r = st.run()
    assert r.reason is EndReason.ONE_LEFT and r.chips == {"P1": 110, "P2": 5, "P3": 5, "P4": 5}


def test_session_a_any_chips_keeps_the_session_going() -> None:
    d = definition(session={"rounds": 2, "ends_when_one_holds": "any"})
    st = session(d, one_shoe(ONE_WINS, win(1)), [[10], [10, None], [10, None], [10, None]],
                 chips=[100, 15, 15, 15])  # fmt: skip
    r = st.run()
    assert r.reason is EndReason.ROUNDS and len(r.rounds) == 2
    assert [e.data["player"] for e in st.log.of("sits_out")] == ["P2", "P3", "P4"]


def _timed(minutes: float) -> TournamentDefinition:
    return definition(
        session={"length": "time", "minutes": minutes, "rounds": None},
        timing={"wager_seconds": 5, "card_seconds": 3, "settle_seconds": 10},
    )


def test_session_b_time_elapsing_during_a_round_ends_it_at_the_end_of_that_round() -> None:
    # each round: 4 wagers (20 s) then 10 cards (30 s) and settlement (10 s): 60 s
    # round 2's first card is removed at 80 s, the limit of 90 s passes during it
    st = session(_timed(1.5), one_shoe(win(4), win(4), win(4)))
    r = st.run()
    assert r.reason is EndReason.TIME and len(r.rounds) == 2
    assert [(x.first_card_at, x.ended_at) for x in r.rounds] == [(20, 60), (80, 120)]


def test_session_b_time_elapsing_before_the_first_card_ends_the_session_then() -> None:
    # limit 75 s: round 2's first card would come at 80 s, so its wagers are returned
    st = session(_timed(1.25), one_shoe(win(4), win(4)))
    r = st.run()
    assert r.reason is EndReason.TIME and len(r.rounds) == 1
    assert st.log.of("wagers_returned")[0].rule == "Session (b)"


def test_session_b_time_elapsing_exactly_at_the_end_of_a_round() -> None:
    st = session(_timed(1), one_shoe(win(4), win(4)))
    assert len(st.run().rounds) == 1


def test_session_c_shoes_end_after_the_round_following_the_last_cutting_card() -> None:
    # the cutting card of the only shoe comes out in round 2 (card 15 of 40)
    d = definition(session={"length": "shoes", "shoes": 1, "rounds": None})
    st = session(d, one_shoe(win(4), win(4), win(4), win(4), cut_after=15))
    r = st.run()
    assert r.reason is EndReason.SHOES and len(r.rounds) == 3 and r.shoes_completed == 1


def test_session_c_two_shoes() -> None:
    d = definition(session={"length": "shoes", "shoes": 2, "rounds": None})
    src = Stacked([(win(4) * 3, 5), (win(4) * 4, 25)])
    r = session(d, src).run()
    # shoe 1: cut in round 1, complete after round 2; shoe 2: cut in round 5, ends round 6
    assert len(r.rounds) == 6 and r.shoes_completed == 2
    assert [x.shoe_number for x in r.rounds] == [1, 1, 2, 2, 2, 2]


def test_session_a_prevails_over_the_length() -> None:
    d = definition(session={"length": "shoes", "shoes": 3, "rounds": None})
    st = session(d, one_shoe(ONE_WINS, cut_after=100), [[10], [50], [50], [50]], chips=50)
    assert st.run().reason is EndReason.ONE_LEFT
