"""Effect of removal (EoR): the change in a wager's return when one card of a rank is removed
from a full shoe, the best linear count it implies, and that count's betting correlation with
Hi-Lo (P. Griffin, "The Theory of Blackjack", ch. 4 and 5: the betting correlation of a
point count is the correlation between its tags and the wager's effects of removal over the
13 ranks, each rank equally frequent).

Main wager: the combinatorial analyzer (native/src/analyzer.c) on the shoe less one card
(ten-valued ranks share one effect).  Card-decided side bets: exact enumeration of the
wager's card tuples (as :mod:`feltlab.math.parsheet`), weighted by the composition less one card
of each code; a rank's effect is the mean over its four suits.  Returns and effects are per
unit wagered.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.cards import RANK_LETTERS
from feltlab.errors import WagerError
from feltlab.math.main_wager import Strategy, analyze_main
from feltlab.math.parsheet import code_tuples, offered_mask
from feltlab.native.analyzer import shoe_counts
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS, Rules
from feltlab.wagers import WagerType

HI_LO = (-1, 1, 1, 1, 1, 1, 0, 0, 0, -1, -1, -1, -1)
"""Hi-Lo tags by rank A, 2..9, T, J, Q, K (H. Dubner, 1963): their one home, the baseline of
every betting correlation here and the tags of :data:`feltlab.math.counts.BUILTIN`'s
``hilo``."""


def betting_correlation(effects: npt.ArrayLike, tags: npt.ArrayLike) -> float:
    """Correlation of a count's ``tags`` with the ``effects`` of removal over the 13 ranks
    (both centred); NaN when either is constant."""
    e = np.asarray(effects, dtype=np.float64)
    t = np.asarray(tags, dtype=np.float64)
    e, t = e - e.mean(), t - t.mean()
    den = math.sqrt(float((e * e).sum()) * float((t * t).sum()))
    return float((e * t).sum() / den) if den > 0 else math.nan


@dataclass(frozen=True)
class EffectOfRemoval:
    """``base``: the wager's return off the full shoe; ``effects``: the change in return per
    card of each rank removed (A, 2..9, T, J, Q, K); ``best_count``: the best linear count's
    tags (the effects scaled so the largest magnitude is 1; betting correlation 1 by
    definition); ``best_count_integer``: those tags rounded to -2..2 with their betting
    correlation ``bc_integer``; ``bc_hi_lo``: Hi-Lo's betting correlation with the wager.

    ``strategy``: what is held fixed across the compositions: "cards" (a card-decided wager:
    no decision), "table" (the main wager's total-dependent tables, the same play for every
    composition: the effects then sum to zero over the 13 ranks, since removing a card at
    random leaves the return unchanged on average) or "cdz" (CDZ-, re-optimised for each
    composition: the effects do not sum to zero, each removal also buys a better strategy).
    "cdp1" and "cdp" likewise.  ``effects_sum``: the sum of ``effects`` over the 13 ranks.
    ``table_effects``: for "cdz", "cdp1" and "cdp", the table strategy's effects beside
    (empty otherwise)."""

    wager: str
    decks: int
    base: float
    effects: tuple[float, ...]
    best_count: tuple[float, ...]
    best_count_integer: tuple[int, ...]
    bc_integer: float
    bc_hi_lo: float
    strategy: str = "cards"
    table_effects: tuple[float, ...] = ()

    @property
    def effects_sum(self) -> float:
        """Sum of the effects over the 13 ranks (each rank equally frequent)."""
        return float(sum(self.effects))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "wager": self.wager,
            "decks": self.decks,
            "return": {"value": self.base},
            "effect_of_removal": dict(zip(RANK_LETTERS, self.effects, strict=True)),
            "best_count": dict(zip(RANK_LETTERS, self.best_count, strict=True)),
            "best_count_integer": dict(zip(RANK_LETTERS, self.best_count_integer, strict=True)),
            "bc_best_count_integer": None if math.isnan(self.bc_integer) else self.bc_integer,
            "bc_hi_lo": None if math.isnan(self.bc_hi_lo) else self.bc_hi_lo,
            "strategy": self.strategy,
            "strategy_note": STRATEGY_NOTES[self.strategy],
            "effects_sum": self.effects_sum,
            "table_effect_of_removal": dict(zip(RANK_LETTERS, self.table_effects, strict=True))
            if self.table_effects
            else None,
        }


STRATEGY_NOTES = {
    "cards": "a card-decided wager: no decision; the effects sum to zero over the ranks",
    "table": "the table strategy is held fixed for every composition: the effects sum to "
    "zero over the ranks",
    "cdz": "CDZ- is re-optimised for each composition: the effects do not sum to zero (each "
    "removal also buys a better strategy); the table strategy's effects, held fixed, beside",
    "cdp1": "CDP1 is re-optimised for each composition: the effects do not sum to zero (each "
    "removal also buys a better strategy); the table strategy's effects, held fixed, beside",
    "cdp": "CDP is re-optimised for each composition: the effects do not sum to zero (each "
    "removal also buys a better strategy); the table strategy's effects, held fixed, beside",
}
"""What each ``EffectOfRemoval.strategy`` holds fixed, as printed."""


def _finish(
    wager: str, decks: int, base: float, effects: list[float], strategy: str = "cards"
) -> EffectOfRemoval:
    e = np.asarray(effects)
    c = e - e.mean()
    scale = float(np.abs(c).max())
    best = tuple(float(x / scale) for x in c) if scale > 0 else (0.0,) * 13
    integer = tuple(round(2 * x) for x in best)
    return EffectOfRemoval(
        wager,
        decks,
        base,
        tuple(float(x) for x in e),
        best,
        integer,
        betting_correlation(e, integer),
        betting_correlation(e, HI_LO),
        strategy,
    )


def _main_effects(rules: Rules, strategy: str) -> tuple[float, list[float]]:
    full = shoe_counts(rules.decks)
    base = analyze_main(rules, strategy, full).ev
    by_value = []
    for v in range(10):
        counts = tuple(n - (i == v) for i, n in enumerate(full))
        by_value.append(analyze_main(rules, strategy, counts).ev - base)
    return base, [by_value[min(r, 9)] for r in range(13)]


def main_eor(rules: Rules, strategy: str = "cdz") -> EffectOfRemoval:
    """The main wager's effects of removal under ``rules`` (analyzer, ``strategy`` "cdz",
    "cdp1" or "cdp" re-optimised for each composition, with the fixed "table" strategy's
    effects beside in ``table_effects``, or "table" alone).  Any deck count the rules allow
    (1 to 8)."""
    base, effects = _main_effects(rules, strategy)
    e = _finish("main", rules.decks, base, effects, strategy)
    if strategy != Strategy.TABLE:
        _, table = _main_effects(rules, Strategy.TABLE)
        e = dataclasses.replace(e, table_effects=tuple(float(x) for x in table))
    return e


def _weights(tuples: npt.NDArray[np.uint8], counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    n, k = tuples.shape
    w = np.ones(n, dtype=np.int64)
    for i in range(k):
        same = np.zeros(n, dtype=np.int64)
        for j in range(i):
            same += tuples[:, j] == tuples[:, i]
        w *= np.maximum(counts[tuples[:, i]] - same, 0)
    return w


def side_bet_eor(wager: WagerType, decks: int) -> EffectOfRemoval:
    """A card-decided wager's effects of removal for a ``decks``-deck shoe (1..8).  Raises
    :class:`WagerError` for a wager decided by play."""
    if not ANY_MIN_DECKS <= decks <= MAX_DECKS:
        raise WagerError(f"decks must be {ANY_MIN_DECKS}..{MAX_DECKS}, got {decks}")
    roles = tuple(wager.card_roles)
    if not roles:
        raise WagerError(f"{wager.title} is decided by play: use `feltlab math main --eor`")
    tuples = code_tuples(len(roles))
    mask = offered_mask(wager, tuples)
    tuples = np.ascontiguousarray(tuples[mask])
    outcomes = np.asarray(wager.classify(tuples))
    pays = [(i, Fraction(p)) for i, p in enumerate(wager.paytable.pays) if p is not None]

    def ret(counts: npt.NDArray[np.int64]) -> float:
        w = _weights(tuples, counts)
        total = int(w.sum())
        s = sum(p * int(w[outcomes == i].sum()) for i, p in pays)
        return float(Fraction(s) / total)

    full = np.full(52, decks, dtype=np.int64)
    base = ret(full)
    effects = []
    for r in range(13):
        per_suit = []
        for suit in range(4):
            c = full.copy()
            c[r * 4 + suit] -= 1
            per_suit.append(ret(c) - base)
        effects.append(sum(per_suit) / 4)
    return _finish(wager.name, decks, base, effects)
