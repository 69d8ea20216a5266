"""Basic-strategy tables for the C round simulator (:mod:`feltlab.simulation.run`):
:func:`strategy_tables` turns feltlab's basic strategy
(sdk/math/strategy.py) into tables by player total and dealer up card, cached in memory and on disk
keyed by the rules; :class:`TablePolicy` plays the same tables in the Python round engine;
:func:`sim_rules` builds the C simulator's rules."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.cards import card_value
from feltlab.engine import Decision, DecisionView
from feltlab.errors import RulesError
from feltlab.math.strategy import action_values
from feltlab.rules import (
    Rules,
    ShufflerKind,
)

HIT, STAND, DOUBLE_HIT, DOUBLE_STAND = (
    native.HIT,
    native.STAND,
    native.DOUBLE_ELSE_HIT,
    native.DOUBLE_ELSE_STAND,
)
ROLE_COLUMNS = {"P1": 0, "P2": 1, "D1": 2, "P3": 3, "D2": 4}
"""Columns of the simulator's initial cards for each card role of a wager."""
DEFAULT_STAKE = 1000
"""Cents on the main wager per round (blackjack at 3 to 2 pays exactly 1500)."""
MIN_BEHIND_CUT = 26


def _code(value: int, suit: int = 0) -> int:
    """A card code of blackjack value 1..10 (10 as a ten)."""
    return (value - 1) * 4 + suit


@dataclass(frozen=True)
class StrategyTables:
    """``hard``/``soft``: ``(32, 11)`` uint8 actions by [total][up value 1..10] (0 hit, 1 stand,
    2 double else hit, 3 double else stand); ``pair``: ``(13, 11)`` uint8, 1 to split;
    ``surr``: ``(32, 11)`` uint8, 1 to surrender a hard two-card total (when the rules allow
    it; a pair the ``pair`` table splits is split)."""

    hard: npt.NDArray[np.uint8]
    soft: npt.NDArray[np.uint8]
    pair: npt.NDArray[np.uint8]
    surr: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros((32, 11), dtype=np.uint8))


def _surrenders(rules: Rules, cards: tuple[int, ...], up: int) -> bool:
    av = action_values(rules, cards, up)
    if av.surrender is None:
        return False
    others = [av.stand, av.hit] + ([av.double] if av.double is not None else [])
    return av.surrender > max(others) + 1e-12


def _action(rules: Rules, cards: tuple[int, ...], up: int, allow_split: bool) -> int:
    av = action_values(rules, cards, up)
    best = max(av.stand, av.hit)
    base = HIT if av.hit > av.stand + 1e-12 else STAND
    if av.split is not None and allow_split and av.split > max(best, av.double or -9) + 1e-12:
        return 4
    if av.double is not None and av.double > best + 1e-12:
        return DOUBLE_HIT if base == HIT else DOUBLE_STAND
    return base


STRATEGY_FORMAT = 1
"""Version of the cached strategy tables' layout (part of their cache key)."""


def _strategy_key(rules: Rules) -> str:
    import inspect

    from feltlab import cache
    from feltlab.math import strategy

    try:
        source = inspect.getsource(strategy) + inspect.getsource(compute_strategy_tables)
    except OSError:  # no source to key on: never reuse a cached table
        source = str(time.time_ns())
    return cache.digest("strategy", STRATEGY_FORMAT, repr(rules), cache.digest(source))


@lru_cache(maxsize=64)
def strategy_tables(rules: Rules) -> StrategyTables:
    """:func:`compute_strategy_tables` of ``rules``, cached in memory and on disk
    (``feltlab.cache``, kind ``strategy``) under a key of the rules' every field and the
    source of the strategy code, so ``feltlab simulate`` does not recompute it at each
    start."""
    from feltlab import cache

    key = _strategy_key(rules)
    arr = cache.load("strategy", key)
    if arr is not None and arr.shape == (4, 32, 11):
        return StrategyTables(arr[0].copy(), arr[1].copy(), arr[2, :13].copy(), arr[3].copy())
    t = compute_strategy_tables(rules)
    packed = np.zeros((4, 32, 11), dtype=np.uint8)
    packed[0], packed[1], packed[2, :13], packed[3] = t.hard, t.soft, t.pair, t.surr
    cache.store("strategy", key, packed)
    return t


