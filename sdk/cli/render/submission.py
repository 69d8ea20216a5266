"""The views of a vendor's submission (``feltlab submit``, docs/submission.md):
``certificate.md`` and ``certificate.html`` (print-ready, one page a paytable), rendered by
jinja2 from :func:`feltlab.submission.documents.certificate_dict`'s data, every figure
written by :mod:`feltlab.cli.render.text`.  No time, host or path goes in: the same data
gives the same bytes."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.cli.render.text import odds_to_one, percent
from feltlab.submission.certificate import ANALYZER
from feltlab.submission.grid import CSM

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).with_name("templates")
VIEWS = ("certificate.md", "certificate.html")
"""The views this module renders, in the manifest's order."""


def _exact_percent(d: dict[str, Any] | None, digits: int = 4) -> str:
    """An exact figure ``{"exact", "value"}`` (a fraction of one) in percent; "" for None."""
    return percent(None if d is None else d["value"], digits)


def _num(x: float | None, n: int = 6) -> str:
    return "" if x is None else f"{x:.{n}f}"


FILTERS: dict[str, Any] = {
    "pct": _exact_percent,
    "percent": percent,
    "frac": lambda d: "" if d is None else str(d["exact"]),
    "num": _num,
    "odds": lambda d: odds_to_one(None if d is None else d["value"]),
    "prob": lambda d: f"{d['value']:.10f}",
    "z": lambda x: f"{x:+.2f}",
    "int": lambda x: f"{x:,}",
}
"""The templates' number formats (jinja2 filters): ``pct`` an exact figure in percent,
``percent`` a float fraction of one, ``odds`` true odds to 1 (:mod:`feltlab.cli.render.text`
each), ``frac`` the exact fraction, ``num`` a float to n decimals, ``prob`` a probability to
10 decimals, ``z`` a signed z, ``int`` a count with thousands grouped."""


@cache
def _environment() -> jinja2.Environment:
    import jinja2  # start-up: jinja2 only when documents are written

    env = jinja2.Environment(
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    )
    env.filters.update(FILTERS)
    return env


def pages(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The certificate's pages: one a paytable, its cells and its distinct exact sheets
    (one a deck count and dealer rule)."""
    out = []
    for pt in data["paytables"]:
        cells = [c for c in data["cells"] if c["paytable"] == pt["name"]]
        sheets = []
        seen = set()
        for c in cells:
            k = (c["decks"], c["dealer"])
            if k not in seen:
                seen.add(k)
                sheets.append(c)
        out.append({"paytable": pt, "cells": cells, "sheets": sheets})
    return out


def render(data: dict[str, Any], name: str) -> str:
    """``data`` (:func:`feltlab.submission.documents.certificate_dict`) through the template
    ``name`` (``certificate.md`` or ``certificate.html``).  Raises
    ``jinja2.TemplateNotFound`` for another name."""
    return (
        _environment()
        .get_template(f"{name}.j2")
        .render(d=data, pages=pages(data), analyzer=ANALYZER, csm=CSM)
    )


def render_documents(data: dict[str, Any]) -> dict[str, str]:
    """Both views of ``data``: ``{"certificate.md": text, "certificate.html": text}``."""
    return {name: render(data, name) for name in VIEWS}
