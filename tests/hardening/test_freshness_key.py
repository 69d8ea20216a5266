"""Issue 41, class 1: a key's freshness is bound to the key itself, never to a label or a
place a profile chooses, and a result is never displayed ahead of the state on disk.

Each test replays the first campaign's captured results into a host started the way a
campaign starts it (:func:`feltlab.rig.certify.collect.freshness_store` of the profile, then
``check``): every one of them must be refused.  Before the fix (main at 60ad0f9) each attack
here let all 40 through."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from feltlab.rig.bus.capture import read_capture
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions, freshness_store
from feltlab.rig.certify.profile import Profile, quick_profile
from feltlab.rig.clients import SECURITY_REASONS, JackpotPanelClient
from feltlab.rig.errors import RigError, SecurityFault
from feltlab.rig.protocol.freshness import FreshnessStore
from feltlab.rig.protocol.secoc import DeviceKey

DRAWS = 40


def _panel(key_file: Path, key_id: str, state: Path | None) -> Profile:
    prof = quick_profile(
        "jackpot", null_replicates=39, key_file=str(key_file), key_id=key_id, authenticate=True
    )
    campaign = {**prof.campaign, "inject_faults": False}
    if state is not None:
        campaign["freshness_state"] = str(state)
    return replace(prof, campaign=campaign, raw=dict(prof.raw, campaign=campaign))


def _key(prof: Profile) -> DeviceKey:
    key = prof.key()
    assert key is not None
    return key


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One campaign of 40 authenticated draws (panel-7, its lab state in ``lab/``), kept
    whole (lab, key, campaign) for each test to copy: the results an attacker replays."""
    root = tmp_path_factory.mktemp("first")
    key_file = root / "keys" / "panel-7.key"
    key_file.parent.mkdir()
    key_file.write_text(bytes(range(32)).hex())
    prof = _panel(key_file, "panel-7", root / "lab" / "freshness.json")
    mp = pytest.MonkeyPatch()
    mp.setenv("HOME", str(root / "home"))
    mp.delenv("FELTLAB_STATE_DIR", raising=False)
    mp.delenv("XDG_STATE_HOME", raising=False)
    try:
        res = run_campaign(CampaignOptions(prof, root / "one", size=DRAWS, seed=1))
    finally:
        mp.undo()
    assert res.verdict is Verdict.PASS, res.record["measurements"]
    return root


@pytest.fixture
def lab(first: Path, tmp_path: Path) -> Path:
    """A copy of the first campaign's whole lab (keys, state, capture) to attack."""
    shutil.copytree(first, tmp_path / "lab-copy")
    return tmp_path / "lab-copy"


def _replays_refused(prof: Profile, capture: Path) -> int:
    """Results of ``capture`` refused by a host started as a campaign of ``prof`` starts."""
    key = _key(prof)
    last = freshness_store(prof).check(key)
    client = JackpotPanelClient("interface=virtual,channel=replay41", key=key, freshness=last)
    try:
        for msg in read_capture(capture):
            client.on_message(msg)
        reasons = {e.detail["reason"] for e in client.events if e.kind == "security"}
        assert reasons <= {SECURITY_REASONS["replayed"]}
        return int(client.security_faults)
    finally:
        client.close()


def test_the_same_key_under_another_key_id_continues_its_freshness(lab: Path) -> None:
    alias = _panel(lab / "keys" / "panel-7.key", "renamed", lab / "lab" / "freshness.json")
    assert _replays_refused(alias, lab / "one" / "capture-001.blf") == DRAWS
    # the same bytes in a key file of another name and folder: the same key
    copy = lab / "elsewhere" / "other-name.key"
    copy.parent.mkdir()
    copy.write_text((lab / "keys" / "panel-7.key").read_text())
    moved = _panel(copy, "other", lab / "lab" / "freshness.json")
    assert _replays_refused(moved, lab / "one" / "capture-001.blf") == DRAWS


