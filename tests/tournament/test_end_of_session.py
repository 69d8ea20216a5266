"""End of session, Division XI rules 6.1-6.9: winners, advancement, play-offs, placings and
shared prizes.  Play-offs are played by a scripted stand-in so every result is hand-checked."""

from __future__ import annotations

from typing import Any

import pytest

from feltlab.tournament import (
    EndReason,
    LengthKind,
    PlayContest,
    SessionLength,
    SessionResult,
    TournamentError,
    allocate_prizes,
)
from feltlab.tournament import resolve as _resolve

from .conftest import definition, lose, one_shoe, session, win

D = definition()
BOXES = list("ABCDEFG")


def scripted(
    *results: dict[str, int],
) -> tuple[PlayContest, list[tuple[list[str], dict[str, int]]]]:
    """A play-off stand-in returning the chips in ``results`` in turn; records calls."""
    queue = list(results)
    calls = []

    def play(players: list[str], start: dict[str, int], label: str, depth: int) -> Any:
        calls.append((sorted(players), dict(start)))
        chips = queue.pop(0)
        assert sorted(chips) == sorted(players)
        return SessionResult(label, chips, {}, {}, EndReason.ROUNDS, [], 0, 0.0,
                             SessionLength(LengthKind.ROUNDS, 1))  # fmt: skip

    return play, calls


def resolve(
    groups: list[list[str]], required: int, positions: bool, play: PlayContest
) -> list[list[str]]:
    return _resolve(groups, required, positions=positions, play=play, definition=D,
                    box_order=BOXES, label="s")  # fmt: skip


def test_rule_6_1_chips_are_tallied_at_the_end_of_the_session() -> None:
    st = session(D, one_shoe(win(4), lose(4), win(4)), [[10], [20], [30], [40]])
    st.run()
    ev = st.log.of("session_ended")[0]
    assert ev.data["chips"] == {"P1": 110, "P2": 120, "P3": 130, "P4": 140}


def test_rule_6_2_winner_is_the_player_with_most_chips_no_playoff_needed() -> None:
    play, calls = scripted()
    assert resolve([["A"], ["B", "C"], ["D"]], 1, False, play) == [["A"], ["B", "C"], ["D"]]
    assert calls == []


def test_rule_6_2_tied_leaders_play_off_for_the_session() -> None:
    play, calls = scripted({"A": 120, "B": 80})
    assert resolve([["A", "B"], ["C"]], 1, False, play) == [["A"], ["B"], ["C"]]
    assert calls == [(["A", "B"], {"A": 100, "B": 100})]  # play-off chips (3.2(f))


def test_rule_6_3_discretionary_advancement_tie_across_the_cut_plays_off() -> None:
    play, calls = scripted({"B": 50, "C": 90})
    assert resolve([["A"], ["B", "C"], ["D"]], 2, False, play) == [["A"], ["C"], ["B"], ["D"]]
    assert len(calls) == 1


def test_rule_6_3_tie_inside_the_advancing_places_needs_no_playoff() -> None:
    play, calls = scripted()
    assert resolve([["A", "B"], ["C"], ["D"]], 2, False, play) == [["A", "B"], ["C"], ["D"]]
    assert calls == []


def test_rule_6_4_only_winners_proceed_to_the_next_session() -> None:
    from feltlab.tournament import Applicant, run_tournament

    from .test_entry import registry

    stages = [{"name": "heat", "advance_per_table": 2}, {"name": "final"}]
    d = definition(entry={"min_players": 8, "max_players": 8}, stages=stages)
    r = run_tournament(d, [Applicant(f"P{i}", "random") for i in range(8)], seed=5,
                       strategies=registry(), log_cards=False)  # fmt: skip
    heats = [t for t in r.tables if t.stage == "heat"]
    advanced = sorted(p for t in heats for p in t.advanced)
    final = next(t for t in r.tables if t.stage == "final")
    assert sorted(final.seats) == advanced and len(advanced) == 4
    assert all(len(t.advanced) == 2 for t in heats)


