"""Reading a field trial's CSV (feltlab.math.trial_data): the rows summed by date, drop
converted to handle by the declared ratio, and every bad row named in one line."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from feltlab.math.trial_data import (
    TrialDataError,
    by_table,
    parse_rows,
    period_label,
    periods,
    read_trial,
    write_trial,
)

GOOD = """date,table,handle,win,bets
2026-03-01,BJ1,1000.00,55.00,200
2026-03-01,BJ2,500,-20,50
2026-03-02,BJ1,"1,250.50",100,250
"""


def test_rows_are_summed_by_date_in_date_order() -> None:
    rows = parse_rows(GOOD.replace("2026-03-01", "2026-03-03"))
    ps = periods(rows)
    assert [p.label for p in ps] == ["2026-03-02", "2026-03-03"]
    assert (ps[1].rows, ps[1].handle, ps[1].win, ps[1].bets) == (2, 1500.0, 35.0, 250)
    # the win's variance is sigma^2 * sum(H^2 / n) over the date's tables
    assert ps[1].handle_sq_per_bet == 1000.0**2 / 200 + 500.0**2 / 50
    assert ps[0].handle == 1250.5
    tables = by_table(rows)
    assert [(t.label, t.rows, t.handle, t.win, t.bets) for t in tables] == [
        ("BJ1", 2, 2250.5, 155.0, 450), ("BJ2", 1, 500.0, -20.0, 50),
    ]  # fmt: skip


def test_drop_becomes_handle_by_the_declared_ratio() -> None:
    text = "Date, Table, Drop, Win, Bets\n2026-03-01,1,200,55,200\n"
    with pytest.raises(TrialDataError, match=r"gives drop, not handle: declare .*--drop-to-handle"):
        parse_rows(text)
    with pytest.raises(TrialDataError, match=r"win 300 exceeds the handle 250 \(drop 50 / 0.2\)"):
        parse_rows("date,table,drop,win,bets\n2026-03-01,1,50,300,20\n", drop_to_handle=0.2)
    (row,) = parse_rows(text, drop_to_handle=0.2)
    assert (row.date, row.table, row.handle, row.win, row.bets) == (
        dt.date(2026, 3, 1), "1", 1000.0, 55.0, 200,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "t.csv is empty: the first line must name the columns"),
        ("date,table,handle,win\n", "t.csv line 1: no bets column"),
        ("date,table,win,bets\n", r"t.csv line 1: no handle \(or drop\) column"),
        ("date,table,handle,win,bets\n", "t.csv has a header but no data rows"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,5,ten\n",
         r"t.csv row 1 \(line 2\): bets 'ten' is not a number"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,5,20\n2026-03-02,A,100,x,20\n",
         r"t.csv row 2 \(line 3\): win 'x' is not a number"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,5,-20\n", "bets '-20' is negative"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,5,2.5\n", "not a whole number of bets"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,150,20\n",
         "win 150 exceeds the handle 100; a player loses at most the stake"),
        ("date,table,handle,win,bets\n03/01/2026,A,100,5,20\n",
         r"date '03/01/2026' is not a date written YYYY-MM-DD"),
        ("date,table,handle,win,bets\n2026-02-30,A,100,5,20\n", "is not a date written"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,5,20\n2026-03-01,A,10,1,2\n",
         r"row 2 \(line 3\): table 'A' on 2026-03-01 appears twice \(first at line 2\)"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,5,0\n", "0 bets with a handle of 100"),
        ("date,table,handle,win,bets\n2026-03-01,A,-100,5,20\n", "negative handle"),
        ("date,table,handle,win,bets\n2026-03-01,,100,5,20\n", "the table is empty"),
        ("date,table,handle,win,bets\n2026-03-01,A,100\n", "3 fields, the header names 5"),
        ("date,table,handle,win,bets\n2026-03-01,A,nan,5,20\n", "missing or not finite"),
        ("date,table,handle,win,bets\n2026-03-01,A,1e308,5,20\n", "handle '1e308' is beyond 1e"),
        ("date;table;handle;win;bets\n2026-03-01;A;100;5;20\n", "win, bets separated by commas"),
        ("date,table,handle,win,bets\n2026-03-01,A,100,-2600,20\n",
         r"the players won 2600 on a handle of 100, more than the paytable's top payout \(25"),
        ("date,table,handle,win,bets\n2026-03-01,A,1e-300,0,1\n",
         r"row 1 \(line 2\): a handle of 1e-300 is outside 0.01 to 1e\+15 \(a cent to"),
        ("date,table,handle,Handle,win,bets\n",
         r"t.csv line 1: the column 'handle' is named twice \(columns 3 and 4\)"),
        ("date,table,handle,win,bets\n2026-03-01,A,1,234,5,20\n",
         r"row 1 \(line 2\): 6 fields, the header names 5; .* is written in quotes"),
        ('date,table,handle,win,bets\n2026-03-01,A,"1,2,3,4",5,20\n',
         "handle '1,2,3,4' has commas that are not thousands separators"),
        ('date,table,handle,win,bets\n2026-03-01,A,"1234,5",5,20\n', "not thousands separators"),
        ('date,table,handle,win,bets\n2026-03-01,A,"12,34.5",5,20\n', "not thousands separators"),
    ],
)  # fmt: skip
def test_a_bad_row_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(TrialDataError, match=message) as info:
        parse_rows(text, "t.csv", max_pays=25)
    assert "\n" not in str(info.value)


def test_grouped_amounts_and_blank_trailing_fields_are_read() -> None:
    text = (
        "date,table,handle,win,bets\n"
        '2026-03-01,A,"$1,234,567.50","-1,000",20,,\n'
        '2026-03-02,A,"+12,345.",-0.5,"1,000"\n'
    )
    first, second = parse_rows(text)
    assert (first.handle, first.win, first.bets) == (1234567.5, -1000.0, 20)
    assert (second.handle, second.win, second.bets) == (12345.0, -0.5, 1000)


@pytest.mark.parametrize("ratio", [1e-320, 0.0009, 1000.5, float("inf"), float("nan")])
def test_a_drop_to_handle_ratio_outside_a_thousandth_to_a_thousand_is_refused(
    ratio: float,
) -> None:
    text = "date,table,drop,win,bets\n2026-03-01,1,1000,1,100\n"
    with pytest.raises(TrialDataError, match=r"ratio .* is not a number from 0.001 to 1000;"):
        parse_rows(text, drop_to_handle=ratio)
    # the range's ends are accepted; a drop the ratio makes a handle beyond 1e15 is refused
    assert parse_rows(text, drop_to_handle=0.001)[0].handle == 1e6
    assert parse_rows(text, drop_to_handle=1000)[0].handle == 1.0
    with pytest.raises(TrialDataError, match=r"a handle of 1e\+18 \(drop 1e\+15 / 0.001\)"):
        parse_rows(text.replace(",1000,", ",1e15,"), drop_to_handle=0.001)


def test_a_written_trial_reads_back(tmp_path: Path) -> None:
    rows = parse_rows(GOOD)
    write_trial(rows, tmp_path / "t.csv")
    back = read_trial(tmp_path / "t.csv")
    assert [(r.date, r.table, r.handle, r.win, r.bets) for r in back] == [
        (r.date, r.table, r.handle, r.win, r.bets) for r in rows
    ]
    with pytest.raises(TrialDataError, match="does not exist"):
        read_trial(tmp_path / "missing.csv")
    with pytest.raises(TrialDataError, match="not a regular file"):
        read_trial(tmp_path)


def test_periods_of_a_week_or_a_month() -> None:
    # ISO weeks: 2026-01-01 is a Thursday in 2026-W01; 2027-01-01 a Friday in 2026-W53
    assert period_label(dt.date(2026, 1, 1), "week") == "2026-W01"
    assert period_label(dt.date(2027, 1, 1), "week") == "2026-W53"
    assert period_label(dt.date(2026, 12, 31), "month") == "2026-12"
    rows = parse_rows(
        "date,table,handle,win,bets\n2026-01-04,A,100,5,20\n2026-01-05,A,100,5,20\n"
        "2026-02-01,A,10,1,2\n2025-12-29,A,10,1,2\n"
    )
    assert [(p.label, p.rows, p.bets) for p in periods(rows, "week")] == [
        ("2026-W01", 2, 22), ("2026-W02", 1, 20), ("2026-W05", 1, 2),
    ]  # fmt: skip
    assert [(p.label, p.bets) for p in periods(rows, "month")] == [
        ("2025-12", 2), ("2026-01", 40), ("2026-02", 2),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown period 'year'"):
        periods(rows, "year")
