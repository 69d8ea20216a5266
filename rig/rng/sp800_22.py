"""NIST SP 800-22 rev 1a: the fifteen bitstream tests over m sequences and the two
second-level verdicts of its section 4.2.

Input: ``sequences``, a ``(m, nbytes)`` uint8 array, one sequence a row, bits packed most
significant bit first (``numpy.packbits`` order), and ``n_bits``, the bits of each row to test.
The counting runs in the C core (:mod:`feltlab.native.sp800_22`); the p-values use
``scipy.special`` (``erfc``, ``gammaincc`` = igamc) and, for the spectral test, ``scipy.fft``.

188 p-values a sequence at the defaults (n = 10^6): frequency 1, block frequency 1, cumulative
sums 2 (forward, backward), runs 1, longest run 1, rank 1, DFT 1, non-overlapping template 148
(the aperiodic templates of 9 bits), overlapping template 1, universal 1, approximate entropy 1,
random excursions 8 (states -4..-1, 1..4), random excursions variant 18 (-9..-1, 1..9),
serial 2, linear complexity 1.

A test whose input size recommendation (SP 800-22 section 2, each test's subsection 7) ``n``
does not meet is NOT RUN, with the reason and the bits it needs: never a pass.  The random
excursion tests also skip each sequence whose walk has fewer than max(500, 0.005 sqrt(n))
cycles (2.14.7); that sequence's p-values are NaN and the second level counts only the others.

Departures from the reference STS, and why (docs/rng.md): the overlapping template's class
probabilities are exact (Hamano and Kaneko 2007, computed here by dynamic programming, not the
approximation SP 800-22's text used); the longest-run classes are SP 800-22's (the improved STS
widens M = 8 and M = 128 to seven classes); the universal test uses every whole block after
the Q initialisation blocks (K = n // L - Q, SP 800-22 2.9.4) unless ``universal_test_blocks``
sets K (the improved STS uses K = 1000 2^L); the linear-complexity class probabilities are
SP 800-22's (3.10: 1/96, 1/32, 1/8, 1/2, 1/4, 1/16, 1/48 to six places; the STS's first is the
misprint 0.01047).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import fft as sp_fft
from scipy import special, stats

from feltlab.native import sp800_22 as kernels

TEST_NAMES: tuple[str, ...] = (
    "frequency",
    "block_frequency",
    "cumulative_sums",
    "runs",
    "longest_run",
    "rank",
    "dft",
    "non_overlapping_template",
    "overlapping_template",
    "universal",
    "approximate_entropy",
    "random_excursions",
    "random_excursions_variant",
    "serial",
    "linear_complexity",
)
"""The fifteen tests in SP 800-22's order (sections 2.1 .. 2.15, with cusum after serial in
the text; here in the STS's output order)."""

UNIFORMITY_MIN_SEQUENCES = 55
"""SP 800-22 4.2.2: the uniformity of the p-values needs at least 55 sequences."""
UNIFORMITY_LEVEL = 0.0001
"""SP 800-22 4.2.2: the p-values are uniform when P-value_T >= 0.0001."""
UNIFORMITY_BINS = 10

# Maurer's expected value and variance of f_n for L = 1..16 (SP 800-22 2.9.4's table, from
# Maurer 1992 and Coron-Naccache 1998).
_UNIVERSAL_EXPECTED = (
    0.7326495,
    1.5374383,
    2.4016068,
    3.3112247,
    4.2534266,
    5.2177052,
    6.1962507,
    7.1836656,
    8.1764248,
    9.1723243,
    10.170032,
    11.168765,
    12.168070,
    13.167693,
    14.167488,
    15.167379,
)
_UNIVERSAL_VARIANCE = (
    0.690,
    1.338,
    1.901,
    2.358,
    2.705,
    2.954,
    3.125,
    3.238,
    3.311,
    3.356,
    3.384,
    3.401,
    3.410,
    3.416,
    3.419,
    3.421,
)
LINEAR_COMPLEXITY_PI = (0.010417, 0.03125, 0.125, 0.5, 0.25, 0.0625, 0.020833)
"""SP 800-22 3.10: the linear-complexity class probabilities (1/96, 1/32, 1/8, 1/2, 1/4,
1/16, 1/48) as the standard prints them: the default."""
STS_LINEAR_COMPLEXITY_PI = (0.01047, 0.03125, 0.125, 0.5, 0.25, 0.0625, 0.020833)
"""The reference STS's probabilities, with its misprint 0.01047 for pi_0, which SP 800-22's
own worked example 2.10.8 used (0.845406 for e with M = 1000; 0.844721 with 0.010417): pin it
(``Params(linear_complexity_probabilities=STS_LINEAR_COMPLEXITY_PI)``) to compare with the
STS."""
# SP 800-22 2.4: (minimum n, M, the lowest class v <= .., the highest class v >= ..)
_LONGEST_RUN_TABLE = ((750_000, 10_000, 10, 16), (6272, 128, 4, 9), (128, 8, 1, 4))


