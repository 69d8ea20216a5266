"""The main wager's exact distribution of the round's net result, splits included
(native/src/analyzer_dist.c through feltlab.math.main_wager), against E. Farmer's CA v7.6 (its
exact distribution for one split: blackjack_pdf, run outside the tree on the same rules)."""

import json
import math

import pytest
from click.testing import CliRunner

from feltlab import Rules
from feltlab.cli import main
from feltlab.math.main_wager import analyze_main, main_par_sheet
from feltlab.rules import DealerBlackjackTakes, DoubleOn, HoleCard

# 6 decks, S17, double any two cards, DAS, split once (2 hands), no RSA, peek, 3:2, CDZ-
FARMER_SPLIT_ONCE = Rules.preset("vegas_s17", max_split_hands=2, double_on=DoubleOn.ANY)
# Farmer's printed distribution for those rules (9 decimals)
FARMER_PDF = {
    -4.0: 0.000197803,
    -3.0: 0.001706602,
    -2.0: 0.042626779,
    -1.0: 0.434424537,
    0.0: 0.087380892,
    1.0: 0.326607276,
    1.5: 0.045322988,
    2.0: 0.059166548,
    3.0: 0.002170906,
    4.0: 0.000395670,
}


def _mean(dist: dict[float, float]) -> float:
    return sum(k * v for k, v in dist.items())


def test_split_once_distribution_and_sd_are_farmers() -> None:
    sh = main_par_sheet(FARMER_SPLIT_ONCE)
    assert sh.distribution_method == "exact" and sh.note == ""
    assert abs(sh.std_dev - 1.14654) <= 1e-5  # Farmer: 1.14654005801 (+/- 114.654005801%)
    assert abs(100 * sh.house_edge - 0.456886297) <= 1e-8
    got = {k: v for k, v in sh.distribution.items() if v > 0}
    assert set(got) == set(FARMER_PDF)
    for k, v in FARMER_PDF.items():
        assert abs(got[k] - v) <= 5.1e-10, (k, got[k], v)
    assert abs(_mean(sh.distribution) - sh.return_) <= 1e-9
    assert sum(sh.distribution.values()) == pytest.approx(1.0, abs=1e-12)


def test_hard_doubles_only_sd_is_farmers() -> None:
    sh = main_par_sheet(FARMER_SPLIT_ONCE.replace(double_on=DoubleOn.HARD))
    assert abs(sh.std_dev - 1.12413) <= 1e-5
    assert abs(_mean(sh.distribution) - sh.return_) <= 1e-9


@pytest.mark.parametrize(
    "takes",
    [
        DealerBlackjackTakes.ORIGINAL,
        DealerBlackjackTakes.ORIGINAL_AND_BUSTED,
        DealerBlackjackTakes.ALL,
    ],
)
def test_no_hole_card_split_once_is_exact_for_every_settlement(
    takes: DealerBlackjackTakes,
) -> None:
    rules = FARMER_SPLIT_ONCE.replace(
        decks=4, hole_card=HoleCard.NO_HOLE_CARD, dealer_blackjack_takes=takes
    )
    sh = main_par_sheet(rules)
    assert sh.distribution_method == "exact"
    assert abs(_mean(sh.distribution) - sh.return_) <= 1e-9
    # an all-bust split box loses both stakes whatever the dealer holds: -4 exists
    assert sh.distribution[-4.0] > 0


def test_resplit_rounds_past_the_budget_are_labelled_and_matched() -> None:
    sh = main_par_sheet(Rules.preset("vegas_s17"))  # split to 4
    d = sh.to_dict()
    assert d["distribution"]["method"] == sh.distribution_method == "approximate"
    assert "re-split" in sh.note and " pp" in sh.note
    # the approximated rounds are matched to their exact mass and expectation
    assert abs(_mean(sh.distribution) - sh.return_) <= 1e-9
    assert max(sh.distribution) == 8.0  # four doubled hands all winning
    h = sh.headline
    assert h["win"] + h["push"] + h["loss"] == pytest.approx(1.0, abs=1e-12)
    assert (
        h["player_blackjack"] == pytest.approx(sh.distribution[1.5], rel=1e-9)
        or h["player_blackjack"] > sh.distribution[1.5]
    )  # a player blackjack pushes against the dealer's
    assert math.isfinite(sh.skewness) and sh.skewness > 0


