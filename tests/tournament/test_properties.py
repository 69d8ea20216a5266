"""Property tests (hypothesis): prize money is conserved (paid out = pool, rule 3.4), every
player is placed at most once (6.5-6.8), and no session ends earlier or later than the
definition allows (definition of "Session" (a)-(c), rule 3.2(f))."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feltlab.tournament import (
    Applicant,
    EndReason,
    LengthKind,
    SessionResult,
    TournamentDefinition,
    allocate_prizes,
    run_tournament,
)

from .conftest import definition
from .test_entry import registry

REG = registry()
STRATS = REG.names()


@st.composite
def placings(draw: st.DrawFn) -> list[list[str]]:
    n = draw(st.integers(2, 9))
    players = [f"P{i}" for i in range(n)]
    groups = [[players[0]], [players[1]]]
    rest = players[2:]
    while rest:
        k = draw(st.integers(1, len(rest)))
        groups.append(rest[:k])
        rest = rest[k:]
    return groups


@given(
    pool=st.integers(0, 10**9),
    shares=st.lists(st.integers(0, 10_000), min_size=1, max_size=7),
    groups=placings(),
)
def test_rule_6_8_allocation_pays_out_exactly_the_pool(
    pool: int, shares: list[int], groups: list[list[str]]
) -> None:
    amounts = [pool * s // max(1, sum(shares)) for s in shares]
    amounts[0] += pool - sum(amounts)
    awards = allocate_prizes(amounts, groups)
    assert sum(a.amount for a in awards) == pool
    names = [a.player for a in awards]
    assert len(names) == len(set(names))


@st.composite
def tournaments(draw: st.DrawFn) -> tuple[TournamentDefinition, list[Applicant], int]:
    kind = draw(st.sampled_from(["rounds", "shoes", "time"]))
    session: dict[str, Any] = {"length": kind, "rounds": None}
    if kind == "rounds":
        session["rounds"] = draw(st.integers(1, 6))
    elif kind == "shoes":
        session["shoes"] = 1
    else:
        session["minutes"] = draw(st.integers(1, 6))
    two_stages = draw(st.booleans())
    n = draw(st.integers(8, 10) if two_stages else st.integers(4, 7))
    stages = (
        [{"name": "heat", "advance_per_table": 2}, {"name": "final"}]
        if two_stages
        else [{"name": "final"}]
    )
    d = definition(
        session=session,
        entry={"min_players": 8, "max_players": 10} if two_stages else {"min_players": 4},
        wagers={"minimum": 10, "maximum": draw(st.sampled_from([20, 50, 100])), "increment": 5},
        stages=stages,
        prizes={"shares": [5000, 3000, 2000], "additions": [
            {"kind": "cash", "description": "house", "value": draw(st.integers(0, 99_999))}]},
        tournament={"entry_fee": draw(st.integers(0, 10_000))},
    )  # fmt: skip
    field = [Applicant(f"P{i}", draw(st.sampled_from(STRATS))) for i in range(n)]
    return d, field, draw(st.integers(0, 2**32))


def _check_session(r: SessionResult, d_len: Any, limit_one_left: bool) -> None:
    rounds = r.rounds
    if r.reason in (EndReason.ONE_LEFT, EndReason.RULE_4_10):
        assert limit_one_left
    if d_len.kind is LengthKind.ROUNDS:
        assert len(rounds) <= d_len.count
        if r.reason is EndReason.ROUNDS:
            assert len(rounds) == d_len.count
        else:
            assert r.reason in (EndReason.ONE_LEFT, EndReason.RULE_4_10)
    elif d_len.kind is LengthKind.SHOES:
        assert r.shoes_completed <= d_len.count
        if r.reason is EndReason.SHOES:
            assert r.shoes_completed == d_len.count
            cut_rounds = [x.number for x in rounds if x.cut_card and x.shoe_number == d_len.count]
            assert cut_rounds and rounds[-1].number == cut_rounds[-1] + 1
        else:
            assert r.reason in (EndReason.ONE_LEFT, EndReason.RULE_4_10)
    else:
        limit = d_len.count
        assert all(x.first_card_at < limit for x in rounds)
        assert all(x.ended_at < limit for x in rounds[:-1])
        if r.reason is EndReason.TIME:
            assert r.clock >= limit
        else:
            assert r.reason in (EndReason.ONE_LEFT, EndReason.RULE_4_10)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tournaments())
def test_properties_of_whole_tournaments(
    case: tuple[TournamentDefinition, list[Applicant], int],
) -> None:
    d, field, seed = case
    r = run_tournament(d, field, seed=seed, strategies=REG, log_cards=False)
    # rule 3.4: the pool is every fee plus the additions, all paid out
    assert r.entry.prize_pool == len(field) * d.entry_fee + d.additions_value
    assert r.paid_out == r.entry.prize_pool
    placed = [p for g in r.placings for p in g]
    assert len(placed) == len(set(placed))
    assert [a.player for a in r.awards] == placed
    for t in r.tables:
        _check_session(t.session, d.session, True)
        for p in t.playoffs:
            _check_session(p.result, d.playoff, True)
