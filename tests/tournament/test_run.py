"""Whole tournaments end to end: multi-table, multi-session, bots through the strategy hook,
the command line, and the same seed giving the same tournament."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import feltlab.cli as cli
from feltlab import hookimpl
from feltlab.errors import PluginError
from feltlab.plugin_manager import get_plugin_manager
from feltlab.tournament import (
    BettingStrategy,
    BettingView,
    TournamentResult,
    collect_strategies,
    load_definition,
    run_tournament,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tournament.toml"


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli.main, args, env={"COLUMNS": "200", "NO_COLOR": "1"})


def _example(seed: int) -> TournamentResult:
    import tomllib

    from feltlab.tournament import load_field

    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    reg = collect_strategies(get_plugin_manager(entry_points=False))
    return run_tournament(load_definition(EXAMPLE), load_field(data, reg), seed=seed,
                          strategies=reg)  # fmt: skip


def test_same_seed_same_tournament_event_for_event() -> None:
    a, b = _example(11), _example(11)
    assert a.log.to_jsonl() == b.log.to_jsonl()
    assert a.to_dict() == b.to_dict()
    assert _example(12).log.to_jsonl() != a.log.to_jsonl()


def test_example_tournament_multi_table_multi_session() -> None:
    r = _example(1)
    heats = [t for t in r.tables if t.stage == "heats"]
    assert [len(t.seats) for t in heats] == [6, 6, 6]
    final = [t for t in r.tables if t.stage == "final"]
    assert len(final) == 1 and len(final[0].seats) == 6
    assert r.entry.prize_pool == 18 * 5000 + 70_000 == r.paid_out
    # every card and every decision is in the log
    kinds = {e.data["event"] for e in r.log.of("table_event")}
    assert {"card_dealt", "decision", "wager_settled"} <= kinds


def test_cli_run_table_and_json(tmp_path: Path) -> None:
    r = _run(["tournament", "run", str(EXAMPLE), "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert "prize list (rules 6.5-6.8)" in r.output and "paid out $1,600.00" in r.output
    events = tmp_path / "events.jsonl"
    j = _run(["tournament", "run", str(EXAMPLE), "--seed", "1", "--format", "json",
              "--events", str(events)])  # fmt: skip
    assert j.exit_code == 0, j.output
    data = json.loads(j.output)
    assert data["paid_out"] == data["entry"]["prize_pool"] == 160_000
    assert len(data["sessions"]) == 4
    lines = events.read_text().splitlines()
    assert len(lines) == data["events"] and json.loads(lines[0])["kind"] == "application"


def test_cli_refuses_a_contradictory_definition_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace("maximum = 500", "maximum = 5"))
    r = _run(["tournament", "run", str(bad)])
    assert r.exit_code == 2 and "wagers.maximum" in r.output  # a refusal, not a verdict


def test_hook_registers_strategies_and_refuses_duplicates() -> None:
    pm = get_plugin_manager(entry_points=False)
    reg = collect_strategies(pm)
    assert reg.names() == ["flat", "proportional", "martingale", "chaser", "random"]

    class AllIn(BettingStrategy):
        name = "all_in"

        def wager(self, view: BettingView) -> int:
            return min(view.chips, view.limits.maximum)

    class Vendor:
        @hookimpl
        def feltlab_register_tournament_strategies(
            self, register: Callable[[type[BettingStrategy]], None]
        ) -> None:
            register(AllIn)

    pm.register(Vendor())
    assert "all_in" in collect_strategies(pm)

    class Clash(BettingStrategy):
        name = "flat"

        def wager(self, view: BettingView) -> None:
            return None

    class Bad:
        @hookimpl
        def feltlab_register_tournament_strategies(
            self, register: Callable[[type[BettingStrategy]], None]
        ) -> None:
            register(Clash)

    pm.register(Bad())
    with pytest.raises(PluginError, match="'flat' is registered by both"):
        collect_strategies(pm)
