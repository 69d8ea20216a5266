"""Regressions from a reviewer's hand checks of the SDK."""

from fractions import Fraction
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from feltlab import Rules
from feltlab.cards import card_code as c
from feltlab.engine import ScriptedPolicy, Table, play_round
from feltlab.errors import IllegalDecisionError, RulesError, WagerError
from feltlab.math.parsheet import par_sheet
from feltlab.plugins.main import Main
from feltlab.rules import DealerBlackjackTakes
from feltlab.settlement import settle_box_hands
from feltlab.shoe import FixedCards
from feltlab.wagers import Paytable, WagerType

DEALER_BJ = [c("TC"), c("AC")]


def _cards(text: str) -> FixedCards:
    return FixedCards([c(x) for x in text.split()])


BUSTED = ([c("8S"), c("9H"), c("7D")], False, True)  # a split 8 that drew to 24
STANDING = ([c("8D"), c("TH")], False, True)  # a split 8 standing on 18


@pytest.mark.parametrize(
    ("takes", "expected"),
    [
        (DealerBlackjackTakes.ORIGINAL_AND_BUSTED, -2000),  # original once + the busted hand
        (DealerBlackjackTakes.ORIGINAL, -1000),  # the original wager only, once per box
        (DealerBlackjackTakes.ALL, -2000),
    ],
)
def test_dealer_blackjack_takes_the_same_whichever_split_hand_busted(
    takes: DealerBlackjackTakes, expected: int
) -> None:
    rules = Rules.preset("nz", dealer_blackjack_takes=takes)
    first_busts = settle_box_hands(rules, 1000, [BUSTED, STANDING], DEALER_BJ)
    second_busts = settle_box_hands(rules, 1000, [STANDING, BUSTED], DEALER_BJ)
    assert sum(h.net for h in first_busts) == expected
    assert sum(h.net for h in second_busts) == expected


def test_a_busted_double_is_lost_whole_under_original_and_busted() -> None:
    rules = Rules.preset("nz", dealer_blackjack_takes=DealerBlackjackTakes.ORIGINAL_AND_BUSTED)
    doubled_bust = ([c("7S"), c("5D"), c("TH")], True, False)
    (h,) = settle_box_hands(rules, 1000, [doubled_bust], DEALER_BJ)
    assert h.net == -2000 and "busted" in h.rule


def test_scripted_policy_names_an_unknown_decision() -> None:
    rules = Rules.preset("nz")
    table = Table(rules, _cards("5H 6D 7C 9S 8C 10C"), [Main()], boxes=1)
    with pytest.raises(IllegalDecisionError, match=r"'fold' .* use one of hit, stand"):
        play_round(table, [(0, "p", "main", 1000)], ScriptedPolicy(["fold"]))


def test_rules_refuse_unknown_fields_and_unchippable_limits() -> None:
    with pytest.raises(RulesError, match="no field decks_"):
        Rules.preset("nz", decks_=6)
    with pytest.raises(RulesError, match="multiples of wager_unit=100"):
        Rules.preset("nz", min_wager=1050)


def test_numpy_integer_stakes_are_cents() -> None:
    rules = Rules.preset("nz")
    table = Table(rules, _cards("10H 6D 9C 9S 8C"), [Main()], boxes=1)
    result = play_round(table, [(0, "p", "main", np.int64(1000))], ScriptedPolicy(["stand"]))  # type: ignore[list-item]
    assert result.net() == 1000  # 19 v 6, 9, 8 = 23: the dealer busts
    fresh = Table(rules, FixedCards([1] * 10), [Main()], boxes=1)
    fresh.begin_round()
    with pytest.raises(WagerError, match="whole number of cents"):
        fresh.place(0, "p", "main", 10.5)  # type: ignore[arg-type]


class _Broken(WagerType):
    name = "broken_probe"
    title = "Broken probe"
    card_roles = ("P1", "P2")
    paytables: ClassVar = {"p": Paytable("p", ("lose", "win"), (Fraction(-1), Fraction(1)))}

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        return np.full(len(cards), 7, np.uint8)


def test_live_settlement_names_a_classifier_out_of_its_paytable() -> None:
    from feltlab.engine import Table as T

    rules = Rules.preset("nz")

    table = T(
        rules,
        _cards("10H 6D 9C 9S 8C"),
        [Main(), _Broken()],
        boxes=1,
    )
    with pytest.raises(WagerError, match=r"broken_probe\.classify returned outcome 7"):
        play_round(
            table,
            [(0, "p", "main", 1000), (0, "p", "broken_probe", 100)],
            ScriptedPolicy(["stand"]),
        )


def test_par_sheet_refuses_float_pays() -> None:
    class Floaty(_Broken):
        name = "floaty"
        paytables: ClassVar = {"p": Paytable("p", ("lose", "win"), (Fraction(-1), 1.5))}  # type: ignore[arg-type]

        def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
            return np.zeros(len(cards), np.uint8)

    with pytest.raises(WagerError, match=r"Fraction\(21, 2\), not 10.5"):
        par_sheet(Floaty(), 6)
