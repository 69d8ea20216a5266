"""Fault campaigns (issue 9): every fault the simulated batch shuffler supports, and the bus
going away, injected during a campaign on an in-process virtual bus (``interface=virtual``);
each is detected within the profile's limit, the campaign recovers or stops with ERROR, and
the shoes collected before each fault are intact in the capture.  Also the authenticated
jackpot panel campaign with a forged result, and the profile errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.faults import ALL_FAULTS
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.certify.record import CampaignResult, verdict_summary

KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def fast(kind: str = "batch", faults: dict[str, Any] | None = None, **device: Any) -> Profile:
    """The bundled profile, unpaced and with fewer replicates (quick_profile)."""
    return quick_profile(kind, faults=faults, **device)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> CampaignResult:
    out = tmp_path_factory.mktemp("faults") / "c"
    return run_campaign(CampaignOptions(fast(), out, size=160, seed=11, faults="all"))


def test_fault_campaign_passes_with_every_fault(campaign: CampaignResult) -> None:
    rec = campaign.record
    assert campaign.verdict is Verdict.PASS, (rec["errors"], rec["faults"])
    assert [r["fault"] for r in rec["faults"]] == list(ALL_FAULTS)
    assert rec["battery"]["n_shoes"] == 160 and not rec["collection"]["missing"]
    assert rec["options"]["faults"] == "all"
    html = (campaign.directory / "report.html").read_text()
    assert "Fault results" in html and "bus_loss" in html
    junit = (campaign.directory / "junit.xml").read_text()
    for f in ALL_FAULTS:
        assert f'name="fault.{f}.detection"' in junit


@pytest.mark.parametrize("fault", ALL_FAULTS)
def test_each_fault_detected_in_time_recovered_and_data_intact(
    campaign: CampaignResult, fault: str
) -> None:
    row = next(r for r in campaign.record["faults"] if r["fault"] == fault)
    limit = campaign.record["profile"]["data"]["limits"][f"{fault}_detection_max"]
    assert row["limit"] == limit
    assert row["detected_at"] is not None and 0 <= row["latency"] <= limit, row
    assert row["detected_at"] >= row["injected_at"]
    assert row["outcome"] == "recovered" and row["data_intact"] is True
    assert row["verdict"] == "PASS" and row["shoes_before"] > 0


def test_offline_analysis_reproduces_the_fault_table(campaign: CampaignResult) -> None:
    offline = analyze_path(campaign.directory, None, out=None)
    assert offline.record["faults"] == campaign.record["faults"]
    assert verdict_summary(offline.record) == verdict_summary(campaign.record)
    # every shoe collected before the last fault is still in the capture, in order
    data = read_campaign_capture(
        sorted(campaign.directory.glob("capture-*.blf")), campaign.record["profile"]["data"]
        ["device"]["base"]
    )  # fmt: skip
    assert len(data.shoes) == 160
    assert len({s.number for s in data.shoes}) == 160


def test_a_device_that_does_not_come_back_stops_the_campaign_with_error(tmp_path: Path) -> None:
    plan = {"inject": ["stop_heartbeats"], "heartbeat_silence": 5.0, "recovery_timeout": 0.4}
    res = run_campaign(CampaignOptions(fast(faults=plan), tmp_path / "c", size=40, seed=2))
    rec = res.record
    assert res.verdict is Verdict.ERROR and res.exit_code == 2
    assert any("not back within" in e for e in rec["errors"]), rec["errors"]
    (row,) = rec["faults"]
    assert row["outcome"] == "stopped" and row["detected_by"] == "lost"
    assert row["latency"] <= row["limit"] and row["data_intact"] is True
    # the shoes collected before the fault (and the one in flight, if it completed) are kept
    assert row["shoes_before"] <= rec["battery"]["n_shoes"] <= row["shoes_before"] + 2


def test_bad_fault_plans_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match="unknown fault"):
        run_campaign(CampaignOptions(fast(), tmp_path / "a", size=4, faults="gremlins"))
    with pytest.raises(CampaignError, match="heartbeat_silence"):
        run_campaign(
            CampaignOptions(
                fast(faults={"inject": "all", "heartbeat_silence": -1}), tmp_path / "b", size=4
            )
        )
    with pytest.raises(CampaignError, match="batch shufflers"):
        run_campaign(CampaignOptions(fast("jackpot"), tmp_path / "c", size=4, faults="all"))


def test_authenticated_panel_refuses_a_forged_result(tmp_path: Path) -> None:
    keyfile = tmp_path / "panel.key"
    keyfile.write_text(KEY + "\n")
    prof = fast("jackpot", key_file=str(keyfile), key_id="panel-7", authenticate=True)
    out = tmp_path / "j"
    res = run_campaign(CampaignOptions(prof, out, size=150, seed=3))
    rec = res.record
    by_name = {m["name"]: m for m in rec["measurements"]}
    assert res.verdict is Verdict.PASS, (rec["errors"], rec["measurements"])
    assert by_name["security.results_refused"]["value"] == 1
    assert [f["reason"] for f in rec["security_faults"]] == ["forged"]
    (row,) = rec["faults"]
    assert row["fault"] == "forge_result" and row["detected_by"] == "security"
    assert row["latency"] <= row["limit"] and row["verdict"] == "PASS"
    assert rec["device"]["key_id"] == "panel-7" and rec["device"]["authenticate"] is True
    drawn = sum(by_name["prize_distribution.p_value"]["detail"]["observed"].values())
    assert 150 <= drawn <= 152  # the accepted draws (and the Madness 21 rounds' prizes)
    for f in out.iterdir():
        assert KEY.encode() not in f.read_bytes().lower(), f.name
    assert "Security faults" in (out / "report.html").read_text()
    offline = analyze_path(out, None, out=None)
    assert verdict_summary(offline.record) == verdict_summary(rec)


def test_inline_key_is_never_written_and_required_when_authenticating(tmp_path: Path) -> None:
    prof = fast("jackpot", key=KEY, key_id="panel-9", authenticate=True)
    out = tmp_path / "j"
    res = run_campaign(CampaignOptions(prof, out, size=40, seed=4))
    assert res.record["device"]["key_id"] == "panel-9"
    for f in out.iterdir():
        assert KEY.encode() not in f.read_bytes().lower(), f.name
    state = json.loads((out / "campaign.json").read_text())
    assert "redacted" in state["profile"]["data"]["device"]["key"]
    with pytest.raises(CampaignError, match="inline key"):
        analyze_path(out, None, out=None)
    with pytest.raises(CampaignError, match="authenticate = true needs"):
        run_campaign(CampaignOptions(fast("jackpot", authenticate=True), tmp_path / "k", size=4))
