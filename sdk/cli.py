"""The ``feltlab`` command line (click).  Plugins add commands through the
``feltlab_register_commands`` hook."""

from __future__ import annotations

import io
import json
import os
import platform
import stat
import sys
import time
from pathlib import Path
from typing import Any

# Before numpy loads OpenBLAS: feltlab does no large linear algebra, and OpenBLAS's worker
# threads only spin after a small product (0.2 s of CPU in a certification campaign, taken
# from the campaign itself on a busy host).  A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click
import numpy as np
from rich.table import Table

from feltlab import __version__, native
from feltlab.cards import card_str
from feltlab.clitypes import OutputFile, json_option, make_console, seed_option, setup_logging
from feltlab.countingcli import bet_spread_cmd, indices_cmd
from feltlab.engine import Table as FeltTable
from feltlab.mathcli import math_cmd, simulate
from feltlab.money import money
from feltlab.plugin_manager import collect_wagers, get_plugin_manager, plugin_summary
from feltlab.ruleopts import rule_options
from feltlab.rules import Rules


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


class _PipeSink(io.RawIOBase):
    """Standard output's file descriptor, written until its reader goes away (``| head``),
    then every further byte discarded: the command finishes its work and exits with its own
    code (0 on a PASS) instead of click's 1 for EPIPE, the FAIL code."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.broken = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, b: Any) -> int:
        n = len(memoryview(b))
        if self.broken:
            return n
        try:
            return os.write(self._fd, b)
        except BrokenPipeError:
            self.broken = True
            return n


def quiet_broken_pipe() -> None:
    """Put :class:`_PipeSink` under ``sys.stdout`` when it is this process's own standard
    output on a pipe (never under a test runner's captured stream)."""
    out = sys.stdout
    if out is not sys.__stdout__ or out is None:
        return
    try:
        fd = out.fileno()
        if os.isatty(fd) or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        out.flush()
    except (OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_PipeSink(fd)),
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=True,
    )


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


SHUFFLE_CHUNK = 16_384
"""Shoes ``feltlab shuffle`` shuffles per call of the C core (10 MB for 6-deck shoes)."""


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
@seed_option(1, "Seed of the RNG, 0..2**64-1.")
@click.option(
    "--show",
    type=click.IntRange(0, 100),
    default=3,
    show_default=True,
    help="Shoes to print (their first 13 cards).",
)
@json_option("the shoes shown and the throughput")
def shuffle(decks: int, shoes: int, rng_name: str, seed: int, show: int, as_json: bool) -> None:
    """Shuffle a batch of shoes in the C core: print a few and the throughput.  The shoes
    are shuffled in chunks of SHUFFLE_CHUNK (memory bounded whatever --shoes: a million
    6-deck shoes at once took 1.57 GB), each checked to be a permutation."""
    rng = native.make_rng(rng_name, seed)
    dt = 0.0
    sorted_ok = True
    first: np.ndarray | None = None
    ident = np.arange(decks * 52)
    for start in range(0, shoes, SHUFFLE_CHUNK):
        t0 = time.perf_counter()
        batch = native.shuffle_batch(rng, min(SHUFFLE_CHUNK, shoes - start), decks, ids=True)
        dt += time.perf_counter() - t0
        sorted_ok = sorted_ok and bool((np.sort(batch, axis=1) == ident).all())
        if first is None:
            first = batch[: min(show, shoes)].copy()
    assert first is not None
    batch = first
    console = make_console()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "decks": decks,
                    "shoes": shoes,
                    "rng": rng.name,
                    "seed": seed,
                    "seconds": dt,
                    "shoes_per_second": shoes / dt,
                    "ns_per_card": dt / (shoes * decks * 52) * 1e9,
                    "all_permutations": sorted_ok,
                    "shown": [
                        [card_str(int(c)) for c in batch[i, :13]] for i in range(min(show, shoes))
                    ],
                },
                indent=2,
            )
        )
        if not sorted_ok:
            sys.exit(1)
        return
    for i in range(min(show, shoes)):
        head = " ".join(card_str(int(c)) for c in batch[i, :13])
        console.print(f"shoe {i}: {head} ...")
    console.print(
        f"{shoes:,} {decks}-deck shoes with {rng.name} (seed {seed}) in {dt:.3f} s: "
        f"{shoes / dt:,.0f} shoes/s, {dt / (shoes * decks * 52) * 1e9:.2f} ns/card; "
        f"every shoe a permutation of the {decks * 52} cards: {sorted_ok}"
    )
    if not sorted_ok:
        sys.exit(1)


@main.command()
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


PLAY_SIDE_BETS = ("perfect_pairs", "super_sevens", "madness21")
"""The side wagers ``feltlab play`` bets by default."""


