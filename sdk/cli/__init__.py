"""The ``feltlab`` command line (click): the command group :func:`main`, one module per
command (:mod:`feltlab.cli.info`, :mod:`~feltlab.cli.shuffle`, :mod:`~feltlab.cli.plugins`,
:mod:`~feltlab.cli.play`, :mod:`~feltlab.cli.math`, :mod:`~feltlab.cli.simulate`,
:mod:`~feltlab.cli.protect`, :mod:`~feltlab.cli.new`, :mod:`~feltlab.cli.indices`,
:mod:`~feltlab.cli.bet_spread`, :mod:`~feltlab.cli.trial`, :mod:`~feltlab.cli.submit`), the
shared options (:mod:`feltlab.cli.options`,
:mod:`feltlab.cli.rule_options`) and the rendering of the math and simulation results on the
terminal (:mod:`feltlab.cli.render`).  Plugins add commands through the
``feltlab_register_commands`` hook.  Nothing else in the SDK imports this package.

Start-up is kept short (docs/design.md, "The command line's start-up"): :class:`LazyGroup`
imports a command's module only when that command runs, ``feltlab --help`` lists every
command from its one-line summary without importing it, the plugins are looked for only when
a command that is not built in is asked for or the commands are listed, and each module
imports numpy, rich and the math it needs where it needs them.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# Before numpy loads OpenBLAS: feltlab does no large linear algebra, and OpenBLAS's worker
# threads only spin after a small product (0.2 s of CPU in a certification campaign, taken
# from the campaign itself on a busy host).  A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

from feltlab.cli.options import Refused, setup_logging
from feltlab.cli.pipe import quiet_broken_pipe


@dataclass(frozen=True)
class LazyCommand:
    """A command known by name before its module is imported: ``target`` is
    ``"package.module:attribute"`` (the :class:`click.Command`), ``summary`` the first sentence
    of its help, which ``--help`` shows in the command list (tests/test_cli_startup.py checks
    that it reads as the command's own)."""

    target: str
    summary: str


BUILTIN_COMMANDS: Mapping[str, LazyCommand] = {
    "info": LazyCommand(
        "feltlab.cli.info:info",
        "Package version, the compiled core's compiler and flags, RNGs and plugins.",
    ),
    "shuffle": LazyCommand(
        "feltlab.cli.shuffle:shuffle",
        "Shuffle a batch of shoes in the C core: print a few and the throughput.",
    ),
    "plugins": LazyCommand(
        "feltlab.cli.plugins:plugins",
        "The loaded plugins, the hooks each implements, their versions and the wager types.",
    ),
    "play": LazyCommand(
        "feltlab.cli.play:play",
        "Play rounds by basic strategy with side bets on every box and print the round log.",
    ),
    "math": LazyCommand(
        "feltlab.cli.math:math_cmd",
        "Print the PAR sheet of WAGER: every outcome's combinations, probability, pays and "
        "return; the return, house edge, hit frequency and standard deviation, and how it was"
        ' computed ("exact", or "simulated: N rounds, +-").',
    ),
    "simulate": LazyCommand(
        "feltlab.cli.simulate:simulate",
        "Simulate rounds in the C core with basic strategy: the main wager's house edge with "
        "a 95% confidence interval, each side wager's return (tallied in C through each "
        "wager's lookup table; play-decided wagers from the round records), and rounds/s.",
    ),
    "protect": LazyCommand(
        "feltlab.cli.protect:protect_cmd",
        "Game protection: can a card counter beat WAGER (or, without WAGER or with --all, "
        "every installed wager)? Simulates rounds under the rules with their cutting card, "
        "keeps the count (--count) in the C simulator and tallies each wager's result by the "
        "count at the moment of the bet; prints each wager's expectation by count with 95% "
        "intervals, the trigger count from which it stays positive, the fraction of rounds at"
        " or above it, the counter's edge betting only there, the win per 100 rounds at the "
        "wager's maximum bet, and a verdict. docs/protection.md explains how to read it.",
    ),
    "indices": LazyCommand(
        "feltlab.cli.indices:indices_cmd",
        "Print the Hi-Lo indices of the Illustrious 18 under the rules: the true count (per "
        "deck remaining) at which each departure from basic strategy becomes the better play,"
        " from the combinatorial analyzer's expectations on the shoe expected at each true "
        "count (Griffin's method; docs/indices.md), beside Schlesinger's published indices (6"
        " decks, S17, DAS).",
    ),
    "bet-spread": LazyCommand(
        "feltlab.cli.bet_spread:bet_spread_cmd",
        "Print a Hi-Lo counter's edge over the main wager under the rules: basic strategy, "
        "bets raised with the floored true count on a 1-to-SPREAD ramp, simulated by the C "
        "round simulator at the rules' penetration (--penetration), counting in C: the edge "
        "per unit initial bet and the units won per 100 rounds, each with its 95 % interval, "
        "beside the flat bettor's edge (docs/indices.md).",
    ),
    "trial": LazyCommand(
        "feltlab.cli.trial:trial",
        "A field trial (or a floor's daily data) against the wager's exact PAR sheet: the "
        "cumulative and per-period hold with 95% bands, the periods outside them (COMAR "
        "36.05.03.25), the p-value that the trial agrees with the certified house edge, and "
        "what it could detect at 80% power.",
    ),
    "new": LazyCommand(
        "feltlab.cli.new:new",
        "Create a new plugin package.",
    ),
    "submit": LazyCommand(
        "feltlab.cli.submit:submit_cmd",
        "Write WAGER's math certificate, confirmed by simulation, as the documents a vendor files.",
    ),
}
"""The built-in commands, by name, in the order of the modules above."""


COMMAND_GC_THRESHOLD = (100_000, 20, 10)
"""The cyclic collector's thresholds while a ``feltlab`` command runs (:meth:`LazyGroup.main`):
its youngest generation is examined every 100,000 net allocations instead of Python's 700.  A
command's imports (numpy, scipy, python-can, cantools: some 57,000 long-lived objects) ran
about 155 young and 15 middle collections and a full one, 0.11-0.16 s of the demo's CPU
(docs/design.md, the demo's round 8); one young collection now.  Few of a command's objects
are in reference cycles, and a full collection still runs every 2 x 10**7 net allocations."""


@contextlib.contextmanager
def command_gc() -> Iterator[None]:
    """For the ``with`` block, :data:`COMMAND_GC_THRESHOLD`; Python's thresholds as they were
    after it (a test running commands in process keeps its own)."""
    before = gc.get_threshold()
    gc.set_threshold(*COMMAND_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


class LazyGroup(click.Group):
    """A :class:`click.Group` whose commands are imported on first use (click's documented
    pattern for lazily loaded subcommands: ``get_command`` imports the command's module,
    ``list_commands`` names it unimported), with ``feltlab --help`` listing each unimported
    command by its :attr:`LazyCommand.summary`.

    ``feltlab_register_commands`` (the plugins' commands) is called once, only when a command
    that is neither added nor lazily known is asked for or the commands are listed: a built-in
    command such as ``feltlab math`` starts without looking for plugins.  A plugin calls
    ``cli.add_command(command)``, or :meth:`add_lazy_command` to keep its command's module
    unimported until the command runs (the rig does)."""

    def __init__(
        self, *args: Any, lazy: Mapping[str, LazyCommand] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, LazyCommand] = dict(lazy or {})
        self.builtin = frozenset(self.lazy)
        """The built-in commands' names: a plugin's command never takes one."""
        self._plugins_added = False
        self._adding_plugins = False

    def _check_plugin_name(self, name: str) -> None:
        """While plugins add their commands: refuse a built-in command's name or one another
        plugin took (:class:`Refused`; the plugin is then named in a warning)."""
        if not self._adding_plugins:
            return
        if name in self.builtin:
            raise Refused(
                f"its command {name!r} has the name of a built-in feltlab command, which it "
                "may not replace: rename the command"
            )
        if name in self.commands or name in self.lazy:
            raise Refused(f"its command {name!r} has the name of another plugin's: rename it")

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Add ``cmd`` as :meth:`click.Group.add_command` does, replacing a lazily known
        command of the same name (a plugin's command: never a built-in's or another
        plugin's name)."""
        self._check_plugin_name(name or cmd.name or "")
        super().add_command(cmd, name)
        self.lazy.pop(name or cmd.name or "", None)

    def add_lazy_command(self, name: str, target: str, summary: str) -> None:
        """Know command ``name`` by ``target`` (``"package.module:attribute"``, a
        :class:`click.Command`) and ``summary`` (the first sentence of its help, shown by
        ``--help``); its module is imported when the command runs.  Replaces a command of the
        same name, as :meth:`click.Group.add_command` does (a plugin's command: never a
        built-in's or another plugin's name)."""
        self._check_plugin_name(name)
        self.commands.pop(name, None)
        self.lazy[name] = LazyCommand(target, summary)

    def _add_plugins(self) -> None:
        if not self._plugins_added:
            self._plugins_added = True
            self._adding_plugins = True
            try:
                _register_plugin_commands(self)
            finally:
                self._adding_plugins = False

    def _load(self, name: str) -> click.Command:
        """Import command ``name``'s module and add the command.  Raises
        :class:`click.ClickException` naming the command and its target when the module fails
        to import or the target is not a click command (a plugin's bug: the one-line error
        replaces the traceback; ``python -c "import MODULE"`` shows it)."""
        target = self.lazy[name].target
        module, _, attr = target.partition(":")
        try:
            command = getattr(importlib.import_module(module), attr)
        except Exception as exc:
            raise Refused(
                f"command {name!r} failed to load from {target} ({type(exc).__name__}: {exc})"
            ) from exc
        if not isinstance(command, click.Command):
            raise Refused(
                f"command {name!r}: {target} is a {type(command).__name__}, not a click command"
            )
        del self.lazy[name]
        self.add_command(command, name)
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`click.Group.main` (the whole command: its imports, its run) under
        :func:`command_gc`."""
        with command_gc():
            return super().main(*args, **kwargs)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name not in self.lazy:
            self._add_plugins()
        if cmd_name in self.lazy:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_plugins()
        return sorted({*self.commands, *self.lazy})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``, as click writes it, an unimported command's line
        made from its summary by click itself (a help-only :class:`click.Command`)."""
        shown: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            lazy = self.lazy.get(name)
            cmd = click.Command(name, help=lazy.summary) if lazy else self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                shown.append((name, cmd))
        if shown:
            limit = formatter.width - 6 - max(len(name) for name, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in shown])


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the package's version (:data:`feltlab.__version__`, read from the
    installed metadata only now) as click's ``version_option`` prints it."""
    if not value or ctx.resilient_parsing:
        return
    from feltlab import __version__  # start-up: importlib.metadata only for --version

    click.echo(f"feltlab, version {__version__}")
    ctx.exit()


@click.group(
    cls=LazyGroup,
    lazy=BUILTIN_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Show more log records on stderr: -v feltlab's progress and the libraries' "
    "(python-can, can-isotp) warnings, -vv everything.",
)
def main(verbose: int = 0) -> None:
    """feltlab: plugin SDK and hardware-in-the-loop test rig for casino blackjack."""
    setup_logging(verbose)
    quiet_broken_pipe()


def _register_plugin_commands(cli: click.Group) -> None:
    """Let every plugin add its commands to ``cli``; a plugin that fails to load or raises is
    reported on stderr with its name, and the other commands still work."""
    from feltlab.plugin_manager import call_isolated, get_plugin_manager  # start-up

    pm = get_plugin_manager()  # a broken installed plugin is left out, with a warning
    for failure in call_isolated(pm.hook.feltlab_register_commands, cli=cli):
        click.echo(f"feltlab: warning: {failure}; its commands are unavailable", err=True)
