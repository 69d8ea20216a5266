"""``feltlab new wager``: a new side-bet package from the scaffold's templates."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from feltlab.plugin_manager import collect_wagers, get_plugin_manager


@click.group()
def new() -> None:
    """Create a new plugin package."""


@new.command("wager")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to create the package (default: ./feltlab-NAME); must be empty or absent.",
)
@click.option(
    "--decided",
    type=click.Choice(["initial-deal", "round-end"]),
    default="initial-deal",
    show_default=True,
    help="initial-deal: a wager of the box's first two cards; round-end: a wager decided by "
    "play, read from the round record (the dealer's final hand).",
)
def new_wager_cmd(name: str, directory: str | None, decided: str = "initial-deal") -> None:
    """Create a side-bet package for the wager NAME: pyproject.toml with the `feltlab` entry
    point, the plugin module with a documented wager type, a test file using the conformance
    kit, and a README."""

    from feltlab.scaffold import ScaffoldError, new_wager  # start-up: when the command runs

    taken = collect_wagers(get_plugin_manager()).names()
    try:
        made = new_wager(name, Path(directory) if directory else None, taken=taken, decided=decided)
    except ScaffoldError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"created {made.distribution} in {made.root}:")
    for rel in made.files:
        click.echo(f"  {rel}")
    # this interpreter's own pip, pytest and feltlab: a bare `pip` may be another Python's
    py = sys.executable
    feltlab = Path(py).with_name("feltlab")
    click.echo(
        f"next: cd {made.root} && {py} -m pip install -e . && {py} -m pytest && "
        f"{feltlab} math {name}"
    )
