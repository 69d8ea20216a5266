"""The main wager (rule 5.1, paid per rule 5.4): a built-in plugin."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import ClassVar

from feltlab.hookspecs import hookimpl
from feltlab.settlement import settle_box_hands
from feltlab.wagers import Bet, Decided, Limits, Paytable, RoundView, Settlement, WagerType


class Main(WagerType):
    """The wager every player makes against the dealer before the first card (rule 5.1).

    Settled at the end of the round, hand by hand, exactly as rule 5.1(a)-(g) says, paid 1 to
    1 and blackjack at ``Rules.blackjack_pays`` (3 to 2, rule 5.4); a two-card 21 on a split
    hand is not a blackjack.  Limits are the table's ``Rules.min_wager``/``max_wager``.  No
    card-only classifier: the outcome depends on play (simulate it with the round engine).
    """

    name = "main"
    title = "Main wager"
    rule = "5.1"
    decided = Decided.ROUND_END
    requires_main = False
    default_limits = Limits(1000, 500_000)
    paytables: ClassVar[Mapping[str, Paytable]] = {
        "5.4": Paytable(
            "5.4",
            ("lose", "stand_off", "win", "blackjack"),
            (Fraction(-1), Fraction(0), Fraction(1), Fraction(3, 2)),
            "rule 5.4 (blackjack odds from Rules.blackjack_pays at the table)",
        )
    }

    def settle(self, view: RoundView, bet: Bet) -> Settlement | None:
        """Per-hand settlement (rule 5.1, 5.4) once the round is final; None before."""
        if not view.final:
            return None
        hands = [(h.cards, h.doubled, h.from_split) for h in view.hands]
        surrendered = any(h.surrendered for h in view.hands)
        detail = settle_box_hands(
            view.rules, bet.amount, hands, view.dealer_cards, surrendered=surrendered
        )
        return Settlement(
            ",".join(d.outcome for d in detail),
            sum(d.net for d in detail),
            "; ".join(d.rule for d in detail),
            tuple(detail),
        )


@hookimpl
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Register :class:`Main`."""
    register(Main)
