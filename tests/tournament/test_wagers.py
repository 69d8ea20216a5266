"""Wagers, Division XI rules 4.1-4.11, on hand-checked deals (see conftest: every box wins,
loses or stands off together)."""

from __future__ import annotations

from typing import Any

import pytest

from feltlab.tournament import (
    EndReason,
    SessionResult,
    SessionTable,
    TournamentWagerError,
    WagerIntent,
)

from .conftest import cards, definition, ended, lose, one_shoe, played, session, win


def kinds(st: SessionTable, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in st.log.of(kind)]


def test_rule_4_1_wagers_are_whole_tournament_chips() -> None:
    st = session(definition(), one_shoe(win(4)), [[10.5], [10], [10], [10]])  # type: ignore[list-item]
    with pytest.raises(TournamentWagerError, match=r"tournament chips \(rule 4.1\)"):
        st.play_round()


def test_rule_4_3_chips_held_at_commencement_and_only_round_results_change_them() -> None:
    st = session(definition(), one_shoe(win(4), lose(4), win(4)), [[10], [20], [30], [50]])
    assert st.log.of("session_started")[0].data["chips"] == dict.fromkeys(
        ["P1", "P2", "P3", "P4"], 100
    )
    r = st.run()
    # +w -w +w for each wager w
    assert r.chips == {"P1": 110, "P2": 120, "P3": 130, "P4": 150}


def test_rule_4_4_wager_above_the_chips_held_is_reduced_to_them() -> None:
    st = session(definition(), one_shoe(win(4)), [[40], [10], [10], [10]], chips=30)
    rec = played(st)
    assert rec.wagers["P1"] == 30
    assert kinds(st, "reduced_to_chips") == [{"player": "P1", "asked": 40, "wager": 30}]


def test_rule_4_5_and_4_7_wagers_within_the_sign_are_accepted_as_made() -> None:
    st = session(definition(), one_shoe(win(4)), [[10], [25], [45], [50]])
    rec = played(st)
    assert rec.wagers == {"P1": 10, "P2": 25, "P3": 45, "P4": 50}
    assert rec.net == rec.wagers  # every box wins even money


def test_rule_4_6_wager_off_the_increment_is_rounded_down_to_it() -> None:
    st = session(definition(), one_shoe(win(4)), [[23], [10], [10], [10]])
    assert played(st).wagers["P1"] == 20
    assert kinds(st, "increment_rounded")[0]["increment"] == 5


def test_rule_4_7_failing_to_wager_disqualifies_and_voids_the_box() -> None:
    st = session(definition(), one_shoe(win(3), win(3), win(3)), [[10], [None], [10], [10]])
    rec = played(st)
    assert set(rec.wagers) == {"P1", "P3", "P4"}
    ev = st.log.of("disqualified")[0]
    assert (ev.rule, ev.data["player"]) == ("4.7", "P2")
    assert 1 in st.void_boxes
    st.play_round()
    assert "P2" not in st.run().chips


def test_rule_4_8_a_undersize_wager_valid_once_per_session_then_void() -> None:
    # round 2: P1's second undersize wager is void, so only 3 boxes are dealt
    st = session(definition(), one_shoe(win(4), win(3), win(4)), [[5, 5, 10], [10], [10], [10]])
    r1 = played(st)
    assert r1.wagers["P1"] == 5 and r1.net["P1"] == 5
    r2 = played(st)
    assert "P1" not in r2.wagers
    st.play_round()
    assert ended(st).chips["P1"] == 100 + 5 + 10
    assert [e.rule for e in st.log.events if "undersize" in e.kind] == ["4.8(a)", "4.8(a)"]
    assert [e.kind for e in st.log.events if "undersize" in e.kind] == [
        "undersize_valid_once",
        "undersize_void",
    ]
    assert ended(st).disqualified == {}  # a void wager is not a failure to wager


def test_rule_4_8_b_excess_over_the_maximum_is_void() -> None:
    st = session(definition(), one_shoe(win(4)), [[80], [10], [10], [10]])
    rec = played(st)
    assert rec.wagers["P1"] == 50 and st.by_player["P1"].chips == 150
    assert kinds(st, "excess_void") == [{"player": "P1", "asked": 80, "wager": 50}]


def test_rule_4_9_player_losing_all_chips_is_eliminated_and_box_void() -> None:
    st = session(definition(), one_shoe(lose(4), win(3)), [[50], [10], [10], [10]], chips=50)
    st.play_round()
    assert st.by_player["P1"].eliminated == 1
    assert st.log.of("eliminated")[0].rule == "4.9"
    with pytest.raises(TournamentWagerError, match=r"rule 4.9"):
        st.check_box("P2", 0)
    rec = played(st)
    assert "P1" not in rec.wagers


def test_rule_4_10_a_all_remaining_lose_all_chips_in_the_same_round() -> None:
    st = session(definition(), one_shoe(lose(4)), [[50]] * 4, chips=50)
    st.play_round()
    r = ended(st)
    assert r.reason is EndReason.RULE_4_10 and r.playoff_410 == ["P1", "P2", "P3", "P4"]
    ev = st.log.of("playoff_4_10")[0]
    assert ev.rule == "4.10(a)" and r.eliminated == {}


def test_rule_4_10_b_all_remaining_below_the_minimum() -> None:
    st = session(definition(), one_shoe(lose(4)), [[10]] * 4, chips=15)
    st.play_round()
    assert ended(st).reason is EndReason.RULE_4_10
    assert st.log.of("playoff_4_10")[0].rule == "4.10(b)"
    assert ended(st).chips == dict.fromkeys(["P1", "P2", "P3", "P4"], 5)


def test_rule_4_10_playoff_issues_equal_further_chips() -> None:
    from feltlab.tournament import contest_groups

    d = definition(playoff={"length": "rounds", "rounds": 1, "chips": 60})
    st = session(d, one_shoe(lose(4)), [[10]] * 4, chips=15)
    st.play_round()
    seen = {}

    def play(players: list[str], start: dict[str, int], label: str, depth: int) -> SessionResult:
        seen.update(start)
        sub = session(d, one_shoe(win(4)), [[10]] * 4, chips=[start[p] for p in players],
                      playoff=True, label=label)  # fmt: skip
        return sub.run()

    groups = contest_groups(ended(st), ["P1", "P2", "P3", "P4"], play, d, 0, [])
    assert seen == dict.fromkeys(["P1", "P2", "P3", "P4"], 5 + 60)
    assert groups == [["P1", "P2", "P3", "P4"]]  # 75 chips each after the play-off


def test_rule_4_11_late_wager_is_restricted_to_the_table_minimum() -> None:
    d = definition(wagers={"time_limit_seconds": 30})
    st = session(d, one_shoe(win(4)), [[WagerIntent(40, seconds=45)], [WagerIntent(40, 20)],
                                       [10], [10]])  # fmt: skip
    rec = played(st)
    assert rec.wagers["P1"] == 10 and rec.wagers["P2"] == 40
    ev = st.log.of("late_wager")[0]
    assert ev.rule == "4.11" and ev.data["asked"] == 40


def test_rule_4_2_wager_is_settled_as_placed() -> None:
    # a box's wager is not altered between placement and settlement
    st = session(
        definition(), one_shoe(cards("KS KS KS KS KH 7S 7S 7S 7S QD")), [[35]] + [[10]] * 3
    )
    rec = played(st)
    assert rec.net["P1"] == -35
