"""The rules' C form (feltlab.core_rules): every rule value has the header's code, the fields
both C structs share, and the cutting card's one depth check."""

from __future__ import annotations

from fractions import Fraction

import pytest

from feltlab import core_rules
from feltlab.errors import RulesError
from feltlab.native._core import lib
from feltlab.rules import DealerBlackjackTakes, DoubleOn, Rules, ShufflerKind, Surrender


def test_every_rule_value_has_the_headers_code() -> None:
    assert set(core_rules.DOUBLE_ON_CODES) == set(DoubleOn)
    assert set(core_rules.SURRENDER_CODES) == set(Surrender)
    assert set(core_rules.DEALER_TAKES_CODES) == set(DealerBlackjackTakes)
    assert core_rules.DOUBLE_ON_CODES[DoubleOn.NINE_TO_ELEVEN] == lib.FL_DOUBLE_HARD_9_11 == 2
    assert core_rules.SURRENDER_CODES[Surrender.EARLY] == lib.FL_SURRENDER_EARLY == 2
    assert core_rules.DEALER_TAKES_CODES[DealerBlackjackTakes.ALL] == lib.FL_TAKES_ALL == 2


def test_the_shared_fields_of_a_european_six_to_five_table() -> None:
    rules = Rules.preset("nz").replace(
        blackjack_pays=Fraction(6, 5), double_on=DoubleOn.TEN_OR_ELEVEN
    )
    f = core_rules.core_fields(rules)
    assert (f["bj_num"], f["bj_den"]) == (6, 5)
    assert f["double_on"] == lib.FL_DOUBLE_HARD_10_11 == 3
    assert f["peek"] is False  # New Zealand practice: no hole card
    assert f["enhc_takes"] == core_rules.DEALER_TAKES_CODES[rules.dealer_blackjack_takes]


def test_the_cutting_card_is_checked_in_one_place() -> None:
    six = Rules.preset("nz")  # 312 cards, the cutting card 78 from the back
    assert core_rules.cut_position(six) == 312 - 78
    assert core_rules.cut_position(six, fresh_shoe=True) == 0
    csm = six.replace(shuffler=ShufflerKind.CONTINUOUS, cutting_cards=0, cut_card_from_back=-1)
    assert core_rules.cut_position(csm) == 0
    core_rules.check_cards_behind(core_rules.MIN_BEHIND_CUT)
    with pytest.raises(RulesError, match="cut_card_from_back=25: the simulator needs at least 26"):
        core_rules.check_cards_behind(25)
    one = Rules.preset("vegas_s17").replace(decks=1, cut_card_from_back=13)
    with pytest.raises(RulesError, match="at least 26 cards behind the cutting card"):
        core_rules.cut_position(one)
    assert core_rules.deepest_penetration(52) == 0.5
    assert core_rules.deepest_penetration(312) == 0.916  # 1 - 26/312 = 0.91666..., rounded down
