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

    @property
    def alpha(self) -> float:
        """The family-wise significance level the standard's confidence sets."""
        return round(1 - self.confidence, 12)

    def coverage(self, checks_run: list[str]) -> dict[str, Any]:
        """What a battery of ``checks_run`` covers of this standard: per named test, the
        checks serving it; the tests none serves (``not_covered``); the required checks that
        did not run (``missing``)."""
        by_test = {t: [c for c in checks_run if t in SERVES.get(c, ())] for t in self.tests}
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


def get_standard(name: str) -> Standard:
    """The standard called ``name``; ValueError naming the choices otherwise."""
    try:
        return STANDARDS[name]
    except KeyError:
        raise ValueError(
            f"unknown standard {name!r}: choose one of {', '.join(STANDARDS)}"
        ) from None


def requirements(check: str) -> dict[str, list[str]]:
    """Per standard, the tests it names that ``check`` serves (empty lists left out)."""
    out = {}
    for s in STANDARDS.values():
        got = [t for t in s.tests if t in SERVES.get(check, ())]
        if got:
            out[s.name] = got
    return out


__all__ = ["SERVES", "STANDARDS", "Standard", "get_standard", "requirements"]
