"""Normal-approximation confidence intervals: the one 95% quantile every interval feltlab
prints is built from (simulation, play-decided wagers, protection, power)."""

from __future__ import annotations

import math
from statistics import NormalDist

Z95: float = NormalDist().inv_cdf(0.975)
"""The standard normal's 97.5% quantile, 1.959963984540054: a two-sided 95% interval is the
estimate +- Z95 standard errors."""


def half_width(variance: float, n: int, z: float = Z95) -> float:
    """The half-width ``z * sqrt(variance / n)`` of the interval of a mean of ``n`` draws of
    the given per-draw variance (a negative variance from rounding counts as 0; NaN when the
    variance is not finite or n < 1)."""
    if n < 1 or not math.isfinite(variance):
        return math.nan
    return z * math.sqrt(max(variance, 0.0) / n)
