"""``feltlab indices``' Hi-Lo index table as text: one row of strings per departure
(:func:`rows`, also the terminal table's) and the whole table as JSON or Markdown
(:func:`index_table_text`)."""

from __future__ import annotations

import json

from feltlab.math.indices import INSURE, PLAY_NAMES, Index, IndexTable


def _cell(x: Index) -> tuple[str, str, str, str]:
    if x.index is None:
        reach = f"{x.bound} the grid" if x.bound in ("below", "above") else x.bound
        return (reach, "", "", "")
    exact = f" (= {x.exact})" if x.exact is not None else ""
    diff = x.difference
    return (f"{x.index:+.2f}{exact}", f"{x.linear:+.2f}", f"{x.rounded:+d}", f"{diff:+d}")


def rows(table: IndexTable) -> list[tuple[str, ...]]:
    """One row of strings per departure: departure, play at or above the index (below it),
    index, linear, rounded, published, rounded less published."""
    out: list[tuple[str, ...]] = []
    for x in table.indices:
        d = x.departure
        idx, lin, rnd, diff = _cell(x)
        plays = f"{PLAY_NAMES[d.high]} ({PLAY_NAMES[d.low]} below)"
        if d.high == INSURE:
            plays = "insure (decline below)"
        out.append((d.name, plays, idx, lin, rnd, f"{d.published:+d}", diff))
    return out


HEADERS = ("departure", "at or above the index", "index", "linear", "rounded", "published", "diff")
"""Column headings of :func:`rows`."""


def index_table_text(table: IndexTable, fmt: str) -> str:
    """``table`` as "json" or "md" (a Markdown table with the method and the rules)."""
    if fmt == "json":
        return json.dumps(table.to_dict(), indent=2) + "\n"
    if fmt != "md":
        raise ValueError(f"format must be json or md, got {fmt!r}")
    r = table.rules
    lines = [
        f"# Hi-Lo indices: {table.rules_name or 'custom rules'}",
        "",
        f"- rules: {r.decks} decks, {'H17' if r.dealer_hits_soft_17 else 'S17'}, "
        f"{'peek' if not r.no_hole_card else 'no hole card'}, double {r.double_on.value}, "
        f"{'DAS' if r.double_after_split else 'no DAS'}, split to {r.max_split_hands} hands, "
        f"surrender {r.surrender.value}, blackjack pays {r.blackjack_pays}",
        f"- expected shoe at each true count with {float(table.decks_remaining):g} decks "
        f"remaining; grid step {float(table.step):.3g} true counts; CDZ- expectations",
        f"- {table.analyses} analyses in {table.seconds:.1f} s",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows(table)]
    if table.caveat() is not None:
        lines += ["", f"**Caveat**: {table.caveat()}."]
    return "\n".join(lines) + "\n"
