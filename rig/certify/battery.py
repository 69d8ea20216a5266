"""The randomness battery: checks of shuffled shoes against a uniformly random shuffle.

Every check turns a batch of shoes into a statistic whose null distribution is known exactly
(or its exact mean and variance, with the central limit theorem over the shoes), and a p-value
from scipy's normal and chi-square distribution functions (``scipy.special.ndtr`` and
``chdtrc``: what ``scipy.stats.norm`` and ``chi2`` evaluate, without the 0.3 s import of
``scipy.stats`` at every certification).  The battery corrects the p-values for
multiplicity with Holm's step-down method (S. Holm, "A simple sequentially rejective multiple
test procedure", Scand. J. Statist. 6(2), 1979) and gives each check a verdict; the integrity
check needs no p-value: one shoe that is not a permutation of the loaded cards fails the
battery at once, named.

Input convention: ``perm`` is an ``(n_shoes, n)`` uint16 array, ``perm[s, j]`` = the position in
the loaded (input) order of the card the shuffler delivered at output position j of shoe s
(build it with :func:`input_positions`).  The per-shoe kernels run in the C core
(``feltlab.native.battery_pass``).

Sources: D. Bayer and P. Diaconis, "Trailing the dovetail shuffle to its lair", Ann. Appl.
Probab. 2(2), 1992 (rising sequences, Eulerian numbers, the guessing strategy); P. Diaconis,
J. Fulman and S. Holmes, "Analysis of casino shelf shuffling machines", Ann. Appl. Probab.
23(4), 2013 (shelf shufflers, peaks and valleys); turning points: M. G. Kendall and A. Stuart,
The Advanced Theory of Statistics vol. 3 (mean 2(n-2)/3, variance (16n-29)/90); valleys (the
interior local minima, DFH's statistic for shelf machines): mean (n-2)/3, variance 2(n+1)/45 for
n >= 4 (checked exactly against all permutations of 4..9 cards in tests/certify/test_power.py).

A check that cannot be computed on the sample (a chi-square with 0 degrees of freedom: too few
shoes for two bins) is INCONCLUSIVE, never PASS, with the reason in its ``detail``; it is left
out of Holm's family.  What each check could have caught (its power against named flawed
machines) is :mod:`feltlab.rig.certify.power`'s; the battery's own verdict says only whether a
check rejected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from feltlab import native
from feltlab.rig.certify.standards import requirements


class Verdict(StrEnum):
    """Outcome of one check, one measurement, the battery or a campaign (OpenHTF's outcomes,
    plus INCONCLUSIVE).

    PASS and FAIL are the device's; ERROR: the rig could not measure it (bad samples, a check
    that could not run); INCONCLUSIVE: measured, but the margin to the limit lies within the
    host's own measured uncertainty (:mod:`feltlab.rig.certify.uncertainty`), so neither PASS
    nor FAIL can be claimed; ABORTED: the campaign stopped before it collected its sample (Ctrl-C).
    A campaign's verdict is :func:`combine_verdicts` of its results.
    """

    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"
    INCONCLUSIVE = "INCONCLUSIVE"
    ABORTED = "ABORTED"


def combine_verdicts(verdicts: Sequence[Verdict]) -> Verdict:
    """The verdict of a set of results: FAIL if any FAIL; else ERROR if any ERROR (or none
    at all: nothing was judged); else INCONCLUSIVE if any INCONCLUSIVE; else PASS."""
    vs = set(verdicts)
    if Verdict.FAIL in vs:
        return Verdict.FAIL
    if not vs or Verdict.ERROR in vs or Verdict.ABORTED in vs:
        return Verdict.ERROR
    if Verdict.INCONCLUSIVE in vs:
        return Verdict.INCONCLUSIVE
    return Verdict.PASS


@dataclass(frozen=True)
class CheckResult:
    """One check: its statistic, p-value, Holm-adjusted p-value and verdict.

    ``statistic`` is unitless (a z-score or a chi-square value, as ``statistic_name`` says);
    ``detail`` holds the observed and expected values that a report shows.
    """

    name: str
    description: str
    statistic_name: str
    statistic: float
    p_value: float
    adjusted_p: float = math.nan
    verdict: Verdict = Verdict.PASS
    detail: dict[str, Any] = field(default_factory=dict)
    power: dict[str, float] = field(default_factory=dict)

    @property
    def computable(self) -> bool:
        """False when the sample could not give this check a p-value (its ``detail`` says
        why under ``not_computable``)."""
        return "not_computable" not in self.detail


@dataclass(frozen=True)
class BatteryResult:
    """The battery over one sample: checks, overall verdict, and what was analysed."""

    checks: tuple[CheckResult, ...]
    verdict: Verdict
    alpha: float
    n_shoes: int
    n_cards: int
    integrity: str | None = None  # the first integrity failure, named, else None
    notes: tuple[str, ...] = ()  # why the verdict is not PASS, one sentence each
    power: dict[str, Any] | None = None  # :class:`feltlab.rig.certify.power.PowerTable`
    standard: dict[str, Any] | None = (
        None  # :meth:`feltlab.rig.certify.standards.Standard.coverage`
    )

    def check(self, name: str) -> CheckResult:
        """The check called ``name``; KeyError lists the names."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check {name!r}; checks: {[c.name for c in self.checks]}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable record of the result."""
        return {
            "verdict": str(self.verdict),
            "alpha": self.alpha,
            "n_shoes": self.n_shoes,
            "n_cards": self.n_cards,
            "integrity": self.integrity,
            "notes": list(self.notes),
            "power": self.power,
            "standard": self.standard,
            "checks": [
                {
                    "name": c.name,
                    "description": c.description,
                    "statistic_name": c.statistic_name,
                    "statistic": _finite(c.statistic),
                    "p_value": _finite(c.p_value),
                    "adjusted_p": _finite(c.adjusted_p),
                    "verdict": str(c.verdict),
                    "detail": c.detail,
                    "power": c.power,
                    "serves": requirements(c.name),
                }
                for c in self.checks
            ],
        }


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


