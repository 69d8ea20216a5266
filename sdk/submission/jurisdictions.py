"""The jurisdictions' forms of a submission: what each regulator's rule asks, put first.

A form changes the order of a certificate's sections and the table rules its grid is
computed under, never a figure.  The sections (:data:`SECTIONS`):

- ``odds``: per outcome of each paytable, the true odds, the payout odds and the house
  advantage of the wager (Maryland, COMAR 36.05.03.20: for a new wager or paytable, "the
  true odds, the payout odds and the house advantage" of each wager);
- ``evaluation``: the theoretical percentages (house edge, hit frequency, standard deviation)
  over the grid with the independent simulation that confirms each (Nevada, Regulation
  14.230: "a statistical evaluation of the theoretical percentages of the game");
- ``paytables``: each paytable as it would be written into the rules (Pennsylvania writes
  each side wager's paytables into its table game rules, 58 Pa. Code Part VII, Subpart K,
  blackjack's chapter 633a; New Zealand's Rule 15B.7 writes Perfect Pairs' two pay scales);
- ``countability``: the game protection summary (``feltlab protect``, docs/protection.md).

Rule numbers as issue 43 gives them; the New Zealand rules are the Gazette amendments in
``../shared/rules/`` (rules 3.3(a), 3.4, 7.6, 15B.7, 15B.8).  Regulators' texts change:
check the current rule before filing.
"""

from __future__ import annotations

from dataclasses import dataclass

from feltlab.errors import FeltlabError

SECTIONS = ("odds", "evaluation", "paytables", "countability")
"""A certificate's sections, in the neutral order (no jurisdiction)."""


class JurisdictionError(FeltlabError, ValueError):
    """An unknown jurisdiction."""


@dataclass(frozen=True)
class Jurisdiction:
    """One regulator's form: ``key`` (the ``--jurisdiction`` value), ``name``, the ``rule``
    cited, what it ``asks`` in words, the ``order`` of the sections (what the rule asks
    first) and the table rules preset the grid is computed under (``rules_preset``, one of
    :data:`feltlab.rules.PRESETS`): the presets' deck rules restrict the grid's decks."""

    key: str
    name: str
    rule: str
    asks: str
    order: tuple[str, ...]
    rules_preset: str

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable form."""
        return {
            "key": self.key,
            "name": self.name,
            "rule": self.rule,
            "asks": self.asks,
            "order": list(self.order),
            "rules_preset": self.rules_preset,
        }


JURISDICTIONS: dict[str, Jurisdiction] = {
    "nv": Jurisdiction(
        "nv",
        "Nevada",
        "Nevada Gaming Commission Regulation 14.230",
        "for a new game or a variation (a new side wager or a changed paytable), a statistical "
        "evaluation of the theoretical percentages of the game",
        ("evaluation", "odds", "paytables", "countability"),
        "vegas_s17",
    ),
    "md": Jurisdiction(
        "md",
        "Maryland",
        "COMAR 36.05.03.20",
        "for each new wager or paytable, the true odds, the payout odds and the house "
        "advantage of each wager",
        ("odds", "evaluation", "paytables", "countability"),
        "vegas_s17",
    ),
    "pa": Jurisdiction(
        "pa",
        "Pennsylvania",
        "58 Pa. Code Part VII, Subpart K (table game rules; blackjack: chapter 633a)",
        "each side wager's paytables, written into the game's rules",
        ("paytables", "odds", "evaluation", "countability"),
        "vegas_s17",
    ),
    "nz": Jurisdiction(
        "nz",
        "New Zealand",
        "NZ Gazette amendments to the Rules of Casino Table Games, Division 2 Blackjack: "
        "rules 3.3(a) and 3.4 (4 to 8 decks, a continuous shuffler too), 7.6(a) (the cutting "
        "card no more than half way in), 15B.7 and 15B.8 (Perfect Pairs' pay scales, the one "
        "in operation displayed)",
        "the pay scales as the rules write them, for the decks rule 3.3(a) allows",
        ("paytables", "odds", "evaluation", "countability"),
        "nz",
    ),
}
"""The forms ``--jurisdiction`` chooses (nv, md, pa, nz)."""

NEUTRAL = Jurisdiction(
    "",
    "no jurisdiction",
    "",
    "every figure, in the neutral order",
    SECTIONS,
    "vegas_s17",
)
"""The form without ``--jurisdiction``: the neutral order, the Las Vegas rules (1 to 8
decks)."""


def jurisdiction(key: str | None) -> Jurisdiction:
    """The form of ``key`` (None or "": :data:`NEUTRAL`).  Raises :class:`JurisdictionError`
    naming the known keys."""
    if not key:
        return NEUTRAL
    try:
        return JURISDICTIONS[key.strip().lower()]
    except KeyError:
        raise JurisdictionError(
            f"unknown jurisdiction {key!r}: choose one of {', '.join(JURISDICTIONS)}"
        ) from None
