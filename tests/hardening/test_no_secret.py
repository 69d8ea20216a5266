"""Issue 14, item 8: no secret in any record, wherever it sits in a profile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import REDACTED, quick_profile, redact_secrets

SECRET = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2"


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def test_redaction_reaches_every_table_and_array() -> None:
    got = redact_secrets(
        {
            "device": {"key": "aa", "key_id": "lab", "key_file": "p.key"},
            "simulation": {"key": "bb", "nested": [{"api_token": "cc"}, {"ok": 1}]},
            "campaign": {"password": "dd", "box": 1},
        }
    )
    assert got == {
        "device": {"key": REDACTED, "key_id": "lab", "key_file": "p.key"},
        "simulation": {
            "key": REDACTED,
            "nested": [{"api_token": REDACTED}, {"ok": 1}],
        },
        "campaign": {"password": REDACTED, "box": 1},
    }


def test_a_key_in_the_simulation_table_never_reaches_a_file(tmp_path: Path) -> None:
    prof = quick_profile("jackpot", null_replicates=39)
    sim = {**prof.simulation, "key": SECRET, "key_id": "sim-panel"}
    camp = {**prof.campaign, "inject_faults": False}
    prof = replace(
        prof, simulation=sim, campaign=camp, raw=dict(prof.raw, simulation=sim, campaign=camp)
    )
    out = tmp_path / "c"
    run_campaign(CampaignOptions(prof, out, size=20, seed=1))
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"campaign.json", "record.json", "report.html"}
    for p in files:
        assert SECRET.encode() not in p.read_bytes(), p.name
