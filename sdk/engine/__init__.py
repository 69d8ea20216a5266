"""The round engine: one :class:`Table`, a deterministic state machine over a card source,
whose events are the round's audit trail (:mod:`feltlab.engine.table`); the round's values
(:mod:`feltlab.engine.round`); the players' decision policies (:mod:`feltlab.engine.policy`);
and the replay of a round from its event log (:mod:`feltlab.engine.replay`).

The names below are the engine's public API, also reached as ``from feltlab import Table``.
"""

from feltlab.engine.policy import Policy, ScriptedPolicy, StandPolicy
from feltlab.engine.round import JACKPOT_PANEL, MAIN, Decision, DecisionView, Phase, RoundResult
from feltlab.engine.table import Table, play_round

__all__ = [
    "JACKPOT_PANEL",
    "MAIN",
    "Decision",
    "DecisionView",
    "Phase",
    "Policy",
    "RoundResult",
    "ScriptedPolicy",
    "StandPolicy",
    "Table",
    "play_round",
]
