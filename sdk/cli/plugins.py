"""``feltlab plugins``: the loaded plugins, the hooks each implements and the wager types."""

from __future__ import annotations

import json

import click
from rich.table import Table

from feltlab.cli.options import make_console
from feltlab.plugin_manager import collect_wagers, get_plugin_manager, plugin_summary


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the plugins as JSON.")
def plugins(as_json: bool) -> None:
    """The loaded plugins, the hooks each implements, their versions and the wager types."""
    pm = get_plugin_manager()
    rows = plugin_summary(pm)
    registry = collect_wagers(pm)
    wagers = [registry.create(n).describe() for n in registry.names()]
    if as_json:
        click.echo(json.dumps({"plugins": rows, "wagers": wagers}, indent=2))
        return
    console = make_console()
    table = Table(title="feltlab plugins")
    for col in ("plugin", "distribution", "version", "hooks"):
        table.add_column(col)
    for row in rows:
        table.add_row(
            row["name"], row["distribution"], row["version"] or "-", ", ".join(row["hooks"])
        )
    console.print(table)
    wt = Table(title="wager types")
    for col in ("name", "rule", "placed", "decided", "decks", "limits (cents)", "paytable"):
        wt.add_column(col)
    for w in wagers:
        lim = w["limits"]
        wt.add_row(
            w["name"],
            w["rule"],
            w["placed"],
            w["decided"],
            "{}-{}".format(*w["decks"]),
            f"{lim['minimum']}-{lim['maximum']}",
            w["paytable"] or "-",
        )
    console.print(wt)
