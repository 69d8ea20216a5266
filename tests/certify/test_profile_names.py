"""A profile entry feltlab does not know is refused before any work, with the nearest known
name: a typo must never certify a device with a check silently left out (a misspelt
``[limtis]`` once passed a campaign with no timing limit judged)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from feltlab.rig.certify.profile import CampaignError, load_profile
from feltlab.rig.profiles import PROFILE_DIR


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = (PROFILE_DIR / "batch6.toml").read_text()
    assert old in text
    p = tmp_path / "typo.toml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("[limits]", "[limtis]", "unknown table 'limtis'; did you mean 'limits'?"),
        ("decks = 6", "dekcs = 6", "unknown key 'dekcs' in [device]; did you mean 'decks'?"),
        (
            "shuffle_cycle_p99 =",
            "shufle_cycle_p99 =",
            "unknown limit 'shufle_cycle_p99' in [limits]; did you mean 'shuffle_cycle_p99'?",
        ),
        ("shoes = 2000", "shoe = 2000", "unknown key 'shoe' in [campaign]; did you mean 'shoes'?"),
    ],
)
def test_a_misspelt_entry_is_refused_with_the_nearest_name(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    with pytest.raises(CampaignError, match=message.replace("[", r"\[").replace("?", r"\?")):
        load_profile(_variant(tmp_path, old, new))


def test_every_bundled_profile_and_its_kind_specific_entries_are_accepted() -> None:
    for p in sorted(PROFILE_DIR.glob("*.toml")):
        prof = load_profile(p)
        assert prof.raw == tomllib.loads(p.read_text())


def test_the_cli_refuses_a_misspelt_table_before_making_a_campaign(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from feltlab.cli import main

    out = tmp_path / "c"
    res = CliRunner().invoke(
        main,
        ["certify", "shuffler", "--profile", str(_variant(tmp_path, "[limits]", "[limtis]")),
         "--shoes", "2", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 2 and "unknown table 'limtis'" in res.output
    assert "Traceback" not in res.output and not out.exists()
