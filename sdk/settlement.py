"""Settlement of the main wager: rule 5.1 (a)-(g) and rule 5.4, and what a dealer blackjack
takes under no-hole-card play.  Pure functions over card codes; money in integer cents."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from feltlab.errors import SettlementError
from feltlab.hands import hand_total, is_natural
from feltlab.rules import DealerBlackjackTakes, Rules, Surrender

WIN = "win"
BLACKJACK = "blackjack"
STAND_OFF = "stand_off"
LOSE = "lose"


@dataclass(frozen=True)
class HandSettlement:
    """One player hand's result of the main wager (rule 5.1, paid per rule 5.4).

    ``hand``: the hand's index on its box (0 the first; a split adds hands in play order);
    ``outcome``: ``"blackjack"``, ``"win"``, ``"stand_off"`` or ``"lose"``; ``rule``: the
    rule applied (``"5.1(b)"``, a surrender or a no-hole-card limit in words); ``stake``:
    cents wagered on the hand (doubled included); ``net``: cents won, negative when lost.

    Deprecated: reading it as a mapping (``d["net"]``), the dict shape of 0.1, still works
    with a :class:`DeprecationWarning` in 0.2 and goes in the release after: read the
    attribute.
    """

    hand: int
    outcome: str
    rule: str
    stake: int
    net: int

    def __post_init__(self) -> None:
        for name in ("hand", "stake", "net"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SettlementError(
                    f"a HandSettlement's {name} is {v!r}: give a whole number of "
                    + ("cents" if name != "hand" else "(the hand's index)")
                )
        if self.hand < 0 or self.stake < 0:
            raise SettlementError(
                f"a HandSettlement's hand ({self.hand}) and stake ({self.stake}) cannot be "
                "negative: the hand is an index, the stake the cents wagered"
            )
        for name in ("outcome", "rule"):
            if not isinstance(getattr(self, name), str):
                raise SettlementError(
                    f"a HandSettlement's {name} is {getattr(self, name)!r}: give a string"
                )

    def as_dict(self) -> dict[str, Any]:
        """The JSON form, as the event log writes it: ``{"hand", "outcome", "rule",
        "stake", "net"}`` (ints are cents)."""
        return asdict(self)

    def __getitem__(self, key: str) -> Any:
        """Deprecated: the mapping read of the dict shape of 0.1 (``d["net"]``); raises
        ``KeyError`` for a name not a field."""
        if key not in HAND_SETTLEMENT_KEYS:
            raise KeyError(key)
        warnings.warn(
            f'HandSettlement["{key}"] is deprecated: read .{key} (settlement detail is a '
            "HandSettlement record since 0.2; the dict read goes in the release after)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, key)

    @classmethod
    def of(cls, item: HandSettlement | Mapping[str, Any]) -> HandSettlement:
        """``item`` as a record: a :class:`HandSettlement` as is, or a dict of the shape
        of 0.1 (``hand``, ``outcome``, ``rule``, ``stake``, ``net``; other keys, which 0.1
        allowed, are left out with a warning) converted, its values as they are (cents
        must be whole: never rounded).

        Raises :class:`feltlab.errors.SettlementError` (a ``TypeError``) for anything else or
        a missing or ill-typed field, naming the fix."""
        if isinstance(item, HandSettlement):
            return item
        if isinstance(item, Mapping):
            missing = HAND_SETTLEMENT_KEYS - set(item)
            if missing:
                raise SettlementError(
                    f"a Settlement's detail hand {dict(item)!r} lacks {', '.join(sorted(missing))}:"
                    " give feltlab.settlement.HandSettlement records (hand, outcome, rule, stake,"
                    " net)"
                )
            extra = sorted(str(k) for k in set(item) - HAND_SETTLEMENT_KEYS)
            if extra:
                warnings.warn(
                    f"a Settlement's detail hand keys {', '.join(extra)} are left out: a "
                    "HandSettlement holds hand, outcome, rule, stake and net",
                    DeprecationWarning,
                    stacklevel=4,
                )
            return cls(item["hand"], item["outcome"], item["rule"], item["stake"], item["net"])
        raise SettlementError(
            f"a Settlement's detail holds {type(item).__name__} {item!r}: give "
            "feltlab.settlement.HandSettlement records (hand, outcome, rule, stake, net)"
        )


HAND_SETTLEMENT_KEYS = frozenset(("hand", "outcome", "rule", "stake", "net"))


def main_outcome(
    player: Sequence[int], dealer: Sequence[int], *, from_split: bool = False
) -> tuple[str, str]:
    """``(outcome, rule)`` of one player hand against the dealer's completed hand.

    ``outcome`` is ``"blackjack"`` (a winning blackjack, paid at the blackjack odds of rule
    5.4), ``"win"``, ``"stand_off"`` or ``"lose"``; ``rule`` the subparagraph of rule 5.1
    applied.  A two-card 21 on a split hand (``from_split``) is not a blackjack.
    """
    p_total, _ = hand_total(player)
    d_total, _ = hand_total(dealer)
    p_bj = is_natural(player) and not from_split
    d_bj = is_natural(dealer)
    if p_total > 21:
        return LOSE, "5.1(f)"
    if p_bj and d_bj:
        return STAND_OFF, "5.1(e)"
    if p_bj:
        if d_total == 21:
            return BLACKJACK, "5.1(c)"
        return BLACKJACK, "5.1(a)" if d_total > 21 else "5.1(b)"
    if d_bj:
        return LOSE, "5.1(d)" if p_total == 21 else "5.1(g)"
    if d_total > 21:
        return WIN, "5.1(a)"
    if p_total > d_total:
        return WIN, "5.1(b)"
    if p_total == d_total:
        return STAND_OFF, "5.1(e)"
    return LOSE, "5.1(g)"


def hand_net(outcome: str, stake: int, blackjack_pays: Fraction) -> int:
    """Net cents of ``stake`` cents on ``outcome`` (rule 5.4: 1 to 1, blackjack at
    ``blackjack_pays``, rounded down to the cent)."""
    if outcome == BLACKJACK:
        return int((stake * blackjack_pays).__floor__())
    if outcome == WIN:
        return stake
    if outcome == LOSE:
        return -stake
    return 0


def settle_box_hands(
    rules: Rules,
    base_stake: int,
    hands: Sequence[tuple[Sequence[int], bool, bool]],
    dealer: Sequence[int],
    surrendered: bool = False,
) -> list[HandSettlement]:
    """Per-hand results of one player's main wager of ``base_stake`` cents on a box whose
    ``hands`` are ``(cards, doubled, from_split)``: a :class:`HandSettlement` a hand, in the
    order of ``hands`` (cents).

    Under no-hole-card play a dealer blackjack takes what ``rules.dealer_blackjack_takes``
    says: the original wager only, once per box (double and split wagers returned, busted or
    not); the original wager once plus every hand already busted (each busted hand's whole
    stake, whichever hand it is); or every wager (rule 5.1(d)/(g) alone).  Under
    ``original`` a busted hand's result depends on the dealer's blackjack showing, which it
    does only when some hand on the table is still live: that is the option as reported.

    ``surrendered``: the box's one hand was surrendered (``Rules.surrender``): half the
    wager is lost (the house keeps the odd cent), or all of it under late surrender with no
    hole card when the dealer has a blackjack.
    """
    out: list[HandSettlement] = []
    if surrendered and hands:
        cards = hands[0][0]
        lost_all = rules.surrender is Surrender.LATE and rules.no_hole_card and is_natural(dealer)
        net = -base_stake if lost_all else -(base_stake - base_stake // 2)
        rule = "surrender" + (
            ": a dealer blackjack takes a late surrender whole"
            if lost_all
            else ", half the wager returned"
        )
        return [HandSettlement(0, LOSE, rule, base_stake, net)]
    limited = (
        rules.no_hole_card
        and is_natural(dealer)
        and rules.dealer_blackjack_takes is not DealerBlackjackTakes.ALL
    )
    takes_busted = rules.dealer_blackjack_takes is DealerBlackjackTakes.ORIGINAL_AND_BUSTED
    original_taken = False
    for i, (cards, doubled, from_split) in enumerate(hands):
        stake = base_stake * (2 if doubled else 1)
        outcome, rule = main_outcome(cards, dealer, from_split=from_split)
        net = hand_net(outcome, stake, rules.blackjack_pays)
        if limited and outcome == LOSE:
            if takes_busted and hand_total(cards)[0] > 21:
                rule += ", lost when it busted (dealer blackjack takes the original wager and "
                rule += "wagers already lost)"
            elif not original_taken:  # the original wager, taken once from the box's hands
                original_taken = True
                if net != -base_stake:  # a doubled hand: the double is returned
                    net = -base_stake
                    rule += ", dealer blackjack takes the original wager only"
            else:
                net = 0
                rule += ", wager returned: dealer blackjack takes the original wager only"
        out.append(HandSettlement(i, outcome, rule, stake, net))
    return out
