"""A Hi-Lo counter's edge over the main wager with a bet spread: basic strategy throughout,
the bet raised with the true count on a 1-to-N ramp, from the C round simulator's tallies of
the main wager by true count at the moment of the bet (``native.simulate_counted``).

The ramp (the shape of S. Wong, "Professional Blackjack", and D. Schlesinger, "Blackjack
Attack"): one unit at a floored true count of ``start`` or less, then
``units_per_count * (floor(TC) - start)`` units, at most ``spread``; 1-12 over a six-deck
shoe is the classic "1-12 spread".  True count: the Hi-Lo running count of the cards seen
since the shuffle per deck (52 cards) remaining, floored.

Estimates (per unit initial bet, ``x`` a round's net per unit, ``w`` its bet): the edge is
the ratio ``sum(w x) / sum(w)``, its standard error by linearisation,
``sqrt(sum w^2 (x - edge)^2) / sum(w)``; the win per 100 rounds is ``100 * mean(w x)`` with
the standard error of a mean.  Both treat rounds as independent: rounds of one shoe share its
count, but given the count their results are close to independent (the usual approximation of
counting simulators); intervals are normal at 95 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.intervals import Z95
from feltlab.math.eor import HI_LO
from feltlab.math.strategy_tables import strategy_tables
from feltlab.rules import Rules
from feltlab.seeds import chunk_generator

HILO_CODE_TAGS = tuple(HI_LO[code // 4] for code in range(52))
"""Hi-Lo tags of the 52 card codes (rank * 4 + suit), as the C simulator counts them."""
CHUNK_ROUNDS = 1_000_000
"""Rounds per simulator call (each call starts from a freshly shuffled shoe)."""
LOWEST_COUNT, HIGHEST_COUNT = -20, 20
"""The true counts of the first and last buckets (each also holds the counts beyond it)."""


@dataclass(frozen=True)
class CountTally:
    """The main wager's results by true count, per unit initial bet: ``true_counts`` (n,)
    int64, the floored true count of each bucket (the lowest and highest buckets also hold
    every count below / above them); ``rounds`` (n,) int64; ``net`` and ``net_sq`` (n,)
    float64: the sums of each round's net result and its square (units, units^2).  Raises
    ValueError for arrays of different lengths or negative rounds."""

    true_counts: npt.NDArray[np.int64]
    rounds: npt.NDArray[np.int64]
    net: npt.NDArray[np.float64]
    net_sq: npt.NDArray[np.float64]

    def __post_init__(self) -> None:
        n = len(self.true_counts)
        if not (len(self.rounds) == len(self.net) == len(self.net_sq) == n) or n == 0:
            raise ValueError("a count tally needs equal, non-empty arrays of counts and sums")
        if (np.asarray(self.rounds) < 0).any():
            raise ValueError("a count tally's rounds must be non-negative")

    @property
    def total_rounds(self) -> int:
        """Rounds in all buckets."""
        return int(np.asarray(self.rounds).sum())


@dataclass(frozen=True)
class BetRamp:
    """Bet ``1`` unit at a floored true count of ``start`` or less, else
    ``units_per_count * (TC - start)`` units, at least 1 and at most ``spread`` (1 to 1000).
    ``BetRamp(12)``: 1 unit to TC +2, then TC - 1 units, 12 from TC +13; ``BetRamp(12,
    units_per_count=2)``: 2 units at +2, 4 at +3, ..., 12 from +7.  Raises ValueError for a
    spread or a ramp out of range."""

    spread: int
    start: int = 1
    units_per_count: int = 1

    def __post_init__(self) -> None:
        for name in ("spread", "start", "units_per_count"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"the ramp's {name} must be a whole number, got {v!r}")
        if not 1 <= self.spread <= 1000:
            raise ValueError(f"the spread must be 1 to 1000 units, got {self.spread}")
        if not 1 <= self.units_per_count <= 1000:
            raise ValueError(f"units_per_count must be 1 to 1000, got {self.units_per_count}")

    def bets(self, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The bet in units at each floored true count, ``(n,)`` float64."""
        tc = np.asarray(true_counts, dtype=np.float64)
        return np.clip(self.units_per_count * (tc - self.start), 1, self.spread)


@dataclass(frozen=True)
class Estimate:
    """A simulated figure ``value`` with its standard error ``se`` (same unit)."""

    value: float
    se: float

    @property
    def interval(self) -> tuple[float, float]:
        """The normal 95 % interval."""
        return (self.value - Z95 * self.se, self.value + Z95 * self.se)


