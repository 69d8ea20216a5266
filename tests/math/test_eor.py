"""Effects of removal: exact identities (a burnt card of unknown rank changes nothing) and
Griffin's betting correlation of Hi-Lo."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab import Rules
from feltlab.cli import main
from feltlab.math.eor import HI_LO, betting_correlation, main_eor, side_bet_eor
from feltlab.plugins.super_sevens import SuperSevens


def test_main_wager_effects_average_to_zero_for_a_fixed_strategy() -> None:
    # burning one card of unknown rank leaves a fixed strategy's expectation unchanged
    # (exchangeability), so the effects weighted by frequency sum to zero
    e = main_eor(Rules.preset("vegas_s17"), "table")
    assert abs(np.mean(e.effects)) < 1e-12
    # small cards help the player when removed, aces and tens hurt (Griffin, ch. 4)
    assert e.effects[4] == max(e.effects)  # the five
    assert e.effects[0] < 0 and e.effects[9] < 0
    # Griffin, The Theory of Blackjack: Hi-Lo's betting correlation is about 0.97
    assert 0.95 < e.bc_hi_lo < 0.98
    assert e.bc_integer > 0.95


def test_side_bet_effects_average_to_zero_and_sevens_matter_to_super_sevens() -> None:
    e = side_bet_eor(SuperSevens(), 6)
    assert abs(np.mean(e.effects)) < 1e-12
    assert e.effects[6] == min(e.effects)  # removing a seven hurts the player most
    assert e.best_count[6] == -1.0


def test_betting_correlation_of_a_count_with_itself_is_one() -> None:
    assert betting_correlation(HI_LO, HI_LO) == pytest.approx(1.0, abs=1e-15)
    assert np.isnan(betting_correlation([1.0] * 13, HI_LO))


def test_eor_on_the_command_line() -> None:
    out = CliRunner().invoke(
        main, ["math", "super_sevens", "--decks", "6", "--eor", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)[0]
    assert d["wager"] == "super_sevens" and set(d["effect_of_removal"]) >= {"A", "7", "K"}
    out = CliRunner().invoke(
        main, ["math", "main", "--rules", "vegas_s17", "--strategy", "table", "--eor"]
    )
    assert out.exit_code == 0, out.output
    assert "betting correlation with the wager: Hi-Lo 0.9" in out.output
