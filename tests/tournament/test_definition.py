"""Conditions of entry, Division XI rule 3.2: a definition is complete and consistent, or
refused with a message naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from feltlab.tournament import DefinitionError, LengthKind, TournamentDefinition, load_definition

from .conftest import base, definition

ROOT = Path(__file__).resolve().parents[2]


def refused(field: str, **sections: Any) -> str:
    with pytest.raises(DefinitionError) as exc:
        TournamentDefinition.from_dict(base(**sections))
    assert exc.value.field == field, str(exc.value)
    assert field in str(exc.value)
    return str(exc.value)


def test_rule_3_2_example_file_is_a_complete_definition() -> None:
    d = load_definition(ROOT / "examples" / "tournament.toml")
    assert d.entry_fee == 5000
    assert (d.limits.minimum, d.limits.maximum, d.limits.increment) == (10, 500, 5)
    assert d.session.kind is LengthKind.ROUNDS and d.session.count == 20
    assert d.additions_value == 70_000
    assert d.fields_by_stage(18) == [18, 6]


@pytest.mark.parametrize(
    ("section", "key", "field"),
    [
        ("tournament", "entry_fee", "tournament.entry_fee"),  # 3.2(b)
        ("chips", "per_session", "chips.per_session"),  # 3.2(c)
        ("wagers", "minimum", "wagers.minimum"),  # 3.2(d)
        ("wagers", "maximum", "wagers.maximum"),  # 3.2(d)
        ("entry", "min_players", "entry.min_players"),  # 3.2(e)
        ("entry", "max_players", "entry.max_players"),  # 3.2(e)
        ("session", "length", "session.length"),  # 3.2(f)
        ("session", "rounds", "session.rounds"),  # 3.2(f)
        ("playoff", "length", "playoff.length"),  # 3.2(f)
    ],
)
def test_rule_3_2_missing_field_is_named(section: str, key: str, field: str) -> None:
    message = refused(field, **{section: {key: None}})
    assert "missing" in message


def test_rule_3_2_g_missing_prize_list_is_named() -> None:
    refused("prizes.shares", prizes={"shares": None})


def test_rule_3_2_d_maximum_below_minimum_is_refused() -> None:
    msg = refused("wagers.maximum", wagers={"minimum": 20, "maximum": 10, "increment": 5})
    assert "below the minimum 20" in msg


def test_rule_3_2_e_maximum_players_below_minimum_is_refused() -> None:
    refused("entry.max_players", entry={"min_players": 6, "max_players": 5})


def test_rule_5_4_three_players_per_table_is_refused() -> None:
    assert "rule 5.4" in refused("entry.min_players", entry={"min_players": 3})


def test_rule_5_4_advancing_three_to_a_final_is_refused() -> None:
    # 8 entrants: two heat tables; advancing 1 each puts 2 players at the final table
    msg = refused(
        "stages[0].advance_per_table",
        entry={"min_players": 8, "max_players": 14},
        stages=[{"name": "heat", "advance_per_table": 1}, {"name": "final"}],
    )
    assert "only 2 players reach 'final'" in msg


def test_rule_6_5_final_larger_than_one_table_is_refused() -> None:
    refused(
        "stages[0].advance_per_table",
        entry={"min_players": 8, "max_players": 21},
        stages=[{"name": "heat", "advance_per_table": 3}, {"name": "final"}],
    )


def test_rule_3_2_g_prize_list_longer_than_the_field_is_refused() -> None:
    msg = refused("prizes.shares", prizes={"shares": [3000, 2000, 2000, 1000, 1000, 1000]},
                  entry={"min_players": 5, "max_players": 7})  # fmt: skip
    assert "longer than the field" in msg


def test_rule_3_4_prize_shares_must_distribute_the_whole_pool() -> None:
    assert "10000" in refused("prizes.shares", prizes={"shares": [5000, 3000]})


def test_rule_4_6_increment_above_minimum_is_refused() -> None:
    refused("wagers.increment", wagers={"minimum": 10, "increment": 20})


def test_rule_4_6_limits_not_multiples_of_increment_are_refused() -> None:
    refused("wagers.increment", wagers={"minimum": 10, "maximum": 52, "increment": 5})


def test_rule_4_10_playoff_chips_above_session_chips_are_refused() -> None:
    refused("playoff.chips", playoff={"length": "rounds", "rounds": 1, "chips": 101})


def test_rule_3_2_c_gratuitous_chips_have_no_price_and_sold_chips_have_one() -> None:
    refused("chips.face_value", chips={"face_value": 100})
    refused("chips.face_value", chips={"gratuitous": False})
    d = definition(chips={"gratuitous": False, "face_value": 100})
    assert not d.gratuitous and d.chip_face_value == 100


def test_rule_3_2_f_lengths_by_shoes_and_time() -> None:
    d = definition(session={"length": "time", "minutes": 30, "rounds": None},
                   playoff={"length": "shoes", "shoes": 1, "rounds": None})  # fmt: skip
    assert (d.session.kind, d.session.count) == (LengthKind.TIME, 1800)
    assert (d.playoff.kind, d.playoff.count) == (LengthKind.SHOES, 1)
    refused("session.minutes", session={"length": "time", "rounds": None})


def test_unreadable_or_invalid_toml_is_refused_naming_the_file(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text("[tournament\n", encoding="utf-8")
    with pytest.raises(DefinitionError, match="not valid TOML"):
        load_definition(p)
    with pytest.raises(DefinitionError, match="cannot read"):
        load_definition(tmp_path / "missing.toml")
