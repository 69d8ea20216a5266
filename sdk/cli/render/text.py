"""The command line's one way of writing a figure as text: percentages, dollars from cents,
an estimate with its 95% half-width, a paytable's pays.  Every renderer of
:mod:`feltlab.cli.render` and the commands that print their own small tables (``protect``,
the rig's ``certify csm-audit``) use these, so a figure reads the same in every output."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any


def _missing(x: float | Fraction | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def percent(
    x: float | Fraction | None, digits: int = 4, *, signed: bool = False, missing: str = ""
) -> str:
    """``x`` (a fraction of one, e.g. 0.0123) in percent with ``digits`` decimals
    (``"1.2300%"``; ``signed``: ``"+1.2300%"``); ``missing`` for None or NaN."""
    if _missing(x):
        return missing
    assert x is not None
    return f"{100 * float(x):{'+' if signed else ''}.{digits}f}%"


def dollars(cents: float | None, *, missing: str = "-") -> str:
    """An amount of cents that may be fractional (an expectation, not a payment: those are
    :func:`feltlab.money.money`'s) as signed dollars with thousands grouped,
    ``"+1,234.50"``; ``missing`` for None or NaN."""
    if _missing(cents):
        return missing
    assert cents is not None
    return f"{cents / 100:+,.2f}"


def plus_minus_percent(
    value: float | Fraction | None, half_width: float | Fraction | None, digits: int = 3
) -> str:
    """An estimate and its half-width in percent, ``"+1.234% ± 0.100%"``, each ``"-"`` when
    None or NaN."""
    return (
        f"{percent(value, digits, signed=True, missing='-')} ± "
        f"{percent(half_width, digits, missing='-')}"
    )


def estimate_percent(iv: Mapping[str, Any] | None, digits: int = 3) -> str:
    """An estimate ``{"value": v, "half_width": h}`` (fractions of one; ``half_width`` may be
    missing) as ``"+1.234% ± 0.100%"``; ``"-"`` for None or a None value."""
    if not iv or iv.get("value") is None:
        return "-"
    hw = iv.get("half_width")
    return percent(iv["value"], digits, signed=True) + (
        f" ± {percent(hw, digits)}" if hw is not None else ""
    )


def estimate_dollars(iv: Mapping[str, Any] | None) -> str:
    """An estimate ``{"value": v, "half_width": h}`` in cents as ``"+12.34 ± 1.05"``
    dollars (a missing half-width as 0); ``"-"`` for None or a None value."""
    if not iv or iv.get("value") is None:
        return "-"
    hw = iv.get("half_width") or 0.0
    return f"{dollars(iv['value'])} ± {hw / 100:,.2f}"


def pays_ratio(x: Fraction | None) -> str:
    """A paytable line's pays as a PAR sheet writes it: ``"3:2"``, ``"5:1"``, ``"lose"`` for a
    loss, ``"jackpot"`` for None (a prize the panel pays)."""
    if x is None:
        return "jackpot"
    if x < 0:
        return "lose"
    return f"{x.numerator}:{x.denominator}" if x.denominator != 1 else f"{x.numerator}:1"


def percentage_points(x: float) -> str:
    """A difference of two fractions of one (an error in the house edge) in percentage
    points to 3 significant digits: 0.0219 -> ``"2.19 points"``, 0.01 -> ``"1 point"``."""
    text = f"{100 * x:.3g}"
    return f"{text} point" + ("" if text == "1" else "s")


def amount(x: float) -> str:
    """An amount in the currency's units as a casino's files give it (a trial's handle and
    win: dollars, not cents), unsigned with thousands grouped and two decimals:
    ``"1,234.50"``."""
    return f"{x:,.2f}"


def odds_to_one(x: float | None) -> str:
    """True odds against an outcome, ``X`` to 1 with 4 decimals and thousands grouped
    (``"1,234.5678 to 1"``); ``"impossible"`` for None (an outcome of probability 0)."""
    return "impossible" if x is None else f"{x:,.4f} to 1"