def test_rule_6_5_final_placings_by_chips() -> None:
    play, calls = scripted()
    got = resolve([["C"], ["A"], ["B"], ["D", "E"]], 2, True, play)
    assert got == [["C"], ["A"], ["B"], ["D", "E"]] and calls == []


def test_rule_6_6_tied_for_winner_play_off_which_also_sets_the_runner_up() -> None:
    play, calls = scripted({"A": 90, "B": 150, "C": 40})
    assert resolve([["A", "B", "C"], ["D"]], 2, True, play) == [["B"], ["A"], ["C"], ["D"]]
    assert len(calls) == 1


def test_rule_6_6_further_playoff_for_the_runner_up() -> None:
    play, calls = scripted({"A": 200, "B": 100, "C": 100}, {"B": 40, "C": 160})
    assert resolve([["A", "B", "C"], ["D"]], 2, True, play) == [["A"], ["C"], ["B"], ["D"]]
    assert [c[0] for c in calls] == [["A", "B", "C"], ["B", "C"]]


def test_rule_6_6_runner_up_playoff_when_the_winner_is_clear() -> None:
    play, calls = scripted({"B": 10, "C": 30, "D": 10})
    got = resolve([["A"], ["B", "C", "D"]], 2, True, play)
    assert [c[0] for c in calls] == [["B", "C", "D"]]
    assert got == [["A"], ["C"], ["B", "D"]]  # B and D stay tied for third (6.8)


def test_rule_6_7_later_placings_runner_up_playoff_then_winner_playoff_then_final() -> None:
    play, _ = scripted({"A": 300, "B": 100, "C": 100, "D": 50}, {"B": 120, "C": 80})
    got = resolve([["A", "B", "C", "D"], ["E"]], 2, True, play)
    # C: third by the runner-up play-off (a); D: fourth by the winner's play-off (b);
    # E: fifth by the final session (c)
    assert got == [["A"], ["B"], ["C"], ["D"], ["E"]]


def test_rule_6_8_tied_players_share_the_prize_combined_with_the_next() -> None:
    awards = allocate_prizes([5000, 3000, 1500, 500], [["A"], ["B"], ["C", "D"]])
    assert [(a.player, a.amount, a.places) for a in awards] == [
        ("A", 5000, ()), ("B", 3000, ()), ("C", 1000, (3, 4)), ("D", 1000, (3, 4)),
    ]  # fmt: skip


def test_rule_6_8_three_tied_share_three_prizes_if_any() -> None:
    awards = allocate_prizes([6000, 3000, 700, 300], [["A"], ["B"], ["C", "D", "E"]])
    # prizes 3 and 4 (there is no 5th): 1000 cents shared three ways, the odd cent to C
    assert [a.amount for a in awards] == [6000, 3000, 334, 333, 333]
    assert sum(a.amount for a in awards) == 10_000


def test_rule_6_8_does_not_apply_to_winner_or_runner_up() -> None:
    with pytest.raises(TournamentError, match=r"rule 6\.8 does not apply"):
        allocate_prizes([6000, 4000], [["A", "B"]])
    with pytest.raises(TournamentError, match="runner-up"):
        allocate_prizes([6000, 4000], [["A"], ["B", "C"]])


def test_rule_6_9_a_gratuitous_chips_are_returned_to_the_operator() -> None:
    st = session(D, one_shoe(win(4), win(4), win(4)))
    st.run()
    ev = st.log.of("chips_returned")
    assert [(e.rule, e.data["chips"]) for e in ev] == [("6.9(a)", 130)] * 4


def test_rule_6_9_b_purchased_chips_are_retained_and_redeemable() -> None:
    d = definition(chips={"gratuitous": False, "face_value": 100})
    st = session(d, one_shoe(win(4), win(4), win(4)))
    st.run()
    ev = st.log.of("chips_retained")
    assert [(e.rule, e.data["chips"], e.data["value"]) for e in ev] == [("6.9(b)", 130, 13_000)] * 4
