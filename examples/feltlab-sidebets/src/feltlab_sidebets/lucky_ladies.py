"""Lucky Ladies: the player's first two cards total 20."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from feltlab import Decided, Limits, Paytable, Placed, Settlement, WagerType
from feltlab.cards import NO_CARD
from feltlab.wagers import Bet, RoundView, as_pays

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

OUTCOMES = (
    "lose",
    "unsuited_20",
    "suited_20",
    "matched_20",
    "queen_of_hearts_pair",
    "queen_of_hearts_pair_dealer_blackjack",
)
"""Outcome indexes, lowest first; a hand takes the highest outcome it makes."""

QUEEN_OF_HEARTS = 11 * 4 + 2
WIZARD_LUCKY_LADIES = "https://wizardofodds.com/games/blackjack/side-bets/lucky-ladies/"


def _value(rank: npt.NDArray[np.uint8]) -> npt.NDArray[np.int16]:
    """Blackjack value with the ace as 11 (a two-card 20 is ten-ten or ace-nine)."""
    import numpy as np  # start-up: `feltlab --help` imports every plugin; numpy loads on use

    v = np.minimum(rank.astype(np.int16) + 1, 10)
    return np.where(rank == 0, 11, v).astype(np.int16)


class LuckyLadies(WagerType):
    """Lucky Ladies, placed with the main wager before any card is dealt.

    Wins when the box's first two cards (``P1``, ``P2``) total 20, counting an ace as 11:

    - *queen of hearts pair with dealer blackjack*: both cards are the queen of hearts and the
      dealer's first two cards (``D1``, ``D2``) are a blackjack;
    - *queen of hearts pair*: both cards are the queen of hearts;
    - *matched 20*: two identical cards (same rank and suit), e.g. J♠ J♠;
    - *suited 20*: two cards of one suit, not identical, e.g. K♦ 10♦ or A♣ 9♣;
    - *unsuited 20*: any other 20.

    Decided at the completion of the initial deal, except a queen of hearts pair, which waits
    for the dealer's second card (under no-hole-card play that card comes after the players
    have acted; if the dealer takes no second card, there is no dealer blackjack).

    Paytables (``to 1``): ``A`` (default) 1000 / 125 / 19 / 9 / 4 and ``B`` 1000 / 200 / 25 /
    10 / 4, the Wizard of Odds' "Pay Table A" and "Pay Table B" (:data:`WIZARD_LUCKY_LADIES`),
    Pay Table A being the one printed on most layouts.  Limits $1 to $50 (configuration).
    """

    name = "lucky_ladies"
    title = "Lucky Ladies"
    rule = ""
    placed = Placed.BEFORE_DEAL
    decided = Decided.DEALER_SECOND_CARD
    card_roles = ("P1", "P2", "D1", "D2")
    default_limits = Limits(100, 5_000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "A": Paytable(
            "A",
            OUTCOMES,
            as_pays([-1, 4, 9, 19, 125, 1000]),
            f"Wizard of Odds Lucky Ladies Pay Table A ({WIZARD_LUCKY_LADIES})",
        ),
        "B": Paytable(
            "B",
            OUTCOMES,
            as_pays([-1, 4, 10, 25, 200, 1000]),
            f"Wizard of Odds Lucky Ladies Pay Table B ({WIZARD_LUCKY_LADIES})",
        ),
    }

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """Outcome index (see :data:`OUTCOMES`) of each ``(n, 4)`` row; ``NO_CARD`` in ``D2``
        (the dealer took no second card) is no dealer blackjack."""
        import numpy as np  # start-up: `feltlab --help` imports every plugin; numpy loads on use

        c = self._checked(cards)
        rank = c >> 2
        v = _value(rank)
        twenty = v[:, 0] + v[:, 1] == 20
        suited = (c[:, 0] & 3) == (c[:, 1] & 3)
        matched = c[:, 0] == c[:, 1]
        ladies = matched & (c[:, 0] == QUEEN_OF_HEARTS)
        d = np.where(c[:, 2:] == NO_CARD, 1, v[:, 2:])  # NO_CARD counts as no blackjack
        dealer_bj = d[:, 0] + d[:, 1] == 21
        out = np.zeros(len(c), dtype=np.uint8)
        out[twenty] = 1
        out[twenty & suited] = 2
        out[matched & twenty] = 3
        out[ladies] = 4
        out[ladies & dealer_bj] = 5
        return out

    def settle(self, view: RoundView, bet: Bet) -> Settlement | None:
        """Decide at the end of the initial deal; a queen of hearts pair waits for the
        dealer's second card (or the end of the round)."""
        row = [view.role(r) for r in self.card_roles]
        if NO_CARD in row[:2]:
            return None if not view.final else self._settle_row(row, bet)
        ladies = row[0] == row[1] == QUEEN_OF_HEARTS
        if ladies and NO_CARD in row[2:] and not view.final:
            return None
        return self._settle_row(row, bet)

    def _settle_row(self, row: list[int], bet: Bet) -> Settlement:
        import numpy as np  # start-up: `feltlab --help` imports every plugin; numpy loads on use

        outcome = int(self.classify(np.array([row], dtype=np.uint8))[0])
        return Settlement(
            self.paytable.outcomes[outcome], self.paytable.net(outcome, bet.amount), self.rule
        )
