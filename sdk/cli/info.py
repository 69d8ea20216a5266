"""``feltlab info``: the package version, the compiled core's compiler and flags, the RNGs
and the plugins."""

from __future__ import annotations

import json
import platform

import click
from rich.table import Table

from feltlab import __version__, native
from feltlab.cli.options import make_console
from feltlab.plugin_manager import get_plugin_manager, plugin_summary


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the information as JSON.")
def info(as_json: bool) -> None:
    """Package version, the compiled core's compiler and flags, RNGs and plugins."""
    core = native.core_info()
    plugins = plugin_summary(get_plugin_manager())
    data = {
        "feltlab": __version__,
        "python": platform.python_version(),
        "core": core,
        "rngs": list(native.RNG_NAMES),
        "plugins": plugins,
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    console = make_console()
    table = Table(title=f"feltlab {__version__}", show_header=False)
    table.add_row("python", platform.python_version())
    table.add_row("core version", core["version"])
    table.add_row("core compiler", core["compiler"])
    table.add_row("core flags", core["flags"])
    table.add_row("RNGs", ", ".join(native.RNG_NAMES))
    names = ", ".join(p["name"] for p in plugins) or "(none)"
    table.add_row("plugins", names)
    console.print(table)
