"""feltlab's hook specifications: the whole plugin contract in one file.

A plugin is any module or object with functions named like these hooks and marked with
``feltlab.hookimpl``; a third-party package exposes it through the ``feltlab`` entry-point group.

Two kinds of hook:

- *register* hooks hand the plugin a callback (``register``, ``cli``) to add what it
  provides: wagers, tournament betting strategies, commands;
- *observer* hooks are called by a :class:`feltlab.engine.Table` built with
  ``hook=pm.hook`` as the table's events happen.  Observers must not change the table; their
  return values are ignored.  Each implementation is called on its own
  (:func:`feltlab.plugin_manager.call_isolated`): an exception in one is logged with the
  plugin's name and kept in ``table.plugin_failures``, and stops neither the other observers
  nor the round (a broken audit display must not corrupt a game).

Failures of register hooks are not isolated: :func:`feltlab.plugin_manager.collect` raises
:class:`feltlab.errors.PluginError` naming the plugin (a wager that cannot register must not
silently vanish from a table), except ``feltlab_register_commands``, whose failure the command
line reports as a warning while the other commands keep working.

Every implementation of every hook is called (none is ``firstresult``): register hooks in
registration order, built-in plugins first; observers in pluggy's order, the plugin
registered last first.  An implementation may accept any subset of a hook's parameters.
feltlab calls each implementation's function itself, so pluggy wrappers
(``@hookimpl(wrapper=True)``, ``hookwrapper=True``) cannot run: registering one raises
:class:`feltlab.errors.PluginError` naming the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # types for the annotations only: no import cycle at run time
    import click

    from feltlab.engine import RoundResult, Table
    from feltlab.events import Event
    from feltlab.tournament import BettingStrategy
    from feltlab.wagers import WagerType

PROJECT = "feltlab"
"""The pluggy project name, which is also the entry-point group of wager plugins
(``[project.entry-points.feltlab]``), as in pytest, tox and llm."""

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks a hook specification (this module's functions)."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a plugin's hook implementation: ``@hookimpl`` on a function named as a hook of this
module (``from feltlab import hookimpl``)."""


# -------------------------------------------------------------------------------------------
# Register hooks: called once per plugin manager, built-in plugins first (in BUILTIN_PLUGINS
# order), then entry-point plugins in load order; a failure raises PluginError naming the
# plugin (the command line's hook excepted).
# -------------------------------------------------------------------------------------------


@hookspec
def feltlab_register_wagers(register: Callable[[type[WagerType]], None]) -> None:
    """Add wager types.

    :param register: call ``register(WagerTypeSubclass)`` once per wager type (a subclass of
        :class:`feltlab.wagers.WagerType`).  A name already registered by another plugin
        raises ``feltlab.errors.PluginError`` naming both modules.

    Called by :func:`feltlab.plugin_manager.collect_wagers`; built-in plugins register first
    (main, insurance, perfect_pairs, super_sevens, madness21), then entry-point plugins.  An
    exception raised while registering becomes a ``PluginError`` naming the plugin.  Return
    value ignored.
    """


@hookspec
def feltlab_register_commands(cli: click.Group) -> None:
    """Add command-line commands to ``feltlab``.

    :param cli: the root ``click.Group`` (a :class:`feltlab.cli.LazyGroup`); call
        ``cli.add_command(command)`` for each command, or ``cli.add_lazy_command(name,
        "package.module:attribute", summary)`` to import the command's module only when it
        runs (``summary``, the first sentence of its help, is what ``feltlab --help`` lists).

    Every implementation is called, once, when a command that is not built in is asked for or
    the commands are listed (``feltlab --help``), never for a built-in command; return values
    are ignored.  The rig adds ``certify``, ``analyze``, ``device``, ``capture`` and ``view``
    lazily this way.  An implementation that raises is reported on stderr with the plugin's
    name and its commands are missing; the other commands still work.
    """


