"""Madness 21 (section 15A): a built-in plugin."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

from feltlab.hookspecs import hookimpl
from feltlab.wagers import Decided, Limits, Paytable, Placed, WagerType

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Madness21(WagerType):
    """Wins when the player's first two cards are a blackjack, also when the dealer has one
    too (rule 15A.8, where the main wager stands off).  The prize is what the jackpot panel
    displays after the button is pressed by the box's controller, a nominee with a wager on
    the box and a valid Madness 21 wager, or a casino employee (15A.9); every winning wager
    receives it individually (15A.7).  On an electronic failure the option is withdrawn and
    wagers already won are settled with $25 (16.12).  The engine does the pressing
    (:meth:`feltlab.engine.Table.settle`); the panel is a :class:`feltlab.jackpot.JackpotPanel`.

    Rules 15A.1-15A.6 are not in the rule files; assumed here: the wager is placed with the
    main wager before the deal, limits $1 to $25 (configuration), and the prize is paid in
    addition to the returned stake.  Classifier columns ``("P1", "P2")``; the winning outcome
    pays ``None`` in the paytable (its value is the panel's prize, in cents).
    """

    name = "madness21"
    title = "Madness 21"
    rule = "15A"
    placed = Placed.BEFORE_DEAL
    decided = Decided.INITIAL_DEAL
    card_roles = ("P1", "P2")
    decided_by_panel = True
    default_limits = Limits(100, 2_500)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "panel": Paytable(
            "panel", ("lose", "blackjack"), (Fraction(-1), None), "rules 15A.7, 16.12"
        )
    }

    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """1 (blackjack) where the two cards are an ace and a ten-value card, else 0;
        ``(n, 2)`` uint8 -> ``(n,)`` uint8."""
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        c = self._checked(cards)
        r = c >> 2
        ace = r == 0
        ten = (r >= 9) & (r <= 12)
        bj = (ace[:, 0] & ten[:, 1]) | (ten[:, 0] & ace[:, 1])
        out: npt.NDArray[np.uint8] = bj.astype(np.uint8)
        return out


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`Madness21`."""
    register(Madness21)
