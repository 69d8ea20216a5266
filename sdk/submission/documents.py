"""The documents of a submission: ``certificate.json`` (every figure), ``certificate.md``,
``certificate.html`` (print-ready, one page a paytable; jinja2, as the rig's reports) and
``manifest.json`` (the SHA-256 of each, feltlab's version and commit, the wager package's
version, the seeds and the settings).  This module holds the data (every figure, as
``certificate.json`` writes it) and the manifest; the Markdown and HTML views are
:mod:`feltlab.cli.render.submission`'s.

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
from collections.abc import Mapping
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

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


def pays_text(x: Fraction | None) -> str:
    """Payout odds: ``"5 to 1"``, ``"3 to 2"``, ``"lose"``, ``"push"``."""
    if x is None:
        return "jackpot"
    if x < 0:
        return "lose" if x == -1 else f"lose {-x}"
    if x == 0:
        return "push"
    return f"{x.numerator} to {x.denominator}"


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


def sha256_text(text: str) -> str:
    """The SHA-256 of ``text`` in UTF-8, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_documents(
    cert: Certificate, data: dict[str, Any], views: Mapping[str, str], out_dir: Path
) -> dict[str, str]:
    """Write the documents of ``cert`` into ``out_dir`` (created when missing): ``data``
    (:func:`certificate_dict`) as ``certificate.json`` and ``views``, its Markdown and HTML
    (``{"certificate.md": text, "certificate.html": text}``, from
    :func:`feltlab.cli.render.submission.render_documents`); then ``manifest.json``.  Returns
    the manifest's {file: sha256}.  Raises OSError when a file cannot be written and
    ValueError when ``views`` is not the two views of :data:`FILES`."""
    if set(views) != set(FILES) - {"certificate.json"}:
        raise ValueError(f"views must be {sorted(set(FILES) - {'certificate.json'})}")
    texts = {"certificate.json": dumps(data) + "\n", **views}
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
