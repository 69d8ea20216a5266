"""Issue 30, class 1: freshness that cannot fall behind the panel.  The state is saved as
results are accepted, bound by a whole-state digest to a monotonic counter kept where the user
chooses (so a restored copy, a deleted file or an edited entry is refused before collection),
updated under a lock (concurrent campaigns keep each other's entries), and its location is
proved writable before any collection."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import Profile, quick_profile
from feltlab.rig.errors import RigError, SecurityFault
from feltlab.rig.protocol.freshness import FreshnessStore
from feltlab.rig.protocol.secoc import DeviceKey


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings; HOME (and so the state file) under tmp (tests/conftest.py)."""


KEYS = [DeviceKey(f"panel-{i}", bytes([i]) * 32) for i in range(6)]


def _no_advice_to_restore(exc: BaseException) -> None:
    text = str(exc).lower()
    assert "backup" not in text
    assert "restore it" not in text and "restore the" not in text


def test_a_restored_older_copy_is_refused(tmp_path: Path) -> None:
    store = FreshnessStore(tmp_path / "lab" / "freshness.json", tmp_path / "safe" / "c.json")
    store.remember(KEYS[0], 100)
    store.remember(KEYS[1], 5)
    shutil.copy(store.path, tmp_path / "old.json")  # the attacker's copy, taken at 100
    store.remember(KEYS[0], 250)
    shutil.copy(tmp_path / "old.json", store.path)  # put back: its entries' HMACs verify
    with pytest.raises(SecurityFault, match="older copy was put back") as exc:
        store.check(KEYS[0])
    assert exc.value.reason == "tampered"
    assert str(store.counter_path) in str(exc.value)
    _no_advice_to_restore(exc.value)
    # an update refuses too: it never builds on a rolled-back state
    with pytest.raises(SecurityFault):
        store.remember(KEYS[0], 300)


def test_deletions_and_edits_of_other_entries_are_refused(tmp_path: Path) -> None:
    store = FreshnessStore(tmp_path / "freshness.json")
    store.remember(KEYS[0], 9)
    store.remember(KEYS[1], 1377)
    data = json.loads(store.path.read_text())
    del data["panels"][KEYS[1].fingerprint]  # another panel's entry dropped: replays re-open
    store.path.write_text(json.dumps(data))
    with pytest.raises(SecurityFault, match="edited outside feltlab"):
        store.check(KEYS[0])  # refused whichever panel is certified
    store.path.unlink()
    with pytest.raises(SecurityFault, match="is gone while its counter") as exc:
        store.check(KEYS[0])
    _no_advice_to_restore(exc.value)
    # the counter deleted instead (the state intact)
    other = FreshnessStore(tmp_path / "b" / "freshness.json")
    other.remember(KEYS[2], 3)
    other.counter_path.unlink()
    with pytest.raises(SecurityFault, match=r"counter .* is gone"):
        other.last(KEYS[2])


def test_an_update_cut_between_its_phases_is_still_recognised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FreshnessStore(tmp_path / "freshness.json")
    store.remember(KEYS[0], 10)
    calls = []
    real = FreshnessStore._write_counter

    def crash_on_settle(self: FreshnessStore, n: int, sha: str | None, pending: object) -> None:
        calls.append(pending)
        if pending is None:
            raise KeyboardInterrupt  # the host dies after the state, before the counter
        real(self, n, sha, pending)  # type: ignore[arg-type]

    monkeypatch.setattr(FreshnessStore, "_write_counter", crash_on_settle)
    with pytest.raises(KeyboardInterrupt):
        store.remember(KEYS[0], 11)
    monkeypatch.undo()
    assert store.check(KEYS[0]) == 11  # the pending update is the state's
    assert store.remember(KEYS[0], 12) == 12
    assert json.loads(store.counter_path.read_text())["pending"] is None


def _hammer(path: str, index: int, rounds: int) -> None:
    store = FreshnessStore(path)
    for v in range(1, rounds + 1):
        store.remember(KEYS[index], v)  # its own panel
        store.remember(KEYS[5], index * rounds + v)  # and one panel all share


