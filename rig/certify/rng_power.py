"""What a raw-output certificate could catch: the sequences each SP 800-22 test needs to
catch a named flawed generator (:mod:`feltlab.rig.rng.generators`) with the required power,
for ``feltlab certify plan --generator`` (docs/rng.md, "Power against flawed generators").

As for the shuffler's battery (:mod:`feltlab.rig.certify.power`), the law is simulated once
and the power at any number of sequences is then analytic:

- The generator's law per p-value column, from ``simulated`` sequences of n bits run through
  the battery: q, the chance that a sequence passes (p >= alpha), and pi, the chance of each of
  the ten p-value bins.
- The certificate fails a column at m sequences (:func:`feltlab.rig.rng.sp800_22
  .family_verdict`, Bonferroni at ``alpha / (2 k)`` over the battery's k columns) when the pass
  count X ~ Binomial(m', q) falls in the two-sided binomial test's rejection region under the
  null q0 = 1 - alpha (m' the sequences the column judges: random excursions skip those with
  too few cycles), or, from 55 sequences on, when the ten bins' chi-square, noncentral with
  lambda = m' sum (pi - 0.1)^2 / 0.1 on 9 degrees of freedom, exceeds its critical value
  (lambda estimated only from 55 simulated p-values or more, where the bins' chi-square holds).
  A test's power is its best column's best check (a lower bound on the battery's).
- Noise: q and lambda are taken at the end of their confidence interval nearest the null
  (Clopper-Pearson for q, the chi-square's own critical value for lambda, both at 1 - 0.05 /
  k), so a fair generator's simulated noise never claims a catch; a certificate claims only
  the power it has shown.
- Generators whose sequences are not independent pieces of one stream (``reused-key``,
  ``short-period``) are simulated whole instead: the battery at m = 2, 4, 8, ... sequences,
  ``replicates`` times from different seeds; a test catches at the first m where every
  replicate fails it.

Sources: NIST SP 800-22 rev 1a section 4.2; C. J. Clopper and E. S. Pearson, Biometrika 26(4),
1934; the noncentral chi-square, scipy's ``chndtr``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special, stats

from feltlab.rig.certify.rng_certificate import judge
from feltlab.rig.rng.generators import Generator
from feltlab.rig.rng.sp800_22 import (
    UNIFORMITY_BINS,
    UNIFORMITY_MIN_SEQUENCES,
    BatteryResult,
    Params,
    run_battery,
)
from feltlab.seeds import child_seed

MAX_SEQUENCES = 100_000
"""The most sequences a plan looks at; beyond it a test is "not within"."""


@dataclass(frozen=True)
class ColumnLaw:
    """One p-value column under a generator: its pass chance ``q`` and bin chances ``pi``,
    each at the end of its interval nearest the null, and the share of sequences it judges."""

    test: str
    label: str
    q: float
    noncentrality: float
    judged_share: float


def _q_towards_null(passed: int, s: int, q0: float, conf: float) -> float:
    """The end of the Clopper-Pearson interval of ``passed / s`` nearest ``q0`` (``q0`` when
    the interval holds it)."""
    a = 1 - conf
    lo = 0.0 if passed == 0 else float(special.betaincinv(passed, s - passed + 1, a / 2))
    hi = 1.0 if passed == s else float(special.betaincinv(passed + 1, s - passed, 1 - a / 2))
    return q0 if lo <= q0 <= hi else (lo if lo > q0 else hi)


def column_laws(result: BatteryResult, conf: float) -> list[ColumnLaw]:
    """Each column's law from a battery run on a generator's simulated sequences."""
    q0 = 1 - result.alpha
    crit = float(stats.chi2.isf(1 - conf, UNIFORMITY_BINS - 1))
    laws = []
    for t in result.tests:
        if not t.ran:
            continue
        for j, label in enumerate(t.labels):
            p = t.p_values[:, j]
            p = p[~np.isnan(p)]
            s = p.size
            if s == 0:
                continue
            passed = int(np.count_nonzero(p >= result.alpha))
            hist = np.bincount(np.minimum((p * 10).astype(np.int64), 9), minlength=10)
            x2 = float(np.sum((hist - s / 10) ** 2) / (s / 10))
            laws.append(
                ColumnLaw(
                    t.name,
                    label,
                    _q_towards_null(passed, s, q0, conf),
                    # the ten bins' chi-square is calibrated only from 55 p-values on (5.5 a
                    # bin, SP 800-22 4.2.2): from 10 it claimed the fair ChaCha20 caught
                    max(0.0, x2 - crit) / s if s >= UNIFORMITY_MIN_SEQUENCES else 0.0,
                    s / result.n_sequences,
                )
            )
    return laws


def column_power(law: ColumnLaw, m: int, q0: float, threshold: float) -> float:
    """The chance that ``m`` sequences fail this column at the family-wise ``threshold``."""
    mj = max(1, math.floor(m * law.judged_share))
    # the two-sided binomial test rejects X <= lo - 1 (P0(X <= x) < t/2) and X > hi
    lo = int(stats.binom.ppf(threshold / 2, mj, q0))
    hi = int(stats.binom.isf(threshold / 2, mj, q0))
    alt = stats.binom(mj, law.q)
    power = float(alt.cdf(lo - 1)) + float(alt.sf(hi))
    if mj >= UNIFORMITY_MIN_SEQUENCES and law.noncentrality > 0:
        crit = float(stats.chi2.isf(threshold, UNIFORMITY_BINS - 1))
        lam = mj * law.noncentrality
        power = max(power, 1 - float(special.chndtr(crit, UNIFORMITY_BINS - 1, lam)))
    return power


def sequences_needed(
    laws: list[ColumnLaw], q0: float, threshold: float, required: float
) -> int | None:
    """The fewest sequences at which one of ``laws``' columns fails with power ``required``
    (doubling, then bisection; None if not within :data:`MAX_SEQUENCES`)."""

    laws = [law for law in laws if law.q != q0 or law.noncentrality > 0]
    if not laws:  # every column's law is the null's: no size catches it
        return None

    def ok(m: int) -> bool:
        return any(column_power(law, m, q0, threshold) >= required for law in laws)

    m = 1
    while not ok(m):
        if m >= MAX_SEQUENCES:
            return None
        m = min(2 * m, MAX_SEQUENCES)
    lo, hi = m // 2, m
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


@dataclass
class GeneratorPlan:
    """The plan of one generator: per test the sequences needed (None: not within
    :data:`MAX_SEQUENCES`), the battery's (the fewest) and the test that catches it first."""

    generator: str
    title: str
    catchable: bool
    method: str
    tests: dict[str, int | None] = field(default_factory=dict)
    fair: bool = False
    """A fair generator (ChaCha20): nothing to catch, its '-' is the battery's right answer."""

    @property
    def sequences_needed(self) -> int | None:
        got = [v for v in self.tests.values() if v is not None]
        return min(got) if got else None

    @property
    def caught_by(self) -> str | None:
        need = self.sequences_needed
        if need is None:
            return None
        return next(t for t, v in self.tests.items() if v == need)

    def to_dict(self) -> dict[str, Any]:
        return {
            "generator": self.generator,
            "title": self.title,
            "catchable_by_bitstream_tests": self.catchable,
            "fair": self.fair,
            "method": self.method,
            "sequences_needed": self.sequences_needed,
            "caught_by": self.caught_by,
            "tests": dict(self.tests),
        }


