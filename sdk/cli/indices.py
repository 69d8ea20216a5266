"""``feltlab indices``: the main game's Hi-Lo count indices under the chosen rules
(:mod:`feltlab.math.indices`)."""

from __future__ import annotations

from fractions import Fraction

import click
from rich.table import Table

from feltlab.cli.options import FiniteRange, json_option, make_console
from feltlab.cli.render.indices import HEADERS, index_table_text, rows
from feltlab.cli.rule_options import rule_options
from feltlab.math.indices import DEFAULT_MAX_COUNT, hilo_indices
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
    type=FiniteRange(1, 40),
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
        click.echo(index_table_text(table, "json" if as_json else fmt), nl=False)
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
    if table.caveat() is not None:
        console.print(f"caveat: {table.caveat()}")
