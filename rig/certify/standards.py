"""The regulations a shuffler's randomness certificate answers to, and the requirement each
check of the battery serves (docs/certification.md, "Standards").

- 25 CFR 547.14 (US National Indian Gaming Commission, minimum technical standards for Class
  II gaming systems, "What are the minimum technical standards for electronic random number
  generation?"): randomness at a 99% confidence level, by tests that include chi-square,
  runs, serial correlation, gap, poker, coupon collector and permutation tests, as
  appropriate.
- COMAR 36.05.02.17 (Maryland, an automated card shuffler): the shuffle is random at a 95%
  confidence level, by a chi-square goodness-of-fit test.
- 58 Pa. Code 810a.5 (Pennsylvania, card shufflers and dealing shoes): 95% confidence, by a
  chi-square test, a runs test, a Kolmogorov-Smirnov test and others as appropriate.

Each :class:`Standard` names its confidence (the campaign's alpha is one minus it), the tests
it names, and the battery checks it requires (``--standard`` on ``feltlab certify
shuffler``).  :data:`SERVES` maps each battery check to the named tests it is an instance of;
a named test no check serves is listed as not covered, never claimed.  Gap, poker and coupon
collector tests are tests of a stream of numbers (a generator's output), not of a
permutation: the battery, which sees shuffled shoes, does not claim them.

The same regulations, and GLI's, as profiles of the generator's raw-output certificate
(``feltlab certify rng --standard``, docs/rng.md, "Standards"): :data:`RNG_STANDARDS`, each
SP 800-22 test mapped to the named test families it is an instance of (:data:`RNG_SERVES`).

- 25 CFR 547.14(b)(2): 99%; chi-square, runs, serial correlation, equi-distribution
  (frequency), gap, poker, coupon collector's, permutation, spectral, tests on subsequences
  ("may include").  547.14(c), unpredictability, is no bitstream test's (issue 40).
- 58 Pa. Code 810a.5(c) (Pennsylvania, interactive gaming, random number generator
  standards): 95%; chi-square, equi-distribution (frequency), gap, overlaps, poker, coupon
  collectors, permutation, Kolmogorov-Smirnov, adjacency criterion, order statistic, runs,
  interplay correlation, serial correlation, tests on subsequences, Poisson distribution.
  810a.5(a)(4), cryptographic strength, is no bitstream test's either.
- COMAR 36.05.02.17 (Maryland): a shuffler's randomness at 95% by chi-square, applied to its
  generator's raw output.
- GLI-11 (gaming devices) and GLI-19 (interactive gaming systems), the GLI standards' RNG
  requirements as GLI's laboratories apply them: 99% confidence; they name no fixed list of
  tests (the laboratory's battery), so the profile requires SP 800-22's fifteen.

A profile requires every SP 800-22 test serving a family it names (GLI: all fifteen): a
required test that could not run (too few bits) makes the certificate INCONCLUSIVE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Each battery check and the regulations' test families it is an instance of.
SERVES: dict[str, tuple[str, ...]] = {
    "position_uniformity": ("chi-square", "permutation"),
    "rising_sequences": ("runs", "permutation"),
    "rising_sequence_distribution": ("chi-square", "runs"),
    "turning_points": ("runs",),
    "valleys": ("runs",),
    "successions": ("serial correlation", "permutation"),
    "adjacent_rank_pairs": ("chi-square", "serial correlation"),
    "next_card_guessing": ("permutation",),
    "successive_shoes": ("serial correlation",),
    "repeated_shoes": ("permutation",),
}


@dataclass(frozen=True)
class Standard:
    """A regulation's randomness requirement: its ``confidence`` (alpha = 1 - confidence),
    the ``tests`` it names and the battery ``checks`` it requires."""

    name: str
    title: str
    confidence: float
    tests: tuple[str, ...]
    checks: tuple[str, ...]
    source: str
    kind: str = "shuffler"
    """``shuffler`` (the checks are the shoe battery's, :data:`SERVES`) or ``rng`` (SP 800-22's
    tests, :data:`RNG_SERVES`)."""

    @property
    def alpha(self) -> float:
        """The family-wise significance level the standard's confidence sets."""
        return round(1 - self.confidence, 12)

    def coverage(self, checks_run: list[str]) -> dict[str, Any]:
        """What a battery of ``checks_run`` covers of this standard: per named test, the
        checks serving it; the tests none serves (``not_covered``); the required checks that
        did not run (``missing``)."""
        serves = RNG_SERVES if self.kind == "rng" else SERVES
        by_test = {t: [c for c in checks_run if t in serves.get(c, ())] for t in self.tests}
        return {
            "name": self.name,
            "title": self.title,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "source": self.source,
            "tests": by_test,
            "not_covered": [t for t, cs in by_test.items() if not cs],
            "required_checks": list(self.checks),
            "missing": [c for c in self.checks if c not in checks_run],
        }


_ALL = tuple(SERVES)

