"""The values of a round of the engine (:mod:`feltlab.engine.table`): its phases, the decisions a
box's controller may take, a box and its hands, the view a policy decides on, and the result
of a round."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from feltlab.hands import hand_total, is_natural
from feltlab.rules import Rules
from feltlab.wagers import Bet, HandView, Settlement

if TYPE_CHECKING:
    from feltlab.record import RoundRecord

MAIN = "main"
"""Name of the main wager (rule 5.1)."""

JACKPOT_PANEL = "jackpot_panel"
"""Device name of the Madness 21 jackpot panel in ``device_fault`` events."""


class Phase(StrEnum):
    """Where the round is (see the module docstring)."""

    IDLE = "idle"
    BETTING = "betting"
    DEALING = "dealing"
    MISDEALT = "misdealt"
    INSURANCE = "insurance"
    PLAYING = "playing"
    DEALER = "dealer"
    SETTLING = "settling"


class Decision(StrEnum):
    """A player decision on the current hand."""

    HIT = "hit"
    STAND = "stand"
    DOUBLE = "double"
    SPLIT = "split"
    SURRENDER = "surrender"


@dataclass
class HandState:
    """One hand of a box as the engine plays it (mutable; :class:`feltlab.wagers.HandView`
    is what wagers and policies see)."""

    cards: list[int] = field(default_factory=list)
    doubled: bool = False
    from_split: bool = False
    split_aces: bool = False
    done: bool = False
    surrendered: bool = False

    @property
    def total(self) -> int:
        return hand_total(self.cards)[0]

    @property
    def busted(self) -> bool:
        return self.total > 21

    @property
    def blackjack(self) -> bool:
        return not self.from_split and is_natural(self.cards)

    def view(self) -> HandView:
        return HandView(
            tuple(self.cards),
            self.doubled,
            self.from_split,
            self.done,
            self.busted,
            self.surrendered,
        )


@dataclass
class BoxState:
    """One box as the engine plays it: its controller (rule 14's first main wager), bets,
    hands and the cards dealt to it (mutable)."""

    index: int
    controller: str | None = None
    bets: dict[tuple[str, str], Bet] = field(default_factory=dict)
    hands: list[HandState] = field(default_factory=list)
    cards: list[int] = field(default_factory=list)
    voided: bool = False

    @property
    def live(self) -> bool:
        return not self.voided and any(w == MAIN for _, w in self.bets)


@dataclass(frozen=True)
class DecisionView:
    """What a policy sees when the controller of ``box`` decides on hand ``hand``: its
    ``cards`` (codes), the dealer's ``dealer_up`` card, the number of hands on the box and the
    ``legal`` decisions."""

    rules: Rules
    box: int
    hand: int
    cards: tuple[int, ...]
    dealer_up: int
    hands_on_box: int
    from_split: bool
    legal: frozenset[Decision]


@dataclass(frozen=True)
class RoundResult:
    """A finished round: its number, every decided wager, the dealer's cards, and whether the
    round was void (rule 16.5).  ``settlements`` are ``(bet, settlement)`` pairs in the order
    they were decided.  ``record``: the :class:`feltlab.record.RoundRecord` (every live box's
    final hands and the dealer's final hand); None for a void round."""

    round: int
    settlements: tuple[tuple[Bet, Settlement], ...]
    dealer_cards: tuple[int, ...]
    void: bool = False
    record: RoundRecord | None = None

    def net(self, player: str | None = None, wager: str | None = None) -> int:
        """Sum of net cents, optionally for one player and/or one wager type."""
        return sum(
            s.net
            for b, s in self.settlements
            if (player is None or b.player == player) and (wager is None or b.wager == wager)
        )

    def find(self, box: int, player: str, wager: str) -> Settlement:
        """The settlement of one bet; raises KeyError naming it if absent."""
        for b, s in self.settlements:
            if (b.box, b.player, b.wager) == (box, player, wager):
                return s
        raise KeyError(f"no settlement for box {box}, player {player!r}, wager {wager!r}")