@dataclass(frozen=True)
class Params:
    """The battery's parameters, named by what they are; SP 800-22's letters in brackets.

    The defaults are SP 800-22's recommendations for n = 10^6 (its Appendix B and the NIST STS's
    for 10^6 bits): template length m = 9 in N = 8 blocks, the overlapping template of m = 9
    ones in blocks of M = 1032 with K = 5, approximate entropy m = 10, serial m = 16, linear
    complexity M = 500, rank M = Q = 32 (``rank_rows``, ``rank_columns``: 2..32, SP 800-22 2.5
    allows other shapes; 3 x 3 is its example 2.5.4).  ``None`` means "from n": the block
    frequency's M is the smallest with M >= 20, M > 0.01 n and N = n // M < 100 (2.2.7): max(20,
    n // 100 + 1), 10001 at 10^6 (the STS's default is 16384: pin it to compare); the universal
    test's L is the largest in 6..16 with n >= 1010 2^L L (2.9.7's table), Q = 10 2^L, K = n //
    L - Q.
    ``tests``: the tests to run, a subset of :data:`TEST_NAMES`.
    ``linear_complexity_probabilities``: pi_0..pi_6 (:data:`LINEAR_COMPLEXITY_PI`, or the
    STS's :data:`STS_LINEAR_COMPLEXITY_PI` to compare with it).
    """

    block_frequency_block: int | None = None  # M
    rank_rows: int = 32  # M
    rank_columns: int = 32  # Q
    template_length: int = 9  # m (non-overlapping)
    template_blocks: int = 8  # N
    overlapping_length: int = 9  # m
    overlapping_block: int = 1032  # M
    overlapping_classes: int = 5  # K
    universal_block_length: int | None = None  # L
    universal_init_blocks: int | None = None  # Q
    universal_test_blocks: int | None = None  # K
    approximate_entropy_length: int = 10  # m
    serial_length: int = 16  # m
    linear_complexity_block: int = 500  # M
    excursion_min_cycles: int = 500  # J below max(this, 0.005 sqrt(n)): sequence not run
    tests: tuple[str, ...] = TEST_NAMES
    linear_complexity_probabilities: tuple[float, ...] = LINEAR_COMPLEXITY_PI

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "linear_complexity_probabilities":
                if len(v) != 7 or abs(sum(v) - 1.0) > 1e-3 or min(v) <= 0:
                    raise ValueError("linear_complexity_probabilities: 7 positive, summing to 1")
            elif f.name == "tests":
                unknown = [t for t in v if t not in TEST_NAMES]
                if unknown or not v:
                    raise ValueError(f"tests {unknown or '()'} unknown; choose from {TEST_NAMES}")
            elif v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{f.name} must be a positive integer, got {v!r}")
        if not 2 <= self.template_length <= 21:
            raise ValueError(f"template_length must be in 2..21, got {self.template_length}")
        if not (2 <= self.rank_rows <= 32 and 2 <= self.rank_columns <= 32):
            raise ValueError("rank_rows (M) and rank_columns (Q) must be in 2..32")
        if self.universal_block_length is not None and not 1 <= self.universal_block_length <= 16:
            raise ValueError("universal_block_length (L) must be in 1..16")
        if self.serial_length < 2:
            raise ValueError("serial_length (m) must be at least 2")
        if self.overlapping_length > 64 or self.overlapping_classes > 64:
            raise ValueError("overlapping_length and overlapping_classes must be at most 64")
        if self.approximate_entropy_length > 23 or self.serial_length > 24:
            raise ValueError("approximate_entropy_length <= 23 and serial_length <= 24")
        if self.linear_complexity_block > 65536:
            raise ValueError("linear_complexity_block (M) must be at most 65536")

    def block_frequency_m(self, n: int) -> int:
        """M of the block frequency test for n bits."""
        return self.block_frequency_block or max(20, n // 100 + 1)

    def universal_lqk(self, n: int) -> tuple[int, int, int]:
        """(L, Q, K) of the universal test for n bits (L = 6 below 904,960 bits)."""
        L = self.universal_block_length
        if L is None:
            L = max([x for x in range(6, 17) if n >= 1010 * (1 << x) * x], default=6)
        Q = self.universal_init_blocks or 10 * (1 << L)
        K = self.universal_test_blocks or max(n // L - Q, 0)
        return L, Q, K


@dataclass(frozen=True)
class BitTestResult:
    """One test over m sequences.

    ``labels``: the k p-values' names (a template's bits, a state "x=-4", "forward").
    ``p_values``: ``(m, k)`` float64, NaN where not run.  ``not_run``: the reason the whole
    test did not run (too few bits, with ``bits_needed``), else None.  ``sequence_ran``:
    ``(m,)`` bool, False for a sequence the test skipped (random excursions: too few cycles).
    """

    name: str
    labels: tuple[str, ...]
    p_values: npt.NDArray[np.float64]
    not_run: str | None = None
    bits_needed: int | None = None
    sequence_ran: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def ran(self) -> bool:
        return self.not_run is None


@dataclass(frozen=True)
class SecondLevel:
    """The two second-level verdicts of one p-value column (SP 800-22 4.2).

    ``sequences``: the sequences with a p-value; ``passed``: those with p >= alpha;
    ``band``: p_hat -+ 3 sqrt(p_hat (1 - p_hat) / sequences), p_hat = 1 - alpha (4.2.1);
    ``proportion_p``: the exact two-sided binomial probability of a pass count this far from
    its mean (for the family-wise verdict); ``histogram``: the p-values in ten bins
    [0, 0.1) .. [0.9, 1]; ``uniformity_p``: P-value_T = igamc(9/2, chi^2 / 2) over the bins
    (4.2.2), NaN with fewer than 55 sequences (``uniformity_ok`` is then None).
    """

    test: str
    label: str
    sequences: int
    passed: int
    band: tuple[float, float]
    proportion_ok: bool
    proportion_p: float
    histogram: npt.NDArray[np.int64]
    uniformity_p: float
    uniformity_ok: bool | None

    @property
    def proportion(self) -> float:
        return self.passed / self.sequences if self.sequences else math.nan

    @property
    def judged(self) -> bool:
        """False when no sequence gave this column a p-value (random excursions with too few
        cycles in every sequence): the column is NOT RUN, neither pass nor fail."""
        return self.sequences > 0

    @property
    def ok(self) -> bool:
        """Inside the proportion band and not non-uniform (SP 800-22's verdict); False for a
        column not judged (see :attr:`judged`)."""
        return self.proportion_ok and self.uniformity_ok is not False


@dataclass(frozen=True)
class FamilyVerdict:
    """The battery's verdict at a family-wise level (docs/rng.md, "family-wise alpha").

    Bonferroni over the 2 k checks of the k columns that ran: the battery fails when a
    column's ``proportion_p`` or ``uniformity_p`` is below ``family_alpha / (2 k)``; under a
    fair generator the chance of any failure is at most ``family_alpha`` whatever the
    correlation between the columns.  ``failing``: (test, label, which) of the failures.
    """

    family_alpha: float
    columns: int
    threshold: float
    passed: bool
    failing: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class BatteryResult:
    """The battery over m sequences of ``n_bits``: one :class:`BitTestResult` a test."""

    n_bits: int
    n_sequences: int
    alpha: float
    params: Params
    tests: tuple[BitTestResult, ...]

    def test(self, name: str) -> BitTestResult:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(f"test {name!r} was not in this battery; it ran {self.names()}")

    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tests)

    def second_level(self) -> tuple[SecondLevel, ...]:
        """The two verdicts of every p-value column of every test that ran."""
        return tuple(
            second_level(t.name, label, t.p_values[:, j], self.alpha)
            for t in self.tests
            if t.ran
            for j, label in enumerate(t.labels)
        )

    def family_verdict(self, family_alpha: float = 0.01) -> FamilyVerdict:
        return family_verdict(self.second_level(), family_alpha)


# ---------------------------------------------------------------- second level


def proportion_band(sequences: int, alpha: float) -> tuple[float, float]:
    """SP 800-22 4.2.1: p_hat -+ 3 sqrt(p_hat (1 - p_hat) / m), p_hat = 1 - alpha."""
    p_hat = 1.0 - alpha
    half = 3.0 * math.sqrt(p_hat * alpha / sequences)
    return p_hat - half, p_hat + half


def second_level(
    test: str, label: str, p_values: npt.NDArray[np.float64], alpha: float
) -> SecondLevel:
    """The proportion and uniformity verdicts of one column's p-values (NaN = not run)."""
    p = np.asarray(p_values, dtype=np.float64)
    p = p[~np.isnan(p)]
    s = int(p.size)
    passed = int(np.count_nonzero(p >= alpha))
    hist = np.bincount(np.minimum((p * UNIFORMITY_BINS).astype(np.int64), 9), minlength=10)
    if s == 0:
        nan = math.nan
        return SecondLevel(test, label, 0, 0, (nan, nan), False, nan, hist, nan, None)
    lo, hi = proportion_band(s, alpha)
    ok = lo <= passed / s <= hi
    binom = stats.binom(s, 1.0 - alpha)
    prop_p = min(1.0, 2.0 * min(float(binom.cdf(passed)), float(binom.sf(passed - 1))))
    if s < UNIFORMITY_MIN_SEQUENCES:
        return SecondLevel(test, label, s, passed, (lo, hi), ok, prop_p, hist, math.nan, None)
    expected = s / UNIFORMITY_BINS
    chi2 = float(np.sum((hist - expected) ** 2) / expected)
    uni = float(special.gammaincc((UNIFORMITY_BINS - 1) / 2.0, chi2 / 2.0))
    return SecondLevel(
        test, label, s, passed, (lo, hi), ok, prop_p, hist, uni, uni >= UNIFORMITY_LEVEL
    )


def family_verdict(columns: tuple[SecondLevel, ...], family_alpha: float = 0.01) -> FamilyVerdict:
    """Bonferroni over every column's two checks (see :class:`FamilyVerdict`)."""
    if not 0.0 < family_alpha < 1.0:
        raise ValueError(f"family_alpha must be in (0, 1), got {family_alpha}")
    used = [c for c in columns if c.sequences > 0]
    k = max(len(used), 1)
    threshold = family_alpha / (2 * k)
    failing = []
    for c in used:
        if c.proportion_p < threshold:
            failing.append((c.test, c.label, "proportion"))
        if not math.isnan(c.uniformity_p) and c.uniformity_p < threshold:
            failing.append((c.test, c.label, "uniformity"))
    return FamilyVerdict(family_alpha, len(used), threshold, not failing, tuple(failing))


def band_false_alarm(sequences: int, alpha: float) -> float:
    """The chance that one column of a fair generator falls outside SP 800-22's proportion
    band (exact binomial): the per-column false-alarm rate of the standard's rule."""
    lo, hi = proportion_band(sequences, alpha)
    binom = stats.binom(sequences, 1.0 - alpha)
    inside_lo = math.ceil(lo * sequences - 1e-9)
    inside_hi = math.floor(hi * sequences + 1e-9)
    return float(1.0 - (binom.cdf(inside_hi) - binom.cdf(inside_lo - 1)))


# ---------------------------------------------------------------- exact probabilities


def aperiodic_templates(m: int) -> tuple[int, ...]:
    """The aperiodic m-bit templates (SP 800-22 2.7: no proper prefix equals the suffix of the
    same length, so no two matches can overlap), ascending, each as an integer whose most
    significant of m bits is the template's first.  148 for m = 9."""
    out = []
    for b in range(1 << m):
        if all((b >> k) != (b & ((1 << (m - k)) - 1)) for k in range(1, m)):
            out.append(b)
    return tuple(out)


@lru_cache(maxsize=16)
def overlapping_probabilities(m: int, block: int, classes: int) -> tuple[float, ...]:
    """P(the m-bit template of ones occurs k times, overlapping, in ``block`` fair bits), k =
    0..K-1, and K or more: exact, by dynamic programming over (the trailing run of ones,
    capped at m; the count, capped at K).  These are Hamano and Kaneko's corrected values
    (IEICE Trans. Fundamentals E90-A(9), 2007): 0.364091, 0.185659, 0.139381, 0.100571,
    0.070432, 0.139865 for m = 9, M = 1032, K = 5."""
    prob = np.zeros((m + 1, classes + 1))
    prob[0, 0] = 1.0
    for _ in range(block):
        nxt = np.zeros_like(prob)
        nxt[0, :] += 0.5 * prob.sum(axis=0)  # a zero ends the run
        for r in range(m + 1):
            r2 = min(r + 1, m)
            if r2 == m:  # a one completes a match
                nxt[r2, 1:] += 0.5 * prob[r, :-1]
                nxt[r2, classes] += 0.5 * prob[r, classes]
            else:
                nxt[r2, :] += 0.5 * prob[r, :]
        prob = nxt
    return tuple(float(x) for x in prob.sum(axis=0))


@lru_cache(maxsize=64)
def longest_run_cdf(block: int, run: int) -> float:
    """P(the longest run of ones in ``block`` fair bits is at most ``run``)."""
    prob = np.zeros(run + 1)
    prob[0] = 1.0
    for _ in range(block):
        nxt = np.zeros_like(prob)
        nxt[0] = 0.5 * prob.sum()
        nxt[1:] = 0.5 * prob[:-1]
        prob = nxt
    return float(prob.sum())


def longest_run_probabilities(block: int, low: int, high: int) -> tuple[float, ...]:
    """The classes v <= low, low + 1, ..., high - 1, v >= high of the longest run."""
    cdf = [longest_run_cdf(block, v) for v in range(low, high)]
    return (cdf[0], *np.diff(cdf), 1.0 - cdf[-1])


def rank_probabilities(rows: int = 32, cols: int = 32) -> tuple[float, float, float]:
    """P(rank = min(rows, cols)), P(rank = that - 1), P(lower) of a fair GF(2) matrix
    (SP 800-22 3.5)."""

    def p_rank(r: int) -> float:
        prod = 1.0
        for i in range(r):
            prod *= (1 - 2.0 ** (i - rows)) * (1 - 2.0 ** (i - cols)) / (1 - 2.0 ** (i - r))
        return float(2.0 ** (r * (rows + cols - r) - rows * cols) * prod)

    full = min(rows, cols)
    p0, p1 = p_rank(full), p_rank(full - 1)
    return p0, p1, 1.0 - p0 - p1


def excursion_probabilities(x: int) -> tuple[float, ...]:
    """pi_k(x), k = 0..4 and 5+: the chance that a cycle of the walk visits state x exactly k
    times (SP 800-22 3.14)."""
    a = 1.0 - 1.0 / (2 * abs(x))
    return (a, *(1.0 / (4 * x * x) * a ** (k - 1) for k in range(1, 5)), 1.0 / (2 * abs(x)) * a**4)


# ---------------------------------------------------------------- minimum lengths


def _need(n: int, needed: int, why: str) -> tuple[str, int] | None:
    return None if n >= needed else (f"needs n >= {needed} bits ({why}); has {n}", needed)


def minimum_length(name: str, n: int, params: Params) -> tuple[str, int] | None:
    """None when ``n`` bits meet test ``name``'s input size recommendation (SP 800-22
    section 2), else (the reason, the bits needed)."""
    p = params
    if name in ("frequency", "runs", "cumulative_sums"):
        return _need(n, 100, "SP 800-22 2.1.7, 2.3.7, 2.13.7")
    if name == "block_frequency":
        m_ = p.block_frequency_m(n)
        if n < 100:
            return _need(n, 100, "SP 800-22 2.2.7")
        if m_ < 20 or m_ <= n // 100 or n // m_ >= 100 or m_ > n:
            need = 100 * m_ if m_ <= n // 100 or n // m_ >= 100 else m_
            return (
                f"block M = {m_} must be >= 20 and > 0.01 n with fewer than 100 blocks "
                f"(SP 800-22 2.2.7); n = {n}",
                max(need, m_),
            )
        return None
    if name == "longest_run":
        return _need(n, 128, "SP 800-22 2.4.7")
    if name == "rank":
        rows, cols = p.rank_rows, p.rank_columns
        return _need(n, 38 * rows * cols, f"38 matrices of {rows} x {cols}, SP 800-22 2.5.7")
    if name == "dft":
        return _need(n, 1000, "SP 800-22 2.6.7")
    if name == "non_overlapping_template":
        need = max(p.template_blocks * p.template_length, 1)
        if p.template_blocks > 100:
            return (f"N = {p.template_blocks} blocks must be <= 100 (SP 800-22 2.7.7)", n)
        return _need(n, need, "blocks of at least m bits")
    if name == "overlapping_template":
        need = max(10**6, p.overlapping_block)
        probs = overlapping_probabilities(
            p.overlapping_length, p.overlapping_block, p.overlapping_classes
        )
        blocks_needed = math.floor(5 / min(probs)) + 1  # N min(pi) > 5 (2.8.7)
        return _need(n, max(need, blocks_needed * p.overlapping_block), "SP 800-22 2.8.7")
    if name == "universal":
        L, Q, K = p.universal_lqk(n)
        need = max(1010 * (1 << L) * L, (Q + 1) * L)
        if p.universal_test_blocks:
            need = max(need, (Q + K) * L)
        return _need(n, need, f"L = {L}, Q = {Q}, SP 800-22 2.9.7")
    if name == "approximate_entropy":
        return _need(n, 1 << (p.approximate_entropy_length + 6), "m < log2(n) - 5, 2.12.7")
    if name == "serial":
        return _need(n, 1 << (p.serial_length + 3), "m < log2(n) - 2, SP 800-22 2.11.7")
    if name in ("random_excursions", "random_excursions_variant"):
        return _need(n, 10**6, "SP 800-22 2.14.7, 2.15.7")
    if name == "linear_complexity":
        m_ = p.linear_complexity_block
        if not 500 <= m_ <= 5000:
            return (f"block M = {m_} must be in 500..5000 (SP 800-22 2.10.7)", n)
        return _need(n, max(10**6, 200 * m_), "n >= 10^6 and N >= 200 blocks, 2.10.7")
    raise ValueError(f"unknown test {name!r}; choose from {TEST_NAMES}")


# ---------------------------------------------------------------- the p-values, per test

Columns = tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]
Memo = dict[str, tuple[np.ndarray, ...]]
"""Counts two tests share (the walk's cycles and visits), kept for one block of rows."""


