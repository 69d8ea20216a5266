"""Countability: what a card counter gets from a wager, from its results tallied by count.

Input (generic, whatever dealt the rounds: a shoe with a cutting card, a continuous
shuffler): per count bucket, a :class:`Bucket`: the bucket's count value (its lower bound),
the rounds the wager was on offer in it, and the exact sums of the wager's net result per
unit bet and of its square (:func:`bucket_from_outcomes` from a side table's outcome counts
and its paytable; :func:`bucket_from_sums` from the main wager's cents).  Output
(:func:`analyze_buckets`, a :class:`Countability`):

- **each bucket's expectation** per unit bet, ``E_b = S_b / n_b``, with its 95% interval
  ``E_b +- Z95 * sqrt((Q_b / n_b - E_b^2) / n_b)`` (normal approximation);
- **the trigger count**: the lowest bucket from which the expectation stays positive (every
  bucket at or above it with at least ``min_rounds`` rounds has ``E_b > 0``; sparser
  buckets are too noisy to decide it and are skipped by this test, counted everywhere
  else), with its interval: from the lowest bucket from which every upper bound is positive
  (could be positive) to the lowest from which every lower bound is (shown positive);
- **the fraction of rounds** at or above the trigger;
- **the counter's edge betting only there** (a "wonger"): per unit bet, ``sum_{b>=t} S_b /
  sum_{b>=t} n_b``, and per round observed, ``sum_{b>=t} S_b / N`` (a round below the
  trigger is watched, not bet), each with its interval; and the **win per 100 rounds**
  observed at the wager's maximum bet (``Limits.maximum``, cents);
- **a verdict**: "countable: ..." when the edge betting at or above the trigger is shown
  positive (its 95% interval above zero), "not countable at this penetration" when the
  edge is shown negative or no count keeps the expectation positive and the sample decides it
  (the top decided bucket's interval below zero, under :data:`UNDECIDED_SHARE` of the rounds
  in undecided buckets above it), "not countable at this sample: ... simulate more rounds"
  when no trigger is found but the sample cannot rule one out, else "inconclusive: ...
  (more rounds)".

A second reading of the same buckets, by the fitted line (:func:`analyze_line`, a
:class:`LineCountability`; the continuous-shuffler audit's, whose window counts are sparse at
the ends and may run either way):

- **the line** (:func:`fit_line`): the weighted least-squares line of the per-round result on
  the count, each round weighted once at its bucket's value: ``slope = Sxy / Sxx`` with ``Sxx
  = sum_b n_b (c_b - cbar)^2``, ``Sxy = sum_b (c_b - cbar) S_b``; the residual variance ``s^2
  = (SST - slope * Sxy) / (N - 2)``; the slope's standard error ``sqrt(s^2 / Sxx)``; the fitted
  expectation of a set of rounds of mean count ``m``, ``mean + slope (m - cbar)``, with the
  variance ``s^2 / N + (m - cbar)^2 s^2 / Sxx`` (the mean and the slope are uncorrelated
  about ``cbar``);
- **a trigger of either sign** (:func:`line_trigger`): the favourable side is the slope's sign
  ("bet at or above t" for a positive slope, "at or below t" for a negative one: a machine
  that deals the cards just seen again soon); t is the bucket nearest the mean count on that
  side where the line is at or above zero, kept when the fitted expectation of the rounds on
  its side is positive at ``z`` one-sided standard errors (the caller's level: the audit's is
  Bonferroni over every wager and window it tries);
- the fraction of rounds on that side, the fitted and observed **edge of betting only there**,
  the win per 100 rounds at the maximum bet, and a **bet spread's edge** (:func:`spread_edge`:
  ``k`` units on the trigger's side, 1 elsewhere; per round and per unit bet).

The trigger is chosen on the same rounds that measure the edge, which biases the edge up a
little (the bucket picked is partly picked for its luck); with millions of rounds a bucket the
effect is well inside the interval, and the report gives the rounds behind every figure.
Sources for the method: E. Jacobson's side-bet counting analyses (expectation by true count,
trigger, frequency, win per 100 rounds); P. Griffin, "The Theory of Blackjack", ch. 4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any

from feltlab.errors import CountError
from feltlab.intervals import Z95, half_width

MIN_ROUNDS = 10_000
"""Buckets with fewer rounds are too noisy to decide where the expectation stays positive
(skipped by the trigger's test, counted in every other figure)."""


@dataclass(frozen=True)
class Bucket:
    """One count bucket of one wager: ``value`` the bucket's count (its lower bound, in the
    count's book units: a true count of +2 holds rounds at +2 <= TC < +3 at resolution 1),
    ``rounds`` the rounds the wager was on offer, ``total`` and ``total_sq`` the exact sums
    of the net result per unit bet and of its square over them (Fractions: exact)."""

    value: Fraction
    rounds: int
    total: Fraction
    total_sq: Fraction

    @property
    def mean(self) -> Fraction | None:
        """The expectation per unit bet (None with no round)."""
        return self.total / self.rounds if self.rounds else None

    def half_width(self) -> float:
        """The 95% half-width of :attr:`mean` (NaN with fewer than 2 rounds)."""
        if self.rounds < 2:
            return math.nan
        m = self.total / self.rounds
        return half_width(float(self.total_sq / self.rounds - m * m), self.rounds)


def bucket_from_outcomes(
    value: Fraction | int, counts: Sequence[int], pays: Sequence[Fraction | None]
) -> Bucket:
    """A side wager's bucket from its outcome counts (one per paytable outcome, the rounds
    not on offer excluded) and its paytable's pays per unit (net: a loss is -1).  Raises
    :class:`CountError` for a pay paid by a jackpot panel (None) that was hit, or counts and
    pays of different lengths."""
    if len(counts) < len(pays):
        raise CountError(f"{len(counts)} outcome counts for a paytable of {len(pays)} outcomes")
    total = Fraction(0)
    total_sq = Fraction(0)
    for n, p in zip(counts, pays, strict=False):
        if not n:
            continue
        if p is None:
            raise CountError("a jackpot panel pays this outcome: its return is the panel's")
        q = Fraction(p)
        total += n * q
        total_sq += n * q * q
    return Bucket(Fraction(value), int(sum(counts[: len(pays)])), total, total_sq)


def bucket_from_sums(
    value: Fraction | int, rounds: int, net: int, net_sq: int, stake: int
) -> Bucket:
    """The main wager's bucket from the simulator's sums: ``net`` cents and ``net_sq``
    cents^2 over ``rounds`` rounds of ``stake`` cents each."""
    if stake < 1:
        raise CountError(f"stake must be at least 1 cent, got {stake}")
    return Bucket(Fraction(value), rounds, Fraction(net, stake), Fraction(net_sq, stake * stake))


@dataclass(frozen=True)
class Figure:
    """A figure with its 95% interval: ``value +- half_width`` (NaN when undefined) and the
    rounds behind it."""

    value: float
    half_width: float
    rounds: int

    @property
    def low(self) -> float:
        """The interval's lower end."""
        return self.value - self.half_width

    @property
    def high(self) -> float:
        """The interval's upper end."""
        return self.value + self.half_width

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (None for NaN)."""

        def f(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"value": f(self.value), "ci95": [f(self.low), f(self.high)], "rounds": self.rounds}


def _figure(total: Fraction, total_sq: Fraction, n: int) -> Figure:
    if n < 1:
        return Figure(math.nan, math.nan, 0)
    m = total / n
    var = float(total_sq / n - m * m)
    half = half_width(var, n) if n > 1 else math.nan
    return Figure(float(m), half, n)


@dataclass(frozen=True)
class Countability:
    """What :func:`analyze_buckets` finds (see the module docstring).  ``buckets``: the
    input; ``trigger``: the index of the trigger bucket (None: none); ``trigger_low`` /
    ``trigger_high``: its interval's buckets (None where no bucket qualifies);
    ``frequency``: the fraction of rounds at or above the trigger; ``edge_per_unit``,
    ``edge_per_round``: the counter's edge betting one unit only there, per unit bet and
    per round observed; ``win_per_100``: per 100 rounds observed at ``max_bet`` cents a
    bet (cents); ``overall``: the wager's expectation over every round."""

    buckets: tuple[Bucket, ...]
    rounds: int
    overall: Figure
    trigger: int | None
    trigger_low: int | None
    trigger_high: int | None
    frequency: float
    edge_per_unit: Figure
    edge_per_round: Figure
    win_per_100: Figure
    max_bet: int
    min_rounds: int
    verdict: str

    @property
    def countable(self) -> bool:
        """True when the verdict is "countable"."""
        return self.verdict.startswith("countable")

    def trigger_value(self) -> Fraction | None:
        """The trigger bucket's count value (None: no trigger)."""
        return None if self.trigger is None else self.buckets[self.trigger].value

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: the buckets with their expectations and intervals."""

        def value(i: int | None) -> float | None:
            return None if i is None else float(self.buckets[i].value)

        return {
            "rounds": self.rounds,
            "overall": self.overall.to_dict(),
            "trigger": value(self.trigger),
            "trigger_ci95": [value(self.trigger_low), value(self.trigger_high)],
            "frequency_at_or_above": self.frequency,
            "edge_per_unit_bet": self.edge_per_unit.to_dict(),
            "edge_per_round_observed": self.edge_per_round.to_dict(),
            "max_bet_cents": self.max_bet,
            "win_per_100_rounds_cents": self.win_per_100.to_dict(),
            "min_rounds": self.min_rounds,
            "verdict": self.verdict,
            "buckets": [
                {
                    "count": float(b.value),
                    "rounds": b.rounds,
                    "total": str(b.total),  # exact units won: "-6151", or "-12303/2" at 3:2
                    "expectation": None if b.mean is None else float(b.mean),
                    "ci95_half_width": None if math.isnan(b.half_width()) else b.half_width(),
                }
                for b in self.buckets
            ],
        }


def _lowest_staying(buckets: Sequence[Bucket], min_rounds: int, test: Any) -> int | None:
    """The lowest index from which every bucket with at least ``min_rounds`` rounds passes
    ``test`` (and at least one such bucket does); None when the top decided bucket fails."""
    found = None
    for i in range(len(buckets) - 1, -1, -1):
        b = buckets[i]
        if b.rounds < max(min_rounds, 1):
            continue
        if not test(b):
            break
        found = i
    return found


def _value(b: Bucket) -> float:
    return float(b.total / b.rounds)


def analyze_buckets(
    buckets: Sequence[Bucket],
    *,
    max_bet: int,
    min_rounds: int = MIN_ROUNDS,
    unit: str = "true count",
) -> Countability:
    """Analyse a wager's per-bucket tallies (``buckets`` in increasing count order; the
    outer ones may be open-ended).  ``max_bet``: the wager's maximum bet in cents (its
    ``Limits.maximum``); ``min_rounds``: see :data:`MIN_ROUNDS`; ``unit``: how the verdict
    names the count ("true count", "running count", "suit imbalance").  Raises
    :class:`CountError` for no bucket, buckets out of order, or no round at all."""
    bs = tuple(buckets)
    if not bs:
        raise CountError("no count bucket to analyse")
    if any(a.value >= b.value for a, b in pairwise(bs)):
        raise CountError("buckets must be in increasing order of count value")
    n = sum(b.rounds for b in bs)
    if n < 1:
        raise CountError("no round in any bucket: simulate more rounds (--rounds)")
    if max_bet < 1:
        raise CountError(f"max_bet must be at least 1 cent, got {max_bet}")
    total = sum((b.total for b in bs), Fraction(0))
    total_sq = sum((b.total_sq for b in bs), Fraction(0))
    overall = _figure(total, total_sq, n)
    t = _lowest_staying(bs, min_rounds, lambda b: b.total > 0)
    t_low = _lowest_staying(bs, min_rounds, lambda b: _value(b) + b.half_width() > 0)
    t_high = _lowest_staying(bs, min_rounds, lambda b: _value(b) - b.half_width() > 0)
    nan = Figure(math.nan, math.nan, 0)
    if t is None:
        edge_unit, edge_round, win, freq = nan, nan, nan, 0.0
    else:
        above = bs[t:]
        s = sum((b.total for b in above), Fraction(0))
        q = sum((b.total_sq for b in above), Fraction(0))
        k = sum(b.rounds for b in above)
        edge_unit = _figure(s, q, k)
        edge_round = _figure(s, q, n)
        win = Figure(edge_round.value * max_bet * 100, edge_round.half_width * max_bet * 100, n)
        freq = k / n
    verdict = (
        _verdict(bs, t, freq, edge_unit, win, max_bet, unit)
        if t is not None
        else _no_trigger_verdict(bs, min_rounds, n, unit)
    )
    return Countability(
        bs,
        n,
        overall,
        t,
        t_low,
        t_high,
        freq,
        edge_unit,
        edge_round,
        win,
        max_bet,
        min_rounds,
        verdict,
    )


def _fmt_count(v: Fraction) -> str:
    return f"{float(v):+g}"


UNDECIDED_SHARE = 0.01
"""The share of rounds in undecided buckets (fewer than ``min_rounds`` each) above the top
decided one from which "no trigger" is a matter of sample, not of penetration."""


def _plural(unit: str) -> str:
    """``"true counts"``, ``"richest-suit excesses"``."""
    return unit + ("es" if unit.endswith(("s", "x")) else "s")


def _no_trigger_verdict(bs: Sequence[Bucket], min_rounds: int, n: int, unit: str) -> str:
    """The verdict with no trigger, by the intervals: "not countable at this sample" when no
    bucket is decided, the top decided bucket's interval reaches above zero, or the undecided
    buckets above it hold at least :data:`UNDECIDED_SHARE` of the rounds; else "not
    countable at this penetration"."""
    decided = [i for i, b in enumerate(bs) if b.rounds >= max(min_rounds, 1)]
    more = "simulate more rounds (--rounds) to decide"
    if not decided:
        return f"not countable at this sample: no count has {min_rounds:,} rounds; {more}"
    top = decided[-1]
    b = bs[top]
    above = sum(x.rounds for x in bs[top + 1 :]) / n
    if _value(b) + b.half_width() > 0:
        return (
            f"not countable at this sample: the expectation at {unit} {_fmt_count(b.value)} "
            f"({100 * _value(b):+.2f}% ± {100 * b.half_width():.2f}%) may be positive; {more}"
        )
    if above >= UNDECIDED_SHARE:
        return (
            f"not countable at this sample: {100 * above:.2f}% of rounds are at "
            f"{_plural(unit)} above {_fmt_count(b.value)} with fewer than {min_rounds:,} "
            f"rounds each; {more}"
        )
    return "not countable at this penetration: no count at which the expectation stays positive"


