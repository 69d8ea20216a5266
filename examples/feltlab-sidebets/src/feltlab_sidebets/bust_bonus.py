"""Bust Bonus: the dealer busts, paid by the dealer's up card, more when the dealer's cards
are all of one suit, and a premium for a dealer 8-8-8."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from feltlab import Decided, Limits, Paytable, Placed, WagerType
from feltlab.wagers import as_pays

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

WIZARD_BUST_BONUS = "https://wizardofodds.com/games/blackjack/side-bets/bust-bonus/"
UPS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10")
OUTCOMES = (
    "lose",
    *(f"bust_{u}_up" for u in UPS),
    *(f"suited_bust_{u}_up" for u in UPS),
    "bust_8_8_8",
    "suited_bust_8_8_8",
)
"""Outcome indexes: 0 lose, 1..10 a bust by up card (A, 2..9, ten-valued), 11..20 a suited
bust by up card, 21 a dealer 8-8-8, 22 a suited 8-8-8."""

_SILVER_DOLLAR = {  # up card: (non-suited, suited), to 1
    "A": (3, 50), "2": (1, 25), "3": (1, 15), "4": (1, 10), "5": (1, 5), "6": (1, 3),
    "7": (2, 15), "8": (2, 10), "9": (2, 20), "10": (2, 20),
}  # fmt: skip


class BustBonus(WagerType):
    """Bust Bonus (Galaxy Gaming): wins when the dealer busts, paying by the dealer's up card
    and whether every card of the dealer's busted hand is of one suit; a dealer whose first
    three cards are 8-8-8 (a bust of 24 on three cards) pays 25, or 75 suited, instead of the
    8-up pays.  A dealer who does not bust loses the bet.

    Paytable ``silver_dollar`` (``to 1``), as the Wizard of Odds saw it at the Silver Dollar
    casino, Seatac, in 2015 (:data:`WIZARD_BUST_BONUS`; 8 decks, dealer hits soft 17):

    ====== ========== ======
    up     non-suited suited
    ====== ========== ======
    ace    3          50
    2      1          25
    3      1          15
    4      1          10
    5      1          5
    6      1          3
    7      2          15
    8      2          10
    8-8-8  25         75
    9      2          20
    10     2          20
    ====== ========== ======

    Assumptions (where feltlab differs from the casino's procedure, stated): in the casino the
    bet is made after the dealer's up card is seen, and with an ace or ten up only after the
    dealer has peeked for a blackjack; here it is placed with the main wager before the deal
    (``Placed.BEFORE_DEAL``), so its PAR sheet is the average over up cards and a dealer
    blackjack loses it.  The dealer completes the hand for it (``dealer_plays_out``) as for
    Buster Blackjack; 8-8-8 replaces the 8-up pays (the Wizard's reading).  It reads the
    suits of the dealer's cards (``dealer_suited``), so ``feltlab math bust_bonus`` gives a
    simulated PAR sheet.  Limits $1 to $100 (configuration).
    """

    name = "bust_bonus"
    title = "Bust Bonus"
    placed = Placed.BEFORE_DEAL
    decided = Decided.ROUND_END
    round_fields = ("dealer_bust", "dealer_up", "dealer_suited", "dealer_cards")
    dealer_plays_out = True
    default_limits = Limits(100, 10_000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "silver_dollar": Paytable(
            "silver_dollar",
            OUTCOMES,
            as_pays(
                [-1]
                + [_SILVER_DOLLAR[u][0] for u in UPS]
                + [_SILVER_DOLLAR[u][1] for u in UPS]
                + [25, 75]
            ),
            f"Wizard of Odds, Bust Bonus, the Silver Dollar casino pay table ({WIZARD_BUST_BONUS})",
        )
    }

    def classify_round(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.uint8]:
        """Outcome index (see :data:`OUTCOMES`) of each ``(n,)`` round record."""
        import numpy as np  # start-up: `feltlab --help` imports every plugin; numpy loads on use

        r = self._checked_record(records)
        bust = r["dealer_bust"].astype(bool)
        suited = r["dealer_suited"].astype(bool)
        up = np.minimum(r["dealer_up"].astype(np.int64) >> 2, 9)  # value index, tens as 9
        first3 = r["dealer_cards"][:, :3].astype(np.int64) >> 2
        eights = (first3 == 7).all(axis=1)
        out = np.zeros(len(r), dtype=np.int64)
        out[bust] = 1 + up[bust]
        out[bust & suited] = 11 + up[bust & suited]
        out[bust & eights] = 21
        out[bust & eights & suited] = 22
        return out.astype(np.uint8)
