"""Deck-order leakage (docs/security.md, "Deck-order leakage"): is anything the device puts
on the bus, outside the declared certification-mode shoe report, informative about the
dealt order?

Each *feature* (a decoded signal's last value in a shuffle's window, an undeclared frame's
byte, the shuffle's duration from its Ack to its READY Status) is discretised (its values if
at most :data:`MAX_LEVELS`, else :data:`BINS` quantile bins) and tested against each
*target* (the rank of the first, second and third dealt card) by its plug-in mutual
information in bits (Cover & Thomas, ch. 2).  The family of tests is judged by a
permutation test of the maximum statistic (Westfall & Young 1993, single-step maxT): each
pair's statistic is ``-log10`` of its G-test p-value (G = 2 N ln 2 MI, chi-square with
``(levels - 1)(classes - 1)`` degrees of freedom), and the same permutations of the shuffles'
targets are applied to every feature, so the family-wise error is ``alpha`` whatever the
number of features and however sparse their tables.  Each pair's MI is reported with its
permutation-bias-corrected value and a 95% basic bootstrap interval (Davison & Hinkley
1997, 5.2: ``2 MI - q``, clipped at 0; the plug-in MI's upward bias is partly removed by it,
so read it as a guide, the verdict resting on the permutation test).  :func:`power`
states by simulation the probability of catching a stated leak at the run's size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import chdtrc

#: a feature with at most this many distinct values keeps them; others are binned
MAX_LEVELS = 16
#: quantile bins of a many-valued feature
BINS = 8
#: the family-wise false-alarm rate of the leak tests
ALPHA = 0.01
#: permutations of the maxT test (the smallest p-value is 1 / (PERMUTATIONS + 1))
PERMUTATIONS = 999


def discretize(values: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], int]:
    """``(codes 0..k-1, k)`` of a feature: its distinct values if at most
    :data:`MAX_LEVELS`, else :data:`BINS` quantile bins (ties kept together)."""
    v = np.asarray(values, dtype=np.float64)
    uniq = np.unique(v)
    if uniq.size <= MAX_LEVELS:
        return np.searchsorted(uniq, v).astype(np.int64), int(uniq.size)
    edges = np.unique(np.quantile(v, np.linspace(0, 1, BINS + 1)[1:-1]))
    codes = np.searchsorted(edges, v, side="right").astype(np.int64)
    return codes, int(edges.size + 1)


def mutual_information(
    x: npt.NDArray[np.int64], nx: int, ys: npt.NDArray[np.int64], ny: int
) -> npt.NDArray[np.float64]:
    """Plug-in mutual information (bits) of ``x`` (N codes < ``nx``) with each row of ``ys``
    (R x N codes < ``ny``): R values."""
    r, n = ys.shape
    idx = (x[None, :] * ny + ys) + (np.arange(r)[:, None] * (nx * ny))
    c = np.bincount(idx.ravel(), minlength=r * nx * ny).reshape(r, nx, ny).astype(np.float64)
    px = c.sum(axis=2, keepdims=True)
    py = c.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(c > 0, c * np.log2(c * n / (px * py)), 0.0)
    return np.asarray(terms.sum(axis=(1, 2)) / n)


def _stat(mi: npt.NDArray[np.float64], n: int, df: int) -> npt.NDArray[np.float64]:
    p = chdtrc(max(df, 1), 2.0 * n * np.log(2.0) * mi)
    return np.asarray(-np.log10(np.maximum(p, 1e-300)))


@dataclass(frozen=True)
class PairResult:
    """One (feature, target) pair: MI (bits), MI less its mean under permutation, the 95%
    bootstrap interval of the latter, and the family-adjusted p-value (maxT)."""

    feature: str
    target: str
    levels: int
    mi_bits: float
    mi_corrected: float
    interval: tuple[float, float]
    p_adjusted: float


@dataclass(frozen=True)
class LeakResult:
    """The family of tests: its pairs (largest statistic first), ``n`` shuffles, ``alpha``,
    permutations, and the constant features (nothing to test)."""

    pairs: list[PairResult]
    n: int
    alpha: float
    permutations: int
    constant: list[str]

    def leaks(self) -> list[PairResult]:
        """The pairs whose adjusted p-value is below ``alpha``."""
        return [p for p in self.pairs if p.p_adjusted < self.alpha]


def leak_test(
    features: Mapping[str, npt.ArrayLike],
    targets: Mapping[str, npt.ArrayLike],
    *,
    alpha: float = ALPHA,
    permutations: int = PERMUTATIONS,
    bootstrap: int = 200,
    seed: int = 40,
) -> LeakResult:
    """The maxT permutation test of every feature against every target (each an array of
    one value per shuffle, all of one length N >= 10).  Raises ValueError for unequal
    lengths or too few shuffles."""
    lengths = {len(np.asarray(v)) for v in (*features.values(), *targets.values())}
    if len(lengths) != 1 or min(lengths) < 10:
        raise ValueError("every feature and target needs one value per shuffle, 10 or more")
    n = lengths.pop()
    rng = np.random.default_rng(seed)
    coded = {k: discretize(v) for k, v in features.items()}
    constant = sorted(k for k, (_, lv) in coded.items() if lv < 2)
    live = {k: v for k, v in coded.items() if v[1] >= 2}
    obs: dict[tuple[str, str], float] = {}
    null: dict[tuple[str, str], npt.NDArray[np.float64]] = {}
    stats = []
    max_null = np.full(permutations, -np.inf)
    for tname, tv in targets.items():
        y, ny = discretize(tv)
        perms = np.stack([rng.permutation(y) for _ in range(permutations)])
        ys = np.vstack([y[None, :], perms])
        for fname, (x, nx) in live.items():
            mi = mutual_information(x, nx, ys, ny)
            st = _stat(mi, n, (nx - 1) * (ny - 1))
            obs[(fname, tname)] = float(mi[0])
            null[(fname, tname)] = mi[1:]
            stats.append(((fname, tname), float(st[0]), nx, y, ny, x))
            max_null = np.maximum(max_null, st[1:])
    pairs = []
    for key, s0, nx, y, ny, x in sorted(stats, key=lambda t: -t[1]):
        p_adj = (1 + int(np.sum(max_null >= s0 - 1e-12))) / (permutations + 1)
        bias = float(null[key].mean())
        idx = rng.integers(0, n, size=(bootstrap, n))
        boot = np.array([mutual_information(x[i], nx, y[i][None, :], ny)[0] for i in idx])
        q_lo, q_hi = np.quantile(boot, [0.025, 0.975])  # the basic bootstrap interval
        lo, hi = max(0.0, 2 * obs[key] - q_hi), max(0.0, 2 * obs[key] - q_lo)
        pairs.append(
            PairResult(key[0], key[1], nx, obs[key], obs[key] - bias, (float(lo), float(hi)), p_adj)
        )
    return LeakResult(pairs, n, alpha, permutations, constant)


def power(
    n: int,
    n_features: int,
    leak_fraction: float,
    *,
    replicates: int = 100,
    permutations: int = 199,
    alpha: float = ALPHA,
    n_targets: int = 3,
    seed: int = 4040,
) -> float:
    """The probability (by simulation, ``replicates`` runs) that :func:`leak_test` at ``n``
    shuffles and ``alpha`` catches the stated leak: among ``n_features`` features of 8
    uniform levels, one equals the first card's rank (13 classes) in a ``leak_fraction`` of
    the shuffles (else an independent rank), tested against ``n_targets`` targets as a run
    tests three ranks.  ``permutations`` fewer than a run's (the smallest p-value must stay
    below ``alpha``)."""
    rng = np.random.default_rng(seed)
    caught = 0
    for _ in range(replicates):
        rank = rng.integers(0, 13, n)
        leaky = np.where(rng.random(n) < leak_fraction, rank, rng.integers(0, 13, n))
        feats: dict[str, npt.ArrayLike] = {"leak": leaky}
        for j in range(max(n_features - 1, 0)):
            feats[f"null{j}"] = rng.integers(0, 8, n)
        targets: dict[str, npt.ArrayLike] = {"rank1": rank}
        for j in range(2, n_targets + 1):
            targets[f"rank{j}"] = rng.integers(0, 13, n)
        res = leak_test(
            feats,
            targets,
            alpha=alpha,
            permutations=permutations,
            bootstrap=2,
            seed=int(rng.integers(1 << 31)),
        )
        caught += any(p.feature == "leak" for p in res.leaks())
    return caught / replicates


__all__ = [
    "ALPHA",
    "BINS",
    "MAX_LEVELS",
    "PERMUTATIONS",
    "LeakResult",
    "PairResult",
    "discretize",
    "leak_test",
    "mutual_information",
    "power",
]
