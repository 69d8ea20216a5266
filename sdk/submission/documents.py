"""The documents of a submission: ``certificate.json`` (every figure), ``certificate.md``,
``certificate.html`` (print-ready, one page a paytable; jinja2, as the rig's reports) and
``manifest.json`` (the SHA-256 of each, feltlab's version and commit, the wager package's
version, the seeds and the settings).

Byte for byte reproducible: the documents hold no time, host, path or speed (the command
prints those), exact figures are written as fractions, floats are the same IEEE doubles on
any machine, and every simulated figure is a sum of exact integer counts from a seeded
generator (:mod:`feltlab.submission.confirmation`).  The JSON is strict (RFC 8259:
:func:`feltlab.strictjson.dumps`, no NaN or infinity).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import feltlab
from feltlab import native
from feltlab.seeds import SEED_DERIVATION_VERSION
from feltlab.strictjson import dumps
from feltlab.submission.certificate import (
    ANALYZER,
    CellResult,
    Certificate,
    cell_dealer_rules,
)
from feltlab.submission.confirmation import RECHECK_FACTOR, Z_LIMIT, family_false_alarm
from feltlab.submission.grid import CSM

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).with_name("templates")
FILES = ("certificate.json", "certificate.md", "certificate.html")
"""The documents, in the manifest's order (the manifest itself is ``manifest.json``)."""
MANIFEST_VERSION = "1"


def fraction(x: Fraction | None) -> dict[str, Any] | None:
    """An exact figure as ``{"exact": "p/q", "value": float}`` (None stays None)."""
    if x is None:
        return None
    return {"exact": f"{x.numerator}/{x.denominator}", "value": float(x)}


def true_odds(p: Fraction) -> Fraction | None:
    """The true odds against an outcome of probability ``p``, as X (to 1): ``(1 - p) / p``;
    None for an impossible outcome."""
    return None if p == 0 else (1 - p) / p


def odds_text(x: Fraction | None) -> str:
    """``X to 1`` with X to 4 significant decimals ("impossible" for None)."""
    if x is None:
        return "impossible"
    return f"{float(x):,.4f} to 1"


def pays_text(x: Fraction | None) -> str:
    """Payout odds: ``"5 to 1"``, ``"3 to 2"``, ``"lose"``, ``"push"``."""
    if x is None:
        return "jackpot"
    if x < 0:
        return "lose" if x == -1 else f"lose {-x}"
    if x == 0:
        return "push"
    return f"{x.numerator} to {x.denominator}"


def percent(x: float | Fraction | None, digits: int = 4) -> str:
    """``x`` in percent with ``digits`` decimals ("" for None)."""
    return "" if x is None else f"{100 * float(x):.{digits}f}%"


def fraction_text(x: Fraction) -> str:
    """``p/q`` (an integer as itself)."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _cell_dict(r: CellResult, protect_rounds: int) -> dict[str, Any]:
    s = r.sheet
    c = r.confirmation
    return {
        "key": r.cell.key,
        "paytable": r.cell.paytable,
        "decks": r.cell.decks,
        "dealing": r.cell.dealing,
        "dealer": r.cell.dealer,
        "dealer_rule": cell_dealer_rules(r.cell),
        "penetration": r.penetration,
        "rules": r.rules.to_dict(),
        "method": r.method,
        "method_detail": s.method,
        "note": s.note,
        # the analyzer gives probabilities, not counts of deals: no combinations to state
        "total_combinations": None if r.method == ANALYZER else s.total_combinations,
        "outcomes": [
            {
                "outcome": ln.outcome,
                "combinations": None if r.method == ANALYZER else ln.combinations,
                "probability": fraction(ln.probability),
                "true_odds": fraction(true_odds(ln.probability)),
                "payout_odds": pays_text(ln.pays),
                "pays": fraction(ln.pays),
                "return": fraction(ln.return_),
            }
            for ln in s.lines
        ],
        "house_edge": fraction(s.house_edge),
        "hit_frequency": fraction(s.hit_frequency),
        "variance": fraction(s.variance),
        "std_dev": s.std_dev,
        "element_of_risk": fraction(s.house_edge),
        "element_of_risk_note": (
            "no decision changes the wager's amount: the element of risk (the house's win "
            "over the total wagered) equals the house edge"
        ),
        "confirmation": None if c is None else c.to_dict(),
        "countability": {
            "rounds_a_count": protect_rounds,
            "seed": r.protect_seed,
            "counts": [x.to_dict() for x in r.countability],
        },
    }


def provenance(cert: Certificate) -> dict[str, Any]:
    """Where the figures come from: feltlab's version and commit, the wager's package and
    its version, the C simulator's, analyzer's and seed derivation's versions."""
    dist, version = wager_package(type(cert.wager))
    return {
        "feltlab_version": feltlab.__version__,
        "feltlab_commit": source_commit(),
        "wager_package": dist,
        "wager_package_version": version,
        "simulator_version": native.SIM_VERSION,
        "analyzer_version": native.analyzer.ANALYZER_VERSION,
        "seed_derivation": SEED_DERIVATION_VERSION,
    }


