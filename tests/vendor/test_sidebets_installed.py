"""The example vendor package (examples/feltlab-sidebets, pip-installed by `make setup`) is
found through its entry point, listed by `feltlab plugins`, and priced by `feltlab math`."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

from click.testing import CliRunner

from feltlab.cli import main
from feltlab.plugin_manager import collect_wagers, get_plugin_manager


def test_entry_point_registers_both_wagers() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="feltlab")}
    assert eps.get("sidebets") == "feltlab_sidebets.plugin"
    names = collect_wagers(get_plugin_manager()).names()
    assert names[:5] == ["main", "insurance", "perfect_pairs", "super_sevens", "madness21"]
    assert {"twenty_one_plus_three", "lucky_ladies"} <= set(names)
    assert collect_wagers(get_plugin_manager(entry_points=False)).names() == names[:5]


def test_feltlab_plugins_lists_the_package() -> None:
    out = CliRunner().invoke(main, ["plugins", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    rows = {p["distribution"]: p for p in data["plugins"]}
    assert rows["feltlab-sidebets"]["hooks"] == ["feltlab_register_wagers"]
    wagers = {w["name"]: w for w in data["wagers"]}
    assert wagers["twenty_one_plus_three"]["card_roles"] == ["P1", "P2", "D1"]
    assert [p["name"] for p in wagers["lucky_ladies"]["paytables"]] == ["A", "B"]
    table = CliRunner().invoke(main, ["plugins"], env={"COLUMNS": "200"})
    assert "lucky_ladies" in table.output and "feltlab-sidebets" in table.output


def test_feltlab_math_through_the_entry_point() -> None:
    out = CliRunner().invoke(
        main, ["math", "twenty_one_plus_three", "--paytable", "original", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    sheets = json.loads(out.output)
    assert [s["decks"] for s in sheets] == [4, 5, 6, 7, 8]
    six = sheets[2]
    assert round(100 * six["house_edge"]["value"], 4) == 3.2386  # Wizard of Odds, Version 1
