"""Devices and clients on the in-process virtual bus: protocol behaviour, faults, capture.

Protocol behaviour runs in simulated time (a :class:`SimClock` shared by device and client), so
that a busy host cannot starve the 20 ms heartbeat and lose the device mid-test; two tests run
on the host's clock because real time is what they check: the capture's epoch stamps
(:func:`test_batch_collect_capture_and_replay`) and the bitrate's pacing
(:func:`test_device_bitrate_pacing`)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from feltlab import native
from feltlab.rig.bus.capture import CaptureDecoder, decode_capture, read_capture, replay
from feltlab.rig.clients import (
    BatchShufflerClient,
    ContinuousShufflerClient,
    JackpotPanelClient,
)
from feltlab.rig.clock import SimClock
from feltlab.rig.devices import BatchShuffler, ContinuousShuffler, JackpotPanel, Timing, make_device
from feltlab.rig.errors import DeviceLost, DeviceRefused, DeviceTimeout, ProtocolError, RigError
from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, FaultCode, Result, ShoePayload

from .conftest import wait_threads_gone

FAST = Timing(heartbeat_period=0.02)


@contextmanager
def pair(
    device_cls: type[Any],
    client_cls: type[Any],
    bus: str,
    *,
    dev_kw: dict[str, Any] | None = None,
    cl_kw: dict[str, Any] | None = None,
    clock: SimClock | None = None,
) -> Iterator[tuple[Any, Any]]:
    """A started device and its client; with ``clock`` (a SimClock) both in simulated time."""
    dev = device_cls(bus, **{"seed": 11, "timing": FAST, "clock": clock, **(dev_kw or {})})
    dev.start()
    cl = client_cls(bus, **{"timeout": 0.3, "clock": clock, **(cl_kw or {})})
    try:
        cl.wait_online(2.0)
        yield dev, cl
    finally:
        cl.close()
        dev.stop()


def test_batch_collect_capture_and_replay(vbus: str, tmp_path: Path) -> None:
    before = set(threading.enumerate())
    cap = tmp_path / "run.blf"
    with pair(
        BatchShuffler,
        BatchShufflerClient,
        vbus,
        dev_kw={"model": "riffle:k=7", "bitrate": 1_000_000},
        cl_kw={"capture": cap},
    ) as (_dev, cl):
        col = cl.collect(4, cut_position=200)
        assert not col.missing and col.ids().shape == (4, 312)
        for row in col.ids():
            assert sorted(row.tolist()) == list(range(312))
        assert [s.shoe_number for s in col.shoes] == [1, 2, 3, 4]
        assert all(s.cut_position == 200 for s in col.shoes)
        assert cl.status()["ShoeCount"] == 4
    assert wait_threads_gone(before) == []
    # the capture holds every frame with epoch stamps, and replays into the same decoders
    frames = list(read_capture(cap))
    assert frames and all(f.timestamp > 1.6e9 for f in frames)
    shoes = [r.value for r in decode_capture(cap) if r.name == "SHOE"]
    assert [s.shoe_number for s in shoes] == [1, 2, 3, 4]
    assert (np.stack([s.ids() for s in shoes]) == col.ids()).all()
    names = Counter(r.name for r in decode_capture(cap, [0x100]))
    assert names["Command"] >= 8 and names["Ack"] >= 8 and names["Heartbeat"] >= 1


def test_replay_into_client_decoder(vbus: str, tmp_path: Path) -> None:
    cap = tmp_path / "run.log"
    with pair(
        BatchShuffler, BatchShufflerClient, vbus, cl_kw={"capture": cap}, clock=SimClock()
    ) as (_, cl):
        cl.collect(1)
        live = dict(cl.counts)
    offline = BatchShufflerClient(f"{vbus}-offline")
    try:
        n = replay(cap, offline.on_message)
        assert n > 0
        assert offline.counts["Ack"] == live["Ack"]
        assert offline.counts["Status"] == live["Status"]
    finally:
        offline.close()


def test_load_custom_order_and_unknown_decks(vbus: str) -> None:
    with pair(
        BatchShuffler,
        BatchShufflerClient,
        vbus,
        dev_kw={"decks": 4, "reports_decks": False, "model": "stuck:pos=0"},
        clock=SimClock(),
    ) as (_, cl):
        order = native.new_shoe(4)
        cl.load(order[::-1].copy())
        assert cl.status()["Cards"] == 208
        n = cl.shuffle()
        shoe = cl.read_shoe(n)
        assert shoe.codes[0] == order[-1]  # the stuck card stayed on top
        assert (shoe.card_decks == 0xFF).all()
        assert sorted(shoe.codes.tolist()) == sorted(order.tolist())


def test_faulty_models_are_collected_not_hidden(vbus: str) -> None:
    with pair(
        BatchShuffler, BatchShufflerClient, vbus, dev_kw={"model": "missing"}, clock=SimClock()
    ) as (_, cl):
        col = cl.collect(2)
        assert not col.missing and all(len(s.codes) == 311 for s in col.shoes)


def test_shuffle_duration_and_busy(vbus: str) -> None:
    timing = Timing(heartbeat_period=0.02, shuffle_duration=0.15)
    clock = SimClock()
    with pair(BatchShuffler, BatchShufflerClient, vbus, dev_kw={"timing": timing}, clock=clock) as (
        _dev,
        cl,
    ):
        t0 = clock.now()
        n = cl.shuffle()
        # the shuffle duration plus the Command, Ack and Status frames on the wire
        assert 0.15 < clock.now() - t0 < 0.15 + 3 * 135 / 500_000 + 1e-9 and n == 1
        cl.request(0x10)  # SHUFFLE again ...
        with pytest.raises(DeviceRefused) as exc:  # ... and once more while busy
            cl.request(0x10, arg32=5)
        assert exc.value.result == Result.BUSY
        with pytest.raises(DeviceRefused):
            cl.request(0x11)  # READ_SHOE while busy: BAD_STATE


def test_transfer_faults_recovered_by_retry(vbus: str) -> None:
    with pair(BatchShuffler, BatchShufflerClient, vbus, clock=SimClock()) as (dev, cl):
        n = cl.shuffle()
        good = cl.read_shoe(n)
        dev.inject("corrupt_frame")
        assert (cl.read_shoe(n).codes == good.codes).all()
        dev.inject("silence_mid_transfer", 4)
        assert (cl.read_shoe(n).codes == good.codes).all()
        assert cl.transfer_retries >= 2 and dev.frames_dropped > 0


def test_unrecoverable_transfer_reported_with_reason(vbus: str) -> None:
    clock = SimClock()
    with pair(BatchShuffler, BatchShufflerClient, vbus, cl_kw={"retries": 0}, clock=clock) as (
        dev,
        cl,
    ):
        cl.shuffle()
        dev.inject("silence_mid_transfer", 2)
        clock.sleep(0.05)
        col = cl.collect(1)
        # the SHUFFLE of collect succeeded, its transfer was silenced: missing, with why
        assert not col.shoes and len(col.missing) == 1
        assert "SHOE" in col.missing[0][1]


def test_jam_fault_and_clear(vbus: str) -> None:
    clock = SimClock()
    with pair(BatchShuffler, BatchShufflerClient, vbus, clock=clock) as (_dev, cl):
        cl.inject_fault("jam")
        with pytest.raises(DeviceRefused):
            cl.shuffle()
        clock.sleep(0.05)
        assert any(e.kind == "fault" and e.detail["code"] == FaultCode.JAM for e in cl.events)
        with pytest.raises(DeviceRefused):
            cl.shuffle()
        cl.clear_fault()
        assert cl.shuffle() == 1


def test_heartbeat_supervision_lost_and_recovered(vbus: str) -> None:
    """In simulated time: lost exactly once 3 periods (60 ms) passed since the last heartbeat,
    seen at the watchdog's next quarter-period tick; recovered at the next heartbeat."""
    seen = []
    clock = SimClock()
    with pair(
        BatchShuffler,
        BatchShufflerClient,
        vbus,
        cl_kw={"on_event": lambda e: seen.append(e.kind)},
        clock=clock,
    ) as (dev, cl):
        dev.inject("jump_counter", 5)
        clock.sleep(0.1)
        assert any(e.kind == "counter_gap" and e.detail["missed"] == 5 for e in cl.events)
        dev.inject("stop_heartbeats")
        last = cl._last_hb
        assert clock.wait(lambda: cl.lost, 1.0)
        assert 0.06 < clock.now() - last <= 0.06 + 0.005 + 1e-9  # 3 periods, a 5 ms tick
        with pytest.raises(DeviceLost):
            cl.status()
        dev.inject("clear")
        assert clock.wait(lambda: not cl.lost, 0.1)
    assert "lost" in seen and "recovered" in seen and "online" in seen


