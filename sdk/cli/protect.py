"""``feltlab protect``: the game protection report of one wager or every installed one (the
command, its renderers: terminal tables, Markdown, JSON, and the plot of expectation
against count).  The figures come from :mod:`feltlab.simulation.protection`; docs/protection.md says
how to read them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from feltlab.cli.options import (
    OutputFile,
    Refused,
    json_option,
    make_console,
    rounds_option,
    seed_option,
)
from feltlab.cli.render.text import dollars, percent, plus_minus_percent
from feltlab.cli.rule_options import rule_options
from feltlab.errors import FeltlabError
from feltlab.math.counts import COUNT_CHOICES, Count, resolve_count
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.wagers import WagerType

if TYPE_CHECKING:
    from feltlab.simulation.protection import ProtectionReport, WagerProtection

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
"""The plot's formats, by the file's suffix (the first is added to a name without one)."""

MIN_ROUNDS = 10_000
"""``--min-rounds``' default: :data:`feltlab.math.countability.MIN_ROUNDS` (tests/math/
test_protection.py checks they agree; the analysis is imported when the command runs)."""


def _count_label(v: Any) -> str:
    return "-" if v is None else f"{float(v):+g}"


def summary_rows(report: ProtectionReport) -> list[list[str]]:
    """One row per wager and count: wager, count, rounds, overall expectation, trigger (with
    its interval), frequency at or above it, edge per unit and per round, win per 100 rounds
    at the maximum bet, verdict."""
    rows = []
    for r in report.results:
        a = r.analysis
        lo, hi = a.trigger_low, a.trigger_high
        trig = _count_label(a.trigger_value())
        if a.trigger is not None:
            trig += (
                f" ({_count_label(None if lo is None else a.buckets[lo].value)}"
                f"..{_count_label(None if hi is None else a.buckets[hi].value)})"
            )
        rows.append(
            [
                r.wager,
                r.count.name,
                f"{a.rounds:,}",
                plus_minus_percent(a.overall.value, a.overall.half_width),
                trig,
                percent(a.frequency, 3, missing="-") if a.trigger is not None else "-",
                plus_minus_percent(a.edge_per_unit.value, a.edge_per_unit.half_width)
                if a.trigger is not None
                else "-",
                plus_minus_percent(a.edge_per_round.value, a.edge_per_round.half_width)
                if a.trigger is not None
                else "-",
                f"{dollars(a.win_per_100.value)} ± {dollars(a.win_per_100.half_width)[1:]}"
                if a.trigger is not None
                else "-",
                a.verdict.split(":")[0],
            ]
        )
    return rows


SUMMARY_COLUMNS = (
    "wager",
    "count",
    "rounds",
    "expectation (all rounds)",
    "trigger (95% CI)",
    "rounds at or above",
    "edge per unit bet",
    "edge per round observed",
    "$ per 100 rounds at max bet",
    "verdict",
)


def bucket_rows(r: WagerProtection) -> list[list[str]]:
    """The wager's expectation by count: one row per bucket with a round (count value,
    rounds, their fraction, expectation, 95% interval)."""
    a = r.analysis
    rows = []
    last = len(a.buckets) - 1
    for i, b in enumerate(a.buckets):
        if not b.rounds:
            continue
        label = _count_label(b.value)
        if i == 0:
            label = f"<= {label}" if r.bucketing.count.index_mode != "suit" else label
        elif i == last:
            label = f">= {label}"
        m = b.mean
        hw = b.half_width()
        rows.append(
            [
                label,
                f"{b.rounds:,}",
                f"{100 * b.rounds / a.rounds:.3f}%",
                percent(float(m), 3, signed=True, missing="-") if m is not None else "-",
                "-" if math.isnan(hw) else f"±{100 * hw:.3f}%",
                "*" if i == a.trigger else ("" if b.rounds >= a.min_rounds else "sparse"),
            ]
        )
    return rows


def _header(report: ProtectionReport) -> str:
    from feltlab.simulation.protection import penetration

    pen = penetration(report.rules)
    dealt = (
        "a continuous shuffler (ideal: every round from a freshly shuffled machine)"
        if pen is None
        else f"penetration {100 * pen:.1f}%"
    )
    return (
        f"{report.rules_name}, {report.rules.decks} decks, {dealt}: "
        f"{report.rounds:,} rounds a count, seed {report.seed} (seed derivation "
        f"{report.seed_derivation}, simulator {report.simulator_version}); "
        f"{report.rounds_per_second:,.0f} counted rounds/s simulating"
    )


def _md_table(columns: tuple[str, ...] | list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(out)


BUCKET_COLUMNS = ("count", "rounds", "of rounds", "expectation", "95% CI", "")


def render_markdown(report: ProtectionReport, detail: bool) -> str:
    """The report as Markdown: the header, the summary table, each verdict, and with
    ``detail`` each wager's expectation by count."""
    parts = [
        "# Game protection report",
        "",
        _header(report),
        "",
        _md_table(SUMMARY_COLUMNS, summary_rows(report)),
        "",
    ]
    for r in report.results:
        parts.append(f"- **{r.wager}** ({r.paytable}), {r.count.name}: {r.analysis.verdict}")
    for s in report.skipped:
        parts.append(f"- not in the report: {s.wager}: {s.reason}")
    parts.append("")
    for r in report.results:
        parts.append(f"## {r.wager}, {r.count.name}")
        parts.append("")
        parts.append(f"Count: {r.count.source}.")
        parts.append("")
        if detail:
            parts.append(_md_table(BUCKET_COLUMNS, bucket_rows(r)))
            parts.append("")
    return "\n".join(parts) + "\n"


