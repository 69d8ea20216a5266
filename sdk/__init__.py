"""feltlab: a plugin SDK and hardware-in-the-loop test rig for casino blackjack.

The SDK (this package) holds the card model, rules, round engine, hookspecs, plugin manager,
math, the tournament and the command line; the built-in wagers are plugins, reached through
:mod:`feltlab.plugin_manager`; ``feltlab.rig`` is the CAN rig and ``feltlab.native`` the C core
(docs/design.md).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from feltlab.engine import Decision, Phase, RoundResult, ScriptedPolicy, Table, play_round
    from feltlab.hookspecs import hookimpl
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager
    from feltlab.rules import (
        DealerBlackjackTakes,
        DoubleOn,
        HoleCard,
        Rules,
        ShufflerKind,
        Surrender,
    )
    from feltlab.wagers import Decided, Limits, Paytable, Placed, Settlement, WagerType

# The public names are imported on first use (PEP 562), so that a command which needs none of
# them (``feltlab certify ...``, the rig's) does not pay for the round engine at start.
_HOMES = {
    "feltlab.engine": ("Decision", "Phase", "RoundResult", "ScriptedPolicy", "Table", "play_round"),
    "feltlab.hookspecs": ("hookimpl",),
    "feltlab.plugin_manager": ("collect_wagers", "get_plugin_manager"),
    "feltlab.rules": (
        "DealerBlackjackTakes",
        "DoubleOn",
        "HoleCard",
        "Rules",
        "ShufflerKind",
        "Surrender",
    ),
    "feltlab.wagers": ("Decided", "Limits", "Paytable", "Placed", "Settlement", "WagerType"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # start-up: ~30 ms, on use

    try:
        return version("feltlab")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed metadata, read on first use (about 30 ms)
        globals()[name] = value = _version()
        return value
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'feltlab' has no attribute {name!r}")

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


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