def test_reboot_detected_and_state_lost(vbus: str) -> None:
    clock = SimClock()
    with pair(BatchShuffler, BatchShufflerClient, vbus, clock=clock) as (_dev, cl):
        cl.shuffle()
        cl.reboot()
        clock.sleep(0.2)
        kinds = [e.kind for e in cl.events]
        assert "reboot" in kinds
        assert any(e.kind == "fault" and e.detail["code"] == FaultCode.REBOOTED for e in cl.events)
        with pytest.raises(DeviceRefused):
            cl.read_shoe()  # the shoe did not survive the reboot
        assert cl.read_audit().boot_count == 1


def test_device_speaking_another_protocol_version(vbus: str) -> None:
    clock = SimClock()
    dev = BatchShuffler(vbus, seed=1, timing=FAST, protocol_major=1, clock=clock).start()  # 1.x
    cl = BatchShufflerClient(vbus, timeout=0.2, retries=0, clock=clock)
    try:
        with pytest.raises(ProtocolError, match="protocol 1"):
            cl.wait_online(1.0)
        with pytest.raises(DeviceRefused) as exc:
            cl.ping()
        assert exc.value.result == Result.UNSUPPORTED_VERSION
        clock.sleep(0.05)
        kinds = {e.kind for e in cl.events}
        assert {"protocol_version", "fault"} <= kinds
    finally:
        cl.close()
        dev.stop()


