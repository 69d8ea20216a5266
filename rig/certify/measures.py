"""Timing and prize-distribution measurements of a certification campaign.

A measurement has a name, a value with its unit, limits, and a verdict (the shape of
OpenHTF's measurements).  Timing figures are percentiles of measured durations in seconds,
each stated with the resolution of the clock that took it; prize distributions are compared
with the weights a jackpot panel declares by Pearson's chi-square (scipy.stats.chisquare).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from feltlab.rig.certify.battery import Verdict


@dataclass(frozen=True)
class Measurement:
    """One named figure with its unit, optional limits and a verdict.

    ``low`` and ``high`` are inclusive limits in ``unit`` (None: unbounded); ``verdict`` is
    PASS when the value lies within them, FAIL otherwise, ERROR when it could not be measured.
    """

    name: str
    value: float | None
    unit: str
    low: float | None = None
    high: float | None = None
    verdict: Verdict = Verdict.PASS
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "low": self.low,
            "high": self.high,
            "verdict": str(self.verdict),
            "detail": self.detail,
        }


def within(
    name: str,
    value: float | None,
    unit: str,
    low: float | None = None,
    high: float | None = None,
    *,
    uncertainty: float | None = None,
    lengthened: bool = False,
    **detail: Any,
) -> Measurement:
    """A :class:`Measurement` judged against inclusive limits; None (or a non-finite value) is
    an ERROR.

    ``uncertainty`` (seconds, a timing measurement only): the host's measured uncertainty
    ``u`` (:mod:`feltlab.rig.certify.uncertainty`).  The device's true value then lies in
    ``[value - u, value + u]``, or in ``[value - u, value]`` when ``lengthened`` (a latency
    from a host frame to the device's reply: the host's delays can only lengthen it).  A
    verdict is PASS when that interval lies within the limits, FAIL when it lies wholly
    outside them, and INCONCLUSIVE when it straddles a limit: the host cannot tell on which
    side of the limit the device is.  The detail then holds ``margin_s`` (signed: limit
    minus value for ``high``, value minus limit for ``low``; negative = beyond the limit),
    ``uncertainty_s`` and ``reason``.  0 or None: no uncertainty (simulated time), the plain
    rule.
    """
    if value is None or not math.isfinite(value):
        return Measurement(name, None, unit, low, high, Verdict.ERROR, dict(detail))
    ok = (low is None or value >= low) and (high is None or value <= high)
    verdict = Verdict.PASS if ok else Verdict.FAIL
    info = dict(detail)
    if uncertainty is not None and uncertainty > 0:
        lo_true, hi_true = value - uncertainty, value + (0.0 if lengthened else uncertainty)
        near: list[tuple[str, float, float]] = []
        if high is not None and lo_true <= high < hi_true:  # inclusive: <= high passes
            near.append(("high", high, high - value))
        if low is not None and lo_true < low <= hi_true:
            near.append(("low", low, value - low))
        if near:
            _side, limit, margin = min(near, key=lambda x: abs(x[2]))
            verdict = Verdict.INCONCLUSIVE
            info.update(
                margin_s=margin,
                uncertainty_s=uncertainty,
                reason=(
                    f"{value:.6g} {unit} is {abs(margin):.3g} s "
                    f"{'within' if margin >= 0 else 'beyond'} the limit {limit:.6g} {unit}, "
                    f"inside the host's measured uncertainty of {uncertainty:.3g} s"
                    + (" (a latency: the host's delays only lengthen it)" if lengthened else "")
                ),
            )
    return Measurement(name, float(value), unit, low, high, verdict, info)


def clock_resolution() -> float:
    """The resolution in seconds of ``time.perf_counter`` (what the host-side timings use)."""
    return float(time.get_clock_info("perf_counter").resolution)


@dataclass(frozen=True)
class TimingSummary:
    """Percentiles of a sample of durations, in seconds: ``n`` samples, ``p50``, ``p95``,
    ``p99``, ``max``, ``mean``, and the ``resolution`` of the clock that took them."""

    n: int
    p50: float
    p95: float
    p99: float
    max: float
    mean: float
    resolution: float

    def to_dict(self) -> dict[str, float | int]:
        """JSON-serialisable form."""
        return {
            "n": self.n,
            "p50": self.p50,
            "p95": self.p95,
            "p99": self.p99,
            "max": self.max,
            "mean": self.mean,
            "resolution": self.resolution,
        }


def summarize(
    samples: Sequence[float] | np.ndarray, resolution: float | None = None
) -> TimingSummary:
    """Percentiles of ``samples`` (seconds).  Raises ValueError for an empty sample or a
    negative or non-finite duration (a clock gone backwards is a measurement fault)."""
    a = np.asarray(samples, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no timing samples: the campaign measured nothing")
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError("timing samples must be finite and non-negative seconds")
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return TimingSummary(
        int(a.size),
        float(p50),
        float(p95),
        float(p99),
        float(a.max()),
        float(a.mean()),
        clock_resolution() if resolution is None else resolution,
    )


@dataclass(frozen=True)
class SampleSplit:
    """A timing sample split into its ``valid`` durations (finite, non-negative seconds) and
    the ``bad`` ones (negative or non-finite: a clock gone backwards, a reply paired with
    the wrong request), counted, with up to 5 ``examples``."""

    valid: np.ndarray
    bad: int
    negative: int
    non_finite: int
    examples: tuple[float, ...]


def split_samples(samples: Sequence[float] | np.ndarray) -> SampleSplit:
    """Split ``samples`` (seconds) into valid and bad durations (see :class:`SampleSplit`)."""
    a = np.asarray(samples, dtype=np.float64).ravel()
    finite = np.isfinite(a)
    good = finite & (a >= 0)
    bad = a[~good]
    return SampleSplit(
        a[good],
        int(bad.size),
        int((finite & (a < 0)).sum()),
        int((~finite).sum()),
        tuple(float(x) for x in bad[:5]),
    )


def timing_measurements(
    name: str,
    samples: Sequence[float] | np.ndarray,
    *,
    limit_p99: float | None = None,
    limit_max: float | None = None,
    resolution: float | None = None,
    uncertainty: float | None = None,
    uncertainty_max: float | None = None,
    lengthened: bool = False,
) -> list[Measurement]:
    """Measurements ``{name}.p50/p95/p99/max`` in seconds; p99 and max judged against the
    declared limits (seconds) when given.  Never raises for bad data:

    - bad samples (negative or non-finite, :func:`split_samples`) are left out of the
      percentiles and counted in every measurement's detail (``bad_samples``,
      ``negative``, ``non_finite``, ``examples``); the measurements are then ERROR (the
      host could not time them all), except a limit the valid samples already exceed,
      which is a FAIL (the device is late whatever the bad samples were);
    - no valid sample: every measurement is ERROR with its reason;
    - ``uncertainty`` (seconds; the host's, see :func:`within`) makes the p99 verdict
      INCONCLUSIVE when its margin to the limit lies within it; ``uncertainty_max``
      (default ``uncertainty``) does the same for the max; with fewer than 100 valid
      samples the p99 is interpolated between the two largest, so it takes the max's
      uncertainty (a p99 bound covers 99 of 100 delays, not the largest); ``lengthened``:
      the samples are
      latencies from a host frame to the device's reply, which the host's delays can only
      lengthen (one-sided, see :func:`within`).
    """
    split = split_samples(samples)
    common: dict[str, Any] = {
        "n": int(split.valid.size),
        "resolution_s": clock_resolution() if resolution is None else resolution,
    }
    if split.bad:
        common.update(
            bad_samples=split.bad,
            negative=split.negative,
            non_finite=split.non_finite,
            examples=list(split.examples),
        )
    names = ("p50", "p95", "p99", "max")
    limits = {"p99": limit_p99, "max": limit_max}
    if split.valid.size == 0:
        why = (
            f"all {split.bad} timing samples are negative or non-finite"
            if split.bad
            else "no timing samples"
        )
        return [
            within(f"{name}.{q}", None, "s", None, limits.get(q), reason=why, **common)
            for q in names
        ]
    s = summarize(split.valid, common["resolution_s"])
    values = {"p50": s.p50, "p95": s.p95, "p99": s.p99, "max": s.max}
    u_max = uncertainty if uncertainty_max is None else uncertainty_max
    u = {"p99": uncertainty if split.valid.size >= 100 else u_max, "max": u_max}
    out: list[Measurement] = []
    for q in names:
        m = within(
            f"{name}.{q}",
            values[q],
            "s",
            None,
            limits.get(q),
            uncertainty=u.get(q),
            lengthened=lengthened,
            **common,
        )
        if split.bad and m.verdict is not Verdict.FAIL:
            why = (
                f"{split.bad} of {split.bad + split.valid.size} timing samples are negative "
                f"or non-finite ({split.negative} negative, {split.non_finite} non-finite); "
                "figures from the valid ones"
            )
            m = Measurement(
                m.name, m.value, m.unit, m.low, m.high, Verdict.ERROR, {**m.detail, "reason": why}
            )
        out.append(m)
    return out


def heartbeat_measurements(
    timestamps: Sequence[float] | np.ndarray, period: float, *, jitter_limit: float
) -> list[Measurement]:
    """The heartbeat's mean period and jitter (largest deviation of an interval from the
    declared ``period``), from frame ``timestamps`` in seconds; the jitter is judged against
    ``jitter_limit`` seconds.  Fewer than 2 heartbeats is an ERROR."""
    t = np.asarray(timestamps, dtype=np.float64)
    if t.size < 2:
        return [within("heartbeat.period", None, "s"), within("heartbeat.jitter", None, "s")]
    gaps = np.diff(np.sort(t))
    jitter = float(np.abs(gaps - period).max())
    return [
        within(
            "heartbeat.period",
            float(gaps.mean()),
            "s",
            None,
            None,
            declared=period,
            n=int(gaps.size),
        ),
        within("heartbeat.jitter", jitter, "s", None, jitter_limit, declared_period=period),
    ]


@dataclass(frozen=True)
class PrizeTest:
    """Chi-square of drawn prizes against declared weights: the statistic, degrees of
    freedom, p-value, verdict at ``alpha``, and the observed and expected counts per prize
    (cents) after pooling prizes expected fewer than 5 times."""

    chi2: float
    dof: int
    p_value: float
    verdict: Verdict
    observed: dict[int, int]
    expected: dict[int, float]
    pooled: list[list[int]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (prizes as strings of cents)."""
        return {
            "chi2": self.chi2,
            "dof": self.dof,
            "p_value": self.p_value,
            "verdict": str(self.verdict),
            "observed": {str(k): v for k, v in self.observed.items()},
            "expected": {str(k): v for k, v in self.expected.items()},
            "pooled": self.pooled,
        }


