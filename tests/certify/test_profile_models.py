"""The library of shuffle models in profiles and on the command line: every name of
``parse_model`` is a profile's ``[simulation] model`` and a ``power_alternatives`` entry, a
bad one is refused in one line naming the range, and the simulated shuffler applies a
stateful model (its stream kept across the campaign's shoes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.certify.profile import CampaignError, load_profile
from feltlab.rig.devices.models import MODEL_NAMES
from feltlab.rig.profiles import PROFILE_DIR

ALTERNATIVES = re.compile(r"^power_alternatives = \[[^\]]*\]", re.M)
"""The bundled profile's ``power_alternatives`` list (one line or several)."""


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = (PROFILE_DIR / "batch6.toml").read_text()
    if old == "power_alternatives":
        assert len(ALTERNATIVES.findall(text)) == 1
        text = ALTERNATIVES.sub(lambda m: new, text)
    else:
        assert old in text
        text = text.replace(old, new, 1)
    p = tmp_path / "variant.toml"
    p.write_text(text)
    return p


def test_every_library_kind_is_a_profile_model_and_alternative(tmp_path: Path) -> None:
    for kind in MODEL_NAMES:
        p = _variant(tmp_path, 'model = "fisher-yates"', f'model = "{kind}"')
        assert load_profile(p).simulation["model"] == kind
    alts = '["overhand:passes=2,cut=30", "lcg:shift=16", "short-seed:bits=12", "reboot:every=50"]'
    p = _variant(
        tmp_path,
        "power_alternatives",
        f"power_alternatives = {alts}",
    )
    assert load_profile(p).campaign["power_alternatives"][1] == "lcg:shift=16"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'model = "fisher-yates"',
            'model = "modulo:bits=40"',
            "[simulation] model: modulo:bits must be in 1..32",
        ),
        (
            "power_alternatives",
            'power_alternatives = ["overhand:cut=150"]',
            "power_alternatives: overhand:cut must be in 0..100 (percent)",
        ),
    ],
)
def test_a_bad_library_name_in_a_profile_is_refused(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    escaped = message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(CampaignError, match=escaped):
        load_profile(_variant(tmp_path, old, new))


def test_a_rebooting_shuffler_fails_from_the_command_line(tmp_path: Path) -> None:
    """reboot:every=2 repeats its shoes (0, 1, 0, 1, 0): the repeated-shoes check (the check
    matched to a repeating seed) rejects it; the record names the model."""
    out = tmp_path / "c"
    args = ["certify", "shuffler", "--model", "reboot:every=2", "--shoes", "5", "--seed", "3"]
    res = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert res.exit_code == 1, res.output
    record = json.loads((out / "record.json").read_text())
    assert record["verdict"] == "FAIL" and "reboot:every=2" in json.dumps(record["device"])
    failed = {c["name"] for c in record["battery"]["checks"] if c["verdict"] == "FAIL"}
    assert "repeated_shoes" in failed


def test_a_bad_library_name_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    args = ["certify", "shuffler", "--model", "lcg:shift=99", "--shoes", "5"]
    res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "c")])
    assert res.exit_code == 2
    assert "lcg:shift must be in 0..30" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "c").exists()


def test_a_model_that_cannot_shuffle_the_shoe_is_refused_before_the_campaign(
    tmp_path: Path,
) -> None:
    """position-bias:pos=400 on a 6-deck (312-card) shoe: one line before any work, no
    folder, no verdict (it used to start, fail every shoe with a traceback and FAIL)."""
    for model, says in (
        ("position-bias:pos=400", "pos=400 is not a card of a 312-card shoe: give pos in 0..311"),
        ("strip:cuts=312", "cuts=312 needs more than 312 cards: give cuts in 0..311"),
        ("riffle:k=7,k=8", "k is given twice; give it once"),
        ("riffle:k=\u0663", "k must be an integer"),
    ):
        out = tmp_path / model.replace(":", "_").replace(",", "_")
        res = CliRunner().invoke(main, ["certify", "shuffler", "--model", model, "--out", str(out)])
        assert res.exit_code == 2, res.output
        assert says in res.output and "Traceback" not in res.output
        assert not out.exists()


@pytest.mark.parametrize(
    ("alternative", "says"),
    [
        ("missing", "drops or repeats a card, which the integrity check catches"),
        ("duplicate:pos=3", "drops or repeats a card, which the integrity check catches"),
        ("fisher-yates", "is the fair shuffle itself"),
        ("position-bias:pos=400", "pos=400 is not a card of a 312-card shoe"),
    ],
)
def test_an_alternative_the_power_cannot_be_computed_for_is_refused_at_load(
    tmp_path: Path, alternative: str, says: str
) -> None:
    p = _variant(tmp_path, "power_alternatives", f'power_alternatives = ["{alternative}"]')
    with pytest.raises(CampaignError, match="power_alternatives") as err:
        load_profile(p)
    assert says in str(err.value)
