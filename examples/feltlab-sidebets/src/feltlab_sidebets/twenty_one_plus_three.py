"""21+3: the player's first two cards and the dealer's up card as a three-card poker hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from feltlab import Decided, Limits, Paytable, Placed, WagerType
from feltlab.wagers import as_pays

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

OUTCOMES = ("lose", "flush", "straight", "three_of_a_kind", "straight_flush", "suited_trips")
"""Outcome indexes, lowest first; a hand takes the highest outcome it makes."""

WIZARD_21_PLUS_3 = "https://wizardofodds.com/games/blackjack/side-bets/21plus3/"


class TwentyOnePlusThree(WagerType):
    """21+3, placed with the main wager before any card is dealt and decided when the box's
    second card completes the initial deal.

    The box's two cards (``P1``, ``P2``) and the dealer's up card (``D1``) form a three-card
    poker hand:

    - *suited trips*: three cards of one rank and one suit (multi-deck only);
    - *straight flush*: a straight of one suit;
    - *three of a kind*: three cards of one rank;
    - *straight*: three consecutive ranks; the ace plays high (Q-K-A) or low (A-2-3), never
      round the corner (K-A-2 is no straight);
    - *flush*: three cards of one suit (a pair in one suit is a flush);
    - anything else loses.

    Paytables (``to 1``):

    ============== ====== ======== =========
    outcome        common original version3
    ============== ====== ======== =========
    suited trips   100    9        100
    straight flush 40     9        35
    three of a kind 30    9        33
    straight       10     9        10
    flush          5      9        5
    ============== ====== ======== =========

    ``common`` (the default) is the tiered paytable most 21+3 tables display today;
    ``original`` is the flat 9 to 1 of the first version and ``version3`` a published online
    variant, both as listed by the Wizard of Odds (:data:`WIZARD_21_PLUS_3`, "Version 1" and
    "Version 3").  Limits $1 to $100 (configuration).
    """

    name = "twenty_one_plus_three"
    title = "21+3"
    rule = ""
    placed = Placed.BEFORE_DEAL
    decided = Decided.INITIAL_DEAL
    card_roles = ("P1", "P2", "D1")
    default_limits = Limits(100, 10_000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "common": Paytable(
            "common",
            OUTCOMES,
            as_pays([-1, 5, 10, 30, 40, 100]),
            "the common tiered 21+3 paytable (suited trips 100, straight flush 40, three of a "
            "kind 30, straight 10, flush 5 to 1)",
        ),
        "original": Paytable(
            "original",
            OUTCOMES,
            as_pays([-1, 9, 9, 9, 9, 9]),
            f"flat 9 to 1, Wizard of Odds 21+3 Version 1 ({WIZARD_21_PLUS_3})",
        ),
        "version3": Paytable(
            "version3",
            OUTCOMES,
            as_pays([-1, 5, 10, 33, 35, 100]),
            f"Wizard of Odds 21+3 Version 3 ({WIZARD_21_PLUS_3})",
        ),
    }

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """Outcome index (see :data:`OUTCOMES`) of each ``(n, 3)`` row of card codes."""
        import numpy as np  # start-up: `feltlab --help` imports every plugin; numpy loads on use

        c = self._checked(cards)
        rank = np.sort(c >> 2, axis=1)  # 0 = ace .. 12 = king
        suit = c & 3
        flush = (suit[:, 0] == suit[:, 1]) & (suit[:, 1] == suit[:, 2])
        trips = (rank[:, 0] == rank[:, 1]) & (rank[:, 1] == rank[:, 2])
        distinct = (rank[:, 0] != rank[:, 1]) & (rank[:, 1] != rank[:, 2])
        run = distinct & (rank[:, 2] - rank[:, 0] == 2)
        ace_high = (rank[:, 0] == 0) & (rank[:, 1] == 11) & (rank[:, 2] == 12)  # Q-K-A
        straight = run | ace_high
        out = np.zeros(len(c), dtype=np.uint8)
        out[flush] = 1
        out[straight] = 2
        out[trips] = 3
        out[straight & flush] = 4
        out[trips & flush] = 5
        return out
