"""``feltlab indices``: the main game's Hi-Lo count indices under the chosen rules
(:mod:`feltlab.indices`), and ``feltlab bet-spread``: a Hi-Lo counter's edge with a bet
spread (:mod:`feltlab.betspread`)."""

from __future__ import annotations

from fractions import Fraction

import click
from rich.table import Table

from feltlab.clitypes import json_option, make_console, seed_option
from feltlab.indices import DEFAULT_MAX_COUNT, HEADERS, hilo_indices, render, rows
from feltlab.ruleopts import rule_options
from feltlab.rules import Rules


def _decks_remaining(value: str | None) -> Fraction | None:
    if value is None:
        return None
    try:
        return Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise click.BadParameter(
            f"{value!r} is not a number of decks (e.g. 3, 2.5, 9/4)", param_hint="--decks-remaining"
        ) from None


@click.command("indices")
@rule_options()
@click.option(
    "--decks-remaining",
    default=None,
    metavar="DECKS",
    help="Depth of the expected shoe: decks left, a multiple of 1/4 (default: half the shoe).",
)
@click.option(
    "--max-count",
    type=click.FloatRange(1, 40),
    default=None,
    help=f"Reach of the true-count grid either side of zero (default {DEFAULT_MAX_COUNT:g}, "
    "or two grid steps where the step is coarser).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "md"]),
    default="table",
    show_default=True,
)
@json_option("the indices (--format json)")
def indices_cmd(
    rules: Rules,
    rules_name: str,
    decks_remaining: str | None,
    max_count: float | None,
    fmt: str,
    as_json: bool,
) -> None:
    """Print the Hi-Lo indices of the Illustrious 18 under the rules: the true count (per
    deck remaining) at which each departure from basic strategy becomes the better play,
    from the combinatorial analyzer's expectations on the shoe expected at each true count
    (Griffin's method; docs/indices.md), beside Schlesinger's published indices (6 decks,
    S17, DAS)."""
    if click.get_current_context().params.get("penetration") is not None:
        raise click.UsageError(
            "--penetration has no effect on the indices: the depth is --decks-remaining"
        )
    try:
        table = hilo_indices(
            rules,
            rules_name=rules_name,
            decks_remaining=_decks_remaining(decks_remaining),
            max_count=max_count,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json or fmt != "table":
        click.echo(render(table, "json" if as_json else fmt), nl=False)
        return
    t = Table(
        title=f"Hi-Lo indices, {rules_name}: {float(table.decks_remaining):g} decks remaining, "
        f"grid step {float(table.step):.3g}"
    )
    for i, h in enumerate(HEADERS):
        t.add_column(h, justify="left" if i < 2 else "right")
    for row in rows(table):
        t.add_row(*row)
    console = make_console()
    console.print(t)
    console.print(
        f"{table.analyses} analyses in {table.seconds:.1f} s; published: Schlesinger, "
        "Blackjack Attack (6 decks, S17, DAS); index: stand/double/split/insure at or above"
    )


@click.command("bet-spread")
@rule_options()
@click.option(
    "--spread",
    type=click.IntRange(1, 1000),
    default=12,
    show_default=True,
    help="Largest bet in units: 1 unit at TC <= --ramp-start, then (TC - start) * "
    "--units-per-count units up to this.",
)
@click.option(
    "--ramp-start",
    type=click.IntRange(-20, 20),
    default=1,
    show_default=True,
    help="The floored true count at or below which the counter bets 1 unit.",
)
@click.option(
    "--units-per-count",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="How steeply the bet rises: units added per true count above --ramp-start.",
)
@click.option(
    "--rounds",
    type=click.IntRange(2, 10**11),
    default=10_000_000,
    show_default=True,
    help="Rounds of one box to simulate.",
)
@seed_option(1, "Seed of the simulation, 0..2**64-1.")
@json_option("the counter's edge")
def bet_spread_cmd(
    rules: Rules,
    rules_name: str,
    spread: int,
    ramp_start: int,
    units_per_count: int,
    rounds: int,
    seed: int,
    as_json: bool,
) -> None:
    """Print a Hi-Lo counter's edge over the main wager under the rules: basic strategy,
    bets raised with the floored true count on a 1-to-SPREAD ramp, simulated by the C round
    simulator at the rules' penetration (--penetration), counting in C: the edge per unit
    initial bet and the units won per 100 rounds, each with its 95 % interval, beside the
    flat bettor's edge (docs/indices.md)."""
    import json
    import time

    from feltlab.betspread import BetRamp, counted_tally, counter_edge

    start = time.perf_counter()
    try:
        tally = counted_tally(rules, rounds, seed=seed)
    except ValueError as exc:  # RulesError is a ValueError
        raise click.UsageError(str(exc)) from None
    edge = counter_edge(tally, BetRamp(spread, ramp_start, units_per_count))
    seconds = time.perf_counter() - start
    pen = 1 - rules.cut_card_from_back / rules.cards
    if as_json:
        doc = {"rules_name": rules_name, "rules": rules.to_dict(), "penetration": pen}
        doc |= edge.to_dict() | {"seed": seed, "seconds": seconds}
        click.echo(json.dumps(doc, indent=2))
        return

    def pct(v: float) -> str:
        return f"{100 * v:+.3f}%"

    lo, hi = edge.edge.interval
    flo, fhi = edge.flat.interval
    wlo, whi = edge.win_per_100.interval
    t = Table(title=f"Hi-Lo counter, {rules_name}, penetration {100 * pen:.1f}%")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_column("95% interval", justify="right")
    t.add_row("flat bet (1 unit) edge", pct(edge.flat.value), f"{pct(flo)} .. {pct(fhi)}")
    t.add_row(f"1-{spread} ramp edge per unit bet", pct(edge.edge.value), f"{pct(lo)} .. {pct(hi)}")
    t.add_row(
        "units won per 100 rounds",
        f"{edge.win_per_100.value:+.3f}",
        f"{wlo:+.3f} .. {whi:+.3f}",
    )
    t.add_row("mean bet (units)", f"{edge.mean_bet:.4f}", "")
    t.add_row("SD per round (units)", f"{edge.sd_round:.4f}", "")
    console = make_console()
    console.print(t)
    console.print(f"{edge.rounds:,} rounds of one box, seed {seed}, in {seconds:.1f} s")