@hookspec
def feltlab_register_tournament_strategies(
    register: Callable[[type[BettingStrategy]], None],
) -> None:
    """Add betting strategies for Tournament Blackjack bots (Division XI).

    :param register: call ``register(BettingStrategySubclass)`` once per strategy (a subclass
        of :class:`feltlab.tournament.BettingStrategy` with a unique ``name``, built
        with the bot's own seeded generator and answering ``wager(view)`` with the chips to
        wager, rules 4.1-4.11).  A name already registered by another plugin raises
        ``feltlab.errors.PluginError`` naming both modules.

    Called by :func:`feltlab.tournament.collect_strategies` when a tournament builds its bots;
    built-in plugins register first (the built-in ``tournament`` plugin: flat, proportional,
    martingale, chaser, random), then entry-point plugins.  An exception raised while
    registering becomes a ``PluginError`` naming the plugin.  Return value ignored.
    """


@hookspec
def feltlab_register_panel_profiles(register: Callable[[str, Path], None]) -> None:
    """Add jackpot prize panel profiles by name: TOML files whose ``[device]`` table declares
    the panel's ``prize_table`` (docs/certification.md), from which ``feltlab math madness21``
    prices the Madness 21 jackpot (rule 15A.7).

    :param register: call ``register(name, path)`` once per profile.  A name another plugin
        registered with another path raises ``feltlab.errors.PluginError`` naming both.

    Called by :func:`feltlab.math.prizes.panel_profiles`; the rig registers its bundled
    simulated panel as ``jackpot``, the default profile.  An exception raised while
    registering becomes a ``PluginError`` naming the plugin.  Return value ignored.
    """


# -------------------------------------------------------------------------------------------
# Observer hooks: called by a Table built with ``hook=pm.hook`` as its events happen, every
# implementation on its own (the plugin registered last first); a failure is logged with the
# plugin's name, kept in ``table.plugin_failures`` and stops neither the other observers nor
# the round.  ``feltlab_table_event`` comes first for every event, then the event's own hook.
# -------------------------------------------------------------------------------------------


@hookspec
def feltlab_table_event(table: Table, event: Event) -> None:
    """Observe every event of a table, in order.

    :param table: the :class:`feltlab.engine.Table`.
    :param event: the event just appended to ``table.log`` (a :class:`feltlab.events.Event`:
        ``seq``, ``round``, ``kind``, ``data``; the kinds are ``feltlab.events.EVENT_KINDS``).

    Use it for audit logs and live displays; the specific hooks below are called after it for
    their events.
    """


@hookspec
def feltlab_round_started(table: Table, round_no: int) -> None:
    """A round opened for betting.

    :param table: the :class:`feltlab.engine.Table`.
    :param round_no: the round's number (1-based).
    """


@hookspec
def feltlab_card_dealt(table: Table, card: int, to: str, box: int | None) -> None:
    """A card was dealt face up to a hand.

    :param table: the :class:`feltlab.engine.Table`.
    :param card: the card code (0..51, ``rank * 4 + suit``).
    :param to: ``"box"`` or ``"dealer"``.
    :param box: the box index (0-based), or None for the dealer.
    """


@hookspec
def feltlab_cut_card_reached(table: Table, round_no: int) -> None:
    """The cutting card came out: the cards will be shuffled when this round completes
    (rule 5.7(b)).

    :param table: the :class:`feltlab.engine.Table`.
    :param round_no: the round in which it came out.
    """


@hookspec
def feltlab_shoe_shuffled(table: Table, reason: str) -> None:
    """The cards were shuffled.

    :param table: the :class:`feltlab.engine.Table`.
    :param reason: ``"new_shoe"``, ``"cutting_card"`` (rule 5.7(b)) or
        ``"missing_cutting_card"`` (rule 16.10).
    """


@hookspec
def feltlab_round_settled(table: Table, result: RoundResult) -> None:
    """A round ended: every wager is decided (or void, rule 16.5).

    :param table: the :class:`feltlab.engine.Table`.
    :param result: the :class:`feltlab.engine.RoundResult` (every ``(bet, settlement)``, the
        dealer's cards, whether the round was void under rule 16.5).
    """


@hookspec
def feltlab_device_fault(table: Table, device: str, message: str) -> None:
    """A table device failed.

    :param table: the :class:`feltlab.engine.Table`.
    :param device: the device name, e.g. ``"jackpot_panel"``: Madness 21 is then withdrawn
        until ``table.repair_device("jackpot_panel")`` and wagers already won this round are
        settled at $25 (rule 16.12).
    :param message: what failed.
    """