# ---------------------------------------------------------------- inputs


def input_positions(output_ids: npt.ArrayLike, loaded_ids: npt.ArrayLike) -> npt.NDArray[np.uint16]:
    """Map delivered card ids to their positions in the loaded order.

    ``output_ids``: ``(n_shoes, n)`` ids (``deck * 52 + code``) as delivered; ``loaded_ids``:
    ``(n,)`` the order the cards were loaded in (one order for every shoe) or ``(n_shoes, n)``.
    Returns ``(n_shoes, n)`` uint16 input positions.  A delivered id that was never loaded maps
    to ``n`` (out of range), so the integrity check names it rather than losing it.
    """
    out = np.asarray(output_ids, dtype=np.int64)
    loaded = np.asarray(loaded_ids, dtype=np.int64)
    if out.ndim != 2:
        raise ValueError(f"output_ids must be (n_shoes, n_cards), got shape {out.shape}")
    n = out.shape[1]
    if loaded.shape not in ((n,), out.shape):
        raise ValueError(f"loaded_ids must be ({n},) or {out.shape}, got {loaded.shape}")
    if n > native.MAX_MODEL_CARDS:
        raise ValueError(f"at most {native.MAX_MODEL_CARDS} cards per shoe, got {n}")
    size = int(max(out.max(initial=0), loaded.max(initial=0))) + 1
    if loaded.ndim == 1:
        lut = np.full(size, n, dtype=np.int64)
        lut[loaded] = np.arange(n)
        return np.ascontiguousarray(lut[out].astype(np.uint16))
    result = np.empty(out.shape, dtype=np.uint16)
    for s in range(out.shape[0]):
        lut = np.full(size, n, dtype=np.int64)
        lut[loaded[s]] = np.arange(n)
        result[s] = lut[out[s]]
    return result