def test_timeouts_when_no_device(vbus: str) -> None:
    clock = SimClock()
    cl = BatchShufflerClient(vbus, timeout=0.05, retries=1, clock=clock)
    try:
        with pytest.raises(DeviceTimeout):
            cl.wait_online(0.1)
        assert clock.now() == pytest.approx(0.1)
        with pytest.raises(DeviceTimeout):
            cl.ping()
        # two attempts of 50 ms each, exactly (simulated time)
        assert clock.now() == pytest.approx(0.2) and cl.retransmissions == 1
    finally:
        cl.close()


def test_device_bitrate_pacing(vbus: str) -> None:
    with pair(
        BatchShuffler,
        BatchShufflerClient,
        vbus,
        dev_kw={"bitrate": 125_000},
        cl_kw={"timeout": 1.0},
    ) as (_dev, cl):
        n = cl.shuffle()
        t0 = time.perf_counter()
        shoe = cl.read_shoe(n)
        elapsed = time.perf_counter() - t0
        size = len(shoe.encode())  # protocol 2.1: the packed SHOE of 6 decks, 366 bytes
        assert shoe.packed and size == 11 + (312 * 9 + 7) // 8 + 4
        frames = 1 + (size - 6 + 6) // 7  # FF + CFs
        assert elapsed >= frames * 111 / 125_000 * 0.9


def test_continuous_shuffler(vbus: str) -> None:
    with pair(
        ContinuousShuffler,
        ContinuousShufflerClient,
        vbus,
        dev_kw={"decks": 1, "slots": 8, "timing": Timing(0.02, card_latency=0.01)},
        clock=SimClock(),
    ) as (_, cl):
        cards = [cl.deal() for _ in range(52)]
        assert sorted(c.code for c in cards) == list(range(52))
        assert [c.sequence for c in cards] == list(range(1, 53))
        assert cards[-1].remaining == 0
        with pytest.raises(DeviceRefused) as exc:
            cl.deal()
        assert exc.value.result == Result.EMPTY
        assert cl.insert(5, 0) == 1
        assert cl.deal().code == 5
        cl.load([1, 2, 3], [0, 0, 0])
        cl.load([4], [0], insert=True)
        assert cl.status()["Cards"] == 4
        assert sorted(cl.deal().code for _ in range(4)) == [1, 2, 3, 4]


