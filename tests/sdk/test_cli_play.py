"""``feltlab plugins`` and ``feltlab play`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pytest import MonkeyPatch

import feltlab.cli as cli
import feltlab.plugin_manager
from feltlab.cli import info, new, play, plugins
from feltlab.plugin_manager import get_plugin_manager


@pytest.fixture(autouse=True)
def _builtins_only(monkeypatch: MonkeyPatch) -> None:
    # installed third-party plugins (e.g. an unfinished rig entry point) stay out of these tests
    # (the command group imports get_plugin_manager from its home when it looks for plugins)
    for module in (feltlab.plugin_manager, info, new, play, plugins):
        monkeypatch.setattr(
            module, "get_plugin_manager", lambda: get_plugin_manager(entry_points=False)
        )


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli.main, args, env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_plugins_json_lists_builtins_hooks_and_wagers() -> None:
    r = _run(["plugins", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    names = [p["name"] for p in data["plugins"]]
    assert names[:5] == [
        "feltlab.plugins.main",
        "feltlab.plugins.insurance",
        "feltlab.plugins.perfect_pairs",
        "feltlab.plugins.super_sevens",
        "feltlab.plugins.madness21",
    ]
    assert data["plugins"][0]["hooks"] == ["feltlab_register_wagers"]
    assert [w["name"] for w in data["wagers"]] == [
        "main",
        "insurance",
        "perfect_pairs",
        "super_sevens",
        "madness21",
    ]


def test_plugins_table() -> None:
    r = _run(["plugins"])
    assert r.exit_code == 0 and "perfect_pairs" in r.output and "15B" in r.output


def test_play_same_seed_same_log(tmp_path: Path) -> None:
    a = _run(["play", "--rules", "nz", "--rounds", "20", "--seed", "1"])
    b = _run(["play", "--rules", "nz", "--rounds", "20", "--seed", "1"])
    c = _run(["play", "--rules", "nz", "--rounds", "20", "--seed", "2"])
    assert a.exit_code == 0, a.output
    assert a.output == b.output != c.output
    assert a.output.count("--- round") == 20
    assert "perfect_pairs" in a.output and "super_sevens" in a.output and "madness21" in a.output
    log = tmp_path / "events.jsonl"
    assert _run(["play", "--rounds", "2", "--events", str(log)]).exit_code == 0
    kinds = [json.loads(line)["kind"] for line in log.read_text().splitlines()]
    assert kinds.count("round_settled") == 2
