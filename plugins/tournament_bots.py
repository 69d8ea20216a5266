"""The built-in bots' betting strategies of Tournament Blackjack (Division XI), registered by
the plugin :mod:`feltlab.plugins.tournament` when a tournament asks for its strategies.  Every
strategy here wagers only when it holds at least the minimum and only amounts the sign allows
(rules 4.5-4.7): the Division XI irregularities (undersize, excess, late wagers) are exercised
by the tests with strategies of their own."""

from __future__ import annotations

from typing import Any

from feltlab.tournament import BettingStrategy, BettingView, LengthKind


def legal_amount(view: BettingView, amount: int) -> int | None:
    """``amount`` brought within the sign (rules 4.5, 4.6): rounded down to the increment,
    at least the minimum, at most the maximum and the chips held; None when the player holds
    less than the minimum (no valid wager is possible)."""
    lim = view.limits
    if view.chips < lim.minimum:
        return None
    top = min(lim.maximum, view.chips)
    top -= top % lim.increment
    amount = max(lim.minimum, min(amount, top))
    return amount - amount % lim.increment if amount > lim.minimum else lim.minimum


class Flat(BettingStrategy):
    """Wagers 5 % of the chips held at the commencement, every round."""

    name = "flat"
    title = "5 % of the starting chips every round"

    def wager(self, view: BettingView) -> int | None:
        return legal_amount(view, view.start_chips // 20)


class Proportional(BettingStrategy):
    """Wagers 10 % of the chips held now."""

    name = "proportional"
    title = "10 % of the chips held"

    def wager(self, view: BettingView) -> int | None:
        return legal_amount(view, view.chips // 10)


class Martingale(BettingStrategy):
    """Doubles the wager after a loss, back to the minimum after a win or stand-off."""

    name = "martingale"
    title = "double after a loss, minimum after a win"

    def __init__(self, rng: Any) -> None:
        super().__init__(rng)
        self._last = 0

    def wager(self, view: BettingView) -> int | None:
        lim = view.limits
        if view.last_net is not None and view.last_net < 0 and self._last:
            want = self._last * 2
        else:
            want = lim.minimum
        amount = legal_amount(view, want)
        self._last = amount or 0
        return amount


class Chaser(BettingStrategy):
    """Plays the minimum while leading; when behind in the last third of a session counted in
    rounds (or always, in sessions counted otherwise) wagers enough to catch the leader."""

    name = "chaser"
    title = "minimum when leading, chase the leader late"

    def wager(self, view: BettingView) -> int | None:
        lim = view.limits
        leader = max(view.table_chips.values())
        late = view.length.kind is not LengthKind.ROUNDS or 3 * view.round > 2 * view.length.count
        if view.chips >= leader or not late:
            return legal_amount(view, lim.minimum)
        return legal_amount(view, leader - view.chips + lim.increment)


class RandomBettor(BettingStrategy):
    """A uniformly random legal wager each round (from its own seeded generator)."""

    name = "random"
    title = "a random legal wager"

    def wager(self, view: BettingView) -> int | None:
        lim = view.limits
        if view.chips < lim.minimum:
            return None
        top = min(lim.maximum, view.chips)
        steps = (top - lim.minimum) // lim.increment + 1
        return lim.minimum + self.draw(steps) * lim.increment


BUILTIN_STRATEGIES: tuple[type[BettingStrategy], ...] = (
    Flat,
    Proportional,
    Martingale,
    Chaser,
    RandomBettor,
)