def _play_side_bets(choice: str | None, registry: Any, offered: set[str], decks: int) -> list[str]:
    """The side wagers of a ``play --side-bets`` choice (None: :data:`PLAY_SIDE_BETS`).
    Raises click.BadParameter naming an unknown wager, the main wager, one placed after the
    deal (insurance) or one these decks do not allow."""
    from feltlab.wagers import Placed

    if choice is None:
        return list(PLAY_SIDE_BETS)
    if choice.strip() == "none":
        return []
    names = [n.strip() for n in choice.split(",") if n.strip()]
    if not names:
        raise click.BadParameter(
            "give wager names separated by commas, or none", param_hint="--side-bets"
        )
    for name in names:
        if name not in registry.names() or name == "main":
            known = ", ".join(n for n in registry.names() if n != "main")
            raise click.BadParameter(
                f"no installed side wager {name!r}; choose from {known}, or none",
                param_hint="--side-bets",
            )
        if registry.create(name).placed is not Placed.BEFORE_DEAL:
            raise click.BadParameter(
                f"{name} is placed after the deal, not with the main wager: leave it out",
                param_hint="--side-bets",
            )
        if name not in offered:
            raise click.BadParameter(
                f"{name} is not offered with {decks} decks (its deck range); choose another "
                "wager or --decks",
                param_hint="--side-bets",
            )
    return names


@main.command()
@rule_options()
@click.option("--rounds", type=click.IntRange(1, 100_000), default=20, show_default=True)
@seed_option(1, "Seed of the ChaCha20 shoe and the fake jackpot panel, 0..2**64-1.")
@click.option("--boxes", type=click.IntRange(1, 7), default=3, show_default=True)
@click.option(
    "--events",
    "events_path",
    type=OutputFile(),
    default=None,
    help="Also write the JSON-lines event log to this file.",
)
@click.option(
    "--side-bets",
    "side_bets",
    default=None,
    metavar="NAME,...|none",
    help="The side wagers every box bets $5 on: comma-separated names, or none. Default: "
    "perfect_pairs, super_sevens (6-8 decks) and madness21.",
)
def play(
    rules: Rules,
    rules_name: str,
    rounds: int,
    seed: int,
    boxes: int,
    events_path: Path | None,
    side_bets: str | None,
) -> None:
    """Play rounds by basic strategy with side bets on every box and print the round log.

    The shoe is shuffled by ChaCha20 keyed by --seed, the Madness 21 panel is a seeded fake:
    the same seed prints the same log.  Every box bets $10 main and $5 on each side wager of
    --side-bets (default: Perfect Pairs, Super Sevens (6-8 decks only) and Madness 21).
    """
    from feltlab.engine import play_round
    from feltlab.errors import RulesError
    from feltlab.jackpot import FakeJackpotPanel
    from feltlab.playlog import describe_event
    from feltlab.shoe import make_source
    from feltlab.strategy import BasicStrategy

    pm = get_plugin_manager()
    registry = collect_wagers(pm)
    offered = [n for n in registry.names()]
    wagers = []
    for name in offered:
        w = registry.create(name)
        if w.min_decks <= rules.decks <= w.max_decks:
            wagers.append(w)
    names = {w.name for w in wagers}
    sides = _play_side_bets(side_bets, registry, names, rules.decks)
    try:
        table = FeltTable(
            rules,
            make_source(rules, native.ChaCha20(seed)),
            wagers,
            boxes=boxes,
            panel=FakeJackpotPanel(seed=seed),
            hook=pm.hook,
        )
    except RulesError as exc:
        raise click.UsageError(str(exc)) from None
    lines: list[str] = []
    table.log.subscribe(lambda e: lines.extend(describe_event(e)))
    policy = BasicStrategy(rules)
    click.echo(f"feltlab play: rules {rules_name}, {rounds} rounds, seed {seed}, {boxes} boxes")
    for _ in range(rounds):
        bets = []
        for b in range(boxes):
            player = f"P{b + 1}"
            bets.append((b, player, "main", 1000))
            for side in sides:
                if side in names and side not in table.withdrawn:
                    bets.append((b, player, side, 500))
        play_round(table, bets, policy)
        for line in lines:
            click.echo(line)
        lines.clear()
    totals: dict[str, int] = {}
    for e in table.log:
        if e.kind == "wager_settled":
            p = str(e.data["player"])
            totals[p] = totals.get(p, 0) + int(e.data["net"])
    summary = ", ".join(f"{p} {money(v, signed=True)}" for p, v in sorted(totals.items()))
    click.echo(f"net after {rounds} rounds: {summary}")
    if events_path:
        with open(events_path, "w", encoding="utf-8") as fh:
            fh.write(table.log.to_jsonl())


main.add_command(math_cmd)
main.add_command(simulate)
main.add_command(indices_cmd)
main.add_command(bet_spread_cmd)


@main.group()
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
    from pathlib import Path

    from feltlab.scaffold import ScaffoldError, new_wager

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


if __name__ == "__main__":  # python -m feltlab.cli
    main()
