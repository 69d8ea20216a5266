"""Issue 41 (low): the freshness each part of a keyed device's campaign began at,
``freshness-starts.json``, is bound under the campaign's key, so that lowering it no longer
changes the offline security check.

The attack: a second campaign whose panel (a replaying one: its results are the first
campaign's, signed with the same key, from freshness 0 again) is refused live as replayed.
Before the fix, lowering the second campaign's start to 0 made ``feltlab analyze`` accept
every replay: 0 refused, where the live record refused them all."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.binding import FRESHNESS_STARTS, freshness_starts
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.devices import JackpotPanel

DRAWS = 12


class ReplayingPanel(JackpotPanel):
    """A panel that replays an earlier session: its draw count starts at 0 whatever the lab
    accepted before (its results are the first campaign's, with their valid MACs)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        kw["draws"] = 0
        super().__init__(*args, **kw)


def _profile(root: Path) -> Profile:
    key_file = root / "panel.key"
    key_file.write_text(bytes(range(32)).hex())
    prof = quick_profile(
        "jackpot", null_replicates=39, key_file=str(key_file), key_id="p", authenticate=True
    )
    campaign = {
        **prof.campaign,
        "inject_faults": False,
        "freshness_state": str(root / "lab" / "freshness.json"),
    }
    return replace(prof, campaign=campaign, raw=dict(prof.raw, campaign=campaign))


def _refused(record: dict[str, Any]) -> float:
    return float(
        next(m["value"] for m in record["measurements"] if m["name"] == "security.results_refused")
    )


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The second campaign's folder: every result of its panel a replay, refused live."""
    root = tmp_path_factory.mktemp("starts")
    mp = pytest.MonkeyPatch()
    mp.setenv("FELTLAB_STATE_DIR", str(root / "lab"))
    try:
        prof = _profile(root)
        first = run_campaign(CampaignOptions(prof, root / "one", size=DRAWS, seed=1))
        assert first.verdict is Verdict.PASS
        opts = CampaignOptions(prof, root / "two", size=DRAWS, seed=1, simulator=ReplayingPanel)
        second = run_campaign(opts)
    finally:
        mp.undo()
    assert second.verdict is Verdict.FAIL
    assert _refused(second.record) == 4  # every result refused, until collection stopped
    assert {f["reason"] for f in second.record["security_faults"]} == {"replayed"}
    return root


@pytest.fixture
def lab(replayed: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FELTLAB_STATE_DIR", str(replayed / "lab"))
    return replayed / "two"


def _edit(folder: Path, change: Any) -> None:
    path = folder / FRESHNESS_STARTS
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_the_starts_are_bound_and_analyze_agrees_with_the_live_record(lab: Path) -> None:
    starts = freshness_starts(lab)
    assert starts == {1: DRAWS}  # the first campaign's draws
    offline = analyze_path(lab, None, out=None)
    live = json.loads((lab / "record.json").read_text())
    assert offline.record["security_faults"] == live["security_faults"]
    assert _refused(offline.record) == _refused(live) == 4


@pytest.mark.parametrize(
    ("attack", "change"),
    [
        ("lowered", lambda d: {**d, "starts": {"1": 0}}),
        ("raised", lambda d: {**d, "starts": {"1": 10**6}}),
        ("tag-copied", lambda d: {**d, "starts": {"1": 0, "2": 0}}),
        ("unbound-version-1", lambda d: {"1": 0}),
    ],
)
def test_an_edited_start_is_refused(lab: Path, attack: str, change: Any) -> None:
    saved = (lab / FRESHNESS_STARTS).read_text()
    try:
        _edit(lab, change)
        with pytest.raises(CampaignError, match=re.escape(FRESHNESS_STARTS)) as err:
            analyze_path(lab, None, out=None)
        said = str(err.value)
        assert ("fails its tag" in said) == (attack != "unbound-version-1"), said
    finally:
        (lab / FRESHNESS_STARTS).write_text(saved)


def test_a_removed_starts_file_is_refused(lab: Path) -> None:
    saved = (lab / FRESHNESS_STARTS).read_bytes()
    (lab / FRESHNESS_STARTS).unlink()
    try:
        with pytest.raises(CampaignError, match=r"freshness-starts\.json is missing"):
            analyze_path(lab, None, out=None)
    finally:
        (lab / FRESHNESS_STARTS).write_bytes(saved)


def test_elsewhere_the_starts_are_read_as_recorded_and_said_unverified(
    lab: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("FELTLAB_LAB_KEY", str(tmp_path / "another-host" / "lab.key"))
    assert freshness_starts(lab) == {1: DRAWS}
    assert "its tag cannot be verified on this host" in caplog.text
    with pytest.raises(CampaignError, match="resume it on the host that started it"):
        freshness_starts(lab, strict=True)