def test_jackpot_panel_round(vbus: str) -> None:
    with pair(
        JackpotPanel,
        JackpotPanelClient,
        vbus,
        dev_kw={
            "prize_table": [(2500, 3), (100_000, 1)],
            "timing": Timing(0.02, button_latency=0.02),
        },
        clock=SimClock(),
    ) as (dev, cl):
        assert cl.prize_table() == ((2500, 3), (100_000, 1))
        cl.arm(41, [2, 5])
        cl.press(2)
        assert cl.wait_press() == 2
        cents = cl.result(2)
        assert cents in (2500, 100_000) and cl.last_result["Box"] == 2
        cl.display(cents)
        with pytest.raises(DeviceRefused):
            cl.press(3)  # not armed
        dev.press(5)  # the physical button
        assert cl.result(5) in (2500, 100_000)
        with pytest.raises(DeviceRefused):
            cl.press(5)  # one press per box and round
        with pytest.raises(ValueError):
            cl.arm(42, [0])


def test_jackpot_draws_follow_the_prize_table(vbus: str) -> None:
    # in simulated time: 200 rounds in real time against a 20 ms heartbeat were lost to a
    # loaded host ("missed 3 heartbeat periods"), which is not what this test is about
    with pair(
        JackpotPanel,
        JackpotPanelClient,
        vbus,
        dev_kw={"prize_table": [(100, 1), (200, 3)]},
        clock=SimClock(),
    ) as (_, cl):
        got: Counter[int] = Counter()
        for r in range(200):
            cl.arm(r, [1])
            cl.press(1)
            got[cl.result()] += 1
        assert set(got) == {100, 200}
        assert 0.15 < got[100] / 200 < 0.35  # expected 0.25


def test_jackpot_failures(vbus: str) -> None:
    clock = SimClock()
    with pair(JackpotPanel, JackpotPanelClient, vbus, cl_kw={"timeout": 0.1}, clock=clock) as (
        dev,
        cl,
    ):
        cl.arm(1, [1])
        dev.inject("drop_result")
        cl.press(1)
        assert cl.result(timeout=0.05) > 0  # the lost result is asked for again (STATUS)
        dev.inject("display")
        with pytest.raises(DeviceRefused):
            cl.display(100)
        cl.arm(2, [1])
        dev.inject("button")
        with pytest.raises(DeviceRefused):
            cl.press(1)
        clock.sleep(0.05)
        codes = {e.detail.get("code") for e in cl.events if e.kind == "fault"}
        assert {FaultCode.DISPLAY, FaultCode.BUTTON} <= codes


def test_retry_does_not_execute_twice(vbus: str) -> None:
    """A repeated request id replays the reply: a lost Ack never causes a second draw."""
    clock = SimClock()
    with pair(JackpotPanel, JackpotPanelClient, vbus, clock=clock) as (dev, cl):
        cl.arm(7, [1])
        msg = cl.codec.encode(
            "Command",
            {
                "RequestId": 200,
                "Opcode": 0x31,
                "ProtocolMajor": PROTOCOL_MAJOR,
                "Arg8": 1,
                "Arg32": 0,
            },
        )
        cl.node.send(msg)
        clock.sleep(0.05)
        cl.node.send(
            cl.codec.encode(
                "Command",
                {
                    "RequestId": 200,
                    "Opcode": 0x31,
                    "ProtocolMajor": PROTOCOL_MAJOR,
                    "Arg8": 1,
                    "Arg32": 0,
                },
            )
        )
        clock.sleep(0.05)
        assert dev.draws == 1 and cl.counts["JackpotResult"] == 2


def test_make_device_from_profile(vbus: str) -> None:
    dev = make_device(
        "batch", vbus, {"decks": 8, "model": "shelf:m=10", "base": 0x120, "heartbeat_period": 0.05}
    )
    assert dev.base == 0x120 and dev.decks == 8 and dev.timing.heartbeat_period == 0.05  # type: ignore[attr-defined]
    with pytest.raises(RigError, match="unknown profile key"):
        make_device("jackpot", vbus, {"decks": 6})
    with pytest.raises(RigError):
        make_device("toaster", vbus)
    with pytest.raises(ValueError):
        BatchShuffler(vbus, decks=3)


