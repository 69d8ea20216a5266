"""``--side-bets`` chooses the wagers in play (issue 29, item 3): ``simulate`` with the main
wager alone or with named side wagers, ``play`` betting the named ones; an unknown name, the
main wager or insurance (placed after the deal) is a one-line error naming the choices."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from feltlab.cli import main


def _simulate(*args: str) -> dict[str, Any]:
    res = CliRunner().invoke(
        main, ["simulate", "--rounds", "200000", "--seed", "5", *args, "--json"]
    )
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_simulate_the_main_wager_alone_and_with_perfect_pairs() -> None:
    alone = _simulate("--side-bets", "none")
    with_pp = _simulate("--side-bets", "perfect_pairs")
    assert alone["wagers"] == []
    assert [w["wager"] for w in with_pp["wagers"]] == ["perfect_pairs"]
    # Perfect Pairs reads the first two cards and changes no draw: the same rounds are dealt
    assert alone["house_edge"] == with_pp["house_edge"]
    assert alone["std_dev"] == with_pp["std_dev"]
    skipped = {e["wager"]: e["reason"] for e in with_pp["skipped"]}
    assert skipped["super_sevens"] == "not chosen (--side-bets)"


def test_simulate_refuses_an_unknown_side_bet() -> None:
    res = CliRunner().invoke(main, ["simulate", "--rounds", "1000", "--side-bets", "nope"])
    assert res.exit_code == 2
    assert "no installed side wager 'nope'; choose from" in res.output
    assert "perfect_pairs" in res.output and "Traceback" not in res.output


def test_play_bets_the_named_side_wagers() -> None:
    args = ["play", "--rounds", "2", "--side-bets", "lucky_ladies", "--boxes", "1"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "box 0 P1: lucky_ladies $5.00" in res.output
    assert "perfect_pairs" not in res.output
    none = CliRunner().invoke(main, ["play", "--rounds", "1", "--side-bets", "none"])
    assert none.exit_code == 0 and "$5.00" not in none.output


def test_play_refuses_insurance_and_the_main_wager() -> None:
    res = CliRunner().invoke(main, ["play", "--side-bets", "insurance"])
    assert res.exit_code == 2
    assert "insurance is placed after the deal, not with the main wager" in res.output
    res = CliRunner().invoke(main, ["play", "--side-bets", "main"])
    assert res.exit_code == 2 and "no installed side wager 'main'" in res.output


def test_the_main_wager_alone_prints_no_empty_table_and_one_line_for_the_rest() -> None:
    res = CliRunner().invoke(
        main, ["simulate", "--rounds", "20000", "--seed", "5", "--side-bets", "none"]
    )
    assert res.exit_code == 0, res.output
    assert "side wagers (return per unit wagered)" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("not in play (--side-bets): ")]
    assert len(lines) == 1
    assert {"perfect_pairs", "super_sevens", "insurance"} <= set(
        lines[0].split(": ")[1].split(", ")
    )
    assert "not simulated: perfect_pairs" not in res.output
