"""Exact PAR sheets of card-decided wagers, by enumerating initial deals.

A wager whose outcome is decided by a few cards of the initial deal declares them as its
``card_roles`` (``P1``, ``P2``, ``P3`` the player's first three cards, ``D1`` the dealer's up
card, ``D2`` the dealer's second card) and a vectorised ``classify``.  Any k distinct cards
of a well-shuffled shoe are an ordered draw without replacement, whatever positions they are
dealt from, so the engine enumerates every ordered k-tuple of card *codes* (52^k of them) with
its exact multiplicity in a ``decks``-deck shoe, D (D - [c2 = c1]) ..., classifies all of them
in one call, and sums exact integers per outcome.  Probabilities, return and variance are
exact fractions; the standard deviation is the square root of the exact variance.

A PAR sheet (Probability Accounting Report) lists each outcome with its combinations,
probability, pays and contribution to the return, then the return, house edge (= -return),
hit frequency (the probability of a paying outcome), variance and standard deviation, all
per unit wagered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.errors import WagerError
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS
from feltlab.wagers import Placed, WagerType

MAX_ROLES = 4
"""At most 4 cards per outcome (52^4 = 7.3 million tuples)."""
CARDS_PER_DECK = 52


def code_tuples(k: int) -> npt.NDArray[np.uint8]:
    """Every ordered k-tuple of card codes: ``(52**k, k)`` uint8, lexicographic."""
    if not 1 <= k <= MAX_ROLES:
        raise WagerError(f"exact enumeration handles 1 to {MAX_ROLES} cards, got {k}")
    grids = np.indices((CARDS_PER_DECK,) * k, dtype=np.uint8)
    return np.ascontiguousarray(grids.reshape(k, -1).T)


def multiplicities(tuples: npt.NDArray[np.uint8], decks: int) -> npt.NDArray[np.int64]:
    """Ways to deal each tuple of codes in order from a ``decks``-deck shoe:
    prod_i (decks - #{j < i : c_j = c_i}), ``(n,)`` int64 (0 where impossible)."""
    n, k = tuples.shape
    w = np.full(n, 1, dtype=np.int64)
    for i in range(k):
        same = np.zeros(n, dtype=np.int64)
        for j in range(i):
            same += tuples[:, j] == tuples[:, i]
        w *= np.maximum(decks - same, 0)
    return w


@dataclass(frozen=True)
class OutcomeLine:
    """One row of a PAR sheet: ``combinations`` (ordered deals), exact ``probability``,
    ``pays`` (net per unit, None for a jackpot prize) and ``return_`` (probability x pays)."""

    outcome: str
    combinations: int
    probability: Fraction
    pays: Fraction | None
    return_: Fraction | None


@dataclass(frozen=True)
class ParSheet:
    """The PAR sheet of one wager, paytable and deck count (all figures per unit wagered).

    ``total_combinations``: ordered deals of the wager's cards (conditional on the wager
    being offered, e.g. the dealer showing an ace for insurance).  ``return_`` and
    ``house_edge`` exclude jackpot outcomes (whose prize comes from a panel), unless a prize
    table was given; ``note`` says so.  ``method`` says how the sheet was computed:
    ``"exact"`` (enumeration, or the exact analysis of :mod:`feltlab.math.play_decided`), or
    ``"simulated: N rounds, +-H"`` (the C round simulator; ``half_width`` H is the 95%
    half-width of the return, and ``combinations`` count rounds).  ``rules``: the table rules
    of a play-decided wager's sheet (their name), "" for a card-decided one.
    """

    wager: str
    title: str
    paytable: str
    decks: int
    card_roles: tuple[str, ...]
    lines: tuple[OutcomeLine, ...]
    total_combinations: int
    return_: Fraction
    house_edge: Fraction
    hit_frequency: Fraction
    variance: Fraction
    note: str = ""
    method: str = "exact"
    half_width: float | None = None
    rules: str = ""
    average_prize: Fraction | None = None
    """A panel-paid wager's average prize in cents (:mod:`feltlab.math.prizes`), else None."""
    stake: int | None = None
    """The stake in cents the return per unit is computed at (a panel-paid wager)."""

    @property
    def std_dev(self) -> float:
        """Standard deviation per unit wagered."""
        return math.sqrt(self.variance)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form; exact values as "p/q" strings beside floats."""

        def fr(x: Fraction | None) -> dict[str, Any] | None:
            return (
                None
                if x is None
                else {"exact": f"{x.numerator}/{x.denominator}", "value": float(x)}
            )

        return {
            "wager": self.wager,
            "title": self.title,
            "paytable": self.paytable,
            "decks": self.decks,
            "card_roles": list(self.card_roles),
            "method": self.method,
            "half_width": self.half_width,
            "rules": self.rules,
            "average_prize_cents": fr(self.average_prize),
            "stake_cents": self.stake,
            "total_combinations": self.total_combinations,
            "outcomes": [
                {
                    "outcome": ln.outcome,
                    "combinations": ln.combinations,
                    "probability": fr(ln.probability),
                    "pays": fr(ln.pays),
                    "return": fr(ln.return_),
                }
                for ln in self.lines
            ],
            "return": fr(self.return_),
            "house_edge": fr(self.house_edge),
            "hit_frequency": fr(self.hit_frequency),
            "variance": fr(self.variance),
            "std_dev": self.std_dev,
            "note": self.note,
        }


def offered_mask(wager: WagerType, tuples: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """Rows on which the wager is on offer: an insurance wager only when the dealer's up card
    (role ``D1``) is an ace; a wager may narrow this with an ``offered(cards)`` method."""
    mask = np.ones(tuples.shape[0], dtype=bool)
    if wager.placed is Placed.INSURANCE and "D1" in wager.card_roles:
        mask &= (tuples[:, wager.card_roles.index("D1")] >> 2) == 0
    offered = getattr(wager, "offered", None)
    if callable(offered):
        mask &= np.asarray(offered(tuples), dtype=bool)
    return mask


def par_sheet(wager: WagerType, decks: int) -> ParSheet:
    """The exact PAR sheet of ``wager`` (an instance, with its chosen paytable) for a shoe of
    ``decks`` decks (1..8; the wager's own deck range is the caller's concern).

    Raises :class:`WagerError` when the wager has no card-only classifier, uses more than 4
    cards, or its classifier returns an index outside its paytable.
    """
    if not ANY_MIN_DECKS <= decks <= MAX_DECKS:
        raise WagerError(f"decks must be {ANY_MIN_DECKS}..{MAX_DECKS} for a PAR sheet, got {decks}")
    roles = tuple(wager.card_roles)
    if not roles:
        raise WagerError(
            f"{wager.title} declares no card_roles: its outcome is not decided by the initial "
            "deal alone; use feltlab simulate"
        )
    for name, pays in zip(wager.paytable.outcomes, wager.paytable.pays, strict=True):
        if pays is not None and not isinstance(pays, int | Fraction):
            raise WagerError(
                f"{wager.name}: paytable {wager.paytable.name!r} pays {pays!r} "
                f"({type(pays).__name__}) on {name!r}; write pays as ints or Fractions "
                "(Fraction(21, 2), not 10.5) so the PAR sheet stays exact"
            )
    tuples = code_tuples(len(roles))
    weights = multiplicities(tuples, decks)
    mask = offered_mask(wager, tuples) & (weights > 0)
    tuples, weights = tuples[mask], weights[mask]
    outcomes = np.asarray(wager.classify(tuples))
    table = wager.paytable
    if outcomes.shape != (tuples.shape[0],) or (
        outcomes.size and outcomes.max() >= len(table.pays)
    ):
        raise WagerError(
            f"{wager.name}.classify must return one index into its {len(table.pays)} "
            f"outcomes per row, got shape {outcomes.shape} max {outcomes.max(initial=0)}"
        )
    sums = [int(weights[outcomes == i].sum()) for i in range(len(table.pays))]
    total = sum(sums)
    lines: list[OutcomeLine] = []
    ret = Fraction(0)
    second = Fraction(0)
    hit = Fraction(0)
    jackpot = False
    for name, pays, c in zip(table.outcomes, table.pays, sums, strict=True):
        p = Fraction(c, total)
        if pays is None:
            jackpot = True
            lines.append(OutcomeLine(name, c, p, None, None))
            hit += p
            continue
        r = p * pays
        ret += r
        second += p * pays * pays
        if pays > 0:
            hit += p
        lines.append(OutcomeLine(name, c, p, pays, r))
    note = ""
    if jackpot:
        note = "jackpot outcomes are paid by the prize panel: excluded from the return"
    if wager.placed is Placed.INSURANCE:
        note = (note + "; " if note else "") + "conditional on the dealer showing an ace"
    return ParSheet(
        wager=wager.name,
        title=wager.title,
        paytable=table.name,
        decks=decks,
        card_roles=roles,
        lines=tuple(lines),
        total_combinations=total,
        return_=ret,
        house_edge=-ret,
        hit_frequency=hit,
        variance=second - ret * ret,
        note=note,
    )