def integrity_problem(perm: np.ndarray, loaded_ids: npt.ArrayLike | None = None) -> str | None:
    """None if every shoe is a permutation of the loaded cards; else a sentence naming the
    first bad shoe and the missing, extra or duplicated card (by id when ``loaded_ids`` is
    given, else by input position)."""
    found = native.check_permutations(perm)
    if found is None:
        return None
    shoe, _col, _val = found
    n = perm.shape[1]
    row = perm[shoe].astype(np.int64)
    counts = np.bincount(row[row < n], minlength=n)
    missing = np.flatnonzero(counts == 0)
    dup = np.flatnonzero(counts > 1)
    extra = int((row >= n).sum())
    names = np.asarray(loaded_ids).reshape(-1)[:n] if loaded_ids is not None else None

    def label(pos: int) -> str:
        if names is None:
            return f"input position {pos}"
        from feltlab.cards import card_str

        ident = int(names[pos])
        return f"card id {ident} ({card_str(ident % 52, symbols=False)} of deck {ident // 52})"

    parts = []
    if dup.size:
        parts.append("duplicated " + ", ".join(label(int(p)) for p in dup[:5]))
    if missing.size:
        parts.append("missing " + ", ".join(label(int(p)) for p in missing[:5]))
    if extra:
        parts.append(f"{extra} card(s) that were never loaded")
    return f"shoe {shoe} is not a permutation of the loaded cards: " + "; ".join(parts)


# ---------------------------------------------------------------- null distributions


@lru_cache(maxsize=16)
def eulerian_pmf(n: int) -> npt.NDArray[np.float64]:
    """P(R = r) for r = 1..n rising sequences of a uniform permutation of n cards, as an
    ``(n,)`` float64 array indexed r - 1: A(n, r - 1) / n!, A the Eulerian numbers, computed
    exactly with integers (A(n, k) = (k + 1) A(n-1, k) + (n - k) A(n-1, k-1))."""
    row = [1]
    for m in range(2, n + 1):
        nxt = [0] * m
        for k in range(m):
            a = (k + 1) * row[k] if k < len(row) else 0
            b = (m - k) * row[k - 1] if k >= 1 else 0
            nxt[k] = a + b
        row = nxt
    total = math.factorial(n)
    return np.array([float(_exact_ratio(a, total)) for a in row], dtype=np.float64)


def _exact_ratio(a: int, b: int) -> float:
    from fractions import Fraction

    return float(Fraction(a, b))


def harmonic(n: int, power: int = 1) -> float:
    """Sum of 1/k**power for k = 1..n."""
    return math.fsum(1.0 / k**power for k in range(1, n + 1))


def _z_check(
    name: str,
    description: str,
    values: np.ndarray,
    mean: float,
    var: float,
    *,
    alternative: str = "two-sided",
) -> CheckResult:
    n = values.size
    total = float(values.astype(np.float64).sum())
    z = (total - n * mean) / math.sqrt(n * var) if n else 0.0
    if alternative == "two-sided":
        p = float(2 * special.ndtr(-abs(z)))  # normal upper tail
    elif alternative == "greater":
        p = float(special.ndtr(-z))
    else:
        p = float(special.ndtr(z))
    return CheckResult(
        name,
        description,
        "z",
        z,
        p,
        detail={
            "observed_mean": total / n if n else math.nan,
            "expected_mean": mean,
            "expected_sd_per_shoe": math.sqrt(var),
            "alternative": alternative,
        },
    )


def _chi2_check(
    name: str, description: str, observed: np.ndarray, expected: np.ndarray, dof: int
) -> CheckResult:
    obs = observed.astype(np.float64).ravel()
    exp = expected.astype(np.float64).ravel()
    keep = exp > 0
    chi2 = float((((obs - exp) ** 2)[keep] / exp[keep]).sum())
    p = float(special.chdtrc(dof, chi2))  # chi-square upper tail
    return CheckResult(
        name,
        description,
        "chi-square",
        chi2,
        p,
        detail={"dof": dof, "min_expected": float(exp[keep].min()) if keep.any() else 0.0},
    )


