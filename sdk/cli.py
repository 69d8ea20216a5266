"""The ``feltlab`` command line (click).  Plugins add commands through the
``feltlab_register_commands`` hook."""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import click
import numpy as np
from rich.table import Table

from feltlab import __version__, native
from feltlab.cards import card_str
from feltlab.clitypes import OutputFile, json_option, make_console, seed_option, setup_logging
from feltlab.engine import Table as FeltTable
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
    """Shuffle a batch of shoes in the C core: print a few and the throughput."""
    rng = native.make_rng(rng_name, seed)
    t0 = time.perf_counter()
    batch = native.shuffle_batch(rng, shoes, decks, ids=True)
    dt = time.perf_counter() - t0
    console = make_console()
    sorted_ok = bool((np.sort(batch, axis=1) == np.arange(decks * 52)).all())
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
def play(
    rules: Rules,
    rules_name: str,
    rounds: int,
    seed: int,
    boxes: int,
    events_path: Path | None,
) -> None:
    """Play rounds by basic strategy with side bets on every box and print the round log.

    The shoe is shuffled by ChaCha20 keyed by --seed, the Madness 21 panel is a seeded fake:
    the same seed prints the same log.  Every box bets $10 main, $5 Perfect Pairs, $5 Super
    Sevens (6-8 decks only) and $5 Madness 21.
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
            for side in ("perfect_pairs", "super_sevens", "madness21"):
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
    summary = ", ".join(f"{p} {_money(v)}" for p, v in sorted(totals.items()))
    click.echo(f"net after {rounds} rounds: {summary}")
    if events_path:
        with open(events_path, "w", encoding="utf-8") as fh:
            fh.write(table.log.to_jsonl())


@main.command("math")
@click.argument("wager")
@rule_options(decks=False)
@click.option(
    "--decks",
    type=click.IntRange(1, 8),
    multiple=True,
    help="Deck count (repeatable); default: the wager's allowed range.",
)
@click.option("--paytable", default=None, help="Paytable name; default: the wager's first.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "md"]),
    default="table",
    show_default=True,
)
@click.option(
    "--strategy",
    type=click.Choice(["cdz", "table"]),
    default="cdz",
    show_default=True,
    help="main: CDZ- optimum, or the simulator's total-dependent tables.",
)
@click.option(
    "--eor",
    is_flag=True,
    help="Effect of removal per rank, the best linear count and Hi-Lo's betting correlation.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the PAR sheet as JSON (--format json)."
)
def math_cmd(
    wager: str,
    rules: Rules,
    rules_name: str,
    decks: tuple[int, ...],
    paytable: str | None,
    fmt: str,
    strategy: str,
    eor: bool,
    as_json: bool = False,
) -> None:
    """Print the exact PAR sheet of WAGER: every outcome's combinations, probability, pays
    and return; the return, house edge, hit frequency and standard deviation.

    Exact enumeration of the initial deals the wager's outcome depends on, over the shoe's
    exact composition.  WAGER "main": the main wager's exact PAR sheet under the rule
    options, by the C core's combinatorial analyzer (--strategy cdz or table).
    """
    from feltlab import parsheet
    from feltlab.errors import FeltlabError

    if as_json:
        fmt = "json"
    if wager == "main":
        from feltlab.maincli import print_main_sheet

        print_main_sheet(rules, rules_name, decks, strategy, fmt, eor=eor)
        return

    types = collect_wagers(get_plugin_manager())
    if wager not in types:
        raise click.BadParameter(
            f"no wager {wager!r}; installed: {', '.join(types.names())}", param_hint="WAGER"
        )
    cls = types[wager]
    if paytable is not None and not paytable.strip():
        raise click.BadParameter(
            "the paytable name is empty: give one of the wager's paytables, or omit --paytable "
            "for its first",
            param_hint="--paytable",
        )
    try:
        instance = cls(paytable=paytable)
    except FeltlabError as exc:
        raise click.BadParameter(str(exc), param_hint="--paytable") from None
    if not instance.card_roles:
        raise click.UsageError(
            f"{cls.title} is decided by play, not by the initial deal: use "
            f"`feltlab simulate --rules {rules_name}` for its return"
        )
    counts = list(decks) or list(range(cls.min_decks, cls.max_decks + 1))
    if eor:
        from feltlab.maincli import print_side_bet_eor

        print_side_bet_eor(instance, counts, fmt)
        return
    sheets = [parsheet.par_sheet(instance, d) for d in counts]
    if as_json:
        fmt = "json"
    if fmt != "table":
        click.echo(parsheet.render(sheets, fmt), nl=False)
        return
    console = make_console()
    for sh in sheets:
        outside = not cls.min_decks <= sh.decks <= cls.max_decks
        t = Table(
            title=f"{sh.title}: paytable {sh.paytable}, {sh.decks} decks"
            + (" (outside the wager's deck range)" if outside else "")
        )
        for col in ("outcome", "combinations", "probability", "pays", "return"):
            t.add_column(col, justify="left" if col == "outcome" else "right")
        for ln in sh.lines:
            t.add_row(
                ln.outcome,
                f"{ln.combinations:,}",
                f"{float(ln.probability):.8f}",
                parsheet._pays(ln.pays),
                "" if ln.return_ is None else f"{float(ln.return_):+.8f}",
            )
        t.add_row("total", f"{sh.total_combinations:,}", "1", "", f"{float(sh.return_):+.8f}")
        console.print(t)
        console.print(
            f"house edge {100 * float(sh.house_edge):.4f}% (exactly {sh.house_edge}), "
            f"hit frequency {100 * float(sh.hit_frequency):.4f}%, "
            f"standard deviation {sh.std_dev:.4f}" + (f"; {sh.note}" if sh.note else "")
        )


@main.command()
@rule_options()
@click.option("--rounds", type=click.IntRange(1, 10**12), default=10_000_000, show_default=True)
@seed_option(1, "Seed of the simulation, 0..2**64-1.")
@click.option("--workers", type=click.IntRange(1, 1024), default=1, show_default=True)
@click.option(
    "--scheduler",
    default=None,
    help="Dask scheduler address (tcp://host:8786), or 'local' for a LocalCluster.",
)
@click.option(
    "--fresh-shoe",
    is_flag=True,
    help="Deal every round from a freshly shuffled shoe (no cut-card effect).",
)
@click.option(
    "--chunk",
    "chunk_rounds",
    type=click.IntRange(1, 10**9),
    default=2_000_000,
    show_default=True,
    help="Rounds per chunk (part of what the seed determines).",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Also write every round's net result (cents) and initial cards to this .npz file "
    "(per-round arrays: slower, and 6 bytes per round in memory).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def simulate(
    rules: Rules,
    rules_name: str,
    rounds: int,
    seed: int,
    workers: int,
    scheduler: str | None,
    fresh_shoe: bool,
    chunk_rounds: int,
    trace_path: Path | None,
    as_json: bool,
) -> None:
    """Simulate rounds in the C core with basic strategy: the main wager's house edge with a
    95% confidence interval, each side wager's return (tallied in C through each wager's
    lookup table), and rounds/s."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from feltlab import simulate as sim

    preset = rules_name
    types = collect_wagers(get_plugin_manager())
    specs: list[tuple[str, str | None]] = []
    for name in types.names():
        wtype = types[name]
        if wtype.card_roles and wtype.min_decks <= rules.decks <= wtype.max_decks:
            specs.append((name, None))
    console = make_console(stderr=True)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=as_json or not console.is_terminal,
        transient=True,
    ) as bar:
        task = bar.add_task(f"simulating {preset}", total=rounds)
        try:
            res = sim.simulate(
                rules,
                rounds,
                seed=seed,
                workers=workers,
                scheduler=scheduler,
                chunk_rounds=chunk_rounds,
                wagers=specs,
                fresh_shoe=fresh_shoe,
                progress=lambda n: bar.update(task, completed=n),
                trace=trace_path is not None,
            )
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from None
        except ValueError as exc:  # Dask: an address it cannot parse
            raise click.BadParameter(
                f"{scheduler!r} is not a Dask scheduler address ({exc}); write e.g. "
                "tcp://host:8786, or local",
                param_hint="--scheduler",
            ) from None
        except OSError as exc:  # Dask: the scheduler could not be reached
            raise click.ClickException(
                f"cannot reach the Dask scheduler {scheduler!r}: {exc}; start one with "
                "`dask scheduler` or use --scheduler local"
            ) from None
    from feltlab.simcli import report_simulation

    report_simulation(res, preset, seed, fresh_shoe, workers, trace_path, as_json)


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
def new_wager_cmd(name: str, directory: str | None) -> None:
    """Create a side-bet package for the wager NAME: pyproject.toml with the `feltlab` entry
    point, the plugin module with a documented wager type, a test file using the conformance
    kit, and a README."""
    from pathlib import Path

    from feltlab.scaffold import ScaffoldError, new_wager

    taken = collect_wagers(get_plugin_manager()).names()
    try:
        made = new_wager(name, Path(directory) if directory else None, taken=taken)
    except ScaffoldError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"created {made.distribution} in {made.root}:")
    for rel in made.files:
        click.echo(f"  {rel}")
    click.echo(f"next: cd {made.root} && pip install -e . && pytest && feltlab math {name}")


def _money(cents: int) -> str:
    sign = "-" if cents < 0 else "+"
    return f"{sign}${abs(cents) // 100}.{abs(cents) % 100:02d}"


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
