"""feltlab.Rules: validation cites the rule broken; presets hold the documented values."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from feltlab import DealerBlackjackTakes, DoubleOn, HoleCard, Rules, ShufflerKind, Surrender
from feltlab.errors import RulesError


def test_nz_preset_is_the_observed_nz_practice() -> None:
    r = Rules.preset("nz")  # ../shared/rules/README.md, observed NZ practice
    assert (r.decks, r.dealer_hits_soft_17, r.hole_card) == (6, False, HoleCard.NO_HOLE_CARD)
    assert r.dealer_blackjack_takes is DealerBlackjackTakes.ORIGINAL
    assert r.blackjack_pays == Fraction(3, 2)  # rule 5.4
    assert (r.double_on, r.double_after_split, r.max_split_hands) == (DoubleOn.HARD, True, 3)
    assert (r.resplit_aces, r.split_aces_one_card) == (False, True)
    assert r.cut_card_from_back == 78  # a quarter of 312 cards


def test_vegas_presets_differ_only_in_soft_17() -> None:
    s17, h17 = Rules.preset("vegas_s17"), Rules.preset("vegas_h17")
    assert (s17.hole_card, s17.double_on, s17.max_split_hands) == (HoleCard.PEEK, DoubleOn.ANY, 4)
    assert not s17.dealer_hits_soft_17 and h17.dealer_hits_soft_17
    assert s17.replace(dealer_hits_soft_17=True) == h17


@pytest.mark.parametrize(
    ("changes", "cites"),
    [
        ({"decks": 3}, "rule 3.3(a)"),
        ({"decks": 9}, "rule 3.3(a)"),
        ({"decks": 4, "super_sevens": True}, "rule 3.3(a) plays Super Sevens with 6 to 8"),
        ({"cut_card_from_back": 157}, "rule 7.6(a)"),
        ({"cutting_cards": 3}, "rule 3.3(b)"),
        ({"shuffler": "continuous", "cutting_cards": 1}, "rule 7.6(b)"),
        ({"hole_card": "sideways"}, "hole_card='sideways'"),
        ({"max_split_hands": 5}, "max_split_hands=5"),
        ({"min_wager": 600_000}, "table limits"),
    ],
)
def test_invalid_rules_raise_naming_the_rule(changes: dict[str, Any], cites: str) -> None:
    with pytest.raises(RulesError, match=cites.replace("(", r"\(").replace(")", r"\)")):
        Rules.preset("nz", **changes)


def test_half_way_from_the_back_is_the_last_allowed_cutting_card_position() -> None:
    assert Rules(decks=6, cut_card_from_back=156).cut_card_from_back == 156  # rule 7.6(a)


def test_continuous_shuffler_has_no_cutting_card() -> None:
    r = Rules.preset("nz", shuffler="continuous", cutting_cards=0)
    assert r.shuffler is ShufflerKind.CONTINUOUS and r.cut_card_from_back == 0  # rule 7.6(b)


def test_rules_round_trip_through_a_dict_and_reject_unknown_fields() -> None:
    r = Rules.preset("vegas_h17")
    assert Rules.from_dict(r.to_dict()) == r
    assert r.to_dict()["blackjack_pays"] == "3:2"
    with pytest.raises(RulesError, match="unknown Rules fields"):
        Rules.from_dict({"even_money": True})
    with pytest.raises(RulesError, match="surrender=True is not one of 'none', 'late', 'early'"):
        Rules.from_dict({"surrender": True})
    assert Rules.from_dict({"surrender": "late"}).surrender is Surrender.LATE


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(RulesError, match="nz"):
        Rules.preset("atlantis")
