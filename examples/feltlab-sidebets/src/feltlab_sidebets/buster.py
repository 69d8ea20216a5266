"""Buster Blackjack: the dealer busts, paid by the number of cards in the busted hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from feltlab import Decided, Limits, Paytable, Placed, WagerType
from feltlab.wagers import as_pays

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

WIZARD_BUSTER = "https://wizardofodds.com/games/blackjack/side-bets/buster-blackjack/"

OUTCOMES = ("lose", "bust_3_or_4_cards", "bust_5_cards", "bust_6_cards", "bust_7_cards",
            "bust_8_or_more_cards")  # fmt: skip
"""Outcomes of the ``version1`` and ``wizard`` paytables, lowest first."""
OUTCOMES_BJ = (*OUTCOMES, "bust_7_cards_player_blackjack",
               "bust_8_or_more_cards_player_blackjack")  # fmt: skip
"""Outcomes of the ``version2`` paytable: 7 and 8+ card busts pay more with a player
blackjack."""
OUTCOMES_BY_CARDS = ("lose", "bust_3_cards", "bust_4_cards", "bust_5_cards", "bust_6_cards",
                     "bust_7_cards", "bust_8_or_more_cards")  # fmt: skip
"""Outcomes of the ``california`` paytable: a 3-card and a 4-card bust paid apart."""
CALIFORNIA_SOURCE = (
    "the pay table most found in California (3 cards 1, 4 cards 3, 5 cards 6, 6 cards 30, "
    "7 cards 100, 8 or more 200 to 1), as E. Jacobson lists it as Buster's most common; "
    "https://marketresearchtelecast.com/how-to-play-buster-blackjack/251076/"
)


class BusterBlackjack(WagerType):
    """Buster Blackjack, placed with the main wager before any card is dealt and decided at
    the end of the round by the dealer's final hand.

    Wins when the dealer busts, paying by the number of cards in the busted hand; a dealer
    who does not bust (a blackjack included) loses the bet.  **Buster's rule**: the dealer
    completes the hand even when every hand at the table has busted or has a blackjack
    (``dealer_plays_out``), so the bet is always decided on a finished dealer hand.

    Paytables (``to 1``), as the Wizard of Odds lists them (:data:`WIZARD_BUSTER`, "Version
    1" and "Version 2"; the bet is marketed by AGS), and ``california``, which pays a 3-card
    and a 4-card bust apart (1 and 3 to 1; 5 cards 6, 6 cards 30, 7 cards 100, 8 or more 200:
    :data:`CALIFORNIA_SOURCE`, its outcomes :data:`OUTCOMES_BY_CARDS`):

    ============================= ========= ======= =========
    dealer busts with             version1  wizard  version2
    ============================= ========= ======= =========
    3 or 4 cards                  2         2       2
    5 cards                       4         4       4
    6 cards                       15        12      18
    7 cards                       50        50      50
    8 or more cards               250       250     250
    7 cards, player blackjack     -         -       800
    8 or more, player blackjack   -         -       2000
    ============================= ========= ======= =========

    ``wizard`` is the table of the Wizard of Odds' "Pay Table 1 Analysis", which pays 12
    (not Version 1's 15) for a 6-card bust: its published house edges (6 decks: 6.21%
    dealer hits soft 17, 8.25% stands) are what this package's tests reproduce.  "Player
    blackjack" is the box's first hand being a two-card 21 not from a split (the box the bet
    is on).

    Assumptions: one Buster bet per box, settled by that box's round record; limits $1 to
    $100 (configuration).  Fields read: ``dealer_bust``, ``dealer_n_cards`` and (version 2)
    ``hand_blackjack``: rank-level facts, so ``feltlab math buster_blackjack`` is exact.
    """

    name = "buster_blackjack"
    title = "Buster Blackjack"
    placed = Placed.BEFORE_DEAL
    decided = Decided.ROUND_END
    round_fields = ("dealer_bust", "dealer_n_cards", "hand_blackjack")
    dealer_plays_out = True
    default_limits = Limits(100, 10_000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "version1": Paytable(
            "version1",
            OUTCOMES,
            as_pays([-1, 2, 4, 15, 50, 250]),
            f"Wizard of Odds, Buster Blackjack, Version 1 Pay Table ({WIZARD_BUSTER})",
        ),
        "wizard": Paytable(
            "wizard",
            OUTCOMES,
            as_pays([-1, 2, 4, 12, 50, 250]),
            f"Wizard of Odds, Buster Blackjack, Pay Table 1 Analysis: 12 for 6 cards "
            f"({WIZARD_BUSTER})",
        ),
        "version2": Paytable(
            "version2",
            OUTCOMES_BJ,
            as_pays([-1, 2, 4, 18, 50, 250, 800, 2000]),
            f"Wizard of Odds, Buster Blackjack, Version 2 Pay Table ({WIZARD_BUSTER})",
        ),
        "california": Paytable(
            "california",
            OUTCOMES_BY_CARDS,
            as_pays([-1, 1, 3, 6, 30, 100, 200]),
            CALIFORNIA_SOURCE,
        ),
    }

    def classify_round(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.uint8]:
        """Outcome index of each ``(n,)`` round record (``feltlab.record.RECORD_DTYPE``)."""
        import numpy as np  # start-up: `feltlab --help` imports every plugin; numpy loads on use

        r = self._checked_record(records)
        n = r["dealer_n_cards"].astype(np.int64)
        bust = r["dealer_bust"].astype(bool)
        out = np.zeros(len(r), dtype=np.uint8)
        if self.paytable.outcomes == OUTCOMES_BY_CARDS:  # a dealer busts with 3 cards or more
            out[bust] = np.clip(n[bust], 3, 8) - 2
            return out
        out[bust & (n <= 4)] = 1
        out[bust & (n == 5)] = 2
        out[bust & (n == 6)] = 3
        out[bust & (n == 7)] = 4
        out[bust & (n >= 8)] = 5
        if self.paytable.name == "version2":
            bj = r["hand_blackjack"][:, 0].astype(bool)
            out[bust & (n == 7) & bj] = 6
            out[bust & (n >= 8) & bj] = 7
        return out
