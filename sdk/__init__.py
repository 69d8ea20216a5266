"""feltlab: a plugin SDK and hardware-in-the-loop test rig for casino blackjack.

The SDK (this package) holds the card model, rules, round engine, hookspecs, plugin manager,
math, the tournament and the command line; the built-in wagers are plugins, reached through
:mod:`feltlab.plugin_manager`; ``feltlab.rig`` is the CAN rig and ``feltlab.native`` the C core
(docs/design.md).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("feltlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

from feltlab.engine import Decision, Phase, RoundResult, ScriptedPolicy, Table, play_round
from feltlab.plugin_manager import collect_wagers, get_plugin_manager, hookimpl
from feltlab.rules import DealerBlackjackTakes, DoubleOn, HoleCard, Rules, ShufflerKind, Surrender
from feltlab.wagers import Decided, Limits, Paytable, Placed, Settlement, WagerType

__all__ = [
    "DealerBlackjackTakes",
    "Decided",
    "Decision",
    "DoubleOn",
    "HoleCard",
    "Limits",
    "Paytable",
    "Phase",
    "Placed",
    "RoundResult",
    "Rules",
    "ScriptedPolicy",
    "Settlement",
    "ShufflerKind",
    "Surrender",
    "Table",
    "WagerType",
    "__version__",
    "collect_wagers",
    "get_plugin_manager",
    "hookimpl",
    "play_round",
]