def _analytic(
    gen: Generator,
    n: int,
    params: Params,
    alpha: float,
    required: float,
    simulated: int,
    seed: int,
) -> GeneratorPlan:
    res = run_battery(gen.sequences(simulated, n, seed), n, params, alpha)
    k = max(1, sum(len(t.labels) for t in res.tests if t.ran))
    laws = column_laws(res, 1 - 0.05 / k)
    threshold = alpha / (2 * k)
    plan = GeneratorPlan(
        gen.name,
        gen.spec.title,
        gen.spec.catchable,
        f"analytic from {simulated} simulated sequences",
        fair=gen.spec.fair,
    )
    for t in res.tests:
        mine = [law for law in laws if law.test == t.name]
        plan.tests[t.name] = (
            sequences_needed(mine, 1 - alpha, threshold, required) if mine else None
        )
    return plan


def _simulated(
    gen: Generator,
    n: int,
    params: Params,
    alpha: float,
    replicates: int,
    seed: int,
    max_sequences: int,
) -> GeneratorPlan:
    plan = GeneratorPlan(
        gen.name,
        gen.spec.title,
        gen.spec.catchable,
        f"simulated whole, {replicates} replicates a size",
        fair=gen.spec.fair,
    )
    plan.tests = dict.fromkeys(params.tests)
    m = 2
    while m <= max_sequences and any(v is None for v in plan.tests.values()):
        caught: set[str] | None = None
        for r in range(replicates):
            data = gen.sequences(m, n, child_seed(seed, "plan", m, r))
            res = run_battery(data, n, params, alpha)
            failing = set(judge(res, alpha, ())[1]["failing_tests"])
            caught = failing if caught is None else caught & failing
        for t in caught or ():
            if plan.tests[t] is None:
                plan.tests[t] = m
        m *= 2
    return plan


def plan_generator(
    gen: Generator,
    n_bits: int,
    *,
    alpha: float = 0.01,
    required: float = 0.99,
    simulated: int = 50,
    replicates: int = 2,
    seed: int = 0,
    params: Params | None = None,
    max_sequences: int = 64,
) -> GeneratorPlan:
    """Per SP 800-22 test, the sequences of ``n_bits`` it needs to catch ``gen`` with power
    ``required`` at the certificate's family-wise ``alpha`` (see the module docstring).
    ``max_sequences`` bounds the whole simulation of a dependent generator."""
    p = params or Params()
    if gen.spec.independent:
        return _analytic(gen, n_bits, p, alpha, required, simulated, seed)
    return _simulated(gen, n_bits, p, alpha, replicates, seed, max_sequences)


__all__ = [
    "MAX_SEQUENCES",
    "ColumnLaw",
    "GeneratorPlan",
    "column_laws",
    "column_power",
    "plan_generator",
    "sequences_needed",
]