# ---------------------------------------------------------------- the battery


class Check(StrEnum):
    """The battery's checks, in the order it runs them (docs/certification.md): a ``str``,
    so a check's name compares, sorts and writes to JSON as its value."""

    POSITION_UNIFORMITY = "position_uniformity"
    RISING_SEQUENCES = "rising_sequences"
    RISING_SEQUENCE_DISTRIBUTION = "rising_sequence_distribution"
    TURNING_POINTS = "turning_points"
    VALLEYS = "valleys"
    SUCCESSIONS = "successions"
    ADJACENT_RANK_PAIRS = "adjacent_rank_pairs"
    NEXT_CARD_GUESSING = "next_card_guessing"
    SUCCESSIVE_SHOES = "successive_shoes"
    REPEATED_SHOES = "repeated_shoes"


CHECK_NAMES: tuple[str, ...] = tuple(c.value for c in Check)
"""The checks' names (:class:`Check`'s values) in the battery's order."""


@dataclass(frozen=True)
class ZStatistic:
    """A check whose statistic is a z-score of a per-shoe (or per pair of successive shoes)
    statistic summed over the sample, with its exact null mean and variance.

    ``moments(n)``: ``(mean, variance)`` of one value under a uniform shuffle of n cards;
    ``values(perm, stats)``: the ``(n_shoes,)`` (or ``(n_shoes - 1,)``) values of a sample;
    ``alternative``: ``"two-sided"`` or ``"greater"`` (large values reject).  The power of such
    a check is analytic from the values' mean and variance under an alternative
    (:mod:`feltlab.rig.certify.power`)."""

    description: str
    moments: Callable[[int], tuple[float, float]]
    values: Callable[[np.ndarray, native.ShoeStatistics], np.ndarray]
    alternative: str = "two-sided"
    pairs: bool = False  # one value per pair of successive shoes


def valley_counts(perm: np.ndarray) -> npt.NDArray[np.int64]:
    """``(n_shoes,)`` int64: the valleys of each shoe, output positions 1..n-2 whose card came
    from lower in the loaded order than both its neighbours' (``perm[j-1] > perm[j] <
    perm[j+1]``; DFH 2013, section 4: a shelf machine's output is a few valley-shaped runs)."""
    p = perm.astype(np.int32)
    mid = p[:, 1:-1]
    out: npt.NDArray[np.int64] = ((p[:, :-2] > mid) & (mid < p[:, 2:])).sum(axis=1)
    return out.astype(np.int64)


Z_STATISTICS: dict[str, ZStatistic] = {
    "rising_sequences": ZStatistic(
        "mean number of rising sequences (too few: too few riffles)",
        lambda n: ((n + 1) / 2, (n + 1) / 12),
        lambda perm, s: s.rising,
    ),
    "turning_points": ZStatistic(
        "peaks and valleys (too few: a shelf shuffler's monotone runs)",
        lambda n: (2 * (n - 2) / 3, (16 * n - 29) / 90),
        lambda perm, s: s.turning,
    ),
    "valleys": ZStatistic(
        "valleys, DFH's statistic for shelf machines (too few: valley-shaped runs)",
        lambda n: ((n - 2) / 3, 2 * (n + 1) / 45),
        lambda perm, s: valley_counts(perm),
    ),
    "successions": ZStatistic(
        "a card followed by the card loaded after it",
        lambda n: ((n - 1) / n, (n * n - n - 1) / (n * n)),
        lambda perm, s: s.successions,
    ),
    "next_card_guessing": ZStatistic(
        "correct guesses of the rising-sequence guesser (expected H_n under uniformity)",
        lambda n: (harmonic(n), harmonic(n) - harmonic(n, 2)),
        lambda perm, s: s.guesses,
        alternative="greater",
    ),
    "successive_shoes": ZStatistic(
        "independence of successive shoes (Spearman rho of card positions)",
        lambda n: (0.0, 1.0 / (n - 1)),
        lambda perm, s: native.successive_shoe_rho(perm),
        pairs=True,
    ),
}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order (Holm 1979)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def integrity_failure(problem: str, alpha: float, n_shoes: int, n_cards: int) -> BatteryResult:
    """The battery's result when a shoe is not a permutation of the loaded cards: FAIL at
    once, naming the ``problem``; no statistic is computed on a broken sample."""
    failed = CheckResult(
        "integrity",
        "every shoe is a permutation of the loaded cards",
        "first failure",
        math.nan,
        0.0,
        0.0,
        Verdict.FAIL,
        {"problem": problem},
    )
    return BatteryResult((failed,), Verdict.FAIL, alpha, n_shoes, n_cards, problem)


