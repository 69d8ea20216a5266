"""Basic strategy computed for any :class:`feltlab.Rules`.

Method: a *composition-approximated* expected-value calculation (P. Griffin, "The Theory of
Blackjack", ch. 2).  The player's two cards and the dealer's up card are removed from a
``rules.decks``-deck shoe; every later card is drawn with that fixed composition (no further
removal; ``removal=False`` gives the pure infinite-deck figures: 1/13 per value, tens 4/13).
For the dealer's up card the distribution of the dealer's final total (17-21, bust,
blackjack) is computed exactly by recursion with the Rules' soft-17 rule; under peek it is
conditioned on no dealer blackjack.  The player's expectations of standing, hitting (then
playing on optimally), doubling and splitting (resplits up to ``max_split_hands``, double
after split, one card on split aces, resplit of aces; exact for the fixed composition)
follow by recursion over (hard total, has-ace).  Under no-hole-card play each action is worth
``(1 - P(bj)) * E[action | no dealer bj] + P(bj) * L(action)``, with L what a dealer
blackjack takes under ``Rules.dealer_blackjack_takes`` (for a split: 2 units under "all",
else 1 unit, ignoring doubles after the split: an approximation).

For 4 to 8 decks this reproduces the published charts cell for cell (tests/sdk/test_strategy.py);
multi-card hands and late-shoe compositions are approximated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from feltlab.cards import card_value
from feltlab.hands import hand_total
from feltlab.rules import DealerBlackjackTakes, DoubleOn, Rules, Surrender

if TYPE_CHECKING:
    from feltlab.engine import Decision, DecisionView

VALUES = tuple(range(1, 11))
"""Card values 1 (ace) .. 10."""
BUST = 22
BJ = 23


def _total(hard: int, ace: bool) -> int:
    return hard + 10 if ace and hard + 10 <= 21 else hard


Probs = tuple[float, ...]
"""Probability of each card value 1..10 (index value - 1)."""


def card_probs(decks: int | None, removed: tuple[int, ...] = ()) -> Probs:
    """Draw probabilities of values 1..10: infinite deck (``decks=None``: 1/13, tens 4/13),
    or a ``decks``-deck shoe less the ``removed`` card values."""
    if decks is None:
        return tuple(4 / 13 if v == 10 else 1 / 13 for v in VALUES)
    counts = [(16 if v == 10 else 4) * decks for v in VALUES]
    for v in removed:
        counts[v - 1] -= 1
    n = sum(counts)
    return tuple(c / n for c in counts)


@lru_cache(maxsize=65536)
def _dealer_from(hard: int, ace: bool, h17: bool, probs: Probs) -> tuple[tuple[int, float], ...]:
    total = _total(hard, ace)
    soft = ace and hard + 10 <= 21
    if hard > 21:
        return ((BUST, 1.0),)
    if total > 17 or (total == 17 and not (soft and h17)):
        return ((total, 1.0),)
    out: dict[int, float] = {}
    for v in VALUES:
        for t, p in _dealer_from(hard + v, ace or v == 1, h17, probs):
            out[t] = out.get(t, 0.0) + probs[v - 1] * p
    return tuple(sorted(out.items()))


@lru_cache(maxsize=4096)
def dealer_distribution(
    up: int, h17: bool, peek: bool, probs: Probs | None = None
) -> dict[int, float]:
    """Final dealer totals for up-card value ``up`` (1 = ace .. 10): keys 17..21, 22 (bust)
    and 23 (blackjack), probabilities summing to 1.  ``peek``: conditioned on no blackjack.
    ``probs``: card-value probabilities (default: infinite deck)."""
    probs = probs or card_probs(None)
    out: dict[int, float] = {}
    for hole in VALUES:
        p = probs[hole - 1]
        if {up, hole} == {1, 10}:
            if peek:
                continue
            out[BJ] = out.get(BJ, 0.0) + p
            continue
        for t, q in _dealer_from(up + hole, up == 1 or hole == 1, h17, probs):
            out[t] = out.get(t, 0.0) + p * q
    norm = sum(out.values())
    return {k: v / norm for k, v in out.items()}


@dataclass(frozen=True)
class ActionValues:
    """Expected net result per unit of the original wager of each action (None: not
    allowed)."""

    stand: float
    hit: float
    double: float | None
    split: float | None
    surrender: float | None = None

    def best(self) -> Decision:
        """The action with the highest expectation (ties: stand, hit, double, split,
        surrender)."""
        from feltlab.engine import Decision  # start-up: the round engine only when named

        options: list[tuple[float, Decision]] = [
            (self.stand, Decision.STAND),
            (self.hit, Decision.HIT),
        ]
        if self.double is not None:
            options.append((self.double, Decision.DOUBLE))
        if self.split is not None:
            options.append((self.split, Decision.SPLIT))
        if self.surrender is not None:
            options.append((self.surrender, Decision.SURRENDER))
        best = options[0]
        for o in options[1:]:
            if o[0] > best[0] + 1e-12:
                best = o
        return best[1]


class _Solver:
    def __init__(self, rules: Rules, up: int, probs: Probs) -> None:
        self.rules = rules
        self.up = up
        self.p = probs
        full = dealer_distribution(up, rules.dealer_hits_soft_17, False, probs)
        self.p_bj = full.get(BJ, 0.0) if rules.no_hole_card else 0.0
        self.d = dealer_distribution(up, rules.dealer_hits_soft_17, True, probs)
        self._hit: dict[tuple[int, bool], float] = {}

    # --- conditional on no dealer blackjack -----------------------------------------
    def stand(self, total: int) -> float:
        if total > 21:
            return -1.0
        ev = 0.0
        for t, p in self.d.items():
            if t == BUST or t < total:
                ev += p
            elif t > total:
                ev -= p
        return ev

    def best_no_double(self, hard: int, ace: bool) -> float:
        if hard > 21:
            return -1.0
        return max(self.stand(_total(hard, ace)), self.hit(hard, ace))

    def hit(self, hard: int, ace: bool) -> float:
        key = (hard, ace)
        if key not in self._hit:
            self._hit[key] = sum(
                self.p[v - 1] * self.best_no_double(hard + v, ace or v == 1) for v in VALUES
            )
        return self._hit[key]

    def double(self, hard: int, ace: bool) -> float:
        return 2 * sum(self.p[v - 1] * self.stand(_total(hard + v, ace or v == 1)) for v in VALUES)

    def may_double(self, hard: int, ace: bool, from_split: bool) -> bool:
        r = self.rules
        if from_split and not r.double_after_split:
            return False
        soft = ace and hard + 10 <= 21
        total = _total(hard, ace)
        return {
            DoubleOn.ANY: True,
            DoubleOn.HARD: not soft,
            DoubleOn.NINE_TO_ELEVEN: not soft and 9 <= total <= 11,
            DoubleOn.TEN_OR_ELEVEN: not soft and 10 <= total <= 11,
        }[r.double_on]

    def split_hand(self, pair: int, c: int) -> float:
        """A split hand of ``pair`` that drew ``c`` (not resplitting)."""
        hard, ace = pair + c, pair == 1 or c == 1
        if pair == 1 and self.rules.split_aces_one_card:
            return self.stand(_total(hard, ace))
        ev = self.best_no_double(hard, ace)
        if self.may_double(hard, ace, True):
            ev = max(ev, self.double(hard, ace))
        return ev

    def split(self, pair: int, hands_now: int) -> float:
        r = self.rules
        can_resplit = pair != 1 or r.resplit_aces
        memo: dict[tuple[int, int], float] = {}

        def v(k: int, n: int) -> float:  # k hands waiting for a card, n hands on the box
            if k == 0:
                return 0.0
            if (k, n) in memo:
                return memo[(k, n)]
            ev = 0.0
            for c in VALUES:
                if c == pair and can_resplit and n < r.max_split_hands:
                    ev += self.p[c - 1] * v(k + 1, n + 1)
                else:
                    ev += self.p[c - 1] * (self.split_hand(pair, c) + v(k - 1, n))
            memo[(k, n)] = ev
            return ev

        return v(2, hands_now + 1)

    # --- unconditional ------------------------------------------------------------------
    def values(self, cards: tuple[int, ...], *, from_split: bool, hands_now: int) -> ActionValues:
        vals = [card_value(c) for c in cards]
        hard, ace = sum(vals), 1 in vals
        r = self.rules
        q = self.p_bj
        takes = r.dealer_blackjack_takes

        def uncond(cond: float, loss: float) -> float:
            return (1 - q) * cond + q * loss

        stand = uncond(self.stand(_total(hard, ace)), -1.0)
        hit = uncond(self.hit(hard, ace), -1.0)
        double = None
        two = len(cards) == 2
        if two and self.may_double(hard, ace, from_split):
            if takes is DealerBlackjackTakes.ALL:
                loss = -2.0
            elif takes is DealerBlackjackTakes.ORIGINAL:
                loss = -1.0
            else:
                bust = sum(self.p[v - 1] for v in VALUES if hard + v > 21)
                loss = -1.0 - bust
            double = uncond(self.double(hard, ace), loss)
        split = None
        if two and vals[0] == vals[1] and card_value(cards[0]) == vals[0]:
            same_rank = (cards[0] >> 2) == (cards[1] >> 2)
            if same_rank and hands_now < r.max_split_hands:
                loss = -2.0 if takes is DealerBlackjackTakes.ALL else -1.0
                split = uncond(self.split(vals[0], hands_now), loss)
        surrender = None
        if two and r.surrender is not Surrender.NONE and hands_now == 1 and not from_split:
            surrender = self.surrender_value()
        return ActionValues(stand, hit, double, split, surrender)

    def surrender_value(self) -> float:
        """Surrender on the same scale as the other actions (conditioned on no dealer
        blackjack under peek): late under peek -1/2; late under no hole card -1/2, or -1 to
        a dealer blackjack; early -1/2 outright (under peek, rescaled to the conditioned
        values: (1 - q) s - q = -1/2)."""
        r = self.rules
        if r.no_hole_card:
            q = self.p_bj
            return -0.5 if r.surrender is Surrender.EARLY else -0.5 * (1 - q) - q
        if r.surrender is Surrender.LATE:
            return -0.5
        full = dealer_distribution(self.up, r.dealer_hits_soft_17, False, self.p)
        q = full.get(BJ, 0.0)
        return (-0.5 + q) / (1 - q)


@lru_cache(maxsize=4096)
def _solver(rules: Rules, up: int, probs: Probs) -> _Solver:
    return _Solver(rules, up, probs)


def action_values(
    rules: Rules,
    cards: tuple[int, ...],
    dealer_up: int,
    *,
    from_split: bool = False,
    hands_on_box: int = 1,
    removal: bool = True,
) -> ActionValues:
    """Expectations (units of the original wager) of each action on a hand of ``cards``
    (codes) against the dealer's up card ``dealer_up`` (a code), by the infinite-deck method
    of the module docstring."""
    up = card_value(dealer_up)
    removed = (*sorted(card_value(c) for c in cards), up)
    probs = card_probs(rules.decks, removed) if removal else card_probs(None)
    return _solver(rules, up, probs).values(
        tuple(cards), from_split=from_split, hands_now=hands_on_box
    )


class BasicStrategy:
    """The player policy that takes the legal action of highest expectation under
    :func:`action_values`; never takes insurance (its expectation is negative off the top of
    a shoe: 2 * 4/13 - 9/13 < 0)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    def decide(self, view: DecisionView) -> Decision:
        """The best legal decision for ``view``."""
        from feltlab.engine import Decision  # start-up: the round engine only when named

        av = action_values(
            self.rules,
            view.cards,
            view.dealer_up,
            from_split=view.from_split,
            hands_on_box=view.hands_on_box,
        )
        options = [(av.stand, Decision.STAND)]
        if Decision.HIT in view.legal:
            options.append((av.hit, Decision.HIT))
        if av.double is not None and Decision.DOUBLE in view.legal:
            options.append((av.double, Decision.DOUBLE))
        if av.split is not None and Decision.SPLIT in view.legal:
            options.append((av.split, Decision.SPLIT))
        if av.surrender is not None and Decision.SURRENDER in view.legal:
            options.append((av.surrender, Decision.SURRENDER))
        best = options[0]
        for o in options[1:]:
            if o[0] > best[0] + 1e-12:
                best = o
        return best[1]

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        """0: basic strategy declines insurance."""
        return 0


