"""The ``feltlab`` command line (click).  Plugins add commands through the
``feltlab_register_commands`` hook."""

from __future__ import annotations

import json
import platform
import sys
import time

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from feltlab import __version__, native
from feltlab.cards import card_str
from feltlab.plugin_manager import get_plugin_manager, plugin_summary


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="feltlab")
def main() -> None:
    """feltlab: plugin SDK and hardware-in-the-loop test rig for casino blackjack."""


@main.command()
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
    console = Console()
    table = Table(title=f"feltlab {__version__}", show_header=False)
    table.add_row("python", platform.python_version())
    table.add_row("core version", core["version"])
    table.add_row("core compiler", core["compiler"])
    table.add_row("core flags", core["flags"])
    table.add_row("RNGs", ", ".join(native.RNG_NAMES))
    names = ", ".join(p["name"] for p in plugins) or "(none)"
    table.add_row("plugins", names)
    console.print(table)


@main.command()
@click.option("--decks", type=click.IntRange(1, native.MAX_DECKS), default=6, show_default=True)
@click.option(
    "--shoes",
    type=click.IntRange(1, 10**9),
    default=200_000,
    show_default=True,
    help="Shoes to shuffle for the throughput figure.",
)
@click.option(
    "--rng",
    "rng_name",
    type=click.Choice(["xoshiro256**", "chacha20"]),
    default="xoshiro256**",
    show_default=True,
)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True)
@click.option(
    "--show",
    type=click.IntRange(0, 100),
    default=3,
    show_default=True,
    help="Shoes to print (their first 13 cards).",
)
def shuffle(decks: int, shoes: int, rng_name: str, seed: int, show: int) -> None:
    """Shuffle a batch of shoes in the C core: print a few and the throughput."""
    rng = native.make_rng(rng_name, seed)
    t0 = time.perf_counter()
    batch = native.shuffle_batch(rng, shoes, decks, ids=True)
    dt = time.perf_counter() - t0
    console = Console()
    for i in range(min(show, shoes)):
        head = " ".join(card_str(int(c)) for c in batch[i, :13])
        console.print(f"shoe {i}: {head} ...")
    sorted_ok = bool((np.sort(batch, axis=1) == np.arange(decks * 52)).all())
    console.print(
        f"{shoes:,} {decks}-deck shoes with {rng.name} (seed {seed}) in {dt:.3f} s: "
        f"{shoes / dt:,.0f} shoes/s, {dt / (shoes * decks * 52) * 1e9:.2f} ns/card; "
        f"every shoe a permutation of the {decks * 52} cards: {sorted_ok}"
    )
    if not sorted_ok:
        sys.exit(1)


def _register_plugin_commands() -> None:
    pm = get_plugin_manager()
    pm.hook.feltlab_register_commands(cli=main)


_register_plugin_commands()