def family_size(checks: Sequence[str] = CHECK_NAMES, *, codes: bool = True) -> int:
    """The number m of p-values Holm's correction runs over when every check of ``checks``
    can be computed (``codes``: the delivered cards' codes are known, so that adjacent rank
    pairs runs): a check's power after Holm is at least its power at level alpha / m."""
    return sum(1 for c in checks if codes or c != "adjacent_rank_pairs")


def run_battery(
    perm: np.ndarray,
    *,
    alpha: float = 0.01,
    codes: np.ndarray | None = None,
    loaded_ids: npt.ArrayLike | None = None,
    checks: Sequence[str] = CHECK_NAMES,
) -> BatteryResult:
    """Run the battery on ``perm`` ``(n_shoes, n)`` uint16 input positions.

    ``codes`` (optional, ``(n_shoes, n)`` uint8 card codes as delivered) enables the
    adjacent-rank-pairs check; ``loaded_ids`` names cards in integrity failures.  ``alpha`` is
    the family-wise error rate (Holm, over the checks that could be computed).  The verdict:
    FAIL when a check rejects; else INCONCLUSIVE when a check could not be computed (its
    ``detail["not_computable"]`` says why, and :attr:`BatteryResult.notes` repeats it); else
    PASS.  Raises ValueError for an empty sample, a bad alpha or an unknown check name.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    perm = np.ascontiguousarray(perm, dtype=np.uint16)
    if perm.ndim != 2 or perm.shape[0] < 2 or perm.shape[1] < 4:
        raise ValueError(f"need at least 2 shoes of at least 4 cards, got shape {perm.shape}")
    unknown = set(checks) - set(CHECK_NAMES)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; choose from {CHECK_NAMES}")
    n_shoes, n = perm.shape
    problem = integrity_problem(perm, loaded_ids)
    if problem is not None:
        return integrity_failure(problem, alpha, n_shoes, n)
    s = native.battery_pass(perm)
    results: list[CheckResult] = []
    for name in checks:
        result = _CHECKS[name](perm, s, codes) if name in _CHECKS else z_result(name, perm, s)
        if result is not None:
            results.append(result)
    family = [r for r in results if r.computable]
    adjusted = dict(zip((r.name for r in family), holm([r.p_value for r in family]), strict=True))
    final: list[CheckResult] = [
        CheckResult(
            "integrity",
            "every shoe is a permutation of the loaded cards",
            "failures",
            0.0,
            1.0,
            1.0,
            Verdict.PASS,
            {},
        )
    ]
    notes: list[str] = []
    for r in results:
        adj = adjusted.get(r.name, math.nan)
        if not r.computable:
            verdict = Verdict.INCONCLUSIVE
            notes.append(f"{r.name} could not be computed: {r.detail['not_computable']}")
        else:
            verdict = Verdict.FAIL if adj < alpha else Verdict.PASS
        final.append(replace(r, adjusted_p=adj, verdict=verdict))
    overall = combine_verdicts([c.verdict for c in final])
    return BatteryResult(tuple(final), overall, alpha, n_shoes, n, None, tuple(notes))


def z_result(name: str, perm: np.ndarray, s: native.ShoeStatistics) -> CheckResult:
    """The unadjusted result of z-check ``name`` (:data:`Z_STATISTICS`) on ``perm`` with its
    one-pass statistics ``s``."""
    z = Z_STATISTICS[name]
    mean, var = z.moments(perm.shape[1])
    return _z_check(name, z.description, z.values(perm, s), mean, var, alternative=z.alternative)


def position_bins(n: int, n_shoes: int, minimum: float = 5.0) -> npt.NDArray[np.int64]:
    """Bin edges pooling the n output positions into G bins of nearly equal size, as many as
    keep every card's expected count per bin at least ``minimum``: ``(G + 1,)`` int64."""
    g = int(min(n, n_shoes // minimum)) if minimum > 0 else n
    return np.linspace(0, n, max(g, 1) + 1).round().astype(np.int64)


def _position_uniformity(perm: np.ndarray, s: native.ShoeStatistics, _c: Any) -> CheckResult:
    """Card x position.  Each card's position is uniform and independent across shoes, so row
    v of the table is Multinomial(n_shoes, 1/n); the rows are dependent (each shoe is a
    permutation).  The centred table is a sum of iid permutation matrices whose covariance is
    isotropic on the (n-1)^2-dimensional space of zero row and column sums (the S_n x S_n
    symmetry), 1/(n-1) per dimension.  Pooling positions into G bins, the Pearson statistic is
    then asymptotically n/(n-1) * chi-square((n-1)(G-1)); the test uses T = (n-1)/n * Pearson.
    Bins keep every expected count >= 5: under 10 shoes there is one bin, 0 degrees of
    freedom, and the check cannot be computed."""
    n_shoes, n = perm.shape
    edges = position_bins(n, n_shoes)
    g = len(edges) - 1
    pooled = np.add.reduceat(s.position_counts, edges[:-1], axis=1)
    expected = np.outer(np.ones(n), n_shoes * np.diff(edges) / n)
    pearson = float(((pooled - expected) ** 2 / expected).sum())
    t = (n - 1) / n * pearson
    dof = (n - 1) * (g - 1)
    p = float(special.chdtrc(dof, t)) if dof > 0 else math.nan
    dev = np.abs(s.position_counts - n_shoes / n).sum(axis=1)
    detail: dict[str, Any] = {
        "dof": dof,
        "position_bins": g,
        "min_expected": float(expected.min()),
        "worst_input_position": int(np.argmax(dev)),
    }
    if dof == 0:
        detail["not_computable"] = (
            f"0 degrees of freedom: {n_shoes} shoes pool every position into one bin (each "
            "card must be expected at least 5 times in a bin; two bins, the fewest a "
            "chi-square can compare, need at least 10 shoes)"
        )
    return CheckResult(
        "position_uniformity",
        "each card equally likely at each position (input position x output position)",
        "chi-square",
        t,
        p,
        detail=detail,
    )


def _rising_distribution(perm: np.ndarray, s: native.ShoeStatistics, _c: Any) -> CheckResult:
    n_shoes, n = perm.shape
    pmf = eulerian_pmf(n)
    observed = np.bincount(s.rising.astype(np.int64) - 1, minlength=n)[:n]
    expected = pmf * n_shoes
    # pool the tails so that every bin expects at least 5 shoes
    obs_b, exp_b = pool_bins(observed.astype(np.float64), expected, 5.0)
    dof = len(exp_b) - 1
    r = _chi2_check(
        "rising_sequence_distribution",
        "histogram of rising sequences against the Eulerian distribution",
        obs_b,
        exp_b,
        dof,
    )
    r.detail["bins"] = len(exp_b)
    if dof < 1:
        r.detail["not_computable"] = (
            f"0 degrees of freedom: {n_shoes} shoes fill one bin of the Eulerian "
            "distribution with an expected 5 shoes"
        )
        return replace(r, p_value=math.nan)
    return r


def pool_bins(obs: np.ndarray, exp: np.ndarray, minimum: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge adjacent bins, left to right, until each expects at least ``minimum``; a short
    last bin joins the one before it.  Returns the pooled ``(observed, expected)``."""
    out_o: list[float] = []
    out_e: list[float] = []
    acc_o = acc_e = 0.0
    for o, e in zip(obs, exp, strict=True):
        acc_o += float(o)
        acc_e += float(e)
        if acc_e >= minimum:
            out_o.append(acc_o)
            out_e.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        if out_e:
            out_o[-1] += acc_o
            out_e[-1] += acc_e
        else:
            out_o.append(acc_o)
            out_e.append(acc_e)
    return np.array(out_o), np.array(out_e)


def log_repeat_bound(n_shoes: int, n: int) -> float:
    """log of C(n_shoes, 2) / n!: an upper bound (the union bound) on the probability that
    two of ``n_shoes`` uniformly shuffled shoes of n distinct cards are the same order."""
    pairs = n_shoes * (n_shoes - 1) / 2
    return math.log(pairs) - math.lgamma(n + 1) if pairs > 0 else -math.inf


def _repeated(perm: np.ndarray, s: native.ShoeStatistics, _c: Any) -> CheckResult:
    """Shoes that repeat an earlier shoe's order exactly (a short seed space, a seed reused
    after a reboot).  Under a uniform shuffle a repeat has probability at most C(N, 2)/n!
    (N shoes; 10^-638.0 for 2,000 shoes of 312 cards): with a repeat, that bound is the
    p-value (a valid, conservative one); without, p = 1."""
    n_shoes, n = perm.shape
    unique = len({row.tobytes() for row in perm})
    repeats = n_shoes - unique
    p = math.exp(log_repeat_bound(n_shoes, n)) if repeats else 1.0
    return CheckResult(
        "repeated_shoes",
        "no shoe repeats an earlier shoe's order (a short seed space repeats shoes)",
        "repeats",
        float(repeats),
        min(1.0, p),
        detail={
            "repeated_shoes": repeats,
            "log10_p_bound": log_repeat_bound(n_shoes, n) / math.log(10),
        },
    )


def _adjacent_ranks(perm: np.ndarray, s: native.ShoeStatistics, codes: Any) -> CheckResult | None:
    if codes is None:
        return None
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    n_shoes = codes.shape[0]
    counts = native.adjacent_rank_pairs(codes)
    expected = n_shoes * adjacent_pair_expected(codes[0])
    present = int((np.bincount((codes[0] >> 2).astype(np.int64), minlength=13) > 0).sum())
    return _chi2_check(
        "adjacent_rank_pairs",
        "rank of a card x rank of the next card, against the shoe's composition",
        counts,
        expected,
        max((present - 1) ** 2, 1),
    )


def adjacent_pair_expected(shoe_codes: np.ndarray) -> npt.NDArray[np.float64]:
    """``(13, 13)``: the expected count, in one uniformly shuffled shoe of these card codes,
    of (rank a, rank b) at adjacent positions: (n - 1) P(a then b), drawn without
    replacement."""
    n = shoe_codes.size
    comp = np.bincount((shoe_codes >> 2).astype(np.int64), minlength=13).astype(np.float64)
    pair = np.outer(comp, comp) - np.diag(comp)
    return (n - 1) * pair / (n * (n - 1))


_CHECKS: dict[str, Callable[[np.ndarray, native.ShoeStatistics, Any], CheckResult | None]] = {
    "position_uniformity": _position_uniformity,
    "rising_sequence_distribution": _rising_distribution,
    "adjacent_rank_pairs": _adjacent_ranks,
    "repeated_shoes": _repeated,
}