def test_two_devices_share_one_bus(vbus: str) -> None:
    clock = SimClock()
    a = BatchShuffler(vbus, seed=1, timing=FAST, base=0x100, clock=clock).start()
    b = JackpotPanel(vbus, seed=2, timing=FAST, base=0x300, clock=clock).start()
    from feltlab.rig.bus.transport import Node

    node = Node(vbus, pace=False, clock=clock)
    ca = BatchShufflerClient(node, timeout=0.3)
    cb = JackpotPanelClient(node, timeout=0.3)
    try:
        ca.wait_online(1)
        cb.wait_online(1)
        assert ca.collect(1).shoes and cb.prize_table()
    finally:
        ca.close()
        cb.close()
        node.close()
        a.stop()
        b.stop()


def test_capture_decoder_reports_bad_payload() -> None:
    import can

    dec = CaptureDecoder()
    shoe = ShoePayload(1, 1, 0, np.zeros(2, np.uint8), np.zeros(2, np.uint8)).encode()
    bad = bytearray(shoe)
    bad[-1] ^= 1
    frames = [bytes([0x10, len(bad)]) + bad[:6]]
    rest, seq = bad[6:], 1
    while rest:
        frames.append(bytes([0x20 | seq]) + rest[:7])
        rest, seq = rest[7:], seq + 1
    recs = [
        dec.feed(can.Message(arbitration_id=0x10A, data=f, is_extended_id=False)) for f in frames
    ]
    assert recs[-1] is not None and recs[-1].error and "CRC" in recs[-1].error


def test_can_panel_implements_the_sdk_interface(vbus: str) -> None:
    from feltlab.errors import DeviceError
    from feltlab.jackpot import JackpotPanel as SdkPanel
    from feltlab.rig.clients import CanJackpotPanel

    with pair(
        JackpotPanel,
        JackpotPanelClient,
        vbus,
        cl_kw={"retries": 1, "timeout": 0.1},
        dev_kw={"prize_table": [(5000, 1)]},
        clock=(clock := SimClock()),
    ) as (dev, cl):
        panel = CanJackpotPanel(cl)
        assert isinstance(panel, SdkPanel)
        assert panel.press(1, 3, "player") == 5000
        assert panel.press(2, 1, "casino employee") == 5000
        dev.inject("display")
        with pytest.raises(DeviceError):
            panel.press(3, 1, "player")
        dev.inject("stop_heartbeats")
        clock.sleep(0.1)
        with pytest.raises(DeviceError):
            panel.press(4, 1, "player")


def test_madness21_rounds_against_the_can_panel(vbus: str) -> None:
    engine = pytest.importorskip("feltlab.engine")
    from feltlab.math.strategy import BasicStrategy
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager
    from feltlab.rig.clients import CanJackpotPanel
    from feltlab.rules import Rules
    from feltlab.shoe import make_source

    rules = Rules.preset("nz")
    pm = get_plugin_manager()
    registry = collect_wagers(pm)
    wagers = [registry.create(n) for n in registry.names() if n in ("main", "madness21")]
    with pair(
        JackpotPanel,
        JackpotPanelClient,
        vbus,
        dev_kw={"prize_table": [(5000, 1)]},
        clock=SimClock(),
    ) as (dev, cl):
        panel = CanJackpotPanel(cl)
        table = engine.Table(
            rules,
            make_source(rules, native.ChaCha20(3)),
            wagers,
            boxes=7,
            panel=panel,
            hook=pm.hook,
        )
        policy = BasicStrategy(rules)
        for _ in range(40):
            bets = [
                (b, f"P{b + 1}", w, 1000 if w == "main" else 500)
                for b in range(7)
                for w in ("main", "madness21")
            ]
            engine.play_round(table, bets, policy)
        assert panel.presses > 0 and dev.draws == panel.presses
