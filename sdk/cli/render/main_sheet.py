"""``feltlab math main``: the main wager's PAR sheet on the terminal and as JSON, CSV or
Markdown (:func:`main_sheet_text`), and a wager's effects of removal (:func:`render_eor`): the
plumbing of :mod:`feltlab.math.main_wager` and :mod:`feltlab.math.eor` for
:mod:`feltlab.cli`."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import TYPE_CHECKING

import click

from feltlab.cards import RANK_LETTERS
from feltlab.cli.options import make_console
from feltlab.cli.rule_options import in_option_terms
from feltlab.errors import RulesError, WagerError
from feltlab.math import main_wager
from feltlab.math.main_wager import MainParSheet
from feltlab.native.analyzer import ACTIONS

if TYPE_CHECKING:
    from feltlab.math.eor import EffectOfRemoval
    from feltlab.rules import Rules
    from feltlab.wagers import WagerType


def print_side_bet_eor(wager: WagerType, decks: list[int], fmt: str) -> None:
    """Print a card-decided wager's effects of removal for each deck count (json: a list)."""
    from feltlab.math.eor import side_bet_eor  # start-up: EoR only when asked

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
        from feltlab.math.eor import main_eor  # start-up: EoR only when asked

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
        click.echo(main_sheet_text(sheet, fmt), nl=False)
        return
    # the terminal table only: json, csv and md need no rich
    from rich.table import Table  # start-up: `feltlab math main` imports no rich
    from rich.text import Text  # start-up: math main loads no rich (Text: no markup parsed)

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


def render_eor(e: EffectOfRemoval) -> str:
    """A plain-text table of ``e``."""
    # start-up: the effects of removal's module loads only under --eor
    from feltlab.math.eor import HI_LO, STRATEGY_NOTES  # start-up: EoR only when asked

    lines = [
        f"{e.wager}, {e.decks} deck{'s' * (e.decks != 1)}: return {100 * e.base:+.6f}% per "
        "unit; effect of removal "
        "(percentage points per card removed) and the best linear count",
        f"strategy: {e.strategy} ({STRATEGY_NOTES[e.strategy]})",
        f"{'rank':>4} {'EoR (pp)':>12} {'best tag':>9} {'integer':>8} {'Hi-Lo':>6}"
        + (f" {'table EoR (pp)':>15}" if e.table_effects else ""),
    ]
    for i, r in enumerate(RANK_LETTERS):
        lines.append(
            f"{r:>4} {100 * e.effects[i]:+12.6f} {e.best_count[i]:+9.3f} "
            f"{e.best_count_integer[i]:+8d} {HI_LO[i]:+6d}"
            + (f" {100 * e.table_effects[i]:+15.6f}" if e.table_effects else "")
        )
    lines.append(
        f" sum {100 * e.effects_sum:+12.6f}"
        + (f" {'':>25} {100 * sum(e.table_effects):+15.6f}" if e.table_effects else "")
    )
    if math.isnan(e.bc_hi_lo):
        lines.append("every rank has the same effect: no count can track this wager")
    else:
        lines.append(
            f"betting correlation with the wager: Hi-Lo {e.bc_hi_lo:.3f}, integer best count "
            f"{e.bc_integer:.3f}"
        )
    return "\n".join(lines) + "\n"


def main_sheet_text(sheet: MainParSheet, fmt: str) -> str:
    """``sheet`` as "json", "csv" (the chart) or "md" (summary and chart)."""
    if fmt == "json":
        return json.dumps(sheet.to_dict(), indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["hand", "cards", "up", "action", "ev", *ACTIONS])
        for c in sheet.chart:
            w.writerow(
                [c.hand, c.cards, c.up, c.action, f"{c.ev:.10f}"]
                + [f"{c.actions[k]:.10f}" if k in c.actions else "" for k in ACTIONS]
            )
        w.writerow([])
        w.writerow(["house_edge", f"{sheet.house_edge:.12f}"])
        w.writerow(["std_dev", f"{sheet.std_dev:.10f}"])
        w.writerow(["skewness", f"{sheet.skewness:.10f}"])
        for k, v in sheet.headline.items():
            w.writerow([f"p_{k}", f"{v:.10f}"])
        w.writerow(["insurance_return", f"{sheet.insurance:.10f}"])
        return buf.getvalue()
    if fmt == "md":
        lines = [
            f"# Main wager: {sheet.strategy} strategy",
            "",
            f"- house edge: {100 * sheet.house_edge:.6f}% ({sheet.house_edge_method})",
            f"- standard deviation per round: {sheet.std_dev:.6f} units, skewness "
            f"{sheet.skewness:.6f} (distribution: {sheet.distribution_method})",
            *(f"- P({k.replace('_', ' ')}): {v:.8f}" for k, v in sheet.headline.items()),
            f"- insurance return: {100 * sheet.insurance:+.4f}% per unit insured",
            f"- even money: take 1.0, decline {sheet.even_money['decline']:.6f}",
            "",
            "| net (units) | probability |",
            "| ---: | ---: |",
        ]
        lines += [f"| {k:+g} | {v:.10f} |" for k, v in sorted(sheet.distribution.items())]
        lines += ["", "| hand | cards | up | action | ev |", "| --- | --- | --- | --- | ---: |"]
        lines += [
            f"| {c.hand} | {c.cards} | {c.up} | {c.action} | {c.ev:+.6f} |" for c in sheet.chart
        ]
        if sheet.note:
            lines += ["", sheet.note]
        return "\n".join(lines) + "\n"
    raise ValueError(f"format must be json, csv or md, got {fmt!r}")
