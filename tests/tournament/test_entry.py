"""Conditions of entry and the prize pool, Division XI rules 3.1-3.7."""

from __future__ import annotations

from typing import Any

import pytest

from feltlab import native
from feltlab.plugins.tournament_bots import BUILTIN_STRATEGIES
from feltlab.tournament import (
    Applicant,
    Entry,
    EntryError,
    EntryStatus,
    StrategyRegistry,
    run_tournament,
    seat_tables,
)

from .conftest import definition


def entry(n: int = 4, **sections: Any) -> Entry:
    e = Entry(definition(**sections))
    for i in range(n):
        e.apply(f"P{i + 1}")
    return e


def registry() -> StrategyRegistry:
    r = StrategyRegistry()
    for s in BUILTIN_STRATEGIES:
        r.register(s)
    return r


def test_rule_3_1_and_3_2_b_each_applicant_pays_the_entry_fee() -> None:
    e = entry(4)
    assert [x.fee_paid for x in e.entrants.values()] == [5000] * 4
    assert e.fees_kept == 20_000


def test_rule_3_2_e_applications_beyond_the_maximum_are_refused() -> None:
    e = entry(7)
    with pytest.raises(EntryError, match=r"max_players=7 \(rule 3.2\(e\)\)"):
        e.apply("P8")


def test_rule_3_3_a_operator_refuses_an_application_and_returns_the_fee() -> None:
    e = entry(5)
    e.refuse("P5", "no identification")
    assert e.entrants["P5"].status is EntryStatus.REFUSED
    assert e.refunds == {"P5": 5000}
    assert "P5" not in e.players and e.prize_pool == 20_000


def test_rule_3_3_b_i_disqualification_for_breaking_the_rules_keeps_the_fee() -> None:
    e = entry(4)
    e.start()
    e.disqualify("P2", "failed to wager (4.7)")
    assert e.entrants["P2"].status is EntryStatus.DISQUALIFIED
    assert e.refunds == {} and e.prize_pool == 20_000  # rule 3.6


def test_rule_3_3_b_ii_absent_player_is_disqualified_and_not_placed() -> None:
    d = definition(entry={"min_players": 4, "max_players": 7})
    field = [Applicant(f"P{i}", "flat") for i in range(1, 6)]
    field[1] = Applicant("P2", "flat", absent_stage=0)
    r = run_tournament(d, field, seed=3, strategies=registry(), log_cards=False)
    assert r.entry.entrants["P2"].status is EntryStatus.DISQUALIFIED
    assert "P2" not in [p for g in r.placings for p in g]
    assert [e.data["player"] for e in r.log.of("disqualified")] == ["P2"]
    assert r.paid_out == r.entry.prize_pool == 25_000


def test_rule_3_3_c_allocation_to_tables_of_four_to_seven() -> None:
    rng = native.ChaCha20(7)
    players = [f"P{i}" for i in range(15)]
    tables = seat_tables(players, rng)
    assert [len(t) for t in tables] == [5, 5, 5]
    assert sorted(p for t in tables for p in t) == sorted(players)
    assert [len(t) for t in seat_tables(players[:8], rng)] == [4, 4]


def test_rule_3_3_d_cancellation_for_lack_of_participation_refunds_everyone() -> None:
    e = entry(3)
    with pytest.raises(EntryError, match="cancel the tournament"):
        e.start()
    e.cancel()
    assert e.cancelled and e.refunds == {"P1": 5000, "P2": 5000, "P3": 5000}
    assert e.prize_pool == 0


def test_rule_3_3_d_no_cancellation_with_enough_players_or_after_commencement() -> None:
    e = entry(4)
    with pytest.raises(EntryError, match="lack of participation"):
        e.cancel()
    e.start()
    with pytest.raises(EntryError, match="prior to its commencement"):
        e.cancel()


def test_rule_3_3_d_run_tournament_is_cancelled_below_the_minimum() -> None:
    d = definition()
    r = run_tournament(d, [Applicant(f"P{i}", "flat") for i in range(3)], seed=1,
                       strategies=registry())  # fmt: skip
    assert r.cancelled and r.awards == [] and r.paid_out == 0
    assert sum(r.entry.refunds.values()) == 15_000
    assert r.log.of("cancelled")[0].rule == "3.3(d), 3.5(b)"


def test_rule_3_4_pool_is_all_fees_plus_operator_additions() -> None:
    e = entry(6, prizes={"additions": [
        {"kind": "cash", "description": "house", "value": 10_000},
        {"kind": "goods", "description": "watch", "value": 2_500},
    ]})  # fmt: skip
    assert e.prize_pool == 6 * 5000 + 12_500


def test_rule_3_4_addition_of_another_kind_is_refused() -> None:
    from feltlab.tournament import DefinitionError

    with pytest.raises(DefinitionError, match="cash, goods or services"):
        definition(prizes={"additions": [{"kind": "shares", "value": 1}]})


def test_rule_3_5_a_withdrawal_seven_days_before_is_refunded() -> None:
    e = entry(5)
    e.withdraw("P5", days_before=7)
    assert e.refunds == {"P5": 5000} and e.prize_pool == 20_000


def test_rule_3_5_a_late_withdrawal_is_not_refunded() -> None:
    e = entry(5)
    e.withdraw("P5", days_before=6)
    assert e.refunds == {} and e.prize_pool == 25_000
    assert "P5" not in e.players


def test_rule_3_5_b_tournament_that_does_not_proceed_refunds_fees() -> None:
    e = entry(3)
    e.withdraw("P3", days_before=2)  # not refunded by 3.5(a) ...
    e.cancel()
    assert e.refunds["P3"] == 5000  # ... but the tournament did not proceed: 3.5(b)


def test_rule_3_6_disqualified_player_is_never_refunded() -> None:
    e = entry(4)
    e.disqualify("P1", "concealed chips (5.10)")
    with pytest.raises(EntryError):
        e.withdraw("P1", days_before=30)
    assert e.refunds == {}


def test_rule_3_7_applicant_must_endorse_the_conditions() -> None:
    e = entry(0)
    with pytest.raises(EntryError, match=r"rule 3\.7"):
        e.apply("P1", accepted_conditions=False)
