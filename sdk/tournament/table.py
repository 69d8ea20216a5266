"""A tournament table's set-up: its rules (the definition's preset, tournament chips mapped
onto the engine's cents), its main wager, and its shoe (Division XI rule 5.7): shuffles at the
start of a session, at the completion of the round *following* the round in which the cutting
card appears, and after the table was vacant; each shoe draws from its own ChaCha20 stream of
the seed tree."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from feltlab import native
from feltlab.errors import (
    TournamentError,
)
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules, ShufflerKind
from feltlab.seeds import stream_key
from feltlab.shoe import CardSource, Shoe
from feltlab.tournament.definition import TournamentDefinition
from feltlab.wagers import Limits, WagerType


# ===================================================================== the shoe (5.7)
class ShuffleReason(StrEnum):
    """Why the cards are shuffled (rule 5.7): ``SESSION_START`` (a), ``CUTTING_CARD`` (b),
    ``VACANT`` (c)."""

    SESSION_START = "5.7(a)"
    CUTTING_CARD = "5.7(b)"
    VACANT = "5.7(c)"


class TournamentShoe:
    """A :class:`feltlab.shoe.CardSource` adapter that shuffles when Division XI says (5.7):
    the engine's own sources ask for a shuffle at the end of the round in which the cutting card
    came out (Division II); here the shoe stays in play for one more round and
    :attr:`shoe_complete` is set at the completion of the round following it (5.7(b), which is
    also where a session determined by shoes counts a shoe, definition of "Session" (c)).  The
    session asks for each shuffle with :meth:`request_shuffle`; :attr:`shoe_number` is the shoe
    number indicator (rule 2.4(b))."""

    def __init__(self, inner: CardSource) -> None:
        self.inner = inner
        self.shoe_number = 0
        self.shoe_complete = False
        self.cut_round_done = False
        self._pending = True
        self.reason = ShuffleReason.SESSION_START

    @property
    def needs_shuffle(self) -> bool:
        return self._pending

    @property
    def cut_card_reached(self) -> bool:
        # announced in the round in which it appears only (the engine re-announces otherwise)
        return self.inner.cut_card_reached and not self.cut_round_done

    def request_shuffle(self, reason: ShuffleReason) -> None:
        """Shuffle before the next round, for ``reason``."""
        self._pending = True
        self.reason = reason

    def shuffle(self) -> dict[str, Any]:
        info = self.inner.shuffle()
        self._pending = False
        self.shoe_number += 1
        self.shoe_complete = False
        self.cut_round_done = False
        info.update(shoe_number=self.shoe_number, rule=self.reason.value)
        return info

    def draw(self) -> int:
        return self.inner.draw()

    def end_round(self, cards: Sequence[int]) -> None:
        if self.cut_round_done:
            self.shoe_complete = True
        elif self.inner.cut_card_reached:
            self.cut_round_done = True
        self.inner.end_round(cards)

    def report_missing_cutting_card(self) -> None:
        self.inner.report_missing_cutting_card()


def tournament_rules(definition: TournamentDefinition) -> Rules:
    """The engine's rules for a tournament table: the definition's Division II rules (2.1)
    with the main wager limits in chip units (minimum 1, so that an undersize wager valid under
    4.8(a) can be placed; the Division XI checks are done by :class:`SessionTable`).  A
    continuous shuffler is refused: rule 5.7 needs a cutting card."""
    r = definition.rules
    if r.shuffler is ShufflerKind.CONTINUOUS:
        raise TournamentError(
            "rule 5.7(b) shuffles at the cutting card: use a manual or automatic shuffler"
        )
    return r.replace(min_wager=1, max_wager=definition.limits.maximum, wager_unit=1)


def main_wager(limits: Limits) -> WagerType:
    """The main wager (rule 5.1) from the built-in plugins, with ``limits`` in chip units (the
    SDK reaches plugins only through the plugin manager)."""
    global _MAIN_TYPE
    if _MAIN_TYPE is None:
        _MAIN_TYPE = collect_wagers(get_plugin_manager(entry_points=False))["main"]
    return _MAIN_TYPE(limits=limits)


_MAIN_TYPE: type[WagerType] | None = None


def make_shoe(definition: TournamentDefinition, seed: int, *labels: object) -> Shoe:
    """The shoe of one session at one table: the C core's Fisher-Yates over a ChaCha20 stream
    derived from ``seed`` and ``labels``."""
    return Shoe(tournament_rules(definition), native.ChaCha20(stream_key(seed, *labels)))