STANDARDS: dict[str, Standard] = {
    s.name: s
    for s in (
        Standard(
            "25cfr547",
            "25 CFR 547.14 (NIGC Class II, random number generation)",
            0.99,
            (
                "chi-square",
                "runs",
                "serial correlation",
                "gap",
                "poker",
                "coupon collector",
                "permutation",
            ),
            _ALL,
            "25 CFR 547.14(b)",
        ),
        Standard(
            "comar",
            "COMAR 36.05.02.17 (Maryland, automated card shuffler)",
            0.95,
            ("chi-square",),
            ("position_uniformity", "rising_sequence_distribution", "adjacent_rank_pairs"),
            "COMAR 36.05.02.17",
        ),
        Standard(
            "pa810a",
            "58 Pa. Code 810a.5 (Pennsylvania, card shufflers)",
            0.95,
            ("chi-square", "runs", "Kolmogorov-Smirnov"),
            _ALL,
            "58 Pa. Code 810a.5",
        ),
    )
}


RNG_SERVES: dict[str, tuple[str, ...]] = {
    "frequency": ("equi-distribution (frequency)", "chi-square"),
    "block_frequency": ("equi-distribution (frequency)", "chi-square", "tests on subsequences"),
    "cumulative_sums": ("runs",),
    "runs": ("runs", "serial correlation"),
    "longest_run": ("runs", "chi-square"),
    "rank": ("serial correlation",),
    "dft": ("spectral", "runs"),
    "non_overlapping_template": ("chi-square", "runs"),
    "overlapping_template": ("overlaps", "chi-square"),
    "universal": ("serial correlation",),
    "approximate_entropy": ("overlaps", "serial correlation"),
    "random_excursions": ("chi-square",),
    "random_excursions_variant": ("runs",),
    "serial": ("serial correlation", "overlaps", "chi-square"),
    "linear_complexity": ("chi-square",),
}
"""Each SP 800-22 test and the regulations' test families it is an instance of (our
reading, docs/rng.md): a chi-square statistic, runs and recurrent patterns (the runs, the
longest run, the walk's excursions, templates, the spectrum's peaks), dependence between
successive bits or blocks (serial correlation), overlapping patterns.  The "spectral test" of
25 CFR 547.14 is claimed by SP 800-22's discrete Fourier transform (spectral) test, not
Knuth's spectral test of an LCG's lattice."""

_CFR_RNG = (
    "chi-square",
    "runs",
    "serial correlation",
    "equi-distribution (frequency)",
    "gap",
    "poker",
    "coupon collector",
    "permutation",
    "spectral",
    "tests on subsequences",
)
_PA_RNG = (
    "chi-square",
    "equi-distribution (frequency)",
    "gap",
    "overlaps",
    "poker",
    "coupon collector",
    "permutation",
    "Kolmogorov-Smirnov",
    "adjacency criterion",
    "order statistic",
    "runs",
    "interplay correlation",
    "serial correlation",
    "tests on subsequences",
    "Poisson distribution",
)


def _serving(tests: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t, fams in RNG_SERVES.items() if set(fams) & set(tests))


RNG_STANDARDS: dict[str, Standard] = {
    s.name: s
    for s in (
        Standard(
            "25cfr547",
            "25 CFR 547.14 (NIGC Class II, random number generation)",
            0.99,
            _CFR_RNG,
            _serving(_CFR_RNG),
            "25 CFR 547.14(b)(2)",
            "rng",
        ),
        Standard(
            "pa810a",
            "58 Pa. Code 810a.5 (Pennsylvania, random number generator standards)",
            0.95,
            _PA_RNG,
            _serving(_PA_RNG),
            "58 Pa. Code 810a.5(c)",
            "rng",
        ),
        Standard(
            "comar",
            "COMAR 36.05.02.17 (Maryland, automated card shuffler)",
            0.95,
            ("chi-square",),
            _serving(("chi-square",)),
            "COMAR 36.05.02.17",
            "rng",
        ),
        Standard(
            "gli",
            "GLI-11 and GLI-19 (GLI's RNG requirements, as its laboratories test)",
            0.99,
            (),
            tuple(RNG_SERVES),
            "GLI-11 v3.0, GLI-19 v3.0",
            "rng",
        ),
    )
}
"""The raw-output certificate's profiles (``feltlab certify rng --standard``)."""


def get_standard(name: str, kind: str = "shuffler") -> Standard:
    """The standard called ``name`` for ``kind`` (``shuffler`` or ``rng``); ValueError
    naming the choices otherwise."""
    table = RNG_STANDARDS if kind == "rng" else STANDARDS
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown standard {name!r}: choose one of {', '.join(table)}") from None


def requirements(check: str) -> dict[str, list[str]]:
    """Per standard, the tests it names that ``check`` serves (empty lists left out)."""
    out = {}
    for s in STANDARDS.values():
        got = [t for t in s.tests if t in SERVES.get(check, ())]
        if got:
            out[s.name] = got
    return out


__all__ = [
    "RNG_SERVES",
    "RNG_STANDARDS",
    "SERVES",
    "STANDARDS",
    "Standard",
    "get_standard",
    "requirements",
]
