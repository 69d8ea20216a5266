"""``feltlab bet-spread``: a Hi-Lo counter's edge over the main wager with a bet spread
(:mod:`feltlab.simulation.bet_spread`)."""

from __future__ import annotations

import click
from rich.table import Table

from feltlab.cli.options import json_option, make_console, rounds_option, seed_option
from feltlab.cli.rule_options import rule_options
from feltlab.rules import Rules


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
@rounds_option(
    10_000_000,
    "Rounds of one box to simulate.",
    least=2,
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

    from feltlab.simulation.bet_spread import BetRamp, counted_tally, counter_edge

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
