"""How the rig's reports write a figure, a verdict and a raw-output test's row: one way for
the HTML report, the terminal, ``feltlab view`` and the live page."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def fmt(x: Any) -> str:
    """A number for a report cell: 4 significant figures, blank for missing."""
    if x is None:
        return ""
    if isinstance(x, float):
        if not math.isfinite(x):
            return ""
        return f"{x:.4g}"
    return str(x)


NOT_JUDGED = "not judged"
"""What a figure reported without a limit (a p50, a p95) shows instead of a verdict."""


def shown_verdict(m: Mapping[str, Any]) -> str:
    """The verdict a report shows for record measurement ``m``: its own, except
    :data:`NOT_JUDGED` for a PASS with no limit at all (a figure only reported, which no
    limit could fail)."""
    verdict = str(m.get("verdict"))
    if verdict == "PASS" and m.get("low") is None and m.get("high") is None:
        return NOT_JUDGED
    return verdict


def rng_test_row(t: Mapping[str, Any]) -> dict[str, Any]:
    """One SP 800-22 test of a raw-output record (``rng.tests``, rig/certify/rng_certificate.py)
    as a row of :func:`checks_of`: its NOT RUN reason, else its first failing columns, else
    its smallest proportion of passing sequences; the smallest uniformity P-value."""
    failing = [f"{lab} {which}".strip() for lab, which in t.get("failing") or []]
    more = len(failing) - 3
    prop, unif = t.get("min_proportion"), t.get("min_uniformity_p")
    value = (
        t.get("not_run")
        or ", ".join(failing[:3]) + (f" (+{more} more)" if more > 0 else "")
        or (None if prop is None else f"min proportion {prop:.4f}")
    )
    return {
        "name": f"sp800_22.{t.get('name')}",
        "value": value,
        "unit": "",
        "limits": None if unif is None else f"min P_T = {unif:.3g}",
        "verdict": str(t.get("verdict")),
    }
