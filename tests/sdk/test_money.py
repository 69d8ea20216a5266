"""One way to print money (feltlab.money): integer cents as dollars, the sign before the
dollar sign (a loss of 150 cents is -$1.50, never $-2.50)."""

from __future__ import annotations

import pytest

from feltlab.money import money


@pytest.mark.parametrize(
    ("cents", "kw", "text"),
    [
        (0, {}, "$0.00"),
        (5, {}, "$0.05"),
        (1250, {}, "$12.50"),
        (-150, {}, "-$1.50"),
        (-1, {}, "-$0.01"),
        (0, {"signed": True}, "+$0.00"),
        (1250, {"signed": True}, "+$12.50"),
        (-150, {"signed": True}, "-$1.50"),
        (123456789, {"grouping": True}, "$1,234,567.89"),
        (-123456789, {"grouping": True}, "-$1,234,567.89"),
        (-150, {"grouping": True}, "-$1.50"),
    ],
)
def test_money(cents: int, kw: dict[str, bool], text: str) -> None:
    assert money(cents, **kw) == text


@pytest.mark.parametrize("bad", [1.5, "150", True, None])
def test_money_is_integer_cents(bad: object) -> None:
    with pytest.raises(TypeError, match="money is integer cents"):
        money(bad)  # type: ignore[arg-type]
