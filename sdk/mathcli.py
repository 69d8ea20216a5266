"""``feltlab math`` and ``feltlab simulate``: PAR sheets and Monte Carlo on the command line
(commands of :mod:`feltlab.cli`, kept here so each module stays under 600 lines)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from feltlab.clitypes import make_console, seed_option
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.ruleopts import rule_options
from feltlab.rules import Rules


@click.command("math")
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
    type=click.Choice(["cdz", "cdp1", "cdp", "table"]),
    default="cdz",
    show_default=True,
    help="main: the composition-dependent optimum with the post-split play CDZ- (the pre-split "
    "play reused), CDP1 or CDP (E. Farmer's), or the simulator's total-dependent tables.",
)
@click.option(
    "--eor",
    is_flag=True,
    help="Effect of removal per rank, the best linear count and Hi-Lo's betting correlation.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the PAR sheet as JSON (--format json)."
)
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="Madness 21: the jackpot panel profile whose prize table pays the win "
    "(default: the bundled panel, rig/certify/profiles/jackpot.toml).",
)
@click.option(
    "--stake",
    type=click.IntRange(1, 10**9),
    default=None,
    help="Madness 21: the stake in cents the return per unit is computed at (default: the "
    "wager's minimum).",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 10**10),
    default=2_000_000,
    show_default=True,
    help="Rounds of a simulated PAR sheet (a play-decided wager with no exact analysis).",
)
@seed_option(1, "Seed of a simulated PAR sheet, 0..2**64-1.")
@click.option(
    "--simulated",
    is_flag=True,
    help="A play-decided wager: the simulated PAR sheet (--rounds, --seed) even where an exact "
    "one exists, to compare the two.",
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
    profile: str | None = None,
    stake: int | None = None,
    rounds: int = 2_000_000,
    seed: int = 1,
    simulated: bool = False,
) -> None:
    """Print the PAR sheet of WAGER: every outcome's combinations, probability, pays and
    return; the return, house edge, hit frequency and standard deviation, and how it was
    computed ("exact", or "simulated: N rounds, +-").

    A card-decided wager: exact enumeration of the initial deals its outcome depends on, over
    the shoe's exact composition.  A play-decided wager (decided by the round record): exact
    when it reads rank-level facts of the dealer's final hand and makes the dealer play out,
    under the rule options; else simulated (--rounds, --seed) with a 95% interval.  WAGER
    "main": the main wager's exact PAR sheet by the C core's combinatorial analyzer
    (--strategy cdz or table).  Madness 21: the win pays the average prize of the panel's
    prize table (--profile) per --stake.
    """
    from feltlab.errors import FeltlabError
    from feltlab.math import parsheet

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
    if instance.round_fields or cls.decided_by_panel:
        from feltlab.mathcli_play import special_sheets

        sheets = special_sheets(
            instance,
            rules,
            rules_name,
            decks,
            profile,
            stake,
            rounds,
            seed,
            eor=eor,
            simulated=simulated,
        )
    elif not instance.card_roles:
        raise click.UsageError(
            f"{cls.title} is decided by play, not by the initial deal: use "
            f"`feltlab simulate --rules {rules_name}` for its return"
        )
    else:
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
            + (f", rules {sh.rules}" if sh.rules else "")
            + f" ({sh.method})"
            + (" (outside the wager's deck range)" if outside else "")
        )
        simulated = sh.method.startswith("simulated")
        for col in ("outcome", "rounds" if simulated else "combinations", "probability", "pays",
                    "return"):  # fmt: skip
            t.add_column(col, justify="left" if col == "outcome" else "right")
        for ln in sh.lines:
            t.add_row(
                ln.outcome,
                f"{ln.combinations:,}" if sh.total_combinations else "-",
                f"{float(ln.probability):.8f}",
                parsheet._pays(ln.pays),
                "" if ln.return_ is None else f"{float(ln.return_):+.8f}",
            )
        total = f"{sh.total_combinations:,}" if sh.total_combinations else "-"
        t.add_row("total", total, "1", "", f"{float(sh.return_):+.8f}")
        console.print(t)
        console.print(
            f"house edge {100 * float(sh.house_edge):.4f}% ({parsheet._how(sh)}), "
            f"hit frequency {100 * float(sh.hit_frequency):.4f}%, "
            f"standard deviation {sh.std_dev:.4f}" + (f"; {sh.note}" if sh.note else "")
        )


@click.command()
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
@click.option(
    "--side-bets",
    "side_bets",
    default=None,
    metavar="NAME,...|none",
    help="The side wagers in play beside the main wager: comma-separated names, or none for "
    "the main wager alone. Default: every installed wager the simulator can settle.",
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
    side_bets: str | None,
    as_json: bool,
) -> None:
    """Simulate rounds in the C core with basic strategy: the main wager's house edge with a
    95% confidence interval, each side wager's return (tallied in C through each wager's
    lookup table; play-decided wagers from the round records), and rounds/s."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from feltlab.simcli import side_bet_specs
    from feltlab.simulation import run as sim

    preset = rules_name
    types = collect_wagers(get_plugin_manager())
    specs, skipped = side_bet_specs(side_bets, types, rules)
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

    report_simulation(
        res,
        preset,
        seed,
        fresh_shoe,
        workers,
        trace_path,
        as_json,
        skipped=skipped + sorted(res.tally.skipped.items()),
        plays_out=tuple(w.name for w in res.wagers if types[w.name].dealer_plays_out),
    )
