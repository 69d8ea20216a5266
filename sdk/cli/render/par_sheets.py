"""``feltlab math``'s PAR sheets as terminal tables (every outcome's combinations or rounds,
probability, pays and return, then the house edge, hit frequency and standard deviation) and
as JSON, CSV or Markdown text (:func:`par_sheets_text`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.table import Table

from feltlab.cli.options import make_console
from feltlab.cli.render.text import pays_ratio, percent
from feltlab.math.parsheet import ParSheet


def how_computed(sheet: ParSheet) -> str:
    """How the house edge was computed, for a sentence: "exactly p/q" or the method."""
    if sheet.method == "exact" and sheet.total_combinations:
        return f"exactly {sheet.house_edge}"
    return sheet.method


def print_par_sheets(sheets: Sequence[ParSheet], min_decks: int, max_decks: int) -> None:
    """Print ``sheets`` on standard output, one table each; a sheet for a deck count outside
    the wager's range ``min_decks``..``max_decks`` says so in its title."""
    console = make_console()
    for sh in sheets:
        outside = not min_decks <= sh.decks <= max_decks
        t = Table(
            title=f"{sh.title}: paytable {sh.paytable}, {sh.decks} decks"
            + (f", rules {sh.rules}" if sh.rules else "")
            + f" ({sh.method})"
            + (" (outside the wager's deck range)" if outside else "")
        )
        simulated = sh.method.startswith("simulated")
        for col in (
            "outcome",
            "rounds" if simulated else "combinations",
            "probability",
            "pays",
            "return",
        ):
            t.add_column(col, justify="left" if col == "outcome" else "right")
        for ln in sh.lines:
            t.add_row(
                ln.outcome,
                f"{ln.combinations:,}" if sh.total_combinations else "-",
                f"{float(ln.probability):.8f}",
                pays_ratio(ln.pays),
                "" if ln.return_ is None else f"{float(ln.return_):+.8f}",
            )
        total = f"{sh.total_combinations:,}" if sh.total_combinations else "-"
        t.add_row("total", total, "1", "", f"{float(sh.return_):+.8f}")
        console.print(t)
        console.print(
            f"house edge {percent(sh.house_edge)} ({how_computed(sh)}), "
            f"hit frequency {percent(sh.hit_frequency)}, "
            f"standard deviation {sh.std_dev:.4f}" + (f"; {sh.note}" if sh.note else "")
        )


def par_sheets_text(sheets: Sequence[ParSheet], fmt: str) -> str:
    """The sheets as ``json``, ``csv`` or ``md`` text (``table`` is rendered by the CLI with
    rich).  Raises ValueError for another format."""
    if fmt == "json":
        return json.dumps([s.to_dict() for s in sheets], indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(
            [
                "wager",
                "paytable",
                "decks",
                "outcome",
                "combinations",
                "probability",
                "pays",
                "return",
            ]
        )
        for s in sheets:
            for ln in s.lines:
                w.writerow(
                    [
                        s.wager,
                        s.paytable,
                        s.decks,
                        ln.outcome,
                        ln.combinations,
                        f"{float(ln.probability):.12g}",
                        pays_ratio(ln.pays),
                        "" if ln.return_ is None else f"{float(ln.return_):.12g}",
                    ]
                )
            w.writerow(
                [
                    s.wager,
                    s.paytable,
                    s.decks,
                    "TOTAL",
                    s.total_combinations,
                    "1",
                    "",
                    f"{float(s.return_):.12g}",
                ]
            )
        return buf.getvalue()
    if fmt == "md":
        out: list[str] = []
        for s in sheets:
            out.append(f"### {s.title}, paytable {s.paytable}, {s.decks} decks ({s.method})\n")
            out.append("| outcome | combinations | probability | pays | return |")
            out.append("| --- | ---: | ---: | ---: | ---: |")
            for ln in s.lines:
                ret = "" if ln.return_ is None else f"{float(ln.return_):.8f}"
                out.append(
                    f"| {ln.outcome} | {ln.combinations:,} | {float(ln.probability):.8f} "
                    f"| {pays_ratio(ln.pays)} | {ret} |"
                )
            out.append(f"| **total** | {s.total_combinations:,} | 1 | | {float(s.return_):.8f} |\n")
            out.append(
                f"House edge {percent(s.house_edge)} ({how_computed(s)}), hit "
                f"frequency {percent(s.hit_frequency)}, standard deviation {s.std_dev:.4f}."
                + (f" Note: {s.note}." if s.note else "")
                + "\n"
            )
        return "\n".join(out)
    raise ValueError(f"unknown format {fmt!r}; use table, json, csv or md")