def test_a_state_in_an_empty_folder_does_not_restart_a_used_key(lab: Path) -> None:
    fresh = _panel(lab / "keys" / "panel-7.key", "panel-7", lab / "empty" / "freshness.json")
    assert _replays_refused(fresh, lab / "one" / "capture-001.blf") == DRAWS


def test_deleting_the_state_and_its_counter_reopens_no_replay(lab: Path) -> None:
    prof = _panel(lab / "keys" / "panel-7.key", "panel-7", lab / "lab" / "freshness.json")
    for f in (lab / "lab").iterdir():
        f.unlink()
    assert _replays_refused(prof, lab / "one" / "capture-001.blf") == DRAWS


def test_an_older_state_folder_copied_back_is_refused(lab: Path, tmp_path: Path) -> None:
    prof = _panel(lab / "keys" / "panel-7.key", "panel-7", lab / "lab" / "freshness.json")
    shutil.copytree(lab / "lab", tmp_path / "old-lab")  # state and counter, taken together
    second = run_campaign(CampaignOptions(prof, tmp_path / "two", size=DRAWS, seed=2))
    assert second.verdict is Verdict.PASS
    shutil.rmtree(lab / "lab")
    shutil.copytree(tmp_path / "old-lab", lab / "lab")  # put back, counter and all
    with pytest.raises(SecurityFault, match="rolled back") as exc:
        _replays_refused(prof, tmp_path / "two" / "capture-001.blf")
    assert exc.value.reason == "tampered"
    with pytest.raises(SecurityFault, match="rolled back"):
        run_campaign(CampaignOptions(prof, tmp_path / "three", size=DRAWS, seed=3))
    assert not (tmp_path / "three").exists()  # refused before anything was collected


def test_no_result_is_displayed_ahead_of_the_state_on_disk(
    lab: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every DISPLAY is sent only once the state on disk holds the result's freshness (a
    slow disk makes a background writer fall behind: the kill -9 of issue 41)."""
    import time

    prof = _panel(lab / "keys" / "panel-7.key", "panel-7", lab / "lab" / "freshness.json")
    key = _key(prof)
    real_remember = FreshnessStore.remember

    def slow(self: FreshnessStore, k: DeviceKey, last: int) -> int:
        time.sleep(0.02)
        return real_remember(self, k, last)

    monkeypatch.setattr(FreshnessStore, "remember", slow)
    behind: list[tuple[int, int]] = []
    real_display = JackpotPanelClient.display

    def display(self: JackpotPanelClient, cents: int) -> None:
        on_disk = FreshnessStore(lab / "lab" / "freshness.json").last(key)
        if on_disk < self.freshness:
            behind.append((on_disk, self.freshness))
        real_display(self, cents)

    monkeypatch.setattr(JackpotPanelClient, "display", display)
    res = run_campaign(CampaignOptions(prof, tmp_path / "two", size=10, seed=2))
    assert res.verdict is Verdict.PASS
    assert behind == []


def test_a_version_2_entry_under_a_label_is_the_keys_and_moves_to_its_fingerprint(
    tmp_path: Path,
) -> None:
    import hashlib
    import hmac
    import json

    key = DeviceKey("panel-7", bytes(range(32)))
    tag = hmac.new(key.key, b"feltlab-freshness:v1:old-label:250", hashlib.sha256).hexdigest()
    state = tmp_path / "freshness.json"
    state.write_text(
        json.dumps(
            {"version": 2, "counter": 0, "panels": {"old-label": {"last": 250, "hmac": tag}}}
        )
    )
    store = FreshnessStore(state)
    assert store.check(key) == 250  # found by its HMAC, whatever its label
    assert store.remember(key, 251) == 251
    panels = json.loads(state.read_text())["panels"]
    assert list(panels) == [key.fingerprint]
    assert panels[key.fingerprint]["key_ids"] == ["old-label", "panel-7"]


def test_an_edited_sidecar_is_refused(lab: Path) -> None:
    import json

    prof = _panel(lab / "keys" / "panel-7.key", "panel-7", lab / "lab" / "freshness.json")
    side = lab / "keys" / "panel-7.key.freshness.json"
    data = json.loads(side.read_text())
    assert data["last"] >= DRAWS and "hmac" in data
    data["last"] += 1000  # raised by hand: the seal no longer holds (nor lowered: the same)
    side.write_text(json.dumps(data))
    with pytest.raises(SecurityFault, match="fails its seal"):
        freshness_store(prof).check(_key(prof))


def test_the_sidecar_and_the_state_each_cover_the_other(tmp_path: Path) -> None:
    """Attacks the list does not spell out: the sidecar deleted or put back alone, another
    key's sidecar planted, another key under the same key_id."""
    import json

    key_file = tmp_path / "keys" / "p.key"
    key_file.parent.mkdir()
    key_file.write_text(bytes(range(32)).hex())
    from feltlab.rig.protocol.secoc import load_key

    key = load_key({"key_file": str(key_file), "key_id": "p"})
    assert key is not None and key.path == key_file.resolve()
    side = key_file.with_name("p.key.freshness.json")
    store = FreshnessStore(tmp_path / "lab" / "freshness.json", tmp_path / "safe" / "c.json")
    store.remember(key, 100)
    old_side = side.read_bytes()
    store.remember(key, 150)
    side.unlink()  # the sidecar deleted alone: the state still holds 150
    assert store.check(key) == 150
    side.write_bytes(old_side)  # an older sidecar put back alone: the higher value wins
    assert store.check(key) == 150
    assert store.remember(key, 151) == 151 and json.loads(side.read_text())["last"] == 151
    # another key's sidecar planted beside this key file: not this key's record
    other = DeviceKey("p", b"\x55" * 32, key_file.resolve())
    FreshnessStore(tmp_path / "x" / "freshness.json").remember(other, 9)  # overwrites it
    assert store.check(key) == 151
    # another key under the same key_id: its own freshness, no false alarm of an edit
    assert store.check(DeviceKey("p", b"\x66" * 32)) == 0


