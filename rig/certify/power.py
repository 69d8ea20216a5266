"""What a certificate could have caught: the battery's power against named flawed machines.

A campaign's battery PASSes only when no check rejects *and* every alternative its profile
names (``[campaign] power_alternatives``, default :data:`DEFAULT_ALTERNATIVES`) is caught with
the required power (``power_required``, default 0.99) at the campaign's alpha after Holm's
correction, at the campaign's sample size.  Otherwise it is INCONCLUSIVE, with a sentence per
alternative such as "2 shoes catch shelf:m=10 with power 0.31; 9 shoes are needed".

How the power is computed, cheaply (docs/certification.md, "Power"):

- The alternative's law is exact where the model's law is known in closed form
  (:mod:`feltlab.rig.certify.exact_law`: the position law of ``biased``, ``modulo``,
  ``position-bias``, ``stuck``; ``short-seed``'s seed space) and otherwise measured once from
  ``shoes`` simulated shoes of its shuffle model (:func:`alternative_law`; default 2,000
  shoes in 20 blocks) seeded by :data:`POWER_SEED`, never the campaign's seed, independent of
  the campaign's size: the power at any number of shoes is then analytic, and planning
  (:func:`plan`) and the verdict run one :class:`PowerJob` per alternative, the same figures
  whatever the campaign's seed (issue 44).
- A z-check (:data:`feltlab.rig.certify.battery.Z_STATISTICS`: the z-score of a per-shoe
  statistic summed over N shoes): with the per-shoe statistic's null mean and variance
  (mu0, s0^2) and its simulated mean and variance under the alternative (mu1, s1^2), Z is
  normal with mean sqrt(N)(mu1 - mu0)/s0 and standard deviation s1/s0 (the central limit
  theorem over the shoes); the power is P(|Z| > z_crit) (or P(Z > z_crit), one-sided).
- A chi-square check (position uniformity, the rising-sequence histogram, adjacent rank
  pairs): the alternative's cell probabilities p against the null's e give the noncentrality
  lambda = N * scale * sum (p - e)^2 / e over the cells the check pools at N shoes, and the
  power is the noncentral chi-square's tail beyond the null's critical value (scipy's
  ``chndtr``, what ``scipy.stats.ncx2`` evaluates).  sum (p - e)^2 / e is estimated without
  the bias of the simulation's own noise by a U-statistic over pairs of independent blocks
  (exact for an exact law).  For an exact position law the statistic's variance is computed
  too (:meth:`CellLaw.excess_variance`): a card far from uniform widens the law beyond the
  noncentral chi-square's, and the power is that of a noncentral chi-square of the same mean
  and variance (:func:`chi_square_power`; Patnaik's scaled chi-square when that leaves under
  one degree of freedom).
- Repeated shoes: the chance q that two shoes of the alternative are the same order, from
  the identical pairs among the simulated shoes; a repeat among N shoes has probability
  1 - exp(-C(N, 2) q) (the birthday approximation), and any repeat rejects.
- Holm: each check's power is computed at level alpha / m (m checks in the family), the
  Bonferroni level, a lower bound on its power under Holm's step-down correction; the
  battery's power against an alternative is at least its best check's (it rejects when any
  check does), and that lower bound is what the record shows and the verdict uses.
- Confidence intervals (95%): for a z-check, the power over the corners of the box of the
  simulated mean and variance's joint 95% intervals (each at 97.5%); for a chi-square, at the
  ends of lambda's 95% interval from the jackknife over blocks; for repeats, from the exact
  Poisson interval of the identical pairs; an exact law's interval is a point.  The verdict
  and the "shoes needed" use the lower end: a certificate claims only the power it has shown.
  ``benchmarks/bench_power_coverage.py`` checks that bound against whole simulated campaigns
  at the planned size, for every model of the default library.

Sources: D. Bayer and P. Diaconis, Ann. Appl. Probab. 2(2), 1992; P. Diaconis, J. Fulman and
S. Holmes, Ann. Appl. Probab. 23(4), 2013; S. Holm, Scand. J. Statist. 6(2), 1979.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy
from scipy import special

from feltlab import cache, native, seeds
from feltlab.host import usable_cores
from feltlab.intervals import Z95
from feltlab.native import core as native_core
from feltlab.rig.certify.battery import (
    CHECK_NAMES,
    Z_STATISTICS,
    BatteryResult,
    Check,
    Verdict,
    adjacent_pair_expected,
    eulerian_pmf,
    family_size,
    pool_bins,
    position_bins,
    run_battery,
)
from feltlab.rig.certify.binding import lab_key
from feltlab.rig.certify.exact_law import position_law, repeat_probability, seed_space
from feltlab.rig.certify.profile import CampaignError
from feltlab.rig.certify.simulate import simulate_shoes
from feltlab.rig.devices import models
from feltlab.rig.devices.models import ModelKind, parse_model
from feltlab.seeds import child_seed

#: The flawed machines a certificate must catch unless its profile names others: shuffle
#: model strings of :func:`feltlab.rig.certify.simulate.simulate_shoes` (the library of
#: docs/certification.md, "Power"; the lead extends it with the library's new models).
DEFAULT_ALTERNATIVES: tuple[str, ...] = (
    "riffle:k=7",
    "riffle:k=10",
    "shelf:m=10",
    "shelf:m=10,passes=2",
    "shelf:m=200",
    "biased",
    "overhand:passes=10",
    "strip:cuts=8,passes=2",
    "position-bias",
    "modulo:bits=8",
    "lcg",
    "short-seed",
    "reboot",
)
#: The power each named alternative must be caught with (at the campaign's alpha, after Holm).
DEFAULT_REQUIRED = 0.99
#: Simulated shoes per alternative (in :data:`BLOCKS` blocks) that measure its law.
DEFAULT_SIMULATED_SHOES = 2000
BLOCKS = 20
#: The seed of every power simulation (``child_seed(POWER_SEED, "power", model)`` a model):
#: fixed, so that an alternative's power and the shoes it needs are the same figures in every
#: campaign and in ``feltlab certify plan``, whatever the campaign's own seed (issue 44).
POWER_SEED = 0
#: The largest sample size the planner searches; beyond it an alternative "cannot be caught".
MAX_SHOES = 10_000_000
_Z9875 = 2.241402727604947  # 98.75%: two intervals at 97.5% each, jointly 95% (Bonferroni)


# ---------------------------------------------------------------- one alternative's law


@dataclass(frozen=True)
class ZLaw:
    """A z-check's per-shoe statistic under the null (``mean0``, ``var0``: exact) and under
    the alternative (``mean1``, ``var1``, estimated from ``count`` simulated values, with the
    standard errors ``se_mean1`` and ``se_var1``)."""

    check: str
    mean0: float
    var0: float
    mean1: float
    var1: float
    se_mean1: float
    se_var1: float
    count: int
    alternative: str = "two-sided"
    pairs: bool = False

    def power(self, n_shoes: int, level: float, mean1: float, sd1: float) -> float:
        """The power at ``n_shoes`` shoes and ``level`` for the alternative's moments."""
        k = n_shoes - 1 if self.pairs else n_shoes
        if k < 1:
            return 0.0
        s0 = math.sqrt(self.var0)
        shift = math.sqrt(k) * (mean1 - self.mean0) / s0
        ratio = max(sd1 / s0, 1e-12)
        if self.alternative == "greater":
            c = float(special.ndtri(1 - level))
            return float(special.ndtr((shift - c) / ratio))
        c = float(special.ndtri(1 - level / 2))
        return float(special.ndtr((-c - shift) / ratio) + special.ndtr((shift - c) / ratio))

    def bounds(self, n_shoes: int, level: float) -> tuple[float, float, float]:
        """(point, low, high): the power and its 95% interval over the corners of the box of
        the mean's and the variance's 97.5% intervals."""
        point = self.power(n_shoes, level, self.mean1, math.sqrt(self.var1))
        corners = [
            self.power(n_shoes, level, m, math.sqrt(max(v, 0.0)))
            for m in (self.mean1 - _Z9875 * self.se_mean1, self.mean1 + _Z9875 * self.se_mean1)
            for v in (self.var1 - _Z9875 * self.se_var1, self.var1 + _Z9875 * self.se_var1)
        ]
        crosses = (
            (self.mean1 - _Z9875 * self.se_mean1)
            <= self.mean0
            <= (self.mean1 + _Z9875 * self.se_mean1)
        )
        if crosses:  # the mean's interval holds the null's: the power may be as low as at mu0
            corners.append(self.power(n_shoes, level, self.mean0, math.sqrt(self.var1)))
        corners.append(point)
        return point, min(corners), max(corners)


