"""Issue 14, item 3: freshness across sessions.  The lab keeps each panel's last accepted
freshness value in a state file (atomic, tamper-evident); a result recorded in one campaign
is refused as a replay in the next, live and offline."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from feltlab.rig.bus.capture import read_capture
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import Profile, quick_profile
from feltlab.rig.certify.record import verdict_summary
from feltlab.rig.clients import SECURITY_REASONS, JackpotPanelClient
from feltlab.rig.errors import RigError, SecurityFault
from feltlab.rig.protocol.freshness import FreshnessStore, default_state_path
from feltlab.rig.protocol.secoc import DeviceKey


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings; HOME (and so the state file) under tmp (tests/conftest.py)."""


KEY = DeviceKey("panel-7", bytes(range(32)))


def test_the_store_is_monotonic_atomic_and_tamper_evident(tmp_path: Path) -> None:
    store = FreshnessStore(tmp_path / "state" / "freshness.json")
    assert store.last(KEY) == 0
    assert store.remember(KEY, 41) == 41
    assert store.remember(KEY, 7) == 41  # never lowered
    assert store.last(KEY) == 41
    assert not list((tmp_path / "state").glob(".freshness-*"))  # no temporary left
    data = json.loads(store.path.read_text())
    data["panels"][KEY.fingerprint]["last"] = 3  # lowered by hand, to allow a replay
    store.path.write_text(json.dumps(data))
    with pytest.raises(SecurityFault, match="edited outside feltlab") as exc:
        store.last(KEY)
    assert exc.value.reason == "tampered"
    # the counter rewritten to match the edit: the entry's own HMAC still refuses it
    counter = json.loads(store.counter_path.read_text())
    counter["sha256"] = hashlib.sha256(store.path.read_bytes()).hexdigest()
    store.counter_path.write_text(json.dumps(counter))
    with pytest.raises(SecurityFault, match="fails its HMAC") as exc:
        store.last(KEY)
    assert "backup" not in str(exc.value)
    store.path.write_text("{not json")
    with pytest.raises(RigError, match="damaged"):
        store.last(KEY)


def test_default_location_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_state_path() == Path.home() / ".local/state/feltlab/freshness.json"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_path() == tmp_path / "xdg/feltlab/freshness.json"
    monkeypatch.setenv("FELTLAB_STATE_DIR", str(tmp_path / "lab"))
    assert default_state_path() == tmp_path / "lab/freshness.json"


def _panel(state: Path) -> Profile:
    key_file = state.parent / "panel-7.key"
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.write_text(bytes(range(32)).hex())
    prof = quick_profile(
        "jackpot",
        null_replicates=39,
        key_file=str(key_file),
        key_id="panel-7",
        authenticate=True,
    )
    campaign = {**prof.campaign, "freshness_state": str(state), "inject_faults": False}
    return replace(prof, campaign=campaign, raw=dict(prof.raw, campaign=campaign))


def test_a_result_of_one_campaign_is_refused_as_a_replay_in_the_next(tmp_path: Path) -> None:
    state = tmp_path / "lab" / "freshness.json"
    prof = _panel(state)
    key = prof.key()
    assert key is not None
    first = run_campaign(CampaignOptions(prof, tmp_path / "one", size=40, seed=1))
    assert first.verdict is Verdict.PASS, first.record["measurements"]
    kept = FreshnessStore(state).last(key)
    assert kept >= 40  # every accepted draw of the first session
    # the second session's simulated panel keeps counting (its draw count is non-volatile)
    second = run_campaign(CampaignOptions(prof, tmp_path / "two", size=40, seed=2))
    assert second.verdict is Verdict.PASS
    assert FreshnessStore(state).last(key) > kept
    # offline, each session starts where the lab stood: the same verdicts
    again = analyze_path(tmp_path / "two", None, out=None)
    assert verdict_summary(again.record) == verdict_summary(second.record)
    # a host starting from the kept value refuses every result recorded in the first session
    client = JackpotPanelClient(
        "interface=virtual,channel=replay", key=key, freshness=FreshnessStore(state).last(key)
    )
    try:
        for msg in read_capture(tmp_path / "one" / "capture-001.blf"):
            client.on_message(msg)
        reasons = {e.detail["reason"] for e in client.events if e.kind == "security"}
        assert client.security_faults == 40  # every result of the first session
        assert reasons == {SECURITY_REASONS["replayed"]}
        assert "earlier session" in str(client._refused[0])
    finally:
        client.close()


def test_a_new_state_is_warned_about_only_for_a_keyed_panel(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A panel without a key has no freshness to keep: a new lab's missing state was warned
    about on every campaign of the bundled (unkeyed) panel, and nothing was ever written."""
    store = FreshnessStore(tmp_path / "state" / "freshness.json")
    with caplog.at_level("WARNING", logger="feltlab.rig.freshness"):
        assert store.check(None) == 0
    assert not caplog.records
    with caplog.at_level("WARNING", logger="feltlab.rig.freshness"):
        assert store.check(KEY) == 0
    assert [r.getMessage()[:22] for r in caplog.records] == ["no freshness state at "]