def prize_distribution_test(
    draws: Sequence[int], weights: Mapping[int, int | float], *, alpha: float = 0.01
) -> PrizeTest:
    """Test prize draws (cents) against the declared ``weights`` {prize cents: weight}.

    A prize never declared makes the verdict FAIL at once (named in ``observed``).  Prizes
    expected fewer than 5 times are pooled with the next rarest so Pearson's approximation
    holds.  Raises ValueError for no draws or non-positive weights.
    """
    if not draws:
        raise ValueError("no prize draws to test")
    if not weights or any(w <= 0 for w in weights.values()):
        raise ValueError("weights must be a non-empty mapping of prize cents to positive weights")
    prizes = sorted(weights)
    total_w = float(sum(weights.values()))
    n = len(draws)
    obs: dict[int, int] = {p: 0 for p in prizes}
    undeclared: dict[int, int] = {}
    for d in draws:
        if d in obs:
            obs[d] += 1
        else:
            undeclared[int(d)] = undeclared.get(int(d), 0) + 1
    n_declared = n - sum(undeclared.values())
    exp = {p: n_declared * weights[p] / total_w for p in prizes}
    # pool the rarest prizes together until every group expects >= 5
    order = sorted(prizes, key=lambda p: exp[p])
    groups: list[list[int]] = []
    acc: list[int] = []
    for p in order:
        acc.append(p)
        if sum(exp[q] for q in acc) >= 5:
            groups.append(acc)
            acc = []
    if acc:
        if groups:
            groups[-1].extend(acc)
        else:
            groups.append(acc)
    o = np.array([sum(obs[p] for p in g) for g in groups], dtype=np.float64)
    e = np.array([sum(exp[p] for p in g) for g in groups], dtype=np.float64)
    if len(groups) >= 2:
        from scipy import stats  # start-up: scipy only for a jackpot campaign

        chi2, pval = stats.chisquare(o, e)
        chi2, pval = float(chi2), float(pval)
    else:
        chi2, pval = 0.0, 1.0
    all_obs = dict(obs)
    all_obs.update(undeclared)
    verdict = Verdict.FAIL if undeclared or pval < alpha else Verdict.PASS
    return PrizeTest(
        chi2, max(len(groups) - 1, 0), pval, verdict, all_obs, exp, [sorted(g) for g in groups]
    )