def _verdict(
    bs: Sequence[Bucket],
    t: int,
    freq: float,
    edge: Figure,
    win: Figure,
    max_bet: int,
    unit: str,
) -> str:
    if edge.high <= 0:
        return "not countable at this penetration: no count at which the expectation stays positive"
    where = f"{unit} {_fmt_count(bs[t].value)} or more"
    figures = (
        f"{100 * edge.value:+.2f}% ± {100 * edge.half_width:.2f}% per unit bet at {where} "
        f"({100 * freq:.2f}% of rounds), {win.value / 100:+,.2f} ± {win.half_width / 100:,.2f} "
        f"dollars per 100 rounds at the {max_bet / 100:,.2f} maximum"
    )
    if edge.low > 0:
        return f"countable: {figures}"
    return f"inconclusive: {figures}; the interval includes zero: simulate more rounds"


# ---------------------------------------------------------------- the fitted line


@dataclass(frozen=True)
class Line:
    """The weighted least-squares line of the per-round result on the count, over every
    round (each round weighted once, at its bucket's value): ``mean`` the mean result per
    unit, ``slope`` per count unit, ``mean_count``, ``residual_variance`` (per round, ``n -
    2`` degrees of freedom), ``sxx`` (the rounds' sum of squared count deviations) and
    ``rounds``.  Where the count moves a round's expectation linearly (as the composition it
    reflects does: Griffin, ch. 4), the line pools every bucket into each figure, which a
    bucket-by-bucket reading (:func:`analyze_buckets`) cannot do for sparse buckets."""

    rounds: int
    mean: float
    slope: float
    mean_count: float
    residual_variance: float
    sxx: float

    @property
    def slope_se(self) -> float:
        """The slope's standard error, ``sqrt(residual_variance / sxx)`` (NaN when every
        round has the same count)."""
        return math.sqrt(self.residual_variance / self.sxx) if self.sxx > 0 else math.nan

    def at(self, count: float) -> float:
        """The fitted expectation at ``count``."""
        return self.mean + self.slope * (count - self.mean_count)

    def fitted(self, buckets: Sequence[Bucket]) -> Figure:
        """The fitted expectation of the rounds in ``buckets`` (the line at their mean
        count) with its 95% interval: the mean and the slope are uncorrelated about the mean
        count, so its variance is ``s^2 / N + (m - mean_count)^2 * s^2 / sxx``."""
        n = sum(b.rounds for b in buckets)
        if n == 0 or self.sxx <= 0:
            return Figure(math.nan, math.nan, n)
        m = sum(float(b.value) * b.rounds for b in buckets) / n
        s2 = self.residual_variance
        se = math.sqrt(s2 / self.rounds + (m - self.mean_count) ** 2 * s2 / self.sxx)
        return Figure(self.at(m), Z95 * se, n)