def compute_strategy_tables(rules: Rules) -> StrategyTables:
    """Basic strategy for ``rules`` as tables: each cell is the best action for a
    representative two-card hand of that total (hard t: two different non-pair values, e.g.
    2 + (t - 2); soft t: ace + (t - 11); soft 12: ace + ace, not split) against the up card.
    Hard totals from 21 and soft 21 stand.  Multi-card hands use their total's cell (a double
    then falls back to hit or stand)."""
    hard = np.full((32, 11), STAND, dtype=np.uint8)
    soft = np.full((32, 11), STAND, dtype=np.uint8)
    pair = np.zeros((13, 11), dtype=np.uint8)
    surr = np.zeros((32, 11), dtype=np.uint8)
    for up_value in range(1, 11):
        up = _code(up_value, 1)
        for t in range(4, 21):
            if t == 4:
                cards = (_code(2), _code(2, 2))  # only 2 + 2 makes a two-card hard 4
            else:
                a = 2 if t - 2 != 2 else 3
                b = t - a
                if b > 10:
                    a, b = t - 10, 10
                cards = (_code(a), _code(b, 2))
            act = _action(rules, cards, up, allow_split=False)
            hard[t, up_value] = act
            surr[t, up_value] = _surrenders(rules, cards, up)
        for t in range(12, 21):
            cards = (_code(1), _code(t - 11, 2)) if t > 12 else (_code(1), _code(1, 2))
            soft[t, up_value] = _action(rules, cards, up, allow_split=False)
        for rank in range(13):
            cards = (rank * 4, rank * 4 + 2)
            pair[rank, up_value] = 1 if _action(rules, cards, up, allow_split=True) == 4 else 0
    return StrategyTables(hard, soft, pair, surr)


class TablePolicy:
    """A round-engine policy that plays :class:`StrategyTables` exactly as the C simulator
    does (the differential test's Python side).  Never insures."""

    def __init__(self, tables: StrategyTables) -> None:
        self.t = tables

    def decide(self, view: DecisionView) -> Decision:
        """The table's action for ``view``, falling back as the simulator does."""
        cards = view.cards
        up = card_value(view.dealer_up)
        if len(cards) == 2 and Decision.SPLIT in view.legal and self.t.pair[cards[0] >> 2, up]:
            return Decision.SPLIT
        hard = sum(card_value(c) for c in cards)
        soft = any((c >> 2) == 0 for c in cards) and hard + 10 <= 21
        total = hard + 10 if soft else hard
        if Decision.SURRENDER in view.legal and not soft and self.t.surr[total, up]:
            return Decision.SURRENDER
        a = int((self.t.soft if soft else self.t.hard)[total, up])
        if a in (DOUBLE_HIT, DOUBLE_STAND):
            if Decision.DOUBLE in view.legal:
                return Decision.DOUBLE
            a = HIT if a == DOUBLE_HIT else STAND
        if a == HIT and Decision.HIT in view.legal:
            return Decision.HIT
        return Decision.STAND

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        """0: never insures."""
        return 0


def sim_rules(
    rules: Rules,
    *,
    tables: StrategyTables | None = None,
    stake: int = DEFAULT_STAKE,
    fresh_shoe: bool = False,
) -> native.SimRules:
    """The C simulator's :class:`feltlab.native.SimRules` for ``rules``.  ``fresh_shoe``
    deals every round from a freshly shuffled shoe (where a combinatorial analysis applies
    exactly); a continuous shuffler is modelled the same way (an ideal one).  Raises
    :class:`RulesError` for a cutting card too near the back for a round to finish."""
    t = tables or strategy_tables(rules)
    size = rules.decks * 52
    if fresh_shoe or rules.shuffler is ShufflerKind.CONTINUOUS:
        cut = 0
    else:
        cut = size - rules.cut_card_from_back
        if rules.cut_card_from_back < MIN_BEHIND_CUT:
            raise RulesError(
                f"cut_card_from_back={rules.cut_card_from_back}: the simulator needs at least "
                f"{MIN_BEHIND_CUT} cards behind the cutting card so no round runs out of cards"
            )
    return native.SimRules(
        decks=rules.decks,
        **rules.core_fields(),
        cut_position=cut,
        stake=stake,
        hard=t.hard,
        soft=t.soft,
        pair=t.pair,
        surrender=native.rule_code("surrender", rules.surrender),
        surr=t.surr,
    )