# Farmer's CA v7.6 (6 decks or 1 deck, S17 DOA DAS split to 4, no RSA, peek, 3:2), % EV
FARMER_POST_SPLIT = {
    (6, "cdz"): -0.402870236,
    (6, "cdp1"): -0.402864343,
    (6, "cdp"): -0.402861523,
    (1, "cdz"): 0.181934306,
    (1, "cdp1"): 0.183073339,
    (1, "cdp"): 0.183111744,
}


@pytest.mark.parametrize(("decks", "strategy"), sorted(FARMER_POST_SPLIT))
def test_post_split_strategies_are_farmers(decks: int, strategy: str) -> None:
    a = analyze_main(Rules.preset("vegas_s17", decks=decks), strategy)
    assert abs(100 * a.ev - FARMER_POST_SPLIT[decks, strategy]) <= 1e-6


def test_cdp1_split_once_distribution_is_exact_and_cli_takes_the_strategies() -> None:
    sh = main_par_sheet(FARMER_SPLIT_ONCE.replace(decks=1), "cdp1")
    assert sh.distribution_method == "exact"
    assert abs(_mean(sh.distribution) - sh.return_) <= 1e-9
    out = CliRunner().invoke(
        main,
        [
            "math",
            "main",
            "--rules",
            "vegas_s17",
            "--decks",
            "1",
            "--strategy",
            "cdp",
            "--format",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert d["strategy"] == "cdp"
    assert abs(100 * d["return"]["value"] - 0.183111744) <= 1e-6
    # CDP plays split hands by the count of pair cards out: its re-split rounds take the
    # matched approximation, named as such, and the mean is still the exact expectation
    assert d["distribution"]["method"] == "approximate"
    assert "CDP plays their split hands by the count of pair cards out" in d["note"]
    outcomes = {o["net"]: o["probability"] for o in d["distribution"]["outcomes"]}
    assert abs(_mean(outcomes) - d["return"]["value"]) <= 1e-9


def test_the_all_bust_term_of_a_split_to_four_hands_is_exact() -> None:
    """No hole card, the original wager only, split to 4 (issue 41): 8-8 against A and T had
    too many busting plays for the all-bust enumeration's budget, the term was left out and
    the edge labelled approximate within 1.76 pp while the distribution's mean sat 0.0010 pp
    away.  The term is now computed in full: the edge is exact and the distribution's mean
    (its re-split rounds matched to the exact split value) agrees to 1e-12 pp."""
    sh = main_par_sheet(Rules.preset("nz", max_split_hands=4))
    d = sh.to_dict()
    assert sh.house_edge_method == d["house_edge"]["method"] == "exact"
    assert "every-hand-busts" not in sh.note
    # the same bits as the enumeration of every pair's term (split or not), which took a
    # minute: the term matters where the split is played (under "original" it only lowers it)
    assert sh.house_edge == 0.0049994713029344745
    outcomes = {o["net"]: o["probability"] for o in d["distribution"]["outcomes"]}
    assert abs(_mean(outcomes) - d["return"]["value"]) * 100 < 1e-12  # pp
    assert main_par_sheet(Rules.preset("nz")).house_edge_method == "exact"


def test_an_unplayed_split_past_the_budget_labels_the_house_edge_with_its_bound() -> None:
    # "original and busted", split to 4: the term raises a split's value, so a split not
    # played is proven only where its value plus the term's bound (the share of blackjack
    # cards left) stays below the play chosen; small pairs against A and T that are not
    # proven so have too many busting plays for the unplayed split's budget
    rules = Rules.preset("nz", max_split_hands=4, dealer_blackjack_takes="original_and_busted")
    sh = main_par_sheet(rules)
    assert sh.house_edge_method == "approximate"
    # within 0.0173 pp where the 8 units a deal of the old bound said 1.06 pp
    assert "every-hand-busts" in sh.note and "house edge is within 1.73e-02 pp" in sh.note
