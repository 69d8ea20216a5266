"""``feltlab math main``: the main wager's PAR sheet on the terminal (the plumbing of
:mod:`feltlab.math.main_wager` for :mod:`feltlab.cli`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from feltlab.cli.options import make_console
from feltlab.cli.rule_options import in_option_terms
from feltlab.errors import RulesError, WagerError

if TYPE_CHECKING:
    from feltlab.rules import Rules
    from feltlab.wagers import WagerType


def print_side_bet_eor(wager: WagerType, decks: list[int], fmt: str) -> None:
    """Print a card-decided wager's effects of removal for each deck count (json: a list)."""
    from feltlab.math.eor import render_eor, side_bet_eor

    try:
        results = [side_bet_eor(wager, d) for d in decks]
    except WagerError as exc:
        raise click.UsageError(str(exc)) from None
    if fmt == "json":
        click.echo(json.dumps([e.to_dict() for e in results], indent=2))
        return
    for e in results:
        click.echo(render_eor(e), nl=False)


def print_main_sheet(
    rules: Rules,
    rules_name: str,
    decks: tuple[int, ...],
    strategy: str,
    fmt: str,
    *,
    eor: bool = False,
) -> None:
    """Print the main wager's PAR sheet in ``fmt`` (table, json, csv, md), or with ``eor``
    its effects of removal.  ``decks``: at most one deck count overriding the rules'.
    Raises :class:`click.UsageError` for several deck counts or rules the analyzer
    refuses."""
    from feltlab.math import main_wager

    if len(decks) > 1:
        raise click.UsageError("the main wager's sheet takes one --decks value")
    if decks:
        try:
            behind = rules.cut_card_from_back / rules.cards  # keep the penetration
            rules = rules.replace(decks=decks[0])
            if rules.cut_card_from_back:
                rules = rules.replace(cut_card_from_back=round(rules.cards * behind))
        except RulesError as exc:
            raise click.UsageError(in_option_terms(exc, {"decks": decks[0]}, rules_name)) from None
    if eor:
        from feltlab.math.eor import main_eor, render_eor

        e = main_eor(rules, strategy)
        if fmt == "json":
            click.echo(json.dumps(e.to_dict(), indent=2))
        else:
            click.echo(render_eor(e), nl=False)
        return
    try:
        sheet = main_wager.main_par_sheet(rules, strategy)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if fmt != "table":
        click.echo(main_wager.render(sheet, fmt), nl=False)
        return
    # the terminal table only: json, csv and md need no rich
    from rich.table import Table
    from rich.text import Text  # cells as Text: rich parses no markup in them (none is there)

    console = make_console()  # a pipe gets every column (the chart was cut to '+0.…')
    console.print(
        f"Main wager, rules {rules_name} ({rules.decks} deck{'s' * (rules.decks != 1)}), "
        f"strategy {strategy}: house edge {100 * sheet.house_edge:.6f}% "
        f"({sheet.house_edge_method}); the round's distribution ({sheet.distribution_method}): "
        f"standard deviation {sheet.std_dev:.6f} per round, skewness {sheet.skewness:.6f}"
    )
    h = sheet.headline
    console.print(
        "probabilities per round: "
        + ", ".join(f"{k.replace('_', ' ')} {100 * v:.4f}%" for k, v in h.items())
    )
    console.print(
        f"insurance return {100 * sheet.insurance:+.4f}% per unit insured; even money on a "
        f"blackjack against an ace: take 1.000000, decline {sheet.even_money['decline']:.6f}"
    )
    t = Table(title=f"net result of a round (units; {sheet.distribution_method})")
    t.add_column("net", justify="right")
    t.add_column("probability", justify="right")
    for k, v in sorted(sheet.distribution.items()):
        t.add_row(Text(f"{k:+g}"), Text(f"{v:.8f}"))
    console.print(t)
    if sheet.note:
        console.print(sheet.note)
    ups = [*main_wager.UP_LABELS[1:], "A"]
    chart = Table(title="strategy chart (action and expectation per initial unit)")
    chart.add_column("hand")
    for u in ups:
        chart.add_column(u, justify="right")
    rows: dict[str, dict[str, str]] = {}
    for c in sheet.chart:
        rows.setdefault(f"{c.hand} ({c.cards})", {})[c.up] = f"{c.action} {c.ev:+.3f}"
    for name, cells in rows.items():
        chart.add_row(Text(name), *(Text(cells.get(u, "")) for u in ups))
    console.print(chart)
