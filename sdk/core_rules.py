"""The table rules in the C core's form: the one adapter between :class:`feltlab.Rules` (a pure
noun) and the C core's rule structs (``fl_sim_rules``, ``fl_analyzer_rules`` in
native/include/feltlab_core.h).

It owns every rule code sent to C (:data:`DOUBLE_ON_CODES`, :data:`SURRENDER_CODES`,
:data:`DEALER_TAKES_CODES`, read from the header's enums through :mod:`feltlab.native`), the
fields both structs share (:func:`core_fields`), the strategy tables' layout
(:class:`StrategyTables`, the action codes :data:`HIT` ...), the cutting card's depth check
(:data:`MIN_BEHIND_CUT`, :func:`check_cards_behind`, :func:`cut_position`,
:func:`deepest_penetration`) and the
simulator's rules (:func:`simulator_rules`).  Basic strategy itself is
:mod:`feltlab.math.strategy_tables`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.errors import RulesError
from feltlab.rules import DealerBlackjackTakes, DoubleOn, HoleCard, Rules, ShufflerKind, Surrender

DOUBLE_ON_CODES: dict[DoubleOn, int] = {
    DoubleOn.ANY: native.DOUBLE_ANY,
    DoubleOn.HARD: native.DOUBLE_HARD,
    DoubleOn.NINE_TO_ELEVEN: native.DOUBLE_HARD_9_11,
    DoubleOn.TEN_OR_ELEVEN: native.DOUBLE_HARD_10_11,
}
"""``Rules.double_on`` -> the header's ``fl_double_on``."""
SURRENDER_CODES: dict[Surrender, int] = {
    Surrender.NONE: native.SURRENDER_NONE,
    Surrender.LATE: native.SURRENDER_LATE,
    Surrender.EARLY: native.SURRENDER_EARLY,
}
"""``Rules.surrender`` -> the header's ``fl_surrender``."""
DEALER_TAKES_CODES: dict[DealerBlackjackTakes, int] = {
    DealerBlackjackTakes.ORIGINAL: native.TAKES_ORIGINAL,
    DealerBlackjackTakes.ORIGINAL_AND_BUSTED: native.TAKES_ORIGINAL_AND_BUSTED,
    DealerBlackjackTakes.ALL: native.TAKES_ALL,
}
"""``Rules.dealer_blackjack_takes`` -> the header's ``fl_dealer_takes``."""

HIT, STAND, DOUBLE_HIT, DOUBLE_STAND = (
    native.HIT,
    native.STAND,
    native.DOUBLE_ELSE_HIT,
    native.DOUBLE_ELSE_STAND,
)
"""The strategy tables' action codes (0 hit, 1 stand, 2 double else hit, 3 double else
stand)."""
DEFAULT_STAKE = 1000
"""Cents on the main wager per simulated round (blackjack at 3 to 2 pays exactly 1500)."""
MIN_BEHIND_CUT = 26
"""Cards the simulator needs behind the cutting card so that no round runs out of cards
(native/src/sim.c refuses a round that would: ``CoreError`` "ran out of cards")."""


@dataclass(frozen=True)
class StrategyTables:
    """A strategy as the C core reads it: ``hard``/``soft``: ``(32, 11)`` uint8 actions by
    [total][up value 1..10] (:data:`HIT`, :data:`STAND`, :data:`DOUBLE_HIT`,
    :data:`DOUBLE_STAND`); ``pair``: ``(13, 11)`` uint8 by [rank index][up], 1 to split;
    ``surr``: ``(32, 11)`` uint8, 1 to surrender a hard two-card total (when the rules allow
    it; a pair the ``pair`` table splits is split)."""

    hard: npt.NDArray[np.uint8]
    soft: npt.NDArray[np.uint8]
    pair: npt.NDArray[np.uint8]
    surr: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros((32, 11), dtype=np.uint8))


def core_fields(rules: Rules) -> dict[str, Any]:
    """The table rules as the C core reads them, the fields its simulator's and its
    analyzer's rules share (``fl_sim_rules``, ``fl_analyzer_rules``): h17, peek, enhc_takes,
    bj_num, bj_den, double_on, double_after_split, max_hands, resplit_aces,
    split_aces_one_card, each rule value encoded by the header's enums."""
    return {
        "h17": rules.dealer_hits_soft_17,
        "peek": rules.hole_card is HoleCard.PEEK,
        "enhc_takes": DEALER_TAKES_CODES[rules.dealer_blackjack_takes],
        "bj_num": rules.blackjack_pays.numerator,
        "bj_den": rules.blackjack_pays.denominator,
        "double_on": DOUBLE_ON_CODES[rules.double_on],
        "double_after_split": rules.double_after_split,
        "max_hands": rules.max_split_hands,
        "resplit_aces": rules.resplit_aces,
        "split_aces_one_card": rules.split_aces_one_card,
    }


def deepest_penetration(cards: int) -> float:
    """The deepest penetration (fraction of a ``cards``-card shoe dealt before the cutting
    card, rounded down to 1/1000) that leaves :data:`MIN_BEHIND_CUT` cards behind it."""
    return math.floor(1000 * (1 - MIN_BEHIND_CUT / cards)) / 1000


def cut_position(rules: Rules, *, fresh_shoe: bool = False) -> int:
    """Cards dealt after which the simulator shuffles (``fl_sim_rules.cut_position``): 0 for
    a fresh shoe every round (``fresh_shoe``, where a combinatorial analysis applies exactly)
    or a continuous shuffler (modelled as an ideal one), else the cutting card's place.
    Raises :class:`RulesError` for a cutting card fewer than :data:`MIN_BEHIND_CUT` cards
    from the back: a round could run out of cards."""
    if fresh_shoe or rules.shuffler is ShufflerKind.CONTINUOUS:
        return 0
    check_cards_behind(rules.cut_card_from_back)
    return rules.cards - rules.cut_card_from_back


def check_cards_behind(behind: int) -> None:
    """The cutting card's depth check: raises :class:`RulesError` when ``behind`` (cards
    behind the cutting card) is under :data:`MIN_BEHIND_CUT`, so that a round could run out
    of cards."""
    if behind < MIN_BEHIND_CUT:
        raise RulesError(
            f"cut_card_from_back={behind}: the simulator needs at least "
            f"{MIN_BEHIND_CUT} cards behind the cutting card so no round runs out of cards"
        )


def simulator_rules(
    rules: Rules,
    tables: StrategyTables,
    *,
    stake: int = DEFAULT_STAKE,
    fresh_shoe: bool = False,
) -> native.SimRules:
    """The C simulator's :class:`feltlab.native.SimRules` for ``rules`` played by ``tables``
    (``stake`` cents on the main wager; ``fresh_shoe``: see :func:`cut_position`).  Raises
    :class:`RulesError` for a cutting card too near the back for a round to finish."""
    return native.SimRules(
        decks=rules.decks,
        **core_fields(rules),
        cut_position=cut_position(rules, fresh_shoe=fresh_shoe),
        stake=stake,
        hard=tables.hard,
        soft=tables.soft,
        pair=tables.pair,
        surrender=SURRENDER_CODES[rules.surrender],
        surr=tables.surr,
    )
