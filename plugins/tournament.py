"""Tournament Blackjack (Division XI), a built-in plugin: the ``feltlab tournament`` commands
(:mod:`feltlab.plugins.tournament_cli`) and the default betting strategies of the bots
(:mod:`feltlab.plugins.tournament_bots`).

The engine is in :mod:`feltlab.tournament` (definition, entry, prizes),
:mod:`feltlab.tournament.session` (a session at a table) and :mod:`feltlab.tournament.run`
(the whole tournament).  This module imports neither: every command's start looks for the
plugins' commands (``feltlab --help``, ``feltlab certify``), and the tournament engine (the
round engine under it) is 0.1-0.3 s of imports that only a tournament needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from feltlab.hookspecs import hookimpl

if TYPE_CHECKING:
    from feltlab.tournament import BettingStrategy

COMMAND_SUMMARY = (
    "Tournament Blackjack (Division XI): run a tournament of bots from a definition file."
)
"""The first sentence of ``feltlab tournament``'s help, which ``feltlab --help`` shows
without importing the command (tests/test_cli_startup.py checks summaries)."""


@hookimpl
def feltlab_register_tournament_strategies(
    register: Callable[[type[BettingStrategy]], None],
) -> None:
    """Register the default bot strategies."""
    # imported here: the strategies subclass the tournament engine's BettingStrategy, which
    # only a tournament needs (this plugin is loaded by every command that lists commands)
    from feltlab.plugins.tournament_bots import BUILTIN_STRATEGIES  # start-up

    for s in BUILTIN_STRATEGIES:
        register(s)


@hookimpl
def feltlab_register_commands(cli: Any) -> None:
    """Add ``feltlab tournament`` (its module imported when it runs, where the group can)."""
    target = "feltlab.plugins.tournament_cli:tournament"
    if hasattr(cli, "add_lazy_command"):
        cli.add_lazy_command("tournament", target, COMMAND_SUMMARY)
        return
    # imported here: a plain click group has no lazy commands
    from feltlab.plugins.tournament_cli import tournament  # start-up: a lazy group never imports it

    cli.add_command(tournament)
