"""The Madness 21 PAR sheet with the jackpot panel's prize table (feltlab.math.prizes): the win
pays the average prize per stake, so the sheet no longer reads as a 95% house edge."""

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.math import prizes
from feltlab.plugins.madness21 import Madness21

# rig/certify/profiles/jackpot.toml: [[2500, 600], [5000, 250], [10000, 100], [50000, 40],
# [250000, 9], [1000000, 1]]: (1.5M + 1.25M + 1M + 2M + 2.25M + 1M) / 1000 = 9000 cents
BUNDLED_AVERAGE = Fraction(9000)
# 6 decks: 4,608 of the 97,032 ordered two-card deals are a blackjack (2 x 24 aces x 96 tens)
P_BJ = Fraction(4608, 97032)


def test_bundled_profile_average_prize() -> None:
    table = prizes.load_prize_table(prizes.bundled_panel_profile())
    assert prizes.average_prize(table) == BUNDLED_AVERAGE


def test_return_per_unit_uses_the_average_prize_per_stake() -> None:
    table = prizes.load_prize_table(prizes.bundled_panel_profile())
    for stake in (100, 2500):
        sheet = prizes.jackpot_par_sheet(Madness21(), 6, table, stake=stake, source="bundled")
        want = P_BJ * BUNDLED_AVERAGE / stake - (1 - P_BJ)
        assert sheet.return_ == want
        assert sheet.average_prize == BUNDLED_AVERAGE and sheet.stake == stake
    # at the $25 maximum: 4.749% x 3.6 - 95.251% = -78.155% per unit
    assert round(float(-sheet.return_), 5) == 0.78155


def test_math_madness21_reports_return_and_average_prize() -> None:
    res = CliRunner().invoke(
        main, ["math", "madness21", "--decks", "6", "--stake", "2500", "--json"]
    )
    assert res.exit_code == 0, res.output
    (sheet,) = json.loads(res.output)
    assert sheet["average_prize_cents"]["value"] == 9000.0 and sheet["stake_cents"] == 2500
    assert abs(sheet["return"]["value"] - float(P_BJ * 90 / 25 - (1 - P_BJ))) < 1e-12
    assert "average prize $90.00" in sheet["note"]


def test_a_profile_without_a_prize_table_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "shuffler.toml"
    bad.write_text('[device]\nkind = "shuffler"\n')
    res = CliRunner().invoke(main, ["math", "madness21", "--profile", str(bad)])
    assert res.exit_code == 2
    assert "declares no [device] prize_table" in res.output and "Traceback" not in res.output


def test_the_default_panel_profile_is_the_one_the_rig_registers() -> None:
    """The SDK finds the rig's panel through the plugin hook, never by the rig's file path."""
    from feltlab.rig.profiles import PROFILE_DIR

    assert prizes.panel_profiles() == {"jackpot": PROFILE_DIR / "jackpot.toml"}
    assert prizes.bundled_panel_profile() == PROFILE_DIR / "jackpot.toml"


def test_two_plugins_registering_one_panel_name_with_two_files_are_refused() -> None:
    from feltlab.errors import PluginError

    panels = prizes.PanelProfiles()
    panels.register("jackpot", Path("a.toml"))
    panels.register("jackpot", Path("a.toml"))  # the same file twice is one profile
    with pytest.raises(PluginError, match=r"registered as both a\.toml and b\.toml; rename one"):
        panels.register("jackpot", Path("b.toml"))
