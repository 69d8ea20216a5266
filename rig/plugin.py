"""The rig as a feltlab plugin: registers the bundled jackpot panel profile and the
``device``, ``capture``, ``certify``, ``analyze`` and ``view`` commands.

Found through feltlab's own entry point (``[project.entry-points.feltlab] rig =
"feltlab.rig.plugin"``), so the SDK never imports the rig.
"""

from __future__ import annotations

from typing import Any

from feltlab.hookspecs import hookimpl
from feltlab.rig.cli import COMMANDS


@hookimpl
def feltlab_register_panel_profiles(register: Any) -> None:
    """Register the bundled simulated jackpot panel (``rig/certify/profiles/jackpot.toml``)
    as ``jackpot``, the default profile of ``feltlab math madness21``."""
    from feltlab.rig.profiles import PROFILE_DIR  # start-up: --help reads no panel profile

    register("jackpot", PROFILE_DIR / "jackpot.toml")


@hookimpl
def feltlab_register_commands(cli: Any) -> None:
    """Add ``feltlab device``, ``capture``, ``certify``, ``analyze`` and ``view`` to the command
    line, each imported when it runs (``cli.add_lazy_command``, :class:`feltlab.cli.LazyGroup`):
    ``feltlab --help`` and the SDK's commands start without the rig's modules."""
    for name, (target, summary) in COMMANDS.items():
        cli.add_lazy_command(name, target, summary)
