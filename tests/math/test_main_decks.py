"""Every deck count 1 to 8 where the rules allow it: rule 3.3(a) (4 to 8 decks) binds the NZ
game (deck_rule "nz", the nz preset); the Las Vegas presets and a house's TOML rules take 1
to 8 in `feltlab math main`, `--eor` and the play-decided wagers.  And what an effect of
removal holds fixed."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab import Rules
from feltlab.cli import main
from feltlab.errors import RulesError
from feltlab.math.eor import main_eor


def test_one_deck_h17_is_the_readme_figure_from_the_command_line() -> None:
    out = CliRunner().invoke(
        main, ["math", "main", "--rules", "vegas_h17", "--decks", "1", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    # README: Farmer's CA v7.6, 1 deck H17 DOA DAS split to 4, no RSA, peek: -0.008735%
    assert abs(100 * d["return"]["value"] - -0.008735) <= 5e-7
    assert d["rules"]["decks"] == 1 and d["rules"]["deck_rule"] == "any"


def test_the_nz_game_keeps_rule_3_3a() -> None:
    out = CliRunner().invoke(main, ["math", "main", "--rules", "nz", "--decks", "2"])
    assert out.exit_code == 2
    # in the option's words, with the way out; never the field names no option sets
    assert "--decks 2: the nz rules take 4 to 8 decks (rule 3.3(a))" in out.output
    assert "--rules vegas_s17 or vegas_h17" in out.output
    assert "deck_rule='" not in out.output
    assert "Traceback" not in out.output
    with pytest.raises(RulesError, match=r"3\.3\(a\)"):
        Rules.preset("nz", decks=3)
    assert Rules.preset("vegas_s17", decks=1).cards == 52
    with pytest.raises(RulesError, match="1 to 8 decks"):
        Rules.preset("vegas_s17", decks=9)
    with pytest.raises(RulesError, match="deck_rule"):
        Rules(deck_rule="nevada")


def test_a_house_toml_takes_two_decks(tmp_path: Path) -> None:
    toml = tmp_path / "house.toml"
    toml.write_text("decks = 2\nhole_card = 'peek'\nmax_split_hands = 2\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["math", "main", "--rules", str(toml), "--eor"])
    assert out.exit_code == 0, out.output
    assert "main, 2 decks" in out.output
    nz = tmp_path / "nz.toml"
    nz.write_text("preset = 'nz'\ndecks = 2\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["math", "main", "--rules", str(nz)])
    assert out.exit_code == 2 and "3.3(a)" in out.output


def test_table_strategy_effects_sum_to_zero_and_cdz_says_why_not() -> None:
    e = main_eor(Rules.preset("vegas_s17", decks=2, max_split_hands=2))
    assert e.strategy == "cdz" and len(e.table_effects) == 13
    # a fixed strategy: removing a card at random leaves the return unchanged on average
    assert abs(sum(e.table_effects)) <= 1e-12
    # CDZ- re-optimised per composition: each removal also buys a better strategy
    assert e.effects_sum > 1e-4
    d = e.to_dict()
    assert "re-optimised" in d["strategy_note"] and d["effects_sum"] == e.effects_sum
    t = main_eor(Rules.preset("vegas_s17", decks=2, max_split_hands=2), "table")
    assert t.table_effects == () and abs(t.effects_sum) <= 1e-12
    assert t.effects == pytest.approx(e.table_effects, abs=1e-15)
