"""The simulated wire moves a run of quietly taken frames in one call a receiver (issue 37:
``SimWire._move_run``, the device's block queued as one run by ``RigBus.send_run``), or one
by one in one event (``SimWire._frame_end`` with ``SimClock.run_ahead``), and hands a frame's
fields to listeners with a raw form (``SimListeners.raw_route``): the same frames at the same
instants as one event and one python-can message a frame, so the same capture byte for byte;
and the clock's rules for running ahead."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.bus.simbus import SimListeners, SimWire
from feltlab.rig.bus.transport import RigBus
from feltlab.rig.bus.writer import CaptureWriter
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.clients import BatchShufflerClient
from feltlab.rig.clock import SimClock
from feltlab.rig.devices import BatchShuffler


def test_run_ahead_only_inside_a_wait_before_its_deadline_and_the_next_event() -> None:
    clock = SimClock()
    assert not clock.run_ahead(1.0)  # no wait running: nobody to run ahead for
    seen: list[tuple[bool, float]] = []

    def ahead(when: float) -> None:
        seen.append((clock.run_ahead(when), clock.now()))

    clock.call_at(0.5, lambda: ahead(0.6))  # nothing due before 0.7: allowed
    clock.call_at(0.7, lambda: ahead(0.8))  # an event at 0.75 comes first: refused
    clock.call_at(0.75, lambda: None)
    clock.call_at(1.0, lambda: ahead(1.0))  # not later than now: refused
    clock.call_at(1.0, lambda: ahead(2.5))  # past the waiter's deadline (2.0): refused
    clock.call_at(1.0, lambda: ahead(1.5))  # nothing else due: allowed
    assert clock.wait(lambda: None, 2.0) is None
    assert seen == [(True, 0.6), (False, 0.7), (False, 1.0), (False, 1.0), (True, 1.5)]
    assert clock.now() == 2.0
    assert clock.events_run == 6 + 2  # each run-ahead counted as the event it replaces


def test_run_ahead_refuses_a_cancelled_events_place_only_once_it_is_gone() -> None:
    clock = SimClock()
    got: list[bool] = []
    later = clock.call_at(0.2, lambda: None)
    later.cancel()  # a cancelled event does not hold the wire back
    clock.call_at(0.1, lambda: got.append(clock.run_ahead(0.3)))
    clock.wait(lambda: None, 1.0)
    assert got == [True]


def test_run_ahead_count_is_run_ahead_one_instant_after_another() -> None:
    clock = SimClock()
    assert clock.run_ahead_count([0.1]) == 0  # no wait running
    seen: list[int] = []

    def count() -> None:
        # 0.3 is not later than 0.3; 0.8 lies past the event due at 0.75
        seen.append(clock.run_ahead_count([0.35, 0.5, 0.7, 0.8]))
        seen.append(clock.run_ahead_count([0.3, 0.4]))
        clock.run_ahead_run(0.7, 3)
        seen.append(clock.run_ahead_count([0.75]))  # the event's own instant: refused

    clock.call_at(0.3, count)
    clock.call_at(0.75, lambda: seen.append(clock.run_ahead_count([1.5, 2.5])))  # deadline 2
    assert clock.wait(lambda: None, 2.0) is None
    assert seen == [3, 0, 0, 1]
    assert clock.events_run == 2 + 3  # the run counted as the three events it replaces


def test_a_captures_run_writes_the_journal_and_frames_of_one_frame_at_a_time(
    tmp_path: Path,
) -> None:
    """:meth:`CaptureWriter.run_take` writes the very journal lines (chained MACs included)
    and kept frames that :meth:`CaptureWriter.on_data` writes one frame at a time."""
    from feltlab.rig.bus.capture import verify_journal
    from feltlab.rig.bus.writer import journal_path

    key = bytes(range(32))
    owner = {"campaign": "c0ffee", "part": 1}
    t0 = 946684800.0
    stamps = [t0 + 0.000224 * i for i in range(1, 40)]
    datas = [bytes([0x20 | i & 0x0F]) + bytes(range(i, i + 7)) for i in range(1, 40)]
    one = CaptureWriter(tmp_path / "one.blf", owner=owner, chain_key=key)
    run = CaptureWriter(tmp_path / "run.blf", owner=owner, chain_key=key)
    for t, d in zip(stamps, datas, strict=True):
        one.on_data(t, 0x111, d, False)
    assert run.run_quiet(0x111, False, stamps, datas) == len(datas)
    run.run_take(0x111, False, stamps[:10], stamps[:10], datas[:10])
    run.run_take(0x111, False, stamps[10:], stamps[10:], datas[10:])
    texts = [journal_path(w.path).read_bytes().rstrip(b"\0") for w in (one, run)]
    assert texts[0] == texts[1]
    assert texts[0].count(b" mac=") == len(datas)
    assert verify_journal(journal_path(run.path), key) == len(datas)
    one.stop()
    run.stop()
    assert one.frames == run.frames == len(datas)
    assert one.path.read_bytes() == run.path.read_bytes()


@pytest.mark.parametrize("size", [0, 16, 32, 64, 65, 100])
def test_the_journals_chain_mac_is_hmac_sha256_from_its_pads(size: int) -> None:
    """``ChainMac`` (the key's pads hashed once) gives ``chain_next``'s HMAC-SHA256 (RFC
    2104: keys up to the 64-byte block padded, longer ones hashed first)."""
    from feltlab.rig.bus.writer import ChainMac, chain_next

    key = bytes((7 * i + 3) % 256 for i in range(size))
    mac = ChainMac(key)
    prev = bytes(range(16))
    bodies = ["(946684800.000224000) can0 132#2101020304050607 R", "", "x" * 200]
    for body in bodies:
        assert mac.next(prev, body.encode()) == chain_next(key, prev, body)
    text, last = mac.lines(prev, bodies)
    want, tag = [], prev
    for body in bodies:
        tag = chain_next(key, tag, body)
        want.append(f"{body} mac={tag.hex()}\n")
    assert (text, last) == ("".join(want), tag)


def _shoes_capture(folder: Path, shoes: int) -> tuple[bytes, int, int]:
    """A simulated batch shuffler read ``shoes`` times with a capture: the BLF's bytes, the
    frames on the wire and the events the clock ran."""
    clock = SimClock()
    bus = "interface=virtual,channel=wire-runs"
    dev = BatchShuffler(bus, seed=7, clock=clock).start()
    cap = CaptureWriter(folder / "capture.blf")
    client = BatchShufflerClient(bus, clock=clock, timeout=0.5, capture=cap)
    try:
        client.wait_online(1.0)
        for _ in range(shoes):
            assert client.read_shoe(client.shuffle()).codes.size == 312
    finally:
        client.close()
        dev.stop()
    return (folder / "capture.blf").read_bytes(), cap.frames, clock.events_run


def test_a_run_of_frames_is_the_capture_of_one_event_a_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # runs taken whole (SimWire._move_run: each receiver's RunListener, one call a run)
    taken: list[int] = []
    run_take = CaptureWriter.run_take

    def spy_take(self: CaptureWriter, *args: Any) -> None:
        taken.append(len(args[-1]))
        run_take(self, *args)

    monkeypatch.setattr(CaptureWriter, "run_take", spy_take)
    (tmp_path / "whole").mkdir()
    whole, frames, events = _shoes_capture(tmp_path / "whole", 3)
    # a shoe is one first frame, a flow control and 51 consecutive frames: the last completes
    # the payload (which a waiter sees), the 50 before it move in runs, one a shoe unless an
    # event falls due inside it (the second shoe's, at frame 41: the run stops before it)
    assert taken == [50, 41, 8, 50]
    monkeypatch.setattr(CaptureWriter, "run_take", run_take)

    # one frame at a time, run ahead inside the event of the frame before
    monkeypatch.setattr(SimWire, "RUN_LIMIT", 0)
    runs: list[bool] = []
    real = SimClock.run_ahead

    def spy(self: SimClock, when: float) -> bool:
        runs.append(real(self, when))
        return runs[-1]

    monkeypatch.setattr(SimClock, "run_ahead", spy)
    raw: list[int] = []
    on_data = CaptureWriter.on_data

    def count(self: CaptureWriter, stamp: float, aid: int, data: bytes, ext: bool) -> None:
        raw.append(aid)
        on_data(self, stamp, aid, data, ext)

    monkeypatch.setattr(CaptureWriter, "on_data", count)
    (tmp_path / "runs").mkdir()
    fast, frames_fast, events_fast = _shoes_capture(tmp_path / "runs", 3)
    assert len(raw) >= 3 * 51  # every consecutive frame went by its fields
    # 50 of a shoe's 51 consecutive frames move in a run (the last completes the payload)
    assert runs.count(True) >= 3 * 50
    monkeypatch.setattr(SimClock, "run_ahead", lambda self, when: False)
    # and the device's ISO-TP sender queueing one python-can message a frame
    monkeypatch.setattr(RigBus, "send_run", lambda self, aid, datas: False)
    (tmp_path / "events").mkdir()
    slow, frames_slow, events_slow = _shoes_capture(tmp_path / "events", 3)
    assert frames == frames_fast == frames_slow > 3 * 53
    assert whole == fast == slow  # byte for byte: every instant and every byte the same
    assert events == events_fast == events_slow
    # every frame as a python-can message (no raw forms): the same file again
    monkeypatch.setattr(SimListeners, "raw_route", lambda self, aid, ext: None)
    (tmp_path / "messages").mkdir()
    assert _shoes_capture(tmp_path / "messages", 3) == (slow, frames, events)


DEMO_CAPTURE_SHA256 = "cd89d9ab117524078673d5fba3998586329a5c80ca1afe08619d6642cd8046ca"
"""``make demo``'s capture (2,000 shoes, seed 7, the bundled profile, simulated time).  It
was a0f8440d... up to protocol 2.1; protocol 2.2 (the raw-output channel, issue 39) changed
only the minor version the device's frames carry: with ``PROTOCOL_MINOR = 1`` the same code
writes a0f8440d... byte for byte."""


def test_the_demo_capture_is_fixed_by_its_seed(tmp_path: Path) -> None:
    """A seed fixes the demo's capture byte for byte, whatever the host (issue 37: the
    collection's frames are moved in runs, through raw listeners, in fewer events; the bytes
    must not move)."""
    res = run_campaign(
        CampaignOptions(load_profile(None, "batch"), tmp_path / "d", size=2000, seed=7)
    )
    digest = hashlib.sha256((res.directory / "capture-001.blf").read_bytes()).hexdigest()
    assert digest == DEMO_CAPTURE_SHA256
    assert str(res.verdict) == "PASS"
