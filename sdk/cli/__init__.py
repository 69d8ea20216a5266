"""The ``feltlab`` command line (click): the command group :func:`main`, one module per
command (:mod:`feltlab.cli.info`, :mod:`~feltlab.cli.shuffle`, :mod:`~feltlab.cli.plugins`,
:mod:`~feltlab.cli.play`, :mod:`~feltlab.cli.math`, :mod:`~feltlab.cli.simulate`,
:mod:`~feltlab.cli.protect`, :mod:`~feltlab.cli.new`, :mod:`~feltlab.cli.indices`,
:mod:`~feltlab.cli.bet_spread`), the
shared options (:mod:`feltlab.cli.options`,
:mod:`feltlab.cli.rule_options`) and the rendering of the math and simulation results on the
terminal (:mod:`feltlab.cli.render`).  Plugins add commands through the
``feltlab_register_commands`` hook.  Nothing else in the SDK imports this package."""

from __future__ import annotations

import os

# Before numpy loads OpenBLAS: feltlab does no large linear algebra, and OpenBLAS's worker
# threads only spin after a small product (0.2 s of CPU in a certification campaign, taken
# from the campaign itself on a busy host).  A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

from feltlab import __version__
from feltlab.cli import (
    bet_spread,
    indices,
    info,
    math,
    new,
    play,
    plugins,
    protect,
    shuffle,
    simulate,
)
from feltlab.cli.options import setup_logging
from feltlab.cli.pipe import quiet_broken_pipe
from feltlab.plugin_manager import get_plugin_manager


class _Commands(click.Group):
    """The command group, with the plugins' commands (``feltlab_register_commands``) added
    only when a command that is not built in is asked for or the commands are listed: a
    built-in command such as ``feltlab simulate`` starts without importing the rig."""

    _plugins_added = False

    def _add_plugins(self) -> None:
        if not self._plugins_added:
            self._plugins_added = True
            _register_plugin_commands()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            self._add_plugins()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_plugins()
        return super().list_commands(ctx)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="feltlab")
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


for _command in (
    info.info,
    shuffle.shuffle,
    plugins.plugins,
    play.play,
    math.math_cmd,
    simulate.simulate,
    protect.protect_cmd,
    indices.indices_cmd,
    bet_spread.bet_spread_cmd,
    new.new,
):
    main.add_command(_command)


def _register_plugin_commands() -> None:
    """Let every plugin add its commands; a plugin that fails to load or raises is reported
    on stderr with its name, and the other commands still work."""
    from feltlab.errors import PluginError
    from feltlab.plugin_manager import call_isolated

    try:
        pm = get_plugin_manager()
    except PluginError as exc:
        click.echo(f"feltlab: warning: {exc}", err=True)
        pm = get_plugin_manager(entry_points=False)
    for failure in call_isolated(pm.hook.feltlab_register_commands, cli=main):
        click.echo(f"feltlab: warning: {failure}; its commands are unavailable", err=True)
