"""Issue 30, class 6: one line instead of a traceback, and what a new user trips on.  Each
case is run as a user runs it (the console script, a pipe, Ctrl-C) where the symptom lives
there; every message is one line that names the problem."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli.options import setup_logging
from feltlab.errors import RulesError, WagerError
from feltlab.rig.cli.render.junit import junit_xml
from feltlab.rig.cli.render.text import NOT_JUDGED, shown_verdict
from feltlab.rig.explore.cli import explore_command
from feltlab.rig.profiles import PROFILE_DIR
from feltlab.rules import Rules
from feltlab.wagers import as_pays

FELTLAB = str(Path(sys.executable).with_name("feltlab"))


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


RULES_CASES = {
    'blackjack_pays = "3:0"': "stake above 0",
    'blackjack_pays = "nan:1"': "not 'win:stake'",
    'blackjack_pays = "1e999:1"': "not 'win:stake'",
    'blackjack_pays = ["3", 2]': "blackjack_pays must be",
    'insurance = "yes"': "insurance must be true or false",
    "dealer_hits_soft_17 = 1": "dealer_hits_soft_17 must be true or false",
    'blackjak_pays = "3:2"': "did you mean 'blackjack_pays'",
    "surender = 'late'": "did you mean 'surrender'",
    "a = " + "[" * 3000 + "]" * 3000: "nested too deeply",
}


@pytest.mark.parametrize("text", list(RULES_CASES), ids=range(len(RULES_CASES)))
def test_rules_files_are_refused_in_one_line(tmp_path: Path, text: str) -> None:
    f = tmp_path / "rules.toml"
    f.write_text(text + "\n")
    from feltlab.cli import main

    res = CliRunner().invoke(main, ["math", "main", "--rules", str(f)])
    assert (res.exit_code == 2 and res.exception is None) or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output
    assert RULES_CASES[text] in res.output, res.output


def test_a_binary_or_fifo_rules_file_is_refused(tmp_path: Path) -> None:
    from feltlab.cli import main

    binary = tmp_path / "b.toml"
    binary.write_bytes(bytes(range(256)) * 4)
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    for f, why in ((binary, "not UTF-8"), (fifo, "nor a .toml file")):  # FIFO: never opened
        res = CliRunner().invoke(main, ["math", "main", "--rules", str(f)])
        assert res.exit_code == 2 and why in res.output, res.output


def test_the_rules_type_checks_its_own_fields() -> None:
    with pytest.raises(RulesError, match="true or false"):
        Rules.preset("nz").replace(resplit_aces="no")
    with pytest.raises(RulesError, match="did you mean 'decks'"):
        Rules.preset("nz").replace(deks=6)
    assert Rules.preset("nz").replace(blackjack_pays=" 6:5 ").blackjack_pays == Fraction(6, 5)


def test_float_pays_are_refused_with_the_exact_fraction() -> None:
    with pytest.raises(WagerError, match=r"pays\[1\] = 1.2 is not exact.*Fraction\(6, 5\)"):
        as_pays([-1, 1.2, 25])  # type: ignore[list-item]
    with pytest.raises(WagerError, match="not exact"):
        as_pays([-1, True, 25])
    exact: tuple[Fraction | None, ...] = (Fraction(-1), Fraction(6, 5), Fraction(25), None)
    assert as_pays([-1, Fraction(6, 5), 25, None]) == exact
    # 500 cents at the float's 1.2 settled to 599; the exact pay gives 600
    assert int(500 * as_pays([Fraction(6, 5)])[0]) == 600  # type: ignore[operator]


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [FELTLAB, *args], capture_output=True, text=True, timeout=300, env=env, **kw
    )


def test_piped_output_keeps_its_promise_and_its_exit_code(tmp_path: Path) -> None:
    chart = _run(["math", "main"])  # stdout is a pipe here
    assert chart.returncode == 0
    rows = [line for line in chart.stdout.splitlines() if line.startswith("│ hard 16")]
    assert rows and "…" not in rows[0] and "-0.5" in rows[0]  # every cell whole
    # a reader that stops after one line (| head -1): the command's own code, no traceback
    proc = subprocess.Popen(
        [FELTLAB, "shuffle", "--shoes", "200000", "--show", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(120) == 0
    assert b"Traceback" not in proc.stderr.read()


def _few_shoes_profile(tmp_path: Path) -> str:
    """The bundled batch profile naming only alternatives that a dozen shoes catch
    (riffle:k=7, shelf:m=10: 2 shoes each, `feltlab certify plan`), so that a short fair
    campaign can PASS (the bundled library needs about 1,000 shoes)."""
    text = (PROFILE_DIR / "batch6.toml").read_text()
    text = re.sub(
        r"^power_alternatives = \[[^\]]*\]",
        'power_alternatives = ["riffle:k=7", "shelf:m=10"]',
        text,
        count=1,
        flags=re.M,
    )
    path = tmp_path / "few.toml"
    path.write_text(text)
    return str(path)


def test_ctrl_c_right_after_the_verdict_keeps_the_pass(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [FELTLAB, "certify", "shuffler", "--shoes", "12", "--seed", "3",
         "--profile", _few_shoes_profile(tmp_path), "--out", str(tmp_path / "c")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first.rstrip().endswith("PASS"), first
    proc.send_signal(signal.SIGINT)  # right after the verdict line
    # then Ctrl-C held down until the process is gone: one landing in Python's finalization
    # (which puts a Python handler back to SIG_DFL) killed it by the signal (16 of 20 runs)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.001)
    rest = proc.stdout.read()
    err = proc.stderr.read()
    assert proc.wait(60) == 0, (rest, err)  # -2 when killed by SIGINT
    assert "Traceback" not in err and "ignored" not in err


def test_a_finished_campaigns_hint_is_a_command_that_works(tmp_path: Path) -> None:
    out = tmp_path / "c"
    few = ["--profile", _few_shoes_profile(tmp_path)]
    assert (
        _run(
            ["certify", "shuffler", "--shoes", "12", "--seed", "3", *few, "--out", str(out)]
        ).returncode
        == 0
    )
    again = _run(["certify", "shuffler", "--shoes", "6", "--out", str(out)])
    assert again.returncode == 2
    assert "--resume" not in again.stderr
    assert f"feltlab analyze {out}" in again.stderr
    assert _run(["analyze", str(out)]).returncode == 0  # the hint, run as given


def test_unjudged_figures_are_not_shown_as_pass() -> None:
    p50 = {"name": "first_card.p50", "value": 1e-3, "unit": "s", "low": None, "high": None,
           "verdict": "PASS", "detail": {}}  # fmt: skip
    p99 = {**p50, "name": "first_card.p99", "high": 0.05}
    assert shown_verdict(p50) == NOT_JUDGED and shown_verdict(p99) == "PASS"
    assert shown_verdict({**p50, "verdict": "ERROR"}) == "ERROR"
    record = {"device": {"name": "x"}, "measurements": [p50, p99], "errors": []}
    xml = junit_xml(record)
    assert 'name="first_card.p50"><skipped message="not judged' in xml
    assert 'name="first_card.p99" />' in xml


def test_dask_logs_follow_the_verbosity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASK_LOGGING__DISTRIBUTED", raising=False)
    for v, level in ((0, "critical"), (1, "warning"), (2, "debug")):
        setup_logging(v)
        assert os.environ["DASK_LOGGING__DISTRIBUTED"] == level
    setup_logging(0)
    code = "import dask.distributed, logging; print(logging.getLogger('distributed').level)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "50"  # CRITICAL: no INFO line without -v


def test_explore_takes_hex_seeds_and_json_is_a_flag(tmp_path: Path) -> None:
    res = CliRunner().invoke(explore_command, ["--campaigns", "1", "--seed", "0x10", "--json"])
    assert res.exit_code == 0, res.stderr
    row = json.loads(res.stdout.splitlines()[0])
    assert row["scenario"]["seed"] == 16
    assert "explored 1 campaigns (seed 16" in res.stderr
    res = CliRunner().invoke(
        explore_command, ["--campaigns", "1", "--seed", "16", "--jsonl", str(tmp_path / "o")]
    )
    assert res.exit_code == 0
    assert json.loads((tmp_path / "o").read_text())["scenario"]["seed"] == 16


def test_capture_stamps_that_are_not_numbers_are_one_line(tmp_path: Path) -> None:
    for stamp in ("inf", "nan", "-inf"):
        f = tmp_path / f"{stamp}.log"
        f.write_text(f"({stamp}) can0 100#0011223344556677\n")
        r = _run(["analyze", str(f)])  # (capture decode shows them: a diagnostic tool)
        assert r.returncode != 0 and "Traceback" not in r.stderr
        assert "not a CAN frame" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_readme_lists_every_command() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for cmd in ("feltlab new wager", "feltlab capture record", "feltlab capture decode"):
        assert f"`{cmd}" in readme, cmd
