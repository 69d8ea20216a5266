"""Super Sevens (section 15, not in the rule files): a built-in plugin."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

from feltlab.cards import NO_CARD
from feltlab.hookspecs import hookimpl
from feltlab.wagers import (
    Bet,
    Decided,
    Limits,
    Paytable,
    Placed,
    RoundView,
    Settlement,
    WagerType,
    as_pays,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SEVEN = 6  # rank index of a 7
OUTCOMES = (
    "lose",
    "one_seven",
    "two_sevens_unsuited",
    "two_sevens_suited",
    "three_sevens_unsuited",
    "three_sevens_suited",
)


class SuperSevens(WagerType):
    """A side wager on sevens among the first three cards dealt to the box.

    Rules 15.1-15.5 are not in the rule files; this is configuration with documented
    defaults.  Only 6 to 8 decks (rule 3.3(a)).  Default paytable ``"common"``: one seven
    (the first card) 3 to 1; first two sevens, different suits 50 to 1, same suit 100 to 1;
    three sevens, not all one suit 500 to 1, one suit 5000 to 1: the paytable commonly
    published for this wager (e.g. Wizard of Odds, "Super Sevens"), assumed here.  The
    wager loses unless the first card is a seven.

    Assumption where play interferes: the third card is the next card dealt to the box (a
    hit, a double, or the first card dealt to the first hand after a split); if the first two
    cards are sevens and the box receives no third card (the player stands), the wager is
    decided as two sevens.  Classifier columns ``("P1", "P2", "P3")``, ``NO_CARD`` (255) in
    P3 for "no third card".
    """

    name = "super_sevens"
    title = "Super Sevens"
    rule = "15"
    placed = Placed.BEFORE_DEAL
    decided = Decided.THIRD_CARD
    card_roles = ("P1", "P2", "P3")
    min_decks = 6
    default_limits = Limits(100, 2_500)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "common": Paytable(
            "common",
            OUTCOMES,
            as_pays([-1, 3, 50, 100, 500, 5000]),
            "common published paytable (rules 15.4, 15.5 not in the rule files)",
        )
    }

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """Outcome index (see ``OUTCOMES``) of ``(n, 3)`` uint8 codes -> ``(n,)`` uint8."""
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        c = self._checked(cards)
        seven = (c >> 2) == SEVEN
        suit = c & 3
        s1 = seven[:, 0]
        s2 = s1 & seven[:, 1]
        s3 = s2 & seven[:, 2]
        suited2 = suit[:, 0] == suit[:, 1]
        suited3 = suited2 & (suit[:, 1] == suit[:, 2])
        out = np.zeros(len(c), dtype=np.uint8)
        out[s1] = 1
        out[s2] = np.where(suited2[s2], 3, 2)
        out[s3] = np.where(suited3[s3], 5, 4)
        return out

    def settle(self, view: RoundView, bet: Bet) -> Settlement | None:
        """Decided as soon as a card that is not a seven breaks the run, on the third card,
        or (two sevens, no third card) at the end of the round."""
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        row = [view.role(r) for r in self.card_roles]
        known = [c for c in row if c != NO_CARD]
        broken = any((c >> 2) != SEVEN for c in known)
        if not (broken or len(known) == 3 or view.final):
            return None
        padded = np.array([row], dtype=np.uint8)
        outcome = int(self.classify(padded)[0])
        return Settlement(
            self.paytable.outcomes[outcome], self.paytable.net(outcome, bet.amount), self.rule
        )


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`SuperSevens`."""
    register(SuperSevens)
