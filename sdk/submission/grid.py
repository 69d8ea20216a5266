"""The grid of a submission: which (paytable, decks, dealing, dealer rule) cells a wager's
certificate covers, and why the others are left out.

The full grid is every declared paytable (or those asked for) by :data:`DECKS` (1, 2, 4, 6
and 8 decks) by :data:`DEALINGS` (a shoe dealt to its cutting card, or a continuous
shuffler) by the dealer's soft-17 rule (S17, H17) where play decides the wager.  It is
restricted, each restriction stated (:class:`Restriction`):

- by the table rules of the jurisdiction (:meth:`feltlab.rules.Rules.preset`): New
  Zealand's rule 3.3(a) deals 4 to 8 decks, the Las Vegas presets 1 to 8;
- by the wager's own deck range (:meth:`feltlab.wagers.WagerType.check_rules`);
- by the dealer rule: a wager decided by the initial deal (``card_roles``) is decided before
  the dealer draws, so S17 and H17 are one cell (``dealer`` :data:`EITHER`).

A shoe cell's cutting card leaves a quarter of the stack behind it (75% penetration), at
least :data:`feltlab.core_rules.MIN_BEHIND_CUT` cards (one deck: half, rule 7.6(a)'s
limit); the continuous shuffler is the ideal machine of ``feltlab protect`` and ``feltlab
simulate`` (every round from the full, freshly shuffled composition; rule 7.6(b): no
cutting card).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from feltlab.core_rules import MIN_BEHIND_CUT
from feltlab.errors import RulesError, WagerError
from feltlab.rules import Rules, ShufflerKind
from feltlab.submission.jurisdictions import Jurisdiction
from feltlab.wagers import WagerType

DECKS = (1, 2, 4, 6, 8)
"""Deck counts of the full grid (issue 43)."""
SHOE = "shoe"
CSM = "continuous shuffler"
DEALINGS = (SHOE, CSM)
"""How the cards are dealt: a shoe to its cutting card, or a continuous shuffler."""
S17, H17, EITHER = "S17", "H17", "S17 or H17"
"""The dealer's soft-17 rule of a cell; :data:`EITHER` where it cannot change the wager."""


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a ``paytable`` name, ``decks``, ``dealing`` (one of
    :data:`DEALINGS`) and ``dealer`` (:data:`S17`, :data:`H17` or :data:`EITHER`)."""

    paytable: str
    decks: int
    dealing: str
    dealer: str

    @property
    def label(self) -> str:
        """The cell in words, e.g. ``"paytable one, 6 decks, shoe, S17 or H17"``."""
        return f"paytable {self.paytable}, {_plural(self.decks)}, {self.dealing}, {self.dealer}"

    @property
    def key(self) -> str:
        """A short stable key: ``"one/6/shoe/S17"`` (``any`` for :data:`EITHER`)."""
        dealing = "csm" if self.dealing == CSM else "shoe"
        dealer = "any" if self.dealer == EITHER else self.dealer
        return f"{self.paytable}/{self.decks}/{dealing}/{dealer}"


@dataclass(frozen=True)
class Restriction:
    """A part of the full grid left out: ``what`` (e.g. ``"1 deck"``) and ``why``."""

    what: str
    why: str


@dataclass(frozen=True)
class Grid:
    """The cells of a wager's certificate, the paytables and the restrictions stated."""

    wager: str
    paytables: tuple[str, ...]
    cells: tuple[Cell, ...]
    restrictions: tuple[Restriction, ...]


def cell_rules(base: Rules, decks: int, dealing: str, dealer: str) -> Rules:
    """``base`` with ``decks`` decks, the dealing and dealer rule of a cell (see the module
    docstring for the cutting card).  Raises :class:`RulesError` where the base's deck rule
    refuses the count."""
    h17 = base.dealer_hits_soft_17 if dealer == EITHER else dealer == H17
    if dealing == CSM:
        return base.replace(
            decks=decks,
            dealer_hits_soft_17=h17,
            shuffler=ShufflerKind.CONTINUOUS,
            cutting_cards=0,
            cut_card_from_back=-1,
        )
    shuffler = ShufflerKind.AUTOMATIC if base.shuffler is ShufflerKind.CONTINUOUS else base.shuffler
    return base.replace(
        decks=decks,
        dealer_hits_soft_17=h17,
        shuffler=shuffler,
        cutting_cards=max(base.cutting_cards, 1),
        cut_card_from_back=max(decks * 52 // 4, MIN_BEHIND_CUT),
    )


def _plural(n: int) -> str:
    return f"{n} deck" if n == 1 else f"{n} decks"


def plan_grid(
    wager_type: type[WagerType], form: Jurisdiction, paytables: Sequence[str] = ()
) -> Grid:
    """The grid of ``wager_type`` under the form's table rules: ``paytables`` (default: every
    declared one).  Raises :class:`WagerError` for an unknown paytable or a wager with none,
    and when no deck count is left."""
    declared = tuple(wager_type.paytables)
    if not declared:
        raise WagerError(f"{wager_type.name} declares no paytable: nothing to certify")
    unknown = [p for p in paytables if p not in declared]
    if unknown:
        raise WagerError(
            f"{wager_type.name} has no paytable {', '.join(map(repr, unknown))}; it declares "
            f"{', '.join(declared)}"
        )
    chosen = tuple(dict.fromkeys(paytables)) or declared
    base = Rules.preset(form.rules_preset)
    restrictions: list[Restriction] = []
    decks_ok: list[int] = []
    for d in DECKS:
        try:
            wager_type(paytable=chosen[0]).check_rules(cell_rules(base, d, SHOE, EITHER))
        except RulesError as exc:
            restrictions.append(Restriction(_plural(d), str(exc)))
            continue
        decks_ok.append(d)
    if not decks_ok:
        raise WagerError(
            f"{wager_type.name} is allowed none of {', '.join(map(str, DECKS))} decks under "
            f"the {form.rules_preset} rules: " + "; ".join(r.why for r in restrictions)
        )
    dealers: tuple[str, ...]
    if wager_type.round_fields:
        dealers = (S17, H17)
    else:
        dealers = (EITHER,)
        restrictions.append(
            Restriction(
                "S17 and H17 apart",
                "the wager is decided by the initial deal (card_roles), before the dealer "
                "draws: the dealer's soft-17 rule cannot change it, so they are one column",
            )
        )
    cells = tuple(
        Cell(p, d, dealing, dealer)
        for p in chosen
        for d in decks_ok
        for dealing in DEALINGS
        for dealer in dealers
    )
    return Grid(wager_type.name, chosen, cells, tuple(restrictions))