def print_report(report: ProtectionReport, detail: bool) -> None:
    """The report as terminal tables (``detail``: each wager's expectation by count too)."""
    out = make_console()
    out.print(_header(report))
    t = Table(title="game protection")
    for col in SUMMARY_COLUMNS:
        t.add_column(col)
    for row in summary_rows(report):
        t.add_row(*row)
    out.print(t)
    for r in report.results:
        out.print(f"{r.wager} ({r.paytable}), {r.count.name}: {r.analysis.verdict}")
    for s in report.skipped:
        out.print(f"not in the report: {s.wager}: {s.reason}")
    if not detail:
        return
    for r in report.results:
        bt = Table(title=f"{r.wager}: expectation per unit by {r.count.name} ({r.count.source})")
        for col in BUCKET_COLUMNS:
            bt.add_column(col)
        for row in bucket_rows(r):
            bt.add_row(*row)
        out.print(bt)


def plot_report(report: ProtectionReport, path: Path) -> None:
    """Expectation per unit against count, one line per wager and count with its 95%
    intervals (buckets with at least ``min_rounds`` rounds), zero marked, each trigger
    dotted; written to ``path`` (PNG, SVG or PDF by its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    drawn = 0
    for r in report.results:
        a = r.analysis
        pts = [
            (float(b.value), float(b.total / b.rounds), b.half_width())
            for b in a.buckets
            if b.rounds >= a.min_rounds
        ]
        if not pts:
            continue
        drawn += 1
        xs, ys, hs = zip(*pts, strict=True)
        line = ax.errorbar(
            xs,
            [100 * y for y in ys],
            yerr=[100 * h for h in hs],
            marker="o",
            ms=3,
            capsize=2,
            label=f"{r.wager} ({r.count.name})",
        )
        if a.trigger is not None:
            ax.axvline(float(a.buckets[a.trigger].value), ls=":", color=line[0].get_color())
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("count at the bet (bucket lower bound)")
    ax.set_ylabel("expectation per unit bet (%)")
    ax.set_title(_header(report).split(";")[0], fontsize=9)
    if drawn:
        ax.legend(fontsize=8)
    else:  # said on the figure, not left blank
        ax.text(
            0.5,
            0.5,
            f"no count has {report.results[0].analysis.min_rounds:,} rounds: nothing to plot "
            "(more --rounds or a lower --min-rounds)",
            ha="center",
            transform=ax.transAxes,
        )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _wagers(wager: str | None, every: bool, paytable: str | None) -> list[WagerType]:
    types = collect_wagers(get_plugin_manager())
    if wager is not None and every:
        raise click.UsageError("give a WAGER or --all, not both")
    if wager is None:
        if paytable is not None:
            raise click.UsageError("--paytable needs a WAGER")
        return [types[n]() for n in types.names()]
    if wager not in types:
        raise click.BadParameter(
            f"no wager {wager!r}; installed: {', '.join(types.names())}", param_hint="WAGER"
        )
    try:
        return [types[wager](paytable=paytable)]
    except FeltlabError as exc:
        raise click.BadParameter(str(exc), param_hint="--paytable") from None


def _counts(names: tuple[str, ...], decks: int) -> list[Any]:
    specs: list[Any] = []
    for name in names or ("hilo",):
        if name.strip().lower() == "eor":

            def own(w: WagerType, decks: int = decks) -> Count:
                return resolve_count("hilo" if w.name == "main" else "eor", w, decks)

            specs.append(own)
            continue
        try:
            specs.append(resolve_count(name))
        except FeltlabError as exc:
            raise click.BadParameter(str(exc), param_hint="--count") from None
    return specs


@click.command("protect")
@click.argument("wager", required=False)
@click.option(
    "--all", "every", is_flag=True, help="Every installed wager (the default without WAGER)."
)
@rule_options()
@click.option("--paytable", default=None, help="Paytable of WAGER; default: its first.")
@click.option(
    "--count",
    "count_names",
    multiple=True,
    metavar="NAME",
    help=f"Count to tally by ({', '.join(COUNT_CHOICES)}; eor: each wager's own best linear "
    "count, Hi-Lo for the main wager; or tags:A,2,...,K); repeat for several.  Default: hilo.",
)
@click.option(
    "--resolution",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Count buckets per unit of a true count or suit imbalance (1: floored).",
)
@rounds_option(
    10_000_000,
    "Rounds simulated a count (a count of each wager's own, eor: a wager).",
)
@seed_option(default=1)
@click.option(
    "--min-rounds",
    type=click.IntRange(1, 10**12),
    default=MIN_ROUNDS,
    show_default=True,
    help="Rounds a bucket needs to decide where the expectation stays positive.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "md"]),
    default="table",
    show_default=True,
    help="Terminal tables or Markdown (for a submission).",
)
@json_option("the report")
@click.option(
    "--plot",
    "plot_path",
    type=OutputFile(suffixes=PLOT_SUFFIXES),
    default=None,
    help="Plot expectation against count to FILE (.png, .svg or .pdf; no suffix: .png added).",
)
def protect_cmd(
    wager: str | None,
    every: bool,
    rules: Rules,
    rules_name: str,
    paytable: str | None,
    count_names: tuple[str, ...],
    resolution: int,
    rounds: int,
    seed: int,
    min_rounds: int,
    fmt: str,
    as_json: bool,
    plot_path: Path | None,
) -> None:
    """Game protection: can a card counter beat WAGER (or, without WAGER or with --all, every
    installed wager)?  Simulates rounds under the rules with their cutting card, keeps the
    count (--count) in the C simulator and tallies each wager's result by the count at the
    moment of the bet; prints each wager's expectation by count with 95% intervals, the
    trigger count from which it stays positive, the fraction of rounds at or above it, the
    counter's edge betting only there, the win per 100 rounds at the wager's maximum bet,
    and a verdict.  docs/protection.md explains how to read it."""
    from feltlab.cli.render.progress import rounds_progress
    from feltlab.simulation.protection import protect

    if as_json and fmt != "table":
        raise click.UsageError(f"give --json or --format {fmt}, not both")
    wagers = _wagers(wager, every, paytable)
    specs = _counts(count_names, rules.decks)
    console = make_console(stderr=True)
    runs = len(specs) * (len(wagers) if any(not isinstance(s, Count) for s in specs) else 1)
    with rounds_progress(console, quiet=as_json) as bar:
        task = bar.add_task("counting", total=rounds * runs)
        finished = 0
        last = 0

        def progress(n: int) -> None:
            nonlocal finished, last
            if n < last:  # a new run
                finished += last
            last = n
            bar.update(task, completed=finished + n)

        try:
            report = protect(
                rules,
                wagers,
                specs,
                rounds,
                rules_name=rules_name,
                seed=seed,
                resolution=resolution,
                min_rounds=min_rounds,
                progress=progress,
            )
        except FeltlabError as exc:
            raise Refused(str(exc)) from None
    if not report.results:
        why = "; ".join(f"{s.wager}: {s.reason}" for s in report.skipped)
        raise Refused(f"no wager to report: {why}")
    if plot_path is not None:
        plot_report(report, plot_path)
    detail = wager is not None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    elif fmt == "md":
        click.echo(render_markdown(report, detail), nl=False)
    else:
        print_report(report, detail)
    if plot_path is not None:
        click.echo(f"wrote {plot_path}", err=True)