def test_a_counter_path_equal_to_the_state_file_is_refused(tmp_path: Path) -> None:
    """Issue 41: ``freshness_counter`` naming the state file itself was accepted, and each
    update then overwrote the state with its counter: every panel's freshness lost at the end."""
    state = tmp_path / "lab" / "freshness.json"
    for counter in (
        state,
        tmp_path / "lab" / ".." / "lab" / "freshness.json",
        tmp_path / "lab" / "freshness.json.lock",
    ):
        with pytest.raises(RigError, match="is the freshness state's own file"):
            FreshnessStore(state, counter)
    assert (
        FreshnessStore(state, tmp_path / "safe" / "counter.json").check(
            DeviceKey("p", b"\x11" * 32)
        )
        == 0
    )


def test_another_key_under_a_used_key_id_is_named(
    lab: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong key file under a panel's key_id read "edited by hand?" (issue 41): it is a key
    new to the lab, and the warning says its label was used with another key."""
    other = lab / "keys" / "other.key"
    other.write_text(bytes(range(1, 33)).hex())
    prof = _panel(other, "panel-7", lab / "lab" / "freshness.json")
    with caplog.at_level("WARNING", logger="feltlab.rig.freshness"):
        assert freshness_store(prof).check(_key(prof)) == 0
    old = _key(_panel(lab / "keys" / "panel-7.key", "panel-7", None))
    said = [r.getMessage() for r in caplog.records if "is new to this lab" in r.getMessage()]
    assert said == [
        f"panel key 'panel-7' (fingerprint {_key(prof).fingerprint}) is new to this lab, but "
        f"key_id 'panel-7' was used with another key (fingerprint {old.fingerprint}, "
        f"freshness {DRAWS}): if the panel was not re-keyed, this is not its key file (its "
        "results will fail their MACs)"
    ]
    assert "edited by hand" not in caplog.text
