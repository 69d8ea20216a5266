"""``feltlab math``'s PAR sheets as terminal tables: every outcome's combinations (or rounds),
probability, pays and return, then the house edge, hit frequency and standard deviation."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from feltlab.cli.options import make_console
from feltlab.math import parsheet
from feltlab.math.parsheet import ParSheet


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
