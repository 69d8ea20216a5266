"""Perfect Pairs (section 15B): a built-in plugin."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

from feltlab.hookspecs import hookimpl
from feltlab.wagers import Decided, Limits, Paytable, Placed, WagerType, as_pays

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

OUTCOMES = ("lose", "mixed_pair", "coloured_pair", "perfect_pair")


class PerfectPairs(WagerType):
    """Wins when the player's first two cards are a pair (rule 15B.5), placed with the main
    wager before any card is dealt (15B.2, 15B.3), settled at the completion of the initial
    deal (15B.6), paid by Pay Scale One (default) or Two (15B.7; the house displays which,
    15B.8: ``PerfectPairs(paytable="two")``).

    Definitions (rule 1.0 as amended by 2.1-2.3 of the 2001 amendment): a *pair* is two cards
    of the same face value (J, Q and K are different face values: J-Q is no pair); a *perfect
    pair* is of the same suit; a *coloured pair* two red or two black cards of different
    suits; a *mixed pair* one red and one black card.

    The amount is "that displayed on the sign at the table" (15B.4): the limits are
    configuration, default $1 to $100 (an assumption).  Classifier columns ``("P1", "P2")``.
    """

    name = "perfect_pairs"
    title = "Perfect Pairs"
    rule = "15B"
    placed = Placed.BEFORE_DEAL
    decided = Decided.INITIAL_DEAL
    card_roles = ("P1", "P2")
    default_limits = Limits(100, 10_000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "one": Paytable("one", OUTCOMES, as_pays([-1, 5, 10, 30]), "rule 15B.7 Pay Scale One"),
        "two": Paytable("two", OUTCOMES, as_pays([-1, 6, 12, 25]), "rule 15B.7 Pay Scale Two"),
    }

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """0 no pair, 1 mixed, 2 coloured, 3 perfect; ``(n, 2)`` uint8 -> ``(n,)`` uint8."""
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        c = self._checked(cards)
        rank, suit = c >> 2, c & 3
        red = (suit == 1) | (suit == 2)
        pair = rank[:, 0] == rank[:, 1]
        same_suit = suit[:, 0] == suit[:, 1]
        same_colour = red[:, 0] == red[:, 1]
        out = np.where(same_suit, 3, np.where(same_colour, 2, 1))
        return np.where(pair, out, 0).astype(np.uint8)


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`PerfectPairs`."""
    register(PerfectPairs)
