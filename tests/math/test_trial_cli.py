"""``feltlab trial`` (issue 43 item 4): the done-when trials, seeded, and the command's files
and refusals.

The trials are Perfect Pairs (paytable one, 6 decks: house edge 18/311, SD 4.2762) simulated
from its exact outcome distribution with numpy's PCG64 (feltlab.math.trial_simulation), so
each seed's verdict is fixed.  A priori (tests/math/test_field_trial.py measures the rates): a
trial of 300,000 bets at the certified edge is flagged with probability 5% (seed 1: z = +0.04,
p = 0.97), one 3 points higher is missed with probability 3% (seed 1: z = +4.92).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["trial", *args])
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.output


PP = ("--wager", "perfect_pairs", "--decks", "6")


def test_a_trial_at_the_certified_edge_agrees() -> None:
    code, out = _run(*PP, "--simulate", "300000", "--seed", "1")
    assert code == 0, out
    assert "certified house edge 5.7878% (exact 18/311)" in out
    assert "Trial: 300,000 bets over 90 periods (2026-01-01 to 2026-03-31)" in out
    assert "z = +0.04, p = 0.972: AGREES with the certified house edge" in out


def test_a_trial_3_points_higher_is_flagged_and_its_files_are_reproducible(
    tmp_path: Path,
) -> None:
    code, out = _run(*PP, "--simulate", "300000", "--edge-offset", "0.03", "--seed", "1",
                     "--detect", "0.01", "--out", str(tmp_path / "a"))  # fmt: skip
    assert code == 1, out
    assert "Hold 9.626% against 5.788%" in out
    assert "z = +4.92, p = 8.84e-07: DISAGREES with the certified house edge" in out
    # bets needed for one point: ((Z95 + z_0.8) * 4.2762 / 0.01)**2
    assert "To confirm an error of 1 point at 80% power: 1,435,250 bets of one size" in out
    files = {p.name for p in (tmp_path / "a").iterdir()}
    assert files == {"trial.csv", "hold.png", "report.json", "report.md", "report.html",
                     "manifest.json"}  # fmt: skip
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    for name, digest in manifest.items():
        assert hashlib.sha256((tmp_path / "a" / name).read_bytes()).hexdigest() == digest
    record = json.loads((tmp_path / "a" / "report.json").read_text())
    assert record["house_edge"]["exact"] == "18/311" and record["agrees"] is False
    assert record["bets"] == 300_000 and len(record["periods"]) == 90
    assert record["detect_bets_needed"] == 1_435_250
    html = (tmp_path / "a" / "report.html").read_text()
    assert "DISAGREES" in html and '<img src="hold.png"' in html
    assert (tmp_path / "a" / "hold.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the same command writes the same bytes (no time or version in the PNG)
    _run(*PP, "--simulate", "300000", "--edge-offset", "0.03", "--seed", "1", "--detect",
         "0.01", "--out", str(tmp_path / "b"))  # fmt: skip
    for name in files:
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes(), name
    # and the written trial, read back as DATA, gives the same report
    code, again = _run(str(tmp_path / "a" / "trial.csv"), *PP, "--detect", "0.01", "--json")
    assert code == 1 and json.loads(again) == record


def test_a_small_trial_says_what_it_cannot_detect() -> None:
    code, out = _run(*PP, "--simulate", "30000", "--seed", "3", "--json")
    assert code == 0, out
    record = json.loads(out)
    # (Z95 + z_0.8) * 4.2762 / sqrt(30000) = 6.92 points: 30,000 bets miss a 3-point error
    assert abs(record["smallest_detectable_error"] - 0.0691676520502307) < 1e-12
    code, out = _run(*PP, "--simulate", "30000", "--seed", "3", "--detect", "0.03")
    assert "the smallest house-edge error this trial confirms at 80% power (two-sided 95%) " \
        "is 6.92 points; it cannot detect a smaller one" in out  # fmt: skip
    assert "To confirm an error of 3 points at 80% power: 159,473 bets of one size; this " \
        "trial has 30,000 (not enough; its power against that error is 23%)" in out  # fmt: skip


def test_drop_data_and_bad_rows_through_the_command(tmp_path: Path) -> None:
    data = tmp_path / "floor.csv"
    data.write_text("date,table,drop,win,bets\n2026-03-01,BJ1,200,5,200\n")
    code, out = _run(str(data), *PP)
    assert code == 2 and "gives drop, not handle: declare the drop-to-handle ratio" in out
    code, out = _run(str(data), *PP, "--drop-to-handle", "0.2")
    assert code == 0 and "Trial: 200 bets over 1 period " in out and "handle 1,000.00" in out
    data.write_text("date,table,handle,win,bets\n2026-03-01,BJ1,1000,5,200\n2026-3-2,BJ1,1,1,1\n")
    code, out = _run(str(data), *PP)
    assert code == 2
    assert out.strip().splitlines() == [
        f"Error: {data} row 2 (line 3): date '2026-3-2' is not a date written YYYY-MM-DD "
        "(ISO 8601); write e.g. 2026-03-12"
    ]


def test_refusals_are_one_line_exit_2(tmp_path: Path) -> None:
    for args, message in [
        ((*PP,), "give the trial's CSV file, or --simulate BETS (not both)"),
        (("--wager", "no_such", "--simulate", "10"), "no wager 'no_such'; give --wager one of"),
        ((*PP, "--paytable", "nope", "--simulate", "10"), "--paytable:"),
        (("--wager", "perfect_pairs", "--decks", "9", "--simulate", "10"), "9 is not in"),
        ((*PP, "--simulate", "10", "--edge-offset", "0.95"), "--edge-offset: an edge offset"),
        ((str(tmp_path / "none.csv"), *PP), "does not exist"),
        ((str(tmp_path / "none.csv"), *PP, "--seed", "2"), "--seed applies to --simulate only"),
        ((*PP, "--simulate", "9", "--days", "3661"), "3661 is not in the range 1<=x<=3660"),
    ]:
        code, out = _run(*args)
        errors = [line for line in out.splitlines() if line.startswith("Error:")]
        assert code == 2 and len(errors) == 1 and message in errors[0], out


def test_a_closed_day_has_no_band_and_writes_null(tmp_path: Path) -> None:
    data = tmp_path / "floor.csv"
    data.write_text(
        "date,table,handle,win,bets\n2026-03-01,BJ1,1000,50,200\n2026-03-02,BJ1,0,0,0\n"
        "2026-03-03,BJ1,1000,-700,200\n"
    )
    code, out = _run(str(data), *PP, "--out", str(tmp_path / "r"))
    assert code == 0, out
    # day 3: 200 bets at 5, the players won 0.7 units a bet: hold -70% against a band of
    # 5.79% +- 1.96 * 4.2762 / sqrt(200) = +-59.3 points
    assert (
        "Periods outside their 95% band: 1 of 2 (about 0.1 expected by chance): 2026-03-03" in out
    )
    record = json.loads((tmp_path / "r" / "report.json").read_text())
    closed = record["periods"][1]
    assert closed["bets"] == 0 and closed["hold"] is None and closed["outside"] is False
    band = 1.959963984540054 * 4.276217864682296 / 200**0.5
    assert record["periods"][2]["high"] == pytest.approx(18 / 311 + band, rel=1e-12)
    assert (
        "| 2026-03-02 | 1 | 0 | 0.00 | 0.00 | - | - |  |"
        in (tmp_path / "r" / "report.md").read_text()
    )


def test_a_play_decided_wager_is_held_against_the_sheet_feltlab_math_prints() -> None:
    # Buster Blackjack under Vegas H17, 6 decks: the exact sheet under the rules (the Wizard
    # of Odds' 6.2143% house edge, examples/feltlab-sidebets/tests/test_play_decided.py)
    args = ("--rules", "vegas_h17", "--paytable", "wizard")
    code, out = _run("--wager", "buster_blackjack", *args, "--simulate", "1000", "--json")
    record = json.loads(out)
    assert code == (0 if record["agrees"] else 1)
    res = CliRunner().invoke(main, ["math", "buster_blackjack", *args, "--format", "json"])
    (sheet,) = json.loads(res.output)
    assert record["house_edge"] == sheet["house_edge"]
    assert round(record["house_edge"]["value"], 6) == 0.062143
    assert (record["rules"], record["decks"]) == ("vegas_h17", 6)


def test_months_as_periods() -> None:
    code, out = _run(*PP, "--simulate", "30000", "--seed", "3", "--period", "month")
    assert code == 0, out
    assert "Trial: 30,000 bets over 3 periods (2026-01 to 2026-03)" in out
    assert "Periods outside their 95% band: 0 of 3 (about 0.2 expected by chance)" in out
    # January: 62 table-days of 167 bets (the first 120 of 180 take the remainder) = 10,354
    # bets; its band is 1.96 * 4.2762 / sqrt(10,354) = +-8.24 points around the edge
    code, out = _run(*PP, "--simulate", "30000", "--seed", "3", "--period", "month", "--json")
    january = json.loads(out)["periods"][0]
    assert (january["label"], january["rows"], january["bets"]) == ("2026-01", 62, 10_354)
    band = 1.959963984540054 * 4.276217864682296 / 10_354**0.5
    assert january["low"] == pytest.approx(18 / 311 - band, rel=1e-12)