def test_concurrent_campaigns_keep_each_others_updates(tmp_path: Path) -> None:
    path = tmp_path / "lab" / "freshness.json"
    ctx = multiprocessing.get_context("fork")
    rounds = 30
    procs = [ctx.Process(target=_hammer, args=(str(path), i, rounds)) for i in range(5)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = FreshnessStore(path)
    for i in range(5):
        assert store.check(KEYS[i]) == rounds  # none behind, none vanished
    assert store.last(KEYS[5]) == 4 * rounds + rounds  # the highest any process gave
    state = json.loads(path.read_text())
    assert state["counter"] == json.loads(store.counter_path.read_text())["counter"]
    assert not list(path.parent.glob(".freshness*"))  # no temporary left behind


def test_results_are_on_disk_before_the_client_returns_them(vbus: str, tmp_path: Path) -> None:
    """The client persists each result's freshness in the caller's thread before
    ``result`` returns it (issue 41: a background writer fell behind the display)."""
    from feltlab.rig.clients import JackpotPanelClient
    from feltlab.rig.clock import SimClock
    from feltlab.rig.devices import JackpotPanel, Timing

    store = FreshnessStore(tmp_path / "freshness.json")
    clock = SimClock()  # simulated time: a busy host cannot starve the 20 ms heartbeat
    dev = JackpotPanel(
        vbus, seed=5, timing=Timing(heartbeat_period=0.02), key=KEYS[0], clock=clock
    ).start()
    cl = JackpotPanelClient(
        vbus,
        timeout=0.3,
        key=KEYS[0],
        persist=lambda fv: store.remember(KEYS[0], fv),
        clock=clock,
    )
    try:
        cl.wait_online(2.0)
        for rnd in (1, 2, 3):
            cl.arm(rnd, [1])
            cl.press(1)
            cl.result(1)
            assert store.last(KEYS[0]) == cl.freshness == rnd  # on disk as it is returned
    finally:
        cl.close()
        dev.stop()


def test_a_fifo_state_is_refused_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "freshness.json")
    store = FreshnessStore(tmp_path / "freshness.json")
    done: list[BaseException] = []
    t = threading.Thread(target=lambda: _catch(done, lambda: store.check(KEYS[0])), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "reading a FIFO state hung"
    assert isinstance(done[0], RigError) and "not a regular file" in str(done[0])


def _catch(into: list[BaseException], fn: object) -> None:
    try:
        fn()  # type: ignore[operator]
    except BaseException as exc:
        into.append(exc)


def _panel(state: Path, counter: Path | None = None) -> Profile:
    key_file = state.parent.parent / "panel-7.key"
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
    if counter is not None:
        campaign["freshness_counter"] = str(counter)
    return replace(prof, campaign=campaign, raw=dict(prof.raw, campaign=campaign))


def test_a_campaign_saves_as_it_goes_and_refuses_a_rolled_back_lab(tmp_path: Path) -> None:
    state = tmp_path / "lab" / "freshness.json"
    prof = _panel(state, tmp_path / "elsewhere" / "counter.json")
    key = prof.key()
    assert key is not None
    panel_key: DeviceKey = key
    seen: list[int] = []

    class Watch:
        def start(self, description: str, total: int | None) -> None:
            pass

        def advance(self, n: int = 1) -> None:
            seen.append(FreshnessStore(state, prof.campaign["freshness_counter"]).last(panel_key))

    first = run_campaign(CampaignOptions(prof, tmp_path / "one", size=40, seed=1), progress=Watch())
    assert first.verdict is Verdict.PASS
    # while the part ran, the state already held accepted results (not only at its end)
    assert max(seen[:-1]) > 0
    shutil.copy(state, tmp_path / "copy.json")
    run_campaign(CampaignOptions(prof, tmp_path / "two", size=40, seed=2))
    shutil.copy(tmp_path / "copy.json", state)  # rolled back to before campaign two
    with pytest.raises(SecurityFault, match="older copy"):
        run_campaign(CampaignOptions(prof, tmp_path / "three", size=40, seed=3))
    assert not (tmp_path / "three").exists()  # refused before anything was collected
    state.unlink()
    with pytest.raises(SecurityFault, match="is gone"):
        run_campaign(CampaignOptions(prof, tmp_path / "four", size=40, seed=3))


def test_an_unwritable_location_is_named_before_collection(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")  # a file where the state's folder should be (even root fails)
    prof = _panel(blocker / "freshness.json")
    with pytest.raises(RigError, match="not-a-folder") as exc:
        run_campaign(CampaignOptions(prof, tmp_path / "out", size=40, seed=1))
    assert "freshness_state" in str(exc.value) and "--out" not in str(exc.value)
    assert not (tmp_path / "out").exists()
    prof = _panel(tmp_path / "lab" / "freshness.json", blocker / "counter.json")
    with pytest.raises(RigError, match=r"freshness counter .*not-a-folder"):
        run_campaign(CampaignOptions(prof, tmp_path / "out", size=40, seed=1))
