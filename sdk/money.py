"""Money as text: feltlab keeps money in integer cents (docs/design.md, "Data model") and
prints it in one way everywhere (the play log, the command line, the tournament's prize
list)."""

from __future__ import annotations


def money(cents: int, *, signed: bool = False, grouping: bool = False) -> str:
    """``cents`` (an int, cents) as dollars: ``$12.50``, ``-$1.50``; ``signed``: a ``+`` on
    gains too (``+$12.50``), for a settlement; ``grouping``: thousands separated
    (``$1,234,567.00``), for a prize pool.  Raises TypeError for a non-integer amount
    (money is never a float)."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        raise TypeError(f"money is integer cents, got {type(cents).__name__} {cents!r}")
    sign = "-" if cents < 0 else ("+" if signed else "")
    dollars, rest = divmod(abs(cents), 100)
    whole = f"{dollars:,}" if grouping else str(dollars)
    return f"{sign}${whole}.{rest:02d}"


__all__ = ["money"]