def fit_line(buckets: Sequence[Bucket]) -> Line:
    """The least-squares :class:`Line` of the per-round result on the bucket value, from the
    buckets' sums (a bucket's rounds all sit at its value; float64 arithmetic).  Raises
    :class:`CountError` with no round."""
    n = sum(b.rounds for b in buckets)
    if n < 1:
        raise CountError("no round in any bucket: simulate more rounds (--rounds)")
    cbar = sum(float(b.value) * b.rounds for b in buckets) / n
    xbar = float(sum((b.total for b in buckets), Fraction(0))) / n
    sxx = sum(b.rounds * (float(b.value) - cbar) ** 2 for b in buckets)
    sxy = sum((float(b.value) - cbar) * float(b.total) for b in buckets)
    slope = sxy / sxx if sxx > 0 else 0.0
    sst = float(sum((b.total_sq for b in buckets), Fraction(0))) - n * xbar * xbar
    resid = max(sst - slope * sxy, 0.0) / max(n - 2, 1)
    return Line(n, xbar, slope, cbar, resid, sxx)


def on_side(buckets: Sequence[Bucket], index: int, direction: int) -> tuple[Bucket, ...]:
    """The buckets on a trigger's side: ``index`` and above (``direction`` +1: "bet when the
    count is at or above it") or ``index`` and below (-1: "at or below")."""
    return tuple(buckets[index:] if direction > 0 else buckets[: index + 1])