@dataclass(frozen=True, eq=False)
class CellLaw:
    """A chi-square check's cells under the alternative: ``blocks`` ``(B, ...)`` float64,
    the mean count per shoe of each cell in each of B independent blocks of simulated shoes
    (B = 1: the exact probabilities, :mod:`feltlab.rig.certify.exact_law`; the interval is
    then a point); how the check pools them at N shoes is the check's (:meth:`pooled`)."""

    check: str
    blocks: npt.NDArray[np.float64]
    expected: npt.NDArray[np.float64]  # per shoe, the null's, same cells as a block
    scale: float = 1.0
    _cache: dict[tuple[Any, ...], tuple[float, float, int]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def pooled(self, n_shoes: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``(blocks (B, cells), expected (cells,), dof)`` as the battery pools at N shoes."""
        b = self.blocks.shape[0]
        if self.check == Check.POSITION_UNIFORMITY:
            n = self.blocks.shape[1]
            edges = position_bins(n, n_shoes)
            g = len(edges) - 1
            pooled = np.add.reduceat(self.blocks, edges[:-1], axis=2).reshape(b, -1)
            exp = np.outer(np.ones(n), np.diff(edges) / n).ravel()
            return pooled, exp, (n - 1) * (g - 1)
        if self.check == Check.RISING_SEQUENCE_DISTRIBUTION:
            rows = [pool_bins(row, self.expected * n_shoes, 5.0)[0] for row in self.blocks]
            exp = pool_bins(self.expected, self.expected * n_shoes, 5.0)[0]
            return np.array(rows), exp, len(exp) - 1
        keep = self.expected.ravel() > 0  # adjacent rank pairs
        present = int((self.expected.sum(axis=1) > 0).sum())
        return (
            self.blocks.reshape(b, -1)[:, keep],
            self.expected.ravel()[keep],
            max((present - 1) ** 2, 1),
        )

    def noncentrality(self, n_shoes: int) -> tuple[float, float, int]:
        """(lambda, its jackknife standard error, dof) at N shoes: lambda = N * scale *
        U, U the unbiased estimate of sum (p - e)^2 / e from pairs of distinct blocks."""
        key = self._pooling(n_shoes)
        if key not in self._cache:
            self._cache[key] = self._unit(n_shoes)
        u, se, dof = self._cache[key]
        k = n_shoes * self.scale
        return k * u, k * se, dof

    def _pooling(self, n_shoes: int) -> tuple[float, ...]:
        """What decides the cells at N shoes (equal keys, equal cells)."""
        if self.check == Check.POSITION_UNIFORMITY:
            return (float(len(position_bins(self.blocks.shape[1], n_shoes))),)
        if self.check == Check.RISING_SEQUENCE_DISTRIBUTION:
            edges = np.cumsum(pool_bins(self.expected, self.expected * n_shoes, 5.0)[0])
            return tuple(float(x) for x in edges.round(12))
        return (0.0,)

    def _unit(self, n_shoes: int) -> tuple[float, float, int]:
        pooled, exp, dof = self.pooled(n_shoes)
        d = (pooled - exp) / np.sqrt(exp)
        b = d.shape[0]
        if b == 1:  # one block: the exact cell probabilities, no simulation noise
            return float((d * d).sum()), 0.0, dof
        # numpy's own sums in a fixed order, never BLAS (``@``): a BLAS dot splits its sum
        # over as many threads as the host gives it, and the last bits of the power then
        # differ between hosts and between runs (``OPENBLAS_NUM_THREADS``)
        total = d.sum(axis=0)
        sq = (d * d).sum(axis=1)
        cross = (d * total).sum(axis=1)
        tt = float((total * total).sum())
        u = (tt - float(sq.sum())) / (b * (b - 1))
        loo = (tt - 2 * cross + sq - (sq.sum() - sq)) / ((b - 1) * (b - 2))
        se = math.sqrt((b - 1) / b * float(((loo - loo.mean()) ** 2).sum()))
        return u, se, dof

    def excess_variance(self, n_shoes: int) -> float:
        """How much the statistic's variance at N shoes exceeds the noncentral chi-square's
        2 (dof + 2 lambda), for an exact position law (one block; 0 otherwise, and never
        below 0).  Each card's row of the pooled table is Multinomial(N, p) with cells of
        null probability e; with a = p / e, d = p - e and c = (n-1)/n the test's scale,
        Var(c Pearson) = 2 dof + c^2 sum over rows of [2 (tr(A^2) - (G - 1)) +
        4 N (sum d^2 p / e^2 - (sum d p / e)^2)], tr(A^2) = sum a^2 - 2 sum a^2 p +
        (sum a p)^2 (the delta method on the counts; the rows' dependence as under the
        null).  The noncentral chi-square keeps only the local alternative's 4 lambda: a
        card far from uniform (``position-bias``: one card at its place 10 times as often)
        widens the law, and the power it gives would be too high."""
        if self.check != Check.POSITION_UNIFORMITY or self.blocks.shape[0] != 1:
            return 0.0
        pooled, exp, _ = self.pooled(n_shoes)
        n = self.blocks.shape[1]
        p = pooled.reshape(n, -1)
        e = exp.reshape(n, -1)
        a = p / e
        d = p - e
        tr2 = (a * a).sum(1) - 2 * (a * a * p).sum(1) + (a * p).sum(1) ** 2
        lin = (d * d * p / (e * e)).sum(1) - (d * p / e).sum(1) ** 2
        c2 = self.scale * self.scale
        excess = c2 * float((2 * (tr2 - (e.shape[1] - 1)) + 4 * n_shoes * lin).sum())
        return max(excess - 4 * self.noncentrality(n_shoes)[0], 0.0)

    def bounds(self, n_shoes: int, level: float) -> tuple[float, float, float]:
        """(point, low, high): the power and its 95% interval: the noncentral chi-square's
        tail beyond the null's critical value, moment-matched to :meth:`excess_variance`
        when it is not 0 (:func:`chi_square_power`)."""
        lam, se, dof = self.noncentrality(n_shoes)
        if dof < 1:
            return 0.0, 0.0, 0.0
        crit = float(special.chdtri(dof, level))
        extra = self.excess_variance(n_shoes)

        def pw(x: float) -> float:
            return chi_square_power(crit, dof, max(x, 0.0), extra)

        return pw(lam), pw(lam - Z95 * se), pw(lam + Z95 * se)


def chi_square_power(crit: float, dof: int, lam: float, extra: float = 0.0) -> float:
    """P(T > ``crit``) for T of mean dof + lam and variance 2 (dof + 2 lam) + ``extra``:
    the noncentral chi-square (dof, lam) when ``extra`` is 0 (scipy's ``chndtr``); else the
    noncentral chi-square of the same mean and variance (dof - extra/2 degrees of freedom,
    noncentrality lam + extra/2), or, when that leaves under one degree of freedom, the
    scaled chi-square a chi2(f) of that mean and variance (Patnaik, Biometrika 36, 1949)."""
    if extra <= 0:
        return float(1 - special.chndtr(crit, dof, lam))
    k = dof - extra / 2
    if k >= 1:
        return float(1 - special.chndtr(crit, k, lam + extra / 2))
    mean = dof + lam
    var = 2 * (dof + 2 * lam) + extra
    scale = var / (2 * mean)
    return float(special.chdtrc(2 * mean * mean / var, crit / scale))


@dataclass(frozen=True)
class RepeatLaw:
    """Identical pairs among ``shoes`` simulated shoes of the alternative; ``period``: the
    shoes repeat with this period (a device reseeded with the same seed at every reboot,
    ``reboot:every=N``): shoes are then not independent, and the first repeat is shoe
    ``period + 1``, for certain; ``space``: the shoes are uniform draws from this many
    orders (``short-seed:bits=b``: 2^b), and the birthday problem gives the power exactly
    (:func:`feltlab.rig.certify.exact_law.repeat_probability`)."""

    identical_pairs: int
    shoes: int
    period: int | None = None
    space: int | None = None

    def bounds(self, n_shoes: int, level: float) -> tuple[float, float, float]:
        """(point, low, high): P(a repeat among N shoes) = 1 - exp(-C(N, 2) q), q and its
        exact Poisson 95% interval from the identical pairs; for a periodic alternative 1
        when N exceeds the period, else 0; for a known seed space, exact (a point)."""
        if self.period is not None:
            certain = 1.0 if n_shoes > self.period else 0.0
            return certain, certain, certain
        if self.space is not None:
            exact = repeat_probability(n_shoes, self.space)
            return exact, exact, exact
        pairs = self.shoes * (self.shoes - 1) / 2
        c = self.identical_pairs
        lo = float(special.chdtri(2 * c, 0.975)) / 2 if c > 0 else 0.0
        hi = float(special.chdtri(2 * c + 2, 0.025)) / 2
        want = n_shoes * (n_shoes - 1) / 2

        def pw(count: float) -> float:
            return float(-math.expm1(-want * count / pairs))

        return pw(c), pw(lo), pw(hi)


@dataclass(frozen=True, eq=False)
class AlternativeLaw:
    """What ``shoes`` simulated shoes of shuffle ``model`` (``n_cards`` cards) say of each
    check's statistic: enough to give any check's power at any sample size.  Compared by
    identity (it holds arrays): compare two by their :func:`alternative_power`."""

    model: str
    n_cards: int
    shoes: int
    z: dict[str, ZLaw]
    cells: dict[str, CellLaw]
    repeats: RepeatLaw

    def bounds(self, check: str, n_shoes: int, level: float) -> tuple[float, float, float]:
        """(power, 95% low, 95% high) of ``check`` at ``n_shoes`` shoes and ``level``;
        KeyError for a check this law does not cover."""
        if check in self.z:
            return self.z[check].bounds(n_shoes, level)
        if check in self.cells:
            return self.cells[check].bounds(n_shoes, level)
        if check == Check.REPEATED_SHOES:
            return self.repeats.bounds(n_shoes, level)
        raise KeyError(check)

    def interval(self, check: str) -> str:
        """How the 95% interval of ``check``'s power is found (the record names it)."""
        if check in self.z:
            return "normal; box of the simulated mean's and variance's 97.5% intervals"
        if check in self.cells:
            if self.cells[check].blocks.shape[0] == 1:
                return "exact law, no simulation: a point"
            return f"jackknife over {self.cells[check].blocks.shape[0]} simulated blocks"
        if self.repeats.period is not None:
            return f"certain from shoe {self.repeats.period + 1} (periodic): a point"
        if self.repeats.space is not None:
            return f"exact birthday problem over {self.repeats.space:,} shoes: a point"
        return "Garwood exact Poisson interval of the identical pairs"

    @property
    def checks(self) -> tuple[str, ...]:
        """The checks covered, in the battery's order."""
        have = set(self.z) | set(self.cells) | {Check.REPEATED_SHOES.value}
        return tuple(c for c in CHECK_NAMES if c in have)


def _z_law(check: str, values: np.ndarray, n: int) -> ZLaw:
    z = Z_STATISTICS[check]
    mean0, var0 = z.moments(n)
    v = values.astype(np.float64)
    k = v.size
    mean1 = float(v.mean())
    var1 = float(v.var(ddof=1)) if k > 1 else 0.0
    m4 = float(((v - mean1) ** 4).mean())
    se_var = math.sqrt(max(m4 - var1 * var1, 0.0) / k) if k > 1 else 0.0
    se_mean = math.sqrt(var1 / k) if k > 0 else 0.0
    return ZLaw(check, mean0, var0, mean1, var1, se_mean, se_var, k, z.alternative, z.pairs)


def law_of_shoes(
    model: str, perm: np.ndarray, codes: np.ndarray | None = None, blocks: int = BLOCKS
) -> AlternativeLaw:
    """The :class:`AlternativeLaw` of simulated shoes ``perm`` ``(shoes, n)`` uint16 of
    ``model`` (``codes``: their ``(shoes, n)`` uint8 card codes, for adjacent rank pairs).
    Raises ValueError with fewer than 2 shoes per block."""
    perm = np.ascontiguousarray(perm, dtype=np.uint16)
    shoes, n = perm.shape
    if shoes < 2 * blocks:
        raise ValueError(f"at least {2 * blocks} simulated shoes are needed, got {shoes}")
    stats = native.battery_pass(perm)
    z = {name: _z_law(name, zs.values(perm, stats), n) for name, zs in Z_STATISTICS.items()}
    size = shoes // blocks
    pos = np.empty((blocks, n, n))
    rising = np.empty((blocks, n))
    pairs = np.empty((blocks, 13, 13))
    for b in range(blocks):
        part = perm[b * size : (b + 1) * size]
        pos[b] = native.battery_pass(part).position_counts / size
        r = stats.rising[b * size : (b + 1) * size].astype(np.int64) - 1
        rising[b] = np.bincount(r, minlength=n)[:n] / size
        if codes is not None:
            c = np.ascontiguousarray(codes[b * size : (b + 1) * size], dtype=np.uint8)
            pairs[b] = native.adjacent_rank_pairs(c) / size
    cells = {
        "position_uniformity": CellLaw("position_uniformity", pos, np.full(n, 1 / n), (n - 1) / n),
        "rising_sequence_distribution": CellLaw(
            "rising_sequence_distribution", rising, eulerian_pmf(n)
        ),
    }
    if codes is not None:
        cells["adjacent_rank_pairs"] = CellLaw(
            "adjacent_rank_pairs", pairs, adjacent_pair_expected(np.asarray(codes[0], np.uint8))
        )
    _, counts = np.unique(perm, axis=0, return_counts=True)
    identical = int((counts * (counts - 1) // 2).sum())
    return AlternativeLaw(model, n, shoes, z, cells, RepeatLaw(identical, shoes))


def shoes_of(model: str, shoes: int, n_cards: int, seed: int) -> npt.NDArray[np.uint16]:
    """``(shoes, n_cards)`` uint16 input positions of ``model`` from the C core's library
    (:func:`feltlab.rig.certify.simulate.simulate_shoes`), from the loaded order 0..n-1 with
    ``seed``.  Raises ValueError (:class:`~feltlab.rig.errors.ModelError`) for a model the
    library does not know, or one whose shoes are not permutations (a dropped or duplicated
    card: the integrity check, not a power, catches it)."""
    out = simulate_shoes(model, shoes, n_cards, seed)
    if native.check_permutations(out) is not None:
        raise ValueError(
            f"{model} drops, adds or repeats a card: the integrity check catches its first shoe"
        )
    return out


def alternative_law(
    model: str,
    n_cards: int,
    *,
    shoes: int = DEFAULT_SIMULATED_SHOES,
    seed: int = POWER_SEED,
    loaded_ids: npt.ArrayLike | None = None,
) -> AlternativeLaw:
    """The :class:`AlternativeLaw` of ``shoes`` shoes of ``model`` simulated by
    :func:`feltlab.rig.certify.simulate.simulate_shoes` with ``child_seed(seed, "power",
    model)`` (``loaded_ids``: the loaded order's physical ids, so that the codes of the
    simulated shoes give adjacent rank pairs).  Raises ValueError for an unknown model.

    Where the model's law is known in closed form (:mod:`feltlab.rig.certify.exact_law`) the
    simulation's estimate is replaced by it: the position law of ``biased``, ``modulo``,
    ``position-bias``, ``stuck`` (position uniformity's cells, exact) and the seed space of
    ``short-seed`` (repeated shoes, the birthday problem, exact).

    A periodic model (``reboot:every=N``: the same N shoes again and again) is not a law of
    independent shoes: within a period its shoes are Fisher-Yates shoes, so the checks of
    single shoes see a uniform law (their power is alpha's), and the repeated-shoes check
    catches it for certain from shoe N + 1."""
    period = _period(model)
    simulated = "fisher-yates" if period is not None else model
    perm = shoes_of(simulated, shoes, n_cards, child_seed(seed, "power", model))
    codes = None
    if loaded_ids is not None:
        loaded = np.asarray(loaded_ids, dtype=np.int64)
        codes = np.ascontiguousarray(loaded[perm] % 52, dtype=np.uint8)
    law = law_of_shoes(model, perm, codes)
    if period is not None:
        return replace(law, repeats=RepeatLaw(0, shoes, period))
    exact = position_law(model, n_cards)
    if exact is not None:
        old = law.cells["position_uniformity"]
        cells = dict(law.cells, position_uniformity=replace(old, blocks=exact[None], _cache={}))
        law = replace(law, cells=cells)
    space = seed_space(model)
    if space is not None:
        law = replace(law, repeats=RepeatLaw(law.repeats.identical_pairs, shoes, space=space))
    return law


def _period(model: str) -> int | None:
    """The period of a model whose shoes repeat by construction (``reboot``), else None."""
    m = parse_model(model)
    return m.settings["every"] if m.kind == ModelKind.REBOOT else None


# ---------------------------------------------------------------- power at a sample size


@dataclass(frozen=True)
class CheckPower:
    """One check's power against one alternative: at the campaign's ``n_shoes`` (``power``,
    95% interval ``low``-``high``, at the Bonferroni level ``level``) and the shoes it needs
    to reach the required power at the interval's low end (None: not within MAX_SHOES)."""

    check: str
    power: float
    low: float
    high: float
    shoes_needed: int | None
    interval: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable record."""
        return {
            "check": self.check,
            "power": self.power,
            "ci95": [self.low, self.high],
            "interval": self.interval,
            "shoes_needed": self.shoes_needed,
        }


@dataclass(frozen=True)
class AlternativePower:
    """The battery against one alternative at ``n_shoes``: each check's power; the
    battery's (at least its best check's: ``power``, ``low``, ``high``); ``caught``: the low
    end reaches ``required``; ``shoes_needed`` and ``caught_by``: the fewest shoes any check
    needs, and that check."""

    model: str
    n_shoes: int
    required: float
    checks: tuple[CheckPower, ...]

    @property
    def best(self) -> CheckPower:
        """The check with the highest lower bound at ``n_shoes``."""
        return max(self.checks, key=lambda c: (c.low, c.power))

    @property
    def caught(self) -> bool:
        """True when the battery's power's lower 95% bound reaches the required power."""
        return self.best.low >= self.required

    @property
    def shoes_needed(self) -> int | None:
        """The fewest shoes at which some check reaches the required power (None: none
        within :data:`MAX_SHOES`)."""
        got = [c.shoes_needed for c in self.checks if c.shoes_needed is not None]
        return min(got) if got else None

    @property
    def caught_by(self) -> str | None:
        """The check that needs the fewest shoes (None: no check catches it)."""
        got = [c for c in self.checks if c.shoes_needed is not None]
        return min(got, key=lambda c: c.shoes_needed or 0).check if got else None

    def sentence(self) -> str:
        """The verdict's sentence for this alternative."""
        b = self.best
        head = (
            f"{self.n_shoes} shoes catch {self.model} with power {b.low:.2f} "
            f"(lower 95% bound, {b.check}; required {self.required:g})"
        )
        need = self.shoes_needed
        if need is None:
            return f"{head}; no check reaches it within {MAX_SHOES:,} shoes"
        return f"{head}; {need:,} shoes are needed ({self.caught_by})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable record."""
        b = self.best
        return {
            "model": self.model,
            "n_shoes": self.n_shoes,
            "power": b.power,
            "ci95": [b.low, b.high],
            "best_check": b.check,
            "caught": self.caught,
            "shoes_needed": self.shoes_needed,
            "caught_by": self.caught_by,
            "checks": {c.check: c.to_dict() for c in self.checks},
        }


def shoes_needed(law: AlternativeLaw, check: str, level: float, required: float) -> int | None:
    """The fewest shoes (2..MAX_SHOES) at which ``check``'s power's lower 95% bound reaches
    ``required`` at ``level`` (doubling, then bisection; the power grows with the shoes),
    None when it does not within :data:`MAX_SHOES`."""

    def ok(n: int) -> bool:
        return law.bounds(check, n, level)[1] >= required

    if not ok(MAX_SHOES):  # one look settles the checks that cannot catch it at all
        return None
    lo, hi = 1, 2
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi >= MAX_SHOES:
            return _bisect(ok, lo, MAX_SHOES)
    return _bisect(ok, lo, hi)


def _bisect(ok: Any, lo: int, hi: int) -> int:
    """The smallest n in (lo, hi] with ok(n), given ok(hi) and not ok(lo)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def alternative_power(
    law: AlternativeLaw,
    n_shoes: int,
    *,
    alpha: float,
    required: float = DEFAULT_REQUIRED,
    checks: Sequence[str] | None = None,
    codes: bool = True,
) -> AlternativePower:
    """The battery's power against ``law``'s alternative at ``n_shoes`` shoes and family
    level ``alpha``: each check (``checks``, default all the law covers) at the Bonferroni
    level alpha / m, m the battery's family size (:func:`feltlab.rig.certify.battery.family_size`
    of the checks run, ``codes``: whether adjacent rank pairs runs)."""
    names = [c for c in (checks or law.checks) if c in law.checks]
    m = family_size(checks or CHECK_NAMES, codes=codes)
    level = alpha / max(m, 1)
    out = []
    for name in names:
        point, low, high = law.bounds(name, n_shoes, level)
        need = shoes_needed(law, name, level, required)
        out.append(CheckPower(name, point, low, high, need, law.interval(name)))
    return AlternativePower(law.model, n_shoes, required, tuple(out))


@dataclass(frozen=True)
class PowerTable:
    """The battery's power against every named alternative of a campaign (the record's
    ``battery.power``)."""

    alpha: float
    required: float
    family: int
    simulated_shoes: int
    alternatives: tuple[AlternativePower, ...]
    unavailable: dict[str, str] = field(default_factory=dict)  # model -> why
    codes_only: bool = False  # shoes read as card codes (a card reader's file): its own figures

    @property
    def caught(self) -> bool:
        """Every alternative caught with the required power (and none unavailable)."""
        return not self.unavailable and all(a.caught for a in self.alternatives)

    def sentences(self) -> list[str]:
        """One sentence per alternative not caught, then one per alternative whose power
        could not be computed, then what a campaign needs to catch them all."""
        missed = [a for a in self.alternatives if not a.caught]
        out = [a.sentence() for a in missed]
        out += [
            f"the power against {m} could not be computed: {why}"
            for m, why in self.unavailable.items()
        ]
        needs = [(a.shoes_needed, a.model) for a in missed if a.shoes_needed is not None]
        if missed and len(needs) == len(missed):
            most, model = max(needs)
            out.append(
                f"{most:,} shoes would catch every named alternative with the required power "
                f"(the most any needs: {model})"
            )
        elif len(needs) < len(missed):
            never = ", ".join(a.model for a in missed if a.shoes_needed is None)
            out.append(
                f"no sample size of this battery catches {never}: "
                + (
                    # feltlab certify plan's figures are card ids', which catch them all
                    "on card codes; name in the profile's power_alternatives ones this table "
                    "catches, or give card ids (feltlab certify plan's figures are for card ids)"
                    if self.codes_only
                    else "name alternatives it can catch (feltlab certify plan)"
                )
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable record."""
        return {
            "required": self.required,
            "alpha": self.alpha,
            "level": f"alpha / m = {self.alpha:g} / {self.family} (Bonferroni: a lower bound "
            "on each check's power under Holm's correction)",
            "method": "analytic: each alternative's law exact where known (position law of "
            "biased, modulo, position-bias, stuck; seed space of short-seed), else measured "
            f"from simulated shoes seeded by the fixed power seed {POWER_SEED} (never the "
            "campaign's); z-checks: normal; chi-square: noncentral chi-square, moment-matched "
            "to a far-from-uniform row's variance; repeats: birthday problem; 95% intervals, "
            "each check's method named; the battery's power is at least its best check's",
            "simulation_seed": POWER_SEED,
            "simulated_shoes": self.simulated_shoes,
            "caught": self.caught,
            "alternatives": [a.to_dict() for a in self.alternatives],
            "unavailable": dict(self.unavailable),
        }


def judge(res: BatteryResult, table: PowerTable) -> BatteryResult:
    """``res`` with its power ``table``: a PASS becomes INCONCLUSIVE when an alternative is
    not caught with the required power (a sentence each in ``notes``); a FAIL stays FAIL;
    each check's ``power`` holds its point power per alternative."""
    per = {a.model: {c.check: c.power for c in a.checks} for a in table.alternatives}
    checks = tuple(
        replace(c, power={m: v[c.name] for m, v in per.items() if c.name in v}) for c in res.checks
    )
    notes = list(res.notes) + table.sentences()
    verdict = res.verdict
    if verdict is Verdict.PASS and not table.caught:
        verdict = Verdict.INCONCLUSIVE
    return replace(res, checks=checks, verdict=verdict, notes=tuple(notes), power=table.to_dict())


# ---------------------------------------------------------------- a job for the helper


@dataclass(frozen=True)
class PowerJob:
    """The arguments of one alternative's row of a campaign's power table
    (:func:`alternative_law`, then :func:`alternative_power` at ``n_shoes``), hashable, so
    that the helper process (:mod:`feltlab.rig.certify.ahead`) computes it while the
    campaign collects.  ``loaded_ids``: int64 bytes (None: codes unknown)."""

    model: str
    n_cards: int
    shoes: int
    seed: int
    n_shoes: int
    alpha: float
    required: float
    loaded_ids: bytes | None = None

    @classmethod
    def of(
        cls,
        model: str,
        n_cards: int,
        *,
        shoes: int,
        seed: int,
        n_shoes: int,
        alpha: float,
        required: float = DEFAULT_REQUIRED,
        loaded_ids: npt.ArrayLike | None = None,
    ) -> PowerJob:
        ids = None if loaded_ids is None else np.asarray(loaded_ids, dtype=np.int64).tobytes()
        return cls(
            model,
            int(n_cards),
            int(shoes),
            int(seed),
            int(n_shoes),
            float(alpha),
            float(required),
            ids,
        )

    def compute(self, workers: int | None = None) -> AlternativePower:
        """The row, from the on-disk cache (``feltlab.cache``, kind ``power``, under
        :meth:`cache_key`) when a readable one is there whose tag under the lab key
        (:func:`feltlab.rig.certify.binding.lab_key`) is right, else computed in this process
        (:meth:`compute_afresh`) and stored with its tag; the same row to the bit either way
        (``workers`` is unused: one thread).  A row edited in the cache, even into valid
        JSON, fails its tag and is computed again: a verdict never rests on a host file
        that the lab's key did not vouch for.  Without a lab key (none can be made) nothing
        is cached."""
        secret = _cache_secret()
        if secret is None:  # no lab key to vouch for a cached row: computed every time
            return self.compute_afresh()
        key = self.cache_key()
        got = _load_row(key, self, secret)
        if got is not None:
            return got
        row = self.compute_afresh()
        text = _row_json(row)
        stored = json.dumps({"row": text, "tag": _row_tag(secret, key, text)})
        cache.store(ROW_CACHE_KIND, key, np.frombuffer(stored.encode(), np.uint8))
        return row

    def compute_afresh(self) -> AlternativePower:
        """The row computed here, never read from the cache: the law of the alternative's
        simulated shoes (:func:`alternative_law`, seeded by :attr:`seed`), then its power
        at :attr:`n_shoes` (:func:`alternative_power`).  Raises ValueError for a model the
        simulator does not know."""
        ids = None if self.loaded_ids is None else np.frombuffer(self.loaded_ids, np.int64)
        law = alternative_law(
            self.model, self.n_cards, shoes=self.shoes, seed=self.seed, loaded_ids=ids
        )
        return alternative_power(
            law, self.n_shoes, alpha=self.alpha, required=self.required, codes=ids is not None
        )

    def cache_key(self) -> str:
        """The SHA-256 key of this row in the cache: :data:`ROW_CACHE_VERSION`, every field
        of the job (the model, the cards, the simulated shoes and their seed, the sample
        size, alpha, the required power, the digest of the loaded order), the blocks and
        the planner's bound, and :func:`code_digest` (the C core and the Python code that
        simulate the shoes and compute the law and the power, numpy's and scipy's versions)."""
        ids = "none" if self.loaded_ids is None else hashlib.sha256(self.loaded_ids).hexdigest()
        return cache.digest(
            "power-row",
            ROW_CACHE_VERSION,
            self.model,
            self.n_cards,
            self.shoes,
            self.seed,
            self.n_shoes,
            repr(self.alpha),
            repr(self.required),
            ids,
            BLOCKS,
            MAX_SHOES,
            code_digest(),
        )

    def run(self) -> AlternativePower:
        """The row: the helper process's when it computed this very job, else computed
        here; the same either way."""
        from feltlab.rig.certify.ahead import computed_ahead  # start-up

        got = computed_ahead(self)
        return got if isinstance(got, AlternativePower) else self.compute()


#: The cache's kind (folder) of the power rows (:meth:`PowerJob.compute`).
ROW_CACHE_KIND = "power"
#: The layout of a cached power row and the meaning of its figures: part of its cache key;
#: bump it when the law or the power is computed differently in a way :func:`code_digest`
#: does not see (a change in another module than those it reads).
ROW_CACHE_VERSION = 1
#: The modules whose code decides a row (their source is part of :func:`code_digest`).
_ROW_CODE = ("power", "exact_law", "simulate", "battery")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The SHA-256 of what computes a power row besides its inputs: the C core's shared
    library (the shuffle models, the battery's passes), the source of this module and of
    ``exact_law``, ``simulate``, ``battery``, the device models' parser, the seeds' derivation
    (``feltlab.seeds``) and the C core's Python wrappers (``feltlab.native.core``), numpy's and
    scipy's versions (a file that cannot be read gives a key never seen again: no reuse)."""
    here = Path(__file__).parent
    wrappers = [Path(str(m.__file__)) for m in (models, seeds, native_core)]
    files = wrappers + [here / f"{name}.py" for name in _ROW_CODE]
    h = hashlib.sha256(f"numpy {np.__version__} scipy {scipy.__version__}".encode())
    h.update(native.core_digest().encode())
    for f in files:
        try:
            h.update(hashlib.sha256(f.read_bytes()).digest())
        except OSError:
            h.update(str(id(h)).encode())
    return h.hexdigest()


def _row_json(row: AlternativePower) -> str:
    """``row`` as JSON text; every float exact (Python writes the shortest repr that reads
    back to the same double)."""
    checks = [[c.check, c.power, c.low, c.high, c.shoes_needed, c.interval] for c in row.checks]
    return json.dumps(
        {"model": row.model, "n_shoes": row.n_shoes, "required": row.required, "checks": checks}
    )


def _cache_secret() -> bytes | None:
    """The key that tags cached rows: derived from the lab key (made if there is none, as a
    campaign does), or None when there is none and none can be made, or it is damaged."""
    try:
        lab = lab_key(create=True)
    except CampaignError:
        return None
    return None if lab is None else hmac.new(lab, b"feltlab-power-row:v1", "sha256").digest()


def _row_tag(secret: bytes, key: str, text: str) -> str:
    """HMAC-SHA256 (RFC 2104) under ``secret`` of the row's cache key and its JSON text."""
    return hmac.new(secret, f"{key}\n{text}".encode(), "sha256").hexdigest()


def _load_row(key: str, job: PowerJob, secret: bytes) -> AlternativePower | None:
    """The cached row ``key`` of ``job``, or None: absent, unreadable, truncated, not JSON
    of a tagged row, its tag wrong under ``secret`` (edited, or another lab's), or of
    another job's model, size or required power (recomputed then)."""
    raw = cache.load(ROW_CACHE_KIND, key)
    if raw is None:
        return None
    try:
        stored = json.loads(raw.tobytes().decode())
        text, tag = str(stored["row"]), str(stored["tag"])
        if not hmac.compare_digest(tag, _row_tag(secret, key, text)):
            return None
        got = json.loads(text)
        checks = tuple(
            CheckPower(
                str(name),
                float(power),
                float(low),
                float(high),
                None if need is None else int(need),
                str(how),
            )
            for name, power, low, high, need, how in got["checks"]
        )
        row = AlternativePower(
            str(got["model"]), int(got["n_shoes"]), float(got["required"]), checks
        )
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    if (row.model, row.n_shoes, row.required) != (job.model, job.n_shoes, job.required):
        return None
    if not checks:
        return None
    return row


# ---------------------------------------------------------------- planning


def plan(
    alternatives: Sequence[str],
    *,
    decks: int,
    alpha: float,
    required: float = DEFAULT_REQUIRED,
    shoes: int = DEFAULT_SIMULATED_SHOES,
    seed: int = POWER_SEED,
    n_shoes: int = 2000,
) -> PowerTable:
    """The battery's power table for shoes of ``decks`` decks (loaded in new-deck order)
    against each of ``alternatives`` at ``n_shoes`` shoes: per check, the shoes it needs to
    reach ``required`` at family level ``alpha``.  Each row is the :class:`PowerJob` a
    campaign of this size, alpha and profile runs (the same function, the same figures);
    the rows run on up to 2 threads (the C core releases the GIL).  A model the simulator
    does not know is ``unavailable``."""
    loaded = native.new_shoe(decks, ids=True).astype(np.int64)

    def one(model: str) -> AlternativePower | str:
        job = PowerJob.of(
            model,
            loaded.size,
            shoes=shoes,
            seed=seed,
            n_shoes=n_shoes,
            alpha=alpha,
            required=required,
            loaded_ids=loaded,
        )
        try:
            return job.compute()
        except ValueError as exc:
            return str(exc)

    workers = max(1, min(2, usable_cores(), len(alternatives)))
    with ThreadPoolExecutor(workers, thread_name_prefix="feltlab-plan") as pool:
        got = list(pool.map(one, alternatives))
    return PowerTable(
        alpha,
        required,
        family_size(CHECK_NAMES),
        shoes,
        tuple(g for g in got if isinstance(g, AlternativePower)),
        {m: g for m, g in zip(alternatives, got, strict=True) if isinstance(g, str)},
    )


# ---------------------------------------------------------------- whole simulated campaigns


def estimate_power(
    model: str,
    n_shoes: int,
    n_cards: int,
    *,
    alpha: float = 0.01,
    replicates: int = 20,
    seed: int = 0,
    loaded_ids: npt.ArrayLike | None = None,
    workers: int | None = None,
) -> dict[str, float]:
    """The fraction of ``replicates`` simulated campaigns of ``n_shoes`` shoes from ``model``
    that each check rejects (Holm-adjusted, at ``alpha``): each check's power against that
    named alternative at this sample size, by brute force (the cross-check of the analytic
    power above).  Also the battery's overall power, as "battery".  ``loaded_ids`` (the
    ``n_cards`` physical ids of the loaded order): the simulated shoes' card codes, so that
    adjacent rank pairs runs too and Holm's family is the campaign's.

    The replicates run on ``workers`` threads (default: up to 4, the C core releases the
    GIL); each has its own seed, ``child_seed(seed, "power", model, r)``, so the estimate does
    not depend on them."""
    loaded = None if loaded_ids is None else np.asarray(loaded_ids, dtype=np.int64)

    def replicate(r: int) -> BatteryResult:
        shoes = simulate_shoes(model, n_shoes, n_cards, child_seed(seed, "power", model, r))
        codes = None if loaded is None else np.ascontiguousarray((loaded[shoes] % 52), np.uint8)
        return run_battery(shoes, alpha=alpha, codes=codes)

    if workers is None:
        workers = min(usable_cores(), 4)
    workers = max(1, min(replicates, workers))
    with ThreadPoolExecutor(workers, thread_name_prefix="feltlab-power") as pool:
        results = list(pool.map(replicate, range(replicates)))
    hits: dict[str, int] = {}
    for res in results:
        for c in res.checks:
            hits[c.name] = hits.get(c.name, 0) + (c.verdict is Verdict.FAIL)
        hits["battery"] = hits.get("battery", 0) + (res.verdict is Verdict.FAIL)
    return {k: v / replicates for k, v in hits.items()}


__all__ = [
    "DEFAULT_ALTERNATIVES",
    "DEFAULT_REQUIRED",
    "DEFAULT_SIMULATED_SHOES",
    "POWER_SEED",
    "ROW_CACHE_KIND",
    "ROW_CACHE_VERSION",
    "AlternativeLaw",
    "AlternativePower",
    "CheckPower",
    "PowerJob",
    "PowerTable",
    "alternative_law",
    "alternative_power",
    "chi_square_power",
    "code_digest",
    "estimate_power",
    "judge",
    "law_of_shoes",
    "plan",
    "shoes_needed",
]
