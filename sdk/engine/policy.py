"""Policies: who decides for a box's controller.  :class:`Policy` is the protocol the round
engine asks (:func:`feltlab.engine.play_round`); :class:`ScriptedPolicy` decides from a script,
for hand-checked rounds and tests; :class:`StandPolicy` stands on every hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from feltlab.engine.round import Decision, DecisionView
from feltlab.errors import IllegalDecisionError


class Policy(Protocol):
    """Decides for a box's controller."""

    def decide(self, view: DecisionView) -> Decision:
        """The decision on the hand in ``view`` (one of ``view.legal``)."""
        ...

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        """Cents of insurance to place (0 declines; at most half the main wager)."""
        ...


class StandPolicy:
    """Stands on every hand and never insures: a round whose cards are fixed whatever the
    play (a device's self-test, a settlement check)."""

    def decide(self, view: DecisionView) -> Decision:
        return Decision.STAND

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        return 0


class ScriptedPolicy:
    """Decisions from a script: ``decisions`` maps ``(box, hand)`` to a list of decisions
    taken in order (a flat list applies to every hand in turn); ``insure`` maps
    ``(box, player)`` to insurance cents.  Raises :class:`IllegalDecisionError` when the
    script runs out."""

    def __init__(
        self,
        decisions: Mapping[tuple[int, int], Sequence[str]] | Sequence[str] = (),
        *,
        insure: Mapping[tuple[int, str], int] | None = None,
    ) -> None:
        if isinstance(decisions, Mapping):
            self._per_hand = {k: list(v) for k, v in decisions.items()}
            self._flat: list[str] | None = None
        else:
            self._per_hand = {}
            self._flat = list(decisions)
        self._insure = dict(insure or {})

    def decide(self, view: DecisionView) -> Decision:
        queue = self._flat if self._flat is not None else self._per_hand.get((view.box, view.hand))
        if not queue:
            raise IllegalDecisionError(
                f"the script has no decision left for box {view.box} hand {view.hand} "
                f"(cards {list(view.cards)}); add one"
            )
        word = queue.pop(0)
        try:
            return Decision(word)
        except ValueError:
            names = ", ".join(d.value for d in Decision)
            raise IllegalDecisionError(
                f"the script's decision {word!r} for box {view.box} hand {view.hand} is not "
                f"a decision: use one of {names}"
            ) from None

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        return self._insure.get((box, player), 0)