@dataclass(frozen=True)
class LineCountability:
    """What :func:`analyze_line` finds: the ``line``; the ``trigger`` bucket (None: none)
    and its ``direction`` (+1: bet at or above it, -1: at or below); ``frequency`` the
    fraction of rounds on the trigger's side; ``edge`` the fitted and ``observed_edge`` the
    observed expectation per unit of those rounds; ``win_per_100``: cents per 100 rounds
    observed betting ``max_bet`` cents only there; ``spread`` (units: ``spread`` on the
    trigger's side, 1 elsewhere; 0: not asked) with its ``spread_per_round`` (units won a
    round, 1-unit base) and ``spread_per_unit_bet`` (per unit bet); ``z`` the one-sided
    critical value the trigger was tested at."""

    buckets: tuple[Bucket, ...]
    overall: Figure
    line: Line
    trigger: int | None
    direction: int
    frequency: float
    edge: Figure
    observed_edge: Figure
    win_per_100: Figure
    max_bet: int
    spread: int
    spread_per_round: Figure
    spread_per_unit_bet: Figure
    z: float

    def trigger_value(self) -> Fraction | None:
        """The trigger bucket's count value (None: no trigger)."""
        return None if self.trigger is None else self.buckets[self.trigger].value


def line_trigger(buckets: Sequence[Bucket], line: Line, z: float) -> tuple[int | None, int]:
    """``(trigger, direction)``: the favourable side is the slope's sign (+1: high counts;
    -1: low counts, a machine whose count runs the other way); the trigger is the bucket
    nearest the mean count on that side at which the line is at or above zero, kept when the
    fitted expectation of the rounds on its side (:meth:`Line.fitted`) is positive at ``z``
    standard errors, one-sided; None otherwise (also with a flat line)."""
    if line.sxx <= 0 or line.slope == 0:
        return None, 1
    direction = 1 if line.slope > 0 else -1
    order = range(len(buckets)) if direction > 0 else range(len(buckets) - 1, -1, -1)
    for b in order:
        side = on_side(buckets, b, direction)
        if sum(x.rounds for x in side) == 0:
            return None, direction
        if line.at(float(buckets[b].value)) < 0:
            continue
        f = line.fitted(side)
        return (b if f.value - z * f.half_width / Z95 > 0 else None), direction
    return None, direction


