"""Insurance, paid 2 to 1 when the dealer has a blackjack: a built-in plugin."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

from feltlab.errors import WagerError
from feltlab.hookspecs import hookimpl
from feltlab.wagers import Decided, Limits, Paytable, Placed, WagerType

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Insurance(WagerType):
    """Offered when the dealer's first card is an ace; up to half the player's main wager on
    the box; wins 2 to 1 when the dealer's second card makes a blackjack.

    The insurance rule itself is not in the rule files (rule 5.6 names insurance as an
    optional wager); 2 to 1 and the half-wager cap are the standard terms, assumed here.
    Classifier columns: ``("D1", "D2")``.
    """

    name = "insurance"
    title = "Insurance"
    rule = "5.6"
    placed = Placed.INSURANCE
    decided = Decided.DEALER_SECOND_CARD
    card_roles = ("D1", "D2")
    default_limits = Limits(1, 250_000, 1)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "2:1": Paytable("2:1", ("lose", "win"), (Fraction(-1), Fraction(2)), "standard terms")
    }

    def check_amount(self, amount: int, *, main_stake: int) -> None:
        """At most half of ``main_stake`` cents, within the limits."""
        self.limits.check(amount, self.title)
        if amount > main_stake // 2:
            raise WagerError(
                f"insurance of {amount} cents exceeds half the main wager ({main_stake // 2} "
                "cents); insure at most half"
            )

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """1 (win) where D1 is an ace and D2 a ten-value card, else 0; ``(n, 2)`` -> ``(n,)``."""
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        c = self._checked(cards)
        ranks = c >> 2
        win = (ranks[:, 0] == 0) & (ranks[:, 1] >= 9) & (ranks[:, 1] <= 12)
        out: npt.NDArray[np.uint8] = win.astype(np.uint8)
        return out


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`Insurance`."""
    register(Insurance)
