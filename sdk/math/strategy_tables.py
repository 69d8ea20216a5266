"""Basic strategy as tables by player total and dealer up card (:class:`StrategyTables`, the
C core's layout of :mod:`feltlab.core_rules`): :func:`strategy_tables` turns feltlab's basic
strategy (:mod:`feltlab.math.strategy`) into them, cached in memory and on disk keyed by the
rules; :class:`TablePolicy` plays the same tables in the Python round engine.  The C
simulator's rules played by them are :func:`feltlab.core_rules.simulator_rules`'s
(``simulator_rules(rules, strategy_tables(rules))``)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from feltlab import cache
from feltlab.cards import card_value
from feltlab.core_rules import (
    DOUBLE_HIT,
    DOUBLE_STAND,
    HIT,
    STAND,
    StrategyTables,
)
from feltlab.math import strategy
from feltlab.math.strategy import action_values
from feltlab.rules import Rules

if TYPE_CHECKING:
    from feltlab.engine import Decision, DecisionView

SPLIT = 4
"""The action :func:`_action` returns for a split (the pair table's 1)."""


def _code(value: int, suit: int = 0) -> int:
    """A card code of blackjack value 1..10 (10 as a ten)."""
    return (value - 1) * 4 + suit


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
        return SPLIT
    if av.double is not None and av.double > best + 1e-12:
        return DOUBLE_HIT if base == HIT else DOUBLE_STAND
    return base


STRATEGY_FORMAT = 1
"""Version of the cached strategy tables' layout (part of their cache key)."""


def _strategy_key(rules: Rules) -> str:
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
            pair[rank, up_value] = 1 if _action(rules, cards, up, allow_split=True) == SPLIT else 0
    return StrategyTables(hard, soft, pair, surr)


class TablePolicy:
    """A round-engine policy that plays :class:`StrategyTables` exactly as the C simulator
    does (the differential test's Python side).  Never insures."""

    def __init__(self, tables: StrategyTables) -> None:
        self.t = tables

    def decide(self, view: DecisionView) -> Decision:
        """The table's action for ``view``, falling back as the simulator does."""
        # start-up: the round engine only when a policy plays; `feltlab simulate` reads the
        # tables alone
        from feltlab.engine import Decision  # start-up

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