def _all(p: npt.NDArray[np.float64]) -> Columns:
    p2 = p.reshape(p.shape[0], -1)
    return p2, np.ones(p2.shape[0], dtype=bool)


def _igamc(
    a: float | npt.NDArray[np.float64], x: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    return np.asarray(special.gammaincc(a, x), dtype=np.float64)


def _chi2(
    counts: npt.NDArray[np.float64], expected: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    return np.asarray(np.sum((counts - expected) ** 2 / expected, axis=-1), dtype=np.float64)


def _frequency(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    s = np.abs(2.0 * kernels.frequency(data, n).astype(np.float64) - n) / math.sqrt(n)
    return _all(special.erfc(s / math.sqrt(2.0)))


def _block_frequency(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_ = p.block_frequency_m(n)
    chi2 = kernels.block_frequency(data, n, m_)
    return _all(_igamc((n // m_) / 2.0, chi2 / 2.0))


def cusum_p_value(z: float, n: int) -> float:
    """SP 800-22 2.13.4 step 4: the p-value of the maximum excursion z of n steps.  The sums'
    limits are truncated toward zero, as in the reference code and the text's worked example
    (0.4116588 for n = 10, z = 4; flooring the negative lower limits gives 0.4115847)."""
    sq = math.sqrt(n)
    k1 = np.arange(int((-n / z + 1) / 4), int((n / z - 1) / 4) + 1)
    k2 = np.arange(int((-n / z - 3) / 4), int((n / z - 1) / 4) + 1)
    s1 = np.sum(special.ndtr((4 * k1 + 1) * z / sq) - special.ndtr((4 * k1 - 1) * z / sq))
    s2 = np.sum(special.ndtr((4 * k2 + 3) * z / sq) - special.ndtr((4 * k2 + 1) * z / sq))
    return min(1.0, max(0.0, float(1.0 - s1 + s2)))  # rounding gave 1.0000000000000075


def _cusum(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    c = kernels.cusum(data, n)
    s_n, hi, lo = c[:, 0], c[:, 1], c[:, 2]
    forward = np.maximum(hi, -lo)
    backward = np.maximum(s_n - lo, hi - s_n)
    out = np.array(
        [
            [cusum_p_value(float(f), n), cusum_p_value(float(b), n)]
            for f, b in zip(forward, backward, strict=True)
        ]
    )
    return _all(out.reshape(-1, 2))


def _runs(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    r = kernels.runs(data, n).astype(np.float64)
    pi = r[:, 0] / n
    v = r[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        pv = special.erfc(
            np.abs(v - 2 * n * pi * (1 - pi)) / (2 * math.sqrt(2 * n) * pi * (1 - pi))
        )
    pv = np.where(np.abs(pi - 0.5) >= 2.0 / math.sqrt(n), 0.0, pv)  # the frequency pre-test
    return _all(pv)


def longest_run_setting(n: int) -> tuple[int, int, int]:
    """(M, lowest class, highest class) of the longest-run test for n bits (SP 800-22 2.4.2)."""
    for min_n, m_, low, high in _LONGEST_RUN_TABLE:
        if n >= min_n:
            return m_, low, high
    return 8, 1, 4


def _longest_run(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_, low, high = longest_run_setting(n)
    hist = kernels.longest_run(data, n, m_).astype(np.float64)
    nu = np.concatenate(
        [
            hist[:, : low + 1].sum(axis=1, keepdims=True),
            hist[:, low + 1 : high],
            hist[:, high:].sum(axis=1, keepdims=True),
        ],
        axis=1,
    )
    pi = np.array(longest_run_probabilities(m_, low, high))
    blocks = n // m_
    return _all(_igamc((high - low) / 2.0, _chi2(nu, blocks * pi) / 2.0))


def _rank(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    rows, cols = p.rank_rows, p.rank_columns
    f = kernels.rank(data, n, rows, cols).astype(np.float64)
    pi = np.array(rank_probabilities(rows, cols))
    return _all(np.exp(-_chi2(f, (n // (rows * cols)) * pi) / 2.0))


def _dft(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    threshold = math.sqrt(math.log(1 / 0.05) * n)
    n0 = 0.95 * n / 2.0
    out = np.empty(data.shape[0])
    for i in range(data.shape[0]):
        x = np.unpackbits(data[i], count=n).astype(np.float64) * 2.0 - 1.0
        mod = np.abs(sp_fft.rfft(x, workers=1)[: n // 2])
        n1 = np.count_nonzero(mod < threshold)
        d = (n1 - n0) / math.sqrt(n * 0.95 * 0.05 / 4.0)
        out[i] = special.erfc(abs(d) / math.sqrt(2.0))
    return _all(out)


def _non_overlapping(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_, blocks = p.template_length, p.template_blocks
    templates = np.array(aperiodic_templates(m_), dtype=np.int64)
    w = kernels.template_counts(data, n, templates, m_, blocks).astype(np.float64)
    bl = n // blocks
    mu = (bl - m_ + 1) / 2.0**m_
    var = bl * (1 / 2.0**m_ - (2 * m_ - 1) / 2.0 ** (2 * m_))
    chi2 = np.sum((w - mu) ** 2, axis=2) / var
    return _igamc(blocks / 2.0, chi2 / 2.0), np.ones(data.shape[0], dtype=bool)


def _overlapping(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_, bl, k = p.overlapping_length, p.overlapping_block, p.overlapping_classes
    nu = kernels.overlapping(data, n, m_, bl, k).astype(np.float64)
    pi = np.array(overlapping_probabilities(m_, bl, k))
    return _all(_igamc(k / 2.0, _chi2(nu, (n // bl) * pi) / 2.0))


def universal_p_value(fn: npt.NDArray[np.float64], L: int, K: int) -> npt.NDArray[np.float64]:
    """SP 800-22 2.9.4 step 5: erfc(|f_n - E| / (sqrt 2 sigma)), sigma = c sqrt(var / K)."""
    c = 0.7 - 0.8 / L + (4 + 32 / L) * K ** (-3 / L) / 15
    sigma = c * math.sqrt(_UNIVERSAL_VARIANCE[L - 1] / K)
    return np.asarray(
        special.erfc(np.abs(fn - _UNIVERSAL_EXPECTED[L - 1]) / (math.sqrt(2) * sigma))
    )


def _universal(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    L, Q, K = p.universal_lqk(n)
    return _all(universal_p_value(kernels.universal(data, n, L, Q, K), L, K))


def _approximate_entropy(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_ = p.approximate_entropy_length
    sums = kernels.pattern_sums(data, n, m_ + 1)
    phi_m1, phi_m = sums[:, 0, 1] / n, sums[:, 1, 1] / n
    chi2 = 2.0 * n * (math.log(2) - (phi_m - phi_m1))
    return _all(_igamc(2.0 ** (m_ - 1), chi2 / 2.0))


def _serial(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_ = p.serial_length
    sq = kernels.pattern_sums(data, n, m_)[:, :, 0]
    psi = np.stack([2.0 ** (m_ - j) / n * sq[:, j] - n for j in range(3)], axis=1)
    d1 = psi[:, 0] - psi[:, 1]
    d2 = psi[:, 0] - 2 * psi[:, 1] + psi[:, 2]
    return _all(np.stack([_igamc(2.0 ** (m_ - 2), d1 / 2), _igamc(2.0 ** (m_ - 3), d2 / 2)], 1))


def excursion_min_cycles(n: int, params: Params) -> float:
    """The cycles a sequence needs for the random excursion tests: max(J_min, 0.005 sqrt n)."""
    return max(float(params.excursion_min_cycles), 0.005 * math.sqrt(n))


def _excursion_counts(data: np.ndarray, n: int, p: Params, memo: Memo) -> tuple[np.ndarray, ...]:
    if "excursions" not in memo:
        memo["excursions"] = kernels.excursions(data, n)
    cycles, nu, xi = memo["excursions"]
    ran = cycles.astype(np.float64) >= excursion_min_cycles(n, p)
    return cycles.astype(np.float64), nu.astype(np.float64), xi.astype(np.float64), ran


def _random_excursions(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    j, nu, _, ran = _excursion_counts(data, n, p, memo)
    pi = np.array([excursion_probabilities(x) for x in (-4, -3, -2, -1, 1, 2, 3, 4)])
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = np.sum((nu - j[:, None, None] * pi) ** 2 / (j[:, None, None] * pi), axis=2)
    out = _igamc(2.5, chi2 / 2.0)
    out[~ran] = np.nan
    return out, ran


def _random_excursions_variant(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    j, _, xi, ran = _excursion_counts(data, n, p, memo)
    x = np.array([*range(-9, 0), *range(1, 10)], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = special.erfc(
            np.abs(xi - j[:, None]) / np.sqrt(2.0 * j[:, None] * (4 * np.abs(x) - 2))
        )
    out[~ran] = np.nan
    return out, ran


def linear_complexity_classes(hist: npt.NDArray[np.float64], block: int) -> npt.NDArray[np.float64]:
    """nu_0..nu_6 (SP 800-22 2.10.4 step 4) from the counts of each complexity L = 0..M."""
    sign = -1.0 if block % 2 else 1.0
    mu = block / 2.0 + (9.0 + (-1.0) ** (block + 1)) / 36.0 - (block / 3.0 + 2.0 / 9.0) / 2.0**block
    t = sign * (np.arange(block + 1) - mu) + 2.0 / 9.0
    cls = np.digitize(t, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], right=True)
    out = np.zeros((hist.shape[0], 7))
    for c in range(7):
        out[:, c] = hist[:, cls == c].sum(axis=1)
    return out


def _linear_complexity(data: np.ndarray, n: int, p: Params, memo: Memo) -> Columns:
    m_ = p.linear_complexity_block
    hist = kernels.linear_complexity(data, n, m_).astype(np.float64)
    nu = linear_complexity_classes(hist, m_)
    return _all(
        _igamc(3.0, _chi2(nu, (n // m_) * np.array(p.linear_complexity_probabilities)) / 2.0)
    )


_TESTS: dict[str, Callable[[np.ndarray, int, Params, Memo], Columns]] = {
    "frequency": _frequency,
    "block_frequency": _block_frequency,
    "cumulative_sums": _cusum,
    "runs": _runs,
    "longest_run": _longest_run,
    "rank": _rank,
    "dft": _dft,
    "non_overlapping_template": _non_overlapping,
    "overlapping_template": _overlapping,
    "universal": _universal,
    "approximate_entropy": _approximate_entropy,
    "random_excursions": _random_excursions,
    "random_excursions_variant": _random_excursions_variant,
    "serial": _serial,
    "linear_complexity": _linear_complexity,
}


def labels(name: str, params: Params) -> tuple[str, ...]:
    """The names of test ``name``'s p-values (k of them)."""
    if name == "cumulative_sums":
        return ("forward", "backward")
    if name == "serial":
        return ("p1", "p2")
    if name == "non_overlapping_template":
        m_ = params.template_length
        return tuple(format(t, f"0{m_}b") for t in aperiodic_templates(m_))
    if name == "random_excursions":
        return tuple(f"x={x:+d}" for x in (-4, -3, -2, -1, 1, 2, 3, 4))
    if name == "random_excursions_variant":
        return tuple(f"x={x:+d}" for x in (*range(-9, 0), *range(1, 10)))
    return ("",)


# ---------------------------------------------------------------- the battery


def run_test(
    name: str,
    sequences: np.ndarray,
    n_bits: int,
    params: Params | None = None,
    *,
    enforce_minimum: bool = True,
    memo: Memo | None = None,
) -> BitTestResult:
    """One test over every row of ``sequences`` (see :func:`run_battery`).
    ``enforce_minimum=False`` runs it below its input size recommendation (SP 800-22's small
    worked examples); the kernels still refuse a size outside their domain (ValueError).
    ``memo``: a dict shared by the calls on the same rows (counts two tests share)."""
    p = params or Params()
    if name not in _TESTS:
        raise ValueError(f"unknown test {name!r}; choose from {TEST_NAMES}")
    data = kernels.packed_rows(sequences, n_bits)
    n = int(n_bits)
    lab = labels(name, p)
    short = minimum_length(name, n, p) if enforce_minimum else None
    if short is not None:
        nan = np.full((data.shape[0], len(lab)), np.nan)
        return BitTestResult(name, lab, nan, short[0], short[1], np.zeros(data.shape[0], bool))
    try:
        pv, ran = _TESTS[name](data, n, p, {} if memo is None else memo)
    except RuntimeError as exc:  # a kernel refused a parameter for this n
        raise ValueError(f"{name}: parameters {p} do not fit n = {n} bits ({exc})") from exc
    return BitTestResult(name, lab, pv, None, None, ran)


def run_battery(
    sequences: np.ndarray,
    n_bits: int,
    params: Params | None = None,
    alpha: float = 0.01,
    *,
    chunk: int = 25,
    progress: Callable[[int, int], None] | None = None,
) -> BatteryResult:
    """SP 800-22's tests (``params.tests``, all fifteen by default) over the m rows of
    ``sequences``: ``(m, nbytes)`` uint8, each row one sequence of ``n_bits`` bits packed most
    significant bit first (``numpy.packbits``; 8 nbytes >= n_bits).

    ``alpha``: the significance level of each p-value (SP 800-22 4.2: 0.01; a jurisdiction at
    95% uses 0.05).  The rows are tested ``chunk`` at a time; ``progress(done, m)`` is called
    after each chunk.  Returns a :class:`BatteryResult`; a test ``n_bits`` is too short for
    is NOT RUN (``not_run``, ``bits_needed``).  Raises TypeError / ValueError naming a bad
    argument.
    """
    p = params or Params()
    if not isinstance(p, Params):
        raise TypeError(f"params must be a Params, got {type(p).__name__}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    data = kernels.packed_rows(sequences, n_bits)
    m = data.shape[0]
    if m < 1:
        raise ValueError("sequences has no rows: pass at least one sequence")
    parts: dict[str, list[BitTestResult]] = {t: [] for t in p.tests}
    for start in range(0, m, max(chunk, 1)):
        rows = data[start : start + max(chunk, 1)]
        memo: Memo = {}
        for name in p.tests:
            parts[name].append(run_test(name, rows, n_bits, p, memo=memo))
        if progress is not None:
            progress(min(start + max(chunk, 1), m), m)
    results = tuple(
        BitTestResult(
            name,
            rs[0].labels,
            np.concatenate([r.p_values for r in rs]),
            rs[0].not_run,
            rs[0].bits_needed,
            np.concatenate([r.sequence_ran for r in rs]),
        )
        for name, rs in parts.items()
    )
    return BatteryResult(int(n_bits), m, alpha, p, results)
