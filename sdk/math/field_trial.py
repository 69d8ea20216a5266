"""A field trial's hold against a wager's theoretical hold: per-period and cumulative hold
with 95% bands, the periods outside them, the p-value that the trial agrees with the
certified house edge, and what the trial could detect (docs/trial.md).

The model.  A wager of exact house edge ``e`` and per-unit standard deviation ``sigma`` (both
from its PAR sheet) is bet ``n`` times at a table for a handle ``H``; at the average bet
``b = H / n`` the house's win ``W`` is ``b`` times the sum of ``n`` independent per-unit
results, so ``E[W] = e H`` and ``Var[W] = n b**2 sigma**2 = sigma**2 H**2 / n``.  The hold
``W / H`` has mean ``e`` and standard deviation ``sigma / sqrt(n)``; summed over tables and
days, ``SD[hold] = sigma * sqrt(sum(H_i**2 / n_i)) / sum(H_i)``, which is ``sigma / sqrt(N)``
when every bet is of one size (N bets in all).  Bets of different sizes within a row make
the true SD larger (by ``sqrt(1 + CV**2)`` of the bet sizes), so the bands are the narrowest
the data allow and a period outside them is a reason to look, as COMAR 36.05.03.25 asks of a
table game's hold outside a 95% confidence interval.

The test.  ``z = (hold - e) / SD[hold]``, two-sided p-value ``2 * (1 - Phi(|z|))`` (the
normal approximation of the central limit theorem over the trial's bets).  The smallest
house-edge error the trial confirms with power ``1 - beta`` at two-sided level 5% is
``(Z95 + z_{1-beta}) * SD[hold]``, and a stated error ``delta`` needs
``n = ((Z95 + z_{1-beta}) * sigma / delta)**2`` bets of one size (the standard one-sample
sample-size formula for a mean, e.g. Chow, Shao and Wang, *Sample Size Calculations in
Clinical Research*, section 3.1; the far tail's power neglected): sigma 5 and delta 0.01
need 1,962,220 bets (issue 43: "about 2 million").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from feltlab.intervals import Z95
from feltlab.math.parsheet import ParSheet
from feltlab.math.trial_data import Period

POWER = 0.8
"""The power the smallest detectable error and the bets needed are stated at."""
ALPHA = 0.05
"""The two-sided level of the bands and of the agreement test (Z95's)."""


def _norm() -> Any:
    from scipy.stats import norm  # start-up: scipy is the trial's alone

    return norm


def z_power(power: float = POWER) -> float:
    """The standard normal quantile of ``power`` (0.8416212335729143 at 0.8)."""
    return float(_norm().ppf(power))


def detectable_error(sd_hold: float, power: float = POWER) -> float:
    """The smallest house-edge error (a fraction of handle) a hold of standard deviation
    ``sd_hold`` confirms at two-sided 95% with ``power``: ``(Z95 + z_power) * sd_hold``."""
    return (Z95 + z_power(power)) * sd_hold


def bets_needed(sigma: float, delta: float, power: float = POWER) -> int:
    """The bets of one size a trial needs to confirm a house-edge error ``delta`` (a
    fraction, e.g. 0.01) of a wager of per-unit standard deviation ``sigma`` at two-sided
    95% with ``power``: ``ceil(((Z95 + z_power) * sigma / delta)**2)``.  Raises ValueError
    for a ``delta`` that is not positive."""
    if not delta > 0:
        raise ValueError(f"the error to detect must be positive, got {delta}")
    return math.ceil(((Z95 + z_power(power)) * sigma / delta) ** 2)


def power_at(sd_hold: float, delta: float) -> float:
    """The probability that a trial of hold SD ``sd_hold`` rejects the certified edge at
    two-sided 95% when the true edge is off by ``delta`` (both tails)."""
    if sd_hold <= 0:
        return 1.0
    shift = abs(delta) / sd_hold
    norm = _norm()
    return float(norm.cdf(shift - Z95) + norm.cdf(-shift - Z95))


@dataclass(frozen=True)
class HoldPoint:
    """One period's hold and the cumulative hold to its end, each with its 95% band around
    the theoretical hold (NaN where the period has no bets).  Amounts in currency units,
    holds as fractions of handle."""

    label: str
    rows: int
    bets: int
    handle: float
    win: float
    hold: float
    low: float
    high: float
    outside: bool
    cum_bets: int
    cum_handle: float
    cum_win: float
    cum_hold: float
    cum_sd: float
    cum_low: float
    cum_high: float


@dataclass(frozen=True)
class TableHold:
    """One table's hold over the whole trial with its 95% band around the theoretical hold
    (NaN where the table took no bets): ``days`` its rows."""

    table: str
    days: int
    bets: int
    handle: float
    win: float
    hold: float
    low: float
    high: float
    outside: bool


@dataclass(frozen=True)
class TrialAnalysis:
    """A trial against its wager's PAR sheet (:func:`analyze`).

    ``edge`` the certified house edge (exact), ``sigma`` the per-unit standard deviation;
    ``hold``, ``sd_hold``, ``z``, ``p_value`` the whole trial's; ``agrees`` is
    ``p_value >= ALPHA``; ``outside`` the labels of the periods whose hold is outside its
    band; ``tables`` each table's hold over the trial with its band; ``detectable`` the
    smallest error confirmed at 80% power; with a stated error ``detect``: ``detect_bets``
    (the bets of one size it needs) and ``detect_power`` (this trial's power against it)."""

    wager: str
    title: str
    paytable: str
    decks: int
    rules: str
    edge: Fraction
    sigma: float
    points: tuple[HoldPoint, ...]
    bets: int
    handle: float
    win: float
    hold: float
    sd_hold: float
    z: float
    p_value: float
    agrees: bool
    outside: tuple[str, ...]
    detectable: float
    detect: float | None
    detect_bets: int | None
    detect_power: float | None
    tables: tuple[TableHold, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """The JSON form: every figure, holds and errors as fractions of handle."""
        return {
            "wager": self.wager,
            "title": self.title,
            "paytable": self.paytable,
            "decks": self.decks,
            "rules": self.rules,
            "house_edge": {
                "exact": f"{self.edge.numerator}/{self.edge.denominator}",
                "value": float(self.edge),
            },
            "sigma": self.sigma,
            "bets": self.bets,
            "handle": self.handle,
            "win": self.win,
            "hold": self.hold,
            "sd_hold": self.sd_hold,
            "band": [float(self.edge) - Z95 * self.sd_hold, float(self.edge) + Z95 * self.sd_hold],
            "z": self.z,
            "p_value": self.p_value,
            "agrees": self.agrees,
            "periods_outside": list(self.outside),
            "power": POWER,
            "smallest_detectable_error": self.detectable,
            "detect": self.detect,
            "detect_bets_needed": self.detect_bets,
            "detect_power": self.detect_power,
            "periods": [vars(p) for p in self.points],
            "tables": [vars(t) for t in self.tables],
            "tables_outside": [t.table for t in self.tables if t.outside],
        }


def _points(periods: Sequence[Period], edge: float, sigma: float) -> list[HoldPoint]:
    points = []
    cum_bets, cum_handle, cum_win, cum_sq = 0, 0.0, 0.0, 0.0
    for p in periods:
        cum_bets += p.bets
        cum_handle += p.handle
        cum_win += p.win
        cum_sq += p.handle_sq_per_bet
        if p.bets:
            hold = p.win / p.handle
            half = Z95 * sigma * math.sqrt(p.handle_sq_per_bet) / p.handle
            low, high = edge - half, edge + half
        else:
            hold = low = high = math.nan
        if cum_bets:
            cum_hold = cum_win / cum_handle
            cum_sd = sigma * math.sqrt(cum_sq) / cum_handle
        else:
            cum_hold = cum_sd = math.nan
        points.append(
            HoldPoint(
                label=p.label,
                rows=p.rows,
                bets=p.bets,
                handle=p.handle,
                win=p.win,
                hold=hold,
                low=low,
                high=high,
                outside=bool(p.bets) and not low <= hold <= high,
                cum_bets=cum_bets,
                cum_handle=cum_handle,
                cum_win=cum_win,
                cum_hold=cum_hold,
                cum_sd=cum_sd,
                cum_low=edge - Z95 * cum_sd,
                cum_high=edge + Z95 * cum_sd,
            )
        )
    return points


def _table_holds(tables: Sequence[Period], edge: float, sigma: float) -> tuple[TableHold, ...]:
    out = []
    for t in tables:
        if t.bets:
            hold = t.win / t.handle
            half = Z95 * sigma * math.sqrt(t.handle_sq_per_bet) / t.handle
            low, high = edge - half, edge + half
        else:
            hold = low = high = math.nan
        outside = bool(t.bets) and not low <= hold <= high
        out.append(TableHold(t.label, t.rows, t.bets, t.handle, t.win, hold, low, high, outside))
    return tuple(out)


def analyze(
    sheet: ParSheet,
    periods: Sequence[Period],
    *,
    tables: Sequence[Period] = (),
    detect: float | None = None,
) -> TrialAnalysis:
    """The trial ``periods`` (:func:`feltlab.math.trial_data.periods`) against ``sheet``'s
    house edge and standard deviation (the module docstring's model); ``tables`` its rows
    summed by table (:func:`feltlab.math.trial_data.by_table`) for each table's hold and
    band; ``detect`` a stated house-edge error (a fraction) to say the bets it needs and this
    trial's power against it.

    Raises ValueError when the trial has no bets, its hold's standard deviation is not
    finite and positive (handles whose squares underflow), or ``detect`` is not positive.
    """
    edge, sigma = float(sheet.house_edge), sheet.std_dev
    points = _points(periods, edge, sigma)
    if not points or not points[-1].cum_bets:
        raise ValueError("the trial has no bets: every row's bets are 0")
    last = points[-1]
    if not (last.cum_sd > 0 and math.isfinite(last.cum_sd)):
        raise ValueError(
            f"the trial's hold has no finite spread (SD {last.cum_sd:g}: a handle too small to "
            "square or a wager that never varies); give handles in currency units"
        )
    z = (last.cum_hold - edge) / last.cum_sd
    p_value = float(2 * _norm().sf(abs(z)))
    return TrialAnalysis(
        wager=sheet.wager,
        title=sheet.title,
        paytable=sheet.paytable,
        decks=sheet.decks,
        rules=sheet.rules,
        edge=sheet.house_edge,
        sigma=sigma,
        points=tuple(points),
        bets=last.cum_bets,
        handle=last.cum_handle,
        win=last.cum_win,
        hold=last.cum_hold,
        sd_hold=last.cum_sd,
        z=z,
        p_value=p_value,
        agrees=p_value >= ALPHA,
        outside=tuple(p.label for p in points if p.outside),
        detectable=detectable_error(last.cum_sd),
        detect=detect,
        detect_bets=None if detect is None else bets_needed(sigma, detect),
        detect_power=None if detect is None else power_at(last.cum_sd, detect),
        tables=_table_holds(tables, edge, sigma),
    )