def spread_edge(
    buckets: Sequence[Bucket], trigger: int, direction: int, spread: int
) -> tuple[Figure, Figure]:
    """A bet spread's edge: ``spread`` units on the trigger's side, 1 elsewhere (exact
    sums): ``(units won a round, per unit bet)``, each with its 95% interval (the second is
    the first over the mean bet)."""
    n = sum(b.rounds for b in buckets)
    bets = [spread if (i - trigger) * direction >= 0 else 1 for i in range(len(buckets))]
    s = sum((k * b.total for k, b in zip(bets, buckets, strict=True)), Fraction(0))
    q = sum((k * k * b.total_sq for k, b in zip(bets, buckets, strict=True)), Fraction(0))
    per_round = _figure(s, q, n)
    per_bet = sum(k * b.rounds for k, b in zip(bets, buckets, strict=True)) / n if n else math.nan
    per_unit = Figure(per_round.value / per_bet, per_round.half_width / per_bet, n)
    return per_round, per_unit


def analyze_line(
    buckets: Sequence[Bucket], *, z: float, max_bet: int, spread: int = 0
) -> LineCountability:
    """Analyse a wager's per-bucket tallies (increasing count order) by the fitted line
    (:func:`fit_line`): the trigger of either sign at ``z`` one-sided standard errors
    (:func:`line_trigger`; the caller sets ``z``, e.g. Bonferroni over every wager and count
    it tries), the fraction of rounds on its side, the fitted and observed edge of betting
    only there, the win per 100 rounds at ``max_bet`` cents, and with ``spread`` > 1 that bet
    spread's edge (:func:`spread_edge`).  Raises :class:`CountError` for no round, buckets
    out of order or a ``max_bet`` below 1 cent."""
    bs = tuple(buckets)
    if any(a.value >= b.value for a, b in pairwise(bs)):
        raise CountError("buckets must be in increasing order of count value")
    if max_bet < 1:
        raise CountError(f"max_bet must be at least 1 cent, got {max_bet}")
    line = fit_line(bs)
    overall = _figure(
        sum((b.total for b in bs), Fraction(0)),
        sum((b.total_sq for b in bs), Fraction(0)),
        line.rounds,
    )
    t, direction = line_trigger(bs, line, z)
    nan = Figure(math.nan, math.nan, 0)
    if t is None:
        return LineCountability(
            bs, overall, line, None, direction, 0.0, nan, nan, nan, max_bet, spread, nan, nan, z
        )
    side = on_side(bs, t, direction)
    k = sum(b.rounds for b in side)
    freq = k / line.rounds
    edge = line.fitted(side)
    observed = _figure(
        sum((b.total for b in side), Fraction(0)), sum((b.total_sq for b in side), Fraction(0)), k
    )
    win = Figure(
        100 * max_bet * freq * edge.value, 100 * max_bet * freq * edge.half_width, line.rounds
    )
    per_round, per_unit = spread_edge(bs, t, direction, spread) if spread > 1 else (nan, nan)
    return LineCountability(
        bs, overall, line, t, direction, freq, edge, observed, win, max_bet, spread, per_round,
        per_unit, z,
    )  # fmt: skip
