"""Betting strategies of Tournament Blackjack bots (Division XI rules 4.1-4.11): what a bot
sees when it wagers, what it answers, and the registry plugins fill through the
``feltlab_register_tournament_strategies`` hook (one :class:`feltlab.registry.Registry`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from feltlab import native
from feltlab.engine import Decision, DecisionView
from feltlab.errors import (
    TournamentError,
)
from feltlab.registry import Registry
from feltlab.tournament.definition import SessionLength, WagerLimits


# ===================================================================== betting strategies
@dataclass(frozen=True)
class WagerIntent:
    """What a betting strategy wants to wager: ``chips`` (tournament chips, rule 4.1) and the
    ``seconds`` it took to place them (rule 4.11; None: the definition's default)."""

    chips: int
    seconds: float | None = None


@dataclass(frozen=True)
class BettingView:
    """What a player sees when the betting marker's turn reaches them (rules 5.8-5.10): own
    ``player``, ``box`` and ``chips``; every player's chips at the table (kept in clear view,
    rule 5.10); the wagers placed before theirs this round, in order; the table ``limits``;
    whether their one undersize wager (4.8(a)) is spent; the session's round number (1-based),
    rounds played, the ``length`` of the session, whether it is a ``playoff``; ``first`` when
    they hold the betting marker; ``last_net`` their result of the previous round."""

    player: str
    box: int
    chips: int
    table_chips: Mapping[str, int]
    placed: tuple[tuple[str, int], ...]
    limits: WagerLimits
    undersize_used: bool
    round: int
    length: SessionLength
    playoff: bool
    first: bool
    last_net: int | None
    start_chips: int


class BettingStrategy(ABC):
    """A bot's betting strategy, registered through the
    ``feltlab_register_tournament_strategies`` hook.  Subclasses set ``name`` and implement
    :meth:`wager`; they may override :meth:`decide`.  ``rng`` is the bot's own seeded generator
    (a :class:`feltlab.native.BitGenerator`): a strategy draws randomness only from it, so the
    same seed gives the same tournament."""

    name: ClassVar[str]
    """Unique name, e.g. ``"flat"``."""
    title: ClassVar[str] = ""
    """One line saying what it does."""

    def __init__(self, rng: native.BitGenerator) -> None:
        self.rng = rng

    @abstractmethod
    def wager(self, view: BettingView) -> WagerIntent | int | None:
        """The wager for this round in chips (an int or a :class:`WagerIntent`), or None to
        make no wager (rule 4.7: disqualification, when the player could wager)."""

    def decide(self, view: DecisionView, available: int) -> Decision | None:
        """A play decision on the current hand, or None for basic strategy.  ``available`` is
        the chips the player holds beyond those already on the box (rule 4.4)."""
        return None

    def draw(self, bound: int) -> int:
        """A uniform integer in ``0..bound-1`` from :attr:`rng`."""
        return int(self.rng.integers(bound)[0])


class StrategyRegistry(Registry[BettingStrategy]):
    """Betting strategies by name, filled through ``feltlab_register_tournament_strategies``
    (a :class:`feltlab.registry.Registry`; an unknown name raises :class:`TournamentError`)."""

    def __init__(self) -> None:
        super().__init__(BettingStrategy, noun="betting strategy", unknown=TournamentError)

    def create(self, name: str, rng: native.BitGenerator) -> BettingStrategy:
        """An instance of strategy ``name`` drawing from ``rng``; :class:`TournamentError`
        listing the names for an unknown one."""
        return self[name](rng)
