"""The CSM a continuous campaign's capture measures (rig/certify/csm_capture.py) and the
[model] table that declares one (rig/certify/csm_model.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from feltlab.native import CsmModel
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.csm_capture import measure_model, read_gaps
from feltlab.rig.certify.csm_model import profile_model
from feltlab.rig.certify.profile import (
    CampaignError,
    Profile,
    load_profile,
    profile_from_dict,
    quick_profile,
)
from feltlab.rig.cli.certify import certify as certify_cmd


def _profile(model: dict[str, Any], simulation: dict[str, Any]) -> Profile:
    prof = quick_profile("continuous", null_replicates=39)
    raw = dict(prof.raw, model=dict(prof.raw["model"], **model))
    sim = dict(prof.simulation, **simulation)
    raw["simulation"] = sim
    return replace(prof, raw=raw, simulation=sim)


@pytest.fixture(scope="module")
def buffered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A device declared without a buffer whose machine holds 16 returned cards out."""
    out = tmp_path_factory.mktemp("csm") / "undeclared"
    prof = _profile({}, {"buffer": 16})
    res = run_campaign(CampaignOptions(prof, out, size=1500, seed=8))
    # the return-gap check already rejects it: no gap below 16 where the declared model has
    # many (the smallest p-value 39 replicates can give)
    by_name = {m["name"]: m for m in res.record["measurements"]}
    assert by_name["return_gap.p_value"]["value"] == 1 / 40
    return out


def test_a_device_with_an_undeclared_buffer_is_named(buffered: Path) -> None:
    captured = read_gaps(buffered)
    m = measure_model(captured, seed=1, replicates=39)
    assert m.buffer == 16 and int(captured.gaps.min()) == 16
    assert m.declared == CsmModel("slots", slots=38, buffer=0)
    assert m.model == CsmModel("slots", slots=38, buffer=16)
    assert m.machine == "slots" and m.fits["slots"] > 0.01
    assert m.differs
    assert m.verdict("shuffler A").startswith(
        "shuffler A differs from its declared model: declared slot machine (38 slots), buffer "
        "0, returns after each round, measured slot machine (38 slots), buffer 16"
    )
    assert m.p_overestimate < 1e-3


def test_a_device_that_declares_its_buffer_passes_and_is_measured_as_declared(
    tmp_path: Path,
) -> None:
    prof = _profile({"buffer": 8}, {})
    res = run_campaign(CampaignOptions(prof, tmp_path / "c", size=1500, seed=9))
    assert res.verdict is Verdict.PASS, res.record["measurements"]
    m = measure_model(read_gaps(tmp_path / "c"), seed=1, replicates=39)
    assert m.buffer == 8 and not m.differs
    assert m.verdict("B").startswith("B behaves as declared: slot machine (38 slots), buffer 8")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"buffer": -1}, r"\[model\] buffer = -1 is out of range: give an integer in \[0, 260\]"),
        ({"buffer": 300}, r"\[model\] buffer = 300 is out of range"),
        ({"policy": "later"}, r'\[model\] policy = \'later\' is unknown: give "round"'),
        ({"policy": "batch", "batch": 0}, r"\[model\] batch = 0 is out of range"),
        # 6 decks: a deck kept beside 11 - 1 rounds of 24 cards held back (260 - 240 >= 0)
        (
            {"policy": "batch", "batch": 64},
            r"batch = 64 is out of range: give an integer in \[1, 11\]",
        ),
        ({"buffer": "16"}, r"\[model\] buffer = '16' must be an integer: give one in \[0, 260\]"),
        ({"buffr": 3}, r"unknown key 'buffr' in \[model\]; did you mean 'buffer'\?"),
        ({"insert": "top"}, r"\[model\] insert = 'top', deal = 'uniform-nonempty-slot-top' is no"),
    ],
)
def test_the_model_table_is_checked_in_one_line(model: dict[str, Any], message: str) -> None:
    prof = load_profile("continuous")
    raw = dict(prof.raw, model=dict(prof.raw["model"], **model))
    with pytest.raises(CampaignError, match=message) as exc:
        profile_from_dict(raw, "p.toml")
    assert "\n" not in str(exc.value)


def test_the_bundled_profile_declares_the_slot_machine_without_a_buffer() -> None:
    prof = load_profile("continuous")
    assert profile_model(prof.raw) == CsmModel("slots", slots=38)
    ideal = dict(prof.raw, model={"insert": "uniform", "deal": "uniform", "buffer": 16})
    assert profile_model(ideal) == CsmModel("ideal", slots=38, buffer=16)
    with pytest.raises(CampaignError, match=r"\[simulation\] buffer = 400 is out of range"):
        profile_from_dict(dict(prof.raw, simulation={"buffer": 400}), "p.toml")


def test_a_batch_campaign_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "b"
    run_campaign(CampaignOptions(quick_profile("batch", power_shoes=40), out, size=3))
    with pytest.raises(CampaignError, match="holds a batch campaign: the CSM audit reads"):
        read_gaps(out)


def test_the_audit_of_a_capture_names_the_device_and_audits_the_measured_model(
    buffered: Path,
) -> None:
    res = CliRunner().invoke(
        certify_cmd,
        ["csm-audit", "--capture", str(buffered), "--rounds", "20000", "--window", "4", "--json"],
    )
    assert res.exit_code in (0, 1), res.output
    data = json.loads(res.output)
    assert data["capture"]["differs"] is True
    assert data["capture"]["verdict"].startswith(
        "feltlab simulated continuous shuffler (38 slots, ChaCha20) differs from its declared"
    )
    assert data["model"]["buffer"] == 16 and data["model"]["kind"] == "slots"
