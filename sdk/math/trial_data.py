"""A field trial's or a floor's daily data: the CSV of rows ``date, table, handle (or drop),
win, bets`` read and checked row by row, then summed into periods (one period a date).

The columns (a header row names them, in any order, case and spaces ignored; other columns
are ignored):

- ``date``: the gaming day, ISO 8601 ``YYYY-MM-DD``;
- ``table``: the table's name or number (a date may hold several tables, each once);
- ``handle``: the amount wagered on the wager (currency units, e.g. dollars); or ``drop``,
  the cash and chips in the drop box, with the drop-to-handle ratio the operator declares
  (``handle = drop / ratio``; a table game's drop is a fraction of its handle);
- ``win``: the house's win on the wager (negative when the players won);
- ``bets``: the number of bets of the wager.

A bad row raises :class:`TrialDataError` naming the row (its line in the file) and the
problem: a missing column or one named twice, a row with fewer or more (non-empty) fields
than the header, a value that is not a number (commas only as thousands separators, in
groups of three digits), a negative count, a positive handle below a cent
(:data:`MIN_HANDLE`), a win larger than the handle (a player can lose at most the stake), a
loss beyond what the paytable can pay, a date that is not ``YYYY-MM-DD``, a table twice on
one date, an empty file.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from feltlab.errors import InputError
from feltlab.inputs import read_text_regular

MAX_BYTES = 64 * 1024 * 1024
"""The largest trial file read (64 MiB: about a million rows, a floor's years of days)."""

MAX_AMOUNT = 1e15
"""The largest handle, drop, win or count of bets a row may give (a quadrillion: far above
any table's day, far below where a square of it overflows a float)."""

MIN_HANDLE = 0.01
"""The smallest positive handle a row may give (a cent): below it the handle is no amount
wagered, and its square (the hold's variance) underflows a float to 0."""

DROP_TO_HANDLE = (0.001, 1000.0)
"""The range of a declared drop-to-handle ratio (drop / handle): a table's drop is a
fraction of its handle (about 0.2 at a table game), so a thousandth to a thousand bounds
every real one with room, and keeps ``drop / ratio`` a finite float."""

COLUMNS = ("date", "table", "win", "bets")
"""The columns every file names, beside ``handle`` or ``drop``."""


class TrialDataError(InputError):
    """A trial file that cannot be read as trial data; the message names the file, the row
    (its line) and the problem, in one line."""


@dataclass(frozen=True)
class TrialRow:
    """One table's day: ``handle`` and ``win`` in currency units (``handle`` already
    converted from the drop where the file gave drop), ``bets`` a count; ``line`` is the
    row's line in the file (the header is line 1)."""

    date: dt.date
    table: str
    handle: float
    win: float
    bets: int
    line: int


@dataclass(frozen=True)
class Period:
    """One period of the trial (a date, week or month; or one table over the trial), its
    ``rows`` summed: ``handle`` and ``win`` in currency units, ``bets`` a count, and
    ``handle_sq_per_bet`` = sum over its rows of ``handle**2 / bets``: the win's variance is
    ``sigma**2 * handle_sq_per_bet`` for a wager of per-unit standard deviation ``sigma`` when
    each row's bets are of its average size (``handle / bets``)."""

    label: str
    rows: int
    handle: float
    win: float
    bets: int
    handle_sq_per_bet: float


_GROUPED = re.compile(r"[-+]?\$?\d{1,3}(,\d{3})+(\.\d*)?")
"""A number written with thousands separators: commas between groups of three digits."""


def _number(text: str, column: str, where: str) -> float:
    if "," in text and not _GROUPED.fullmatch(text.strip()):
        raise TrialDataError(
            f"{where}: {column} {text!r} has commas that are not thousands separators "
            "(groups of three digits); write it as 1234.56 or 1,234.56"
        )
    try:
        value = float(text.replace(",", "").replace("$", "")) if text.strip() else math.nan
    except ValueError:
        raise TrialDataError(
            f"{where}: {column} {text!r} is not a number; write it as 1234.56"
        ) from None
    if not math.isfinite(value):
        raise TrialDataError(f"{where}: {column} {text!r} is missing or not finite; give a number")
    if abs(value) > MAX_AMOUNT:
        raise TrialDataError(
            f"{where}: {column} {text!r} is beyond {MAX_AMOUNT:.0e}; give the row's own figure"
        )
    return value


def _count(text: str, where: str) -> int:
    value = _number(text, "bets", where)
    if value != int(value):
        raise TrialDataError(f"{where}: bets {text!r} is not a whole number of bets")
    if value < 0:
        raise TrialDataError(f"{where}: bets {text!r} is negative; a count is 0 or more")
    return int(value)


def _date(text: str, where: str) -> dt.date:
    try:
        if len(text.strip()) != 10:
            raise ValueError
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise TrialDataError(
            f"{where}: date {text!r} is not a date written YYYY-MM-DD (ISO 8601); "
            "write e.g. 2026-03-12"
        ) from None


def _header(
    fields: Sequence[str] | None, name: str, drop_to_handle: float | None
) -> dict[str, int]:
    if not fields or not any(f.strip() for f in fields):
        raise TrialDataError(
            f"{name} is empty: the first line must name the columns date, table, handle "
            "(or drop), win, bets"
        )
    index: dict[str, int] = {}
    for i, f in enumerate(fields):
        key = f.strip().lower()
        if key and key in index:
            raise TrialDataError(
                f"{name} line 1: the column {key!r} is named twice (columns {index[key] + 1} "
                f"and {i + 1}); name each column once"
            )
        index[key] = i
    amount = "handle" if "handle" in index else "drop" if "drop" in index else None
    missing = [c for c in COLUMNS if c not in index] + ([] if amount else ["handle (or drop)"])
    if missing:
        hint = (
            " separated by commas"
            if len(fields) == 1 and any(c in fields[0] for c in ";\t")
            else ""
        )
        raise TrialDataError(
            f"{name} line 1: no {', '.join(missing)} column; the header must name date, table, "
            f"handle (or drop), win, bets{hint}"
        )
    if amount == "drop" and drop_to_handle is None:
        raise TrialDataError(
            f"{name} gives drop, not handle: declare the drop-to-handle ratio "
            "(--drop-to-handle R, handle = drop / R)"
        )
    index["amount"] = index["handle" if amount == "handle" else "drop"]
    return index


def parse_rows(
    text: str,
    name: str = "the trial file",
    *,
    drop_to_handle: float | None = None,
    max_pays: float | None = None,
) -> list[TrialRow]:
    """The rows of trial CSV ``text`` (``name`` names the file in errors), each checked.

    ``drop_to_handle``: the declared ratio drop / handle (a positive number) for a file that
    gives ``drop``; a file with a ``handle`` column ignores it.  ``max_pays``: the wager's
    largest payout per unit (its paytable's top line): a row whose players won more than
    ``max_pays * handle`` is impossible.

    Raises :class:`TrialDataError` (one line: the file, the row's line, the problem).
    """
    low, high = DROP_TO_HANDLE
    if drop_to_handle is not None and not low <= drop_to_handle <= high:
        raise TrialDataError(
            f"the drop-to-handle ratio {drop_to_handle} is not a number from {low:g} to "
            f"{high:g}; declare the operator's drop / handle (e.g. 0.2)"
        )
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        index = _header(header, name, drop_to_handle)
        assert header is not None  # _header refused an empty file
        rows = list(_rows(reader, index, len(header), name, drop_to_handle, max_pays))
    except csv.Error as exc:
        raise TrialDataError(f"{name} line {reader.line_num}: not CSV ({exc})") from None
    if not rows:
        raise TrialDataError(f"{name} has a header but no data rows; add one row per table and day")
    return rows


def _rows(
    reader: Iterable[list[str]],
    index: dict[str, int],
    width: int,
    name: str,
    ratio: float | None,
    max_pays: float | None,
) -> Iterable[TrialRow]:
    seen: dict[tuple[dt.date, str], int] = {}
    for line, fields in enumerate(reader, start=2):
        if not fields or not any(f.strip() for f in fields):
            continue  # a blank line
        where = f"{name} row {line - 1} (line {line})"
        if len(fields) < width or any(f.strip() for f in fields[width:]):
            raise TrialDataError(
                f"{where}: {len(fields)} fields, the header names {width}; give each row "
                "the header's fields (a number with a comma is written in quotes)"
            )
        date = _date(fields[index["date"]], where)
        table = fields[index["table"]].strip()
        if not table:
            raise TrialDataError(f"{where}: the table is empty; name the table")
        amount = _number(fields[index["amount"]], "handle" if "handle" in index else "drop", where)
        handle = amount / ratio if "handle" not in index and ratio else amount
        shown = f"{handle:g}" if handle == amount else f"{handle:g} (drop {amount:g} / {ratio:g})"
        win = _number(fields[index["win"]], "win", where)
        bets = _count(fields[index["bets"]], where)
        if handle < 0:
            raise TrialDataError(
                f"{where}: negative handle {shown}; the amount wagered is 0 or more"
            )
        if 0 < handle < MIN_HANDLE or handle > MAX_AMOUNT:
            raise TrialDataError(
                f"{where}: a handle of {shown} is outside {MIN_HANDLE:g} to {MAX_AMOUNT:.0e} "
                "(a cent to a quadrillion); give the amount wagered in currency units"
            )
        if (bets == 0) != (handle == 0):
            raise TrialDataError(
                f"{where}: {bets} bets with a handle of {shown}; both are 0 or both positive"
            )
        if win > handle * (1 + 1e-9) + 0.005:
            raise TrialDataError(
                f"{where}: win {win:g} exceeds the handle {shown}; a player loses at most "
                "the stake, so the house cannot win more than the handle"
            )
        if max_pays is not None and -win > max_pays * handle * (1 + 1e-9) + 0.005:
            raise TrialDataError(
                f"{where}: the players won {-win:g} on a handle of {shown}, more than the "
                f"paytable's top payout ({max_pays:g} to 1) allows"
            )
        key = (date, table)
        if key in seen:
            raise TrialDataError(
                f"{where}: table {table!r} on {date} appears twice (first at line {seen[key]}); "
                "give one row per table and day"
            )
        seen[key] = line
        yield TrialRow(date, table, handle, win, bets, line)


def read_trial(
    path: str | Path, *, drop_to_handle: float | None = None, max_pays: float | None = None
) -> list[TrialRow]:
    """The checked rows of the trial CSV file ``path`` (UTF-8, at most :data:`MAX_BYTES`);
    :func:`parse_rows` for the arguments.  Raises :class:`TrialDataError`."""
    text = read_text_regular(path, "trial file", MAX_BYTES, TrialDataError)
    if text is None:
        raise TrialDataError(f"trial file {path} does not exist; give the CSV of the trial")
    return parse_rows(
        text.removeprefix("\ufeff"), str(path), drop_to_handle=drop_to_handle, max_pays=max_pays
    )


def _summed(label: str, rows: Sequence[TrialRow]) -> Period:
    return Period(
        label=label,
        rows=len(rows),
        handle=math.fsum(r.handle for r in rows),
        win=math.fsum(r.win for r in rows),
        bets=sum(r.bets for r in rows),
        handle_sq_per_bet=math.fsum(r.handle**2 / r.bets for r in rows if r.bets),
    )


PERIODS = ("day", "week", "month")
"""The periods rows can be summed into: a date, an ISO 8601 week (Monday to Sunday, labelled
``2026-W01``), a calendar month (``2026-01``)."""


def period_label(date: dt.date, period: str = "day") -> str:
    """The label of the ``period`` (one of :data:`PERIODS`) holding ``date``; labels sort in
    time order.  Raises ValueError for another period."""
    if period == "day":
        return date.isoformat()
    if period == "week":
        year, week, _ = date.isocalendar()
        return f"{year}-W{week:02d}"
    if period == "month":
        return f"{date.year}-{date.month:02d}"
    raise ValueError(f"unknown period {period!r}; choose from {', '.join(PERIODS)}")


def periods(rows: Sequence[TrialRow], period: str = "day") -> list[Period]:
    """The rows summed by ``period`` (:data:`PERIODS`: a date by default), in time order (a
    period with no bets is kept: its hold is undefined and it has no band); a period's
    ``rows`` counts its table-days.  Raises ValueError for an unknown period."""
    by_label: dict[str, list[TrialRow]] = {}
    for r in rows:
        by_label.setdefault(period_label(r.date, period), []).append(r)
    return [_summed(label, by_label[label]) for label in sorted(by_label)]


def by_table(rows: Sequence[TrialRow]) -> list[Period]:
    """The rows summed by table over the whole trial, in the order the tables first appear;
    each :class:`Period`'s ``label`` is the table and its ``rows`` count the table's
    days."""
    by_name: dict[str, list[TrialRow]] = {}
    for r in rows:
        by_name.setdefault(r.table, []).append(r)
    return [_summed(name, rs) for name, rs in by_name.items()]


def write_trial(rows: Iterable[TrialRow], path: str | Path) -> None:
    """Write ``rows`` as a trial CSV (``date,table,handle,win,bets``, amounts to the cent)
    that :func:`read_trial` reads back."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["date", "table", "handle", "win", "bets"])
    for r in rows:
        w.writerow([r.date.isoformat(), r.table, f"{r.handle:.2f}", f"{r.win:.2f}", r.bets])
    Path(path).write_text(buf.getvalue(), encoding="utf-8")