def chart(rules: Rules, *, removal: bool = True) -> dict[str, dict[int, str]]:
    """The strategy chart of ``rules`` for two-card hands: rows ``"hard 5"`` .. ``"hard 20"``,
    ``"soft 13"`` .. ``"soft 20"``, ``"pair A"``, ``"pair 2"`` .. ``"pair 10"``; columns the
    dealer's up-card value 2..10, 11 (ace); letters H, S, D, P (D: double, whatever the
    fallback), R (surrender)."""
    from feltlab.engine import Decision  # start-up: the round engine only when named

    letters = {
        Decision.HIT: "H",
        Decision.STAND: "S",
        Decision.DOUBLE: "D",
        Decision.SPLIT: "P",
        Decision.SURRENDER: "R",
    }
    ups = {u: (u - 1) * 4 if u <= 10 else 0 for u in range(2, 12)}
    rows: dict[str, tuple[int, ...]] = {}
    for t in range(5, 21):  # a non-pair hard two-card hand of total t
        a = 2 if t - 2 != 2 else 3
        b = t - a
        if b > 10:
            a, b = t - 10, 10
        rows[f"hard {t}"] = (4 * (a - 1) + 1, 4 * (b - 1) + 2)
    for s in range(13, 21):
        rows[f"soft {s}"] = (0, 4 * (s - 12) + 1)
    for v in range(1, 11):
        name = "A" if v == 1 else str(v)
        rows[f"pair {name}"] = (4 * (v - 1), 4 * (v - 1) + 1)
    out: dict[str, dict[int, str]] = {}
    for row, cards in rows.items():
        out[row] = {}
        for u, up in ups.items():
            av = action_values(rules, cards, up, removal=removal)
            if not row.startswith("pair"):
                av = ActionValues(av.stand, av.hit, av.double, None, av.surrender)
            out[row][u] = letters[av.best()]
    assert all(hand_total(c)[0] <= 21 for c in rows.values())
    return out