@dataclass(frozen=True)
class CounterEdge:
    """A counter's results over ``rounds`` rounds: ``flat``: the edge betting one unit every
    round (the house edge's negative, as simulated); ``edge``: per unit initial bet with the
    ramp; ``win_per_100``: units won per 100 rounds; ``mean_bet`` in units; ``sd_round``: the
    standard deviation of one round's result with the ramp (units); ``bet_share``: the
    fraction of rounds at each bet (units -> fraction)."""

    ramp: BetRamp
    rounds: int
    flat: Estimate
    edge: Estimate
    win_per_100: Estimate
    mean_bet: float
    sd_round: float
    bet_share: dict[float, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (intervals as ``[low, high]``)."""

        def est(e: Estimate) -> dict[str, Any]:
            return {"value": e.value, "se": e.se, "interval95": list(e.interval)}

        return {
            "spread": self.ramp.spread,
            "ramp_start": self.ramp.start,
            "units_per_count": self.ramp.units_per_count,
            "rounds": self.rounds,
            "flat_edge": est(self.flat),
            "edge_per_unit_bet": est(self.edge),
            "win_per_100_rounds": est(self.win_per_100),
            "mean_bet": self.mean_bet,
            "sd_per_round": self.sd_round,
            "bet_share": [{"bet": k, "fraction": v} for k, v in sorted(self.bet_share.items())],
        }


def _ratio(w: npt.NDArray[np.float64], t: CountTally) -> Estimate:
    n = np.asarray(t.rounds, dtype=np.float64)
    s, q = np.asarray(t.net, dtype=np.float64), np.asarray(t.net_sq, dtype=np.float64)
    stake = float((w * n).sum())
    r = float((w * s).sum()) / stake
    resid = float((w * w * (q - 2 * r * s + r * r * n)).sum())
    return Estimate(r, math.sqrt(max(resid, 0.0)) / stake)


def counter_edge(tally: CountTally, ramp: BetRamp) -> CounterEdge:
    """The counter's edge, win per 100 rounds and their standard errors from ``tally`` under
    ``ramp`` (module docstring).  Raises ValueError for a tally of fewer than 2 rounds."""
    total = tally.total_rounds
    if total < 2:
        raise ValueError(f"a counter's edge needs at least 2 rounds, got {total}")
    n = np.asarray(tally.rounds, dtype=np.float64)
    s, q = np.asarray(tally.net, dtype=np.float64), np.asarray(tally.net_sq, dtype=np.float64)
    w = ramp.bets(tally.true_counts)
    mean = float((w * s).sum()) / total
    var = max(float((w * w * q).sum()) / total - mean * mean, 0.0)
    share: dict[float, float] = {}
    for bet, k in zip(w, n, strict=True):
        if k > 0:
            share[float(bet)] = share.get(float(bet), 0.0) + float(k) / total
    return CounterEdge(
        ramp=ramp,
        rounds=total,
        flat=_ratio(np.ones_like(w), tally),
        edge=_ratio(w, tally),
        win_per_100=Estimate(100 * mean, 100 * math.sqrt(var / total)),
        mean_bet=float((w * n).sum()) / total,
        sd_round=math.sqrt(var),
        bet_share=share,
    )


def counted_tally(rules: Rules, rounds: int, *, seed: int = 1) -> CountTally:
    """The main wager's results by floored Hi-Lo true count at the moment of the bet over
    ``rounds`` rounds of one box playing the simulator's basic strategy under ``rules``
    (its shoe, cutting card and penetration), from the C simulator
    (``native.simulate_counted``, counting in C), in calls of :data:`CHUNK_ROUNDS` rounds,
    call ``i`` on ``feltlab.seeds.chunk_generator(seed, i)``.  Raises ValueError for fewer
    than 2 rounds, RulesError for rules the simulator cannot deal."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 2:
        raise ValueError(f"rounds must be a whole number of at least 2, got {rounds!r}")
    sr = simulator_rules(rules, strategy_tables(rules))
    n_buckets = HIGHEST_COUNT - LOWEST_COUNT + 1
    spec = native.CountSpec(
        tags=HILO_CODE_TAGS,
        mode=native.COUNT_TRUE,
        resolution=1,
        lowest=LOWEST_COUNT,
        n_buckets=n_buckets,
    )
    n = np.zeros(n_buckets, dtype=np.int64)
    net = [0] * n_buckets
    net_sq = [0] * n_buckets
    done, chunk = 0, 0
    while done < rounds:
        size = min(CHUNK_ROUNDS, rounds - done)
        r = native.simulate_counted(chunk_generator(seed, chunk), sr, size, spec)
        n += r.bucket_rounds
        net = [a + b for a, b in zip(net, r.bucket_net, strict=True)]
        net_sq = [a + b for a, b in zip(net_sq, r.bucket_net_sq, strict=True)]
        done, chunk = done + size, chunk + 1
    stake = sr.stake
    return CountTally(
        true_counts=np.arange(LOWEST_COUNT, HIGHEST_COUNT + 1, dtype=np.int64),
        rounds=n,
        net=np.array([x / stake for x in net], dtype=np.float64),
        net_sq=np.array([x / stake**2 for x in net_sq], dtype=np.float64),
    )
