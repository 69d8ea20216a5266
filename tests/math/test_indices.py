"""Hi-Lo indices from the analyzer on the expected shoe at each true count: the composition's
hand-checked counts, the exact insurance index, and Schlesinger's published Illustrious 18
(Blackjack Attack, 6 decks, S17, DAS) within one true count after rounding."""

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from feltlab import Rules
from feltlab.cli import main
from feltlab.math.eor import HI_LO
from feltlab.math.indices import (
    ILLUSTRIOUS_18,
    IndexTable,
    grid_true_count,
    hilo_composition,
    hilo_indices,
)
from feltlab.math.strategy_tables import strategy_tables
from feltlab.native.analyzer import DOUBLE, HIT, SPLIT, STAND


@pytest.fixture(scope="module")
def vegas() -> IndexTable:
    return hilo_indices(Rules.preset("vegas_s17"), rules_name="vegas_s17")


def test_the_expected_shoe_at_a_count_has_that_count() -> None:
    # 3 decks left (12 quarter decks) at shift 2: 14 aces, 10 of each of 2..6, 12 of 7..9,
    # 56 tens: 156 cards; the cards seen of 6 decks hold running count 20, true count 20 / 3
    c = hilo_composition(12, 2)
    assert c == (14, 10, 10, 10, 10, 10, 12, 12, 12, 56)
    assert sum(c) == 156
    seen = [24 - n for n in c[:9]] + [96 - c[9]]
    assert sum(t * s for t, s in zip(HI_LO[:10], seen, strict=True)) == 20
    assert grid_true_count(12, 2) == Fraction(20, 3)
    with pytest.raises(ValueError, match="empties"):
        hilo_composition(4, 5)


def test_insurance_index_is_exact_from_the_ten_density(vegas: IndexTable) -> None:
    ins = vegas.indices[0]
    assert ins.departure.name == "insurance"
    # at true count 55/18 with 3 decks left, tens are 48 + 0.3 * 3 * 55/18 * 4 ... exactly a
    # third of the 155 cards behind the dealer's ace: 3 p - 1 = 0
    tens = 48 + Fraction(55, 18) * 3 * Fraction(4, 10)
    assert 3 * tens / 155 - 1 == 0
    assert ins.exact == Fraction(55, 18)
    assert ins.rounded == 3 == ins.departure.published


def test_generated_indices_match_schlesinger_within_one(vegas: IndexTable) -> None:
    assert len(vegas.indices) == 18
    assert vegas.decks_remaining == 3 and vegas.step == Fraction(10, 3)
    for x in vegas.indices:
        assert x.index is not None and x.rounded is not None, x.departure.name
        assert abs(x.rounded - x.departure.published) <= 1, (x.departure.name, x.index)
        # the grid resolves the crossing: cubic and linear interpolation agree
        assert x.linear is not None and abs(x.index - x.linear) < 0.1
    # the departures where the published and generated indices agree exactly
    agree = {x.departure.name for x in vegas.indices if x.difference == 0}
    assert {"15 v T", "T,T v 5", "12 v 2", "12 v 4", "12 v 5", "12 v 6", "13 v 2"} <= agree


def test_index_sign_agrees_with_basic_strategy(vegas: IndexTable) -> None:
    # a positive index means the low-count play is basic strategy on a full shoe
    t = strategy_tables(Rules.preset("vegas_s17"))
    plays = {0: HIT, 1: STAND, 2: DOUBLE, 3: DOUBLE}
    for x in vegas.indices[1:]:
        d = x.departure
        up = d.up + 1
        a, b = d.hands[0]
        total = a + b + 2
        if d.high == SPLIT:
            basic = SPLIT if t.pair[10, up] else STAND
        else:
            basic = plays[int(t.hard[total, up])]
        assert x.index is not None
        assert basic == (d.low if x.index > 0 else d.high), d.name


def test_rules_that_forbid_a_play_and_bad_depths_are_named() -> None:
    nz_nosplit = Rules.preset("nz", max_split_hands=1)
    tens = tuple(d for d in ILLUSTRIOUS_18 if d.name.startswith("T,T"))
    table = hilo_indices(nz_nosplit, decks_remaining=2, max_count=5, departures=tens)
    assert [x.bound for x in table.indices] == ["not allowed", "not allowed"]
    with pytest.raises(ValueError, match="multiple of 1/4"):
        hilo_indices(nz_nosplit, decks_remaining=2.3)
    with pytest.raises(ValueError, match="whole shoe"):
        hilo_indices(nz_nosplit, decks_remaining=6)
    with pytest.raises(ValueError, match="raise max_count"):
        hilo_indices(nz_nosplit, decks_remaining=1, max_count=3)


def test_cli_prints_the_indices_as_json_and_refuses_a_bad_depth() -> None:
    r = CliRunner().invoke(
        main,
        [
            "indices",
            "--rules",
            "nz",
            "--decks-remaining",
            "2",
            "--max-count",
            "6",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["rules"]["hole_card"] == "no_hole_card" and doc["grid_step"] == 5.0
    assert doc["indices"][0]["exact"] == "35/12"  # 40 * 7 / (12 * 8)
    bad = CliRunner().invoke(main, ["indices", "--decks-remaining", "x"])
    assert bad.exit_code == 2 and "not a number of decks" in bad.output
    pen = CliRunner().invoke(main, ["indices", "--penetration", "0.8"])
    assert pen.exit_code == 2 and "--decks-remaining" in pen.output


def test_a_single_deck_game_has_a_coarse_grid_and_still_an_exact_insurance_index() -> None:
    # half a deck left: the expected shoe exists every 20 true counts (one ace and four
    # tens in, one of each 2..6 out); the default reach widens to two steps
    t = hilo_indices(Rules.preset("vegas_s17", decks=1), departures=ILLUSTRIOUS_18[:2])
    # the shoe at -40 (no ace or ten, 26 cards 2..9) could run out in a round split to 4
    # hands (its cards but the 4 highest hold 94 pips, within 4 * 20 + 16): not analysed
    assert t.step == 20 and t.max_count == 40 and t.analyses == 4
    # 26 cards: at 5/3 the tens are 8 + 4 * (5/3) / 20 = 25/3, a third of the 25 behind the ace
    assert t.indices[0].exact == Fraction(5, 3)
    # at -40 no ten is left to be the up card: that grid point drops out of 16 v T
    assert [g[0] for g in t.indices[1].gains] == [-20.0, 0.0, 20.0, 40.0]


def test_a_coarse_grid_gets_a_caveat_line_and_json_field(vegas: IndexTable) -> None:
    # 6 decks, 3 left: step 10/3, the crossings within 0.5 of each other: no caveat
    assert vegas.step == Fraction(10, 3) and vegas.crossing_spread() <= 0.5
    assert vegas.caveat() is None
    # one deck, half left: step 20; the caveat names the step and the largest spread
    r = CliRunner().invoke(main, ["indices", "--rules", "vegas_s17", "--decks", "1"])
    assert r.exit_code == 0, r.output
    assert "caveat: rough indices: grid step 20 true counts at 0.5 decks remaining" in r.output
    j = CliRunner().invoke(main, ["indices", "--rules", "vegas_s17", "--decks", "1", "--json"])
    doc = json.loads(j.output)
    spread = max(
        abs(x["index"] - x["linear"])
        for x in doc["indices"]
        if x["index"] is not None and x["exact"] is None
    )
    assert doc["crossing_spread"] == spread and spread > 0.5
    assert doc["caveat"].startswith("rough indices: grid step 20 true counts")
    assert f"differ by up to {spread:.2f}" in doc["caveat"]
