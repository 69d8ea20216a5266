"""feltlab's hook specifications: the whole plugin contract in one file.

A plugin is any module or object with functions named like these hooks and marked with
``feltlab.hookimpl``; a third-party package exposes it through the ``feltlab`` entry-point group.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("feltlab")


@hookspec
def feltlab_register_commands(cli: Any) -> None:
    """Add command-line commands to ``feltlab``.

    :param cli: the root ``click.Group``; call ``cli.add_command(command)`` for each command.

    Every implementation is called, once, when the command line starts; return values are
    ignored.  A command name already taken raises ``feltlab.errors.PluginError`` naming both
    plugins.
    """