def certificate_dict(cert: Certificate) -> dict[str, Any]:
    """Every figure of ``cert`` as JSON-serialisable data (what ``certificate.json`` holds and
    the Markdown and HTML render)."""
    w = cert.wager
    cells = [_cell_dict(r, cert.protect_rounds) for r in cert.cells]
    confirmed = sum(1 for r in cert.cells if r.confirmation is not None)
    return {
        "certificate_version": MANIFEST_VERSION,
        "wager": {
            "name": w.name,
            "title": w.title,
            "rule": w.rule,
            "placed": w.placed.value,
            "decided": w.decided.value,
            "decks": [w.min_decks, w.max_decks],
            "doc": (type(w).__doc__ or "").strip(),
        },
        "form": cert.form.to_dict(),
        "paytables": [
            {
                "name": name,
                "source": type(w).paytables[name].source,
                "outcomes": [
                    {"outcome": o, "payout_odds": pays_text(p), "pays": fraction(p)}
                    for o, p in zip(
                        type(w).paytables[name].outcomes, type(w).paytables[name].pays, strict=True
                    )
                ],
            }
            for name in cert.grid.paytables
        ],
        "restrictions": [{"what": r.what, "why": r.why} for r in cert.grid.restrictions],
        "settings": {
            "seed": cert.seed,
            "rounds_a_confirmation": cert.rounds,
            "protect_rounds_a_count": cert.protect_rounds,
            "counts": list(cert.counts),
            "z_limit": Z_LIMIT,
            "recheck_factor": RECHECK_FACTOR,
        },
        "confirmed_cells": confirmed,
        "family_false_alarm": family_false_alarm(confirmed),
        "provenance": provenance(cert),
        "cells": cells,
    }


def wager_package(wager_type: type) -> tuple[str, str]:
    """The installed distribution that provides ``wager_type``'s module and its version
    (``("feltlab", version)`` for a built-in); ``("unknown", "unknown")`` for a module no
    distribution lists (e.g. a test's own class)."""
    top = wager_type.__module__.split(".")[0]
    dists = importlib.metadata.packages_distributions().get(top, [])
    if not dists:
        return "unknown", "unknown"
    name = sorted(dists)[0]
    return name, importlib.metadata.version(name)


@cache
def source_commit() -> str:
    """The git commit of the feltlab source the package runs from (``+dirty`` when the
    checkout has changes), or ``"unknown"`` outside a checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _by_paytable(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The certificate's pages: one a paytable, its cells and its distinct exact sheets."""
    pages = []
    for pt in data["paytables"]:
        cells = [c for c in data["cells"] if c["paytable"] == pt["name"]]
        sheets = []
        seen = set()
        for c in cells:
            k = (c["decks"], c["dealer"])
            if k not in seen:
                seen.add(k)
                sheets.append(c)
        pages.append({"paytable": pt, "cells": cells, "sheets": sheets})
    return pages


def _pct(d: dict[str, Any] | None, n: int = 4) -> str:
    return "" if d is None else f"{100 * d['value']:.{n}f}%"


def _frac(d: dict[str, Any] | None) -> str:
    return "" if d is None else str(d["exact"])


def _num(x: float | None, n: int = 6) -> str:
    return "" if x is None else f"{x:.{n}f}"


def _odds(d: dict[str, Any] | None) -> str:
    return "impossible" if d is None else f"{d['value']:,.4f} to 1"


FILTERS: dict[str, Any] = {
    "pct": _pct,
    "frac": _frac,
    "num": _num,
    "odds": _odds,
    "prob": lambda d: f"{d['value']:.10f}",
    "z": lambda x: f"{x:+.2f}",
    "int": lambda x: f"{x:,}",
}
"""The templates' number formats (jinja2 filters)."""


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


def render(data: dict[str, Any], name: str) -> str:
    """``data`` (:func:`certificate_dict`) through the template ``name`` (``certificate.md``
    or ``certificate.html``)."""
    return (
        _environment()
        .get_template(f"{name}.j2")
        .render(
            d=data,
            pages=_by_paytable(data),
            analyzer=ANALYZER,
            csm=CSM,
        )
    )


def sha256_text(text: str) -> str:
    """The SHA-256 of ``text`` in UTF-8, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_documents(cert: Certificate, out_dir: Path) -> dict[str, str]:
    """Write the documents of ``cert`` into ``out_dir`` (created when missing) and return
    the manifest's {file: sha256}.  Raises OSError when a file cannot be written."""
    data = certificate_dict(cert)
    texts = {
        "certificate.json": dumps(data) + "\n",
        "certificate.md": render(data, "certificate.md"),
        "certificate.html": render(data, "certificate.html"),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (out_dir / name).write_text(text, encoding="utf-8")
    digests = {name: sha256_text(texts[name]) for name in FILES}
    seeds = {
        c["key"]: {
            "confirmation": None if c["confirmation"] is None else c["confirmation"]["seed"],
            "protect": c["countability"]["seed"],
        }
        for c in data["cells"]
    }
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "algorithm": "sha256",
        "files": digests,
        "wager": cert.wager.name,
        "jurisdiction": cert.form.key or None,
        "paytables": list(cert.grid.paytables),
        **data["provenance"],
        "settings": data["settings"],
        "seeds": seeds,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return digests
