"""Authenticated jackpot results (protocol 1.1, AUTOSAR SecOC style): the MAC, the freshness
reconstruction, the pairing of results with their MACs, and a panel that forges, replays and
reorders its results.

The panel and its client run in simulated time (a :class:`SimClock` shared by both): on the
simulated bus a later result overtakes a queued MAC by arbitration, as on a real bus, and a
busy host cannot starve the 20 ms heartbeat."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import can
import pytest
from pytest import LogCaptureFixture

from feltlab.errors import DeviceError
from feltlab.rig.bus.capture import CaptureDecoder
from feltlab.rig.certify.decode import JackpotFrame, read_campaign_capture
from feltlab.rig.clients import SECURITY_REASONS, CanJackpotPanel, JackpotPanelClient
from feltlab.rig.clock import SimClock
from feltlab.rig.devices import JackpotPanel, Timing, make_device
from feltlab.rig.errors import DeviceKeyError, DeviceTimeout, SecurityFault
from feltlab.rig.kinds.jackpot.checks import verify_results
from feltlab.rig.protocol.codec import Codec
from feltlab.rig.protocol.secoc import (
    MAC_WINDOW,
    DeviceKey,
    FreshnessVerifier,
    MacWindow,
    Verified,
    authenticator,
    load_key,
)

KEY = DeviceKey("panel-7", bytes(range(32)))
FAST = Timing(heartbeat_period=0.02)


@contextmanager
def pair(
    bus: str,
    *,
    dev_key: DeviceKey | None = KEY,
    cl_kw: dict[str, Any] | None = None,
    dev_kw: dict[str, Any] | None = None,
) -> Iterator[tuple[JackpotPanel, JackpotPanelClient]]:
    clock = SimClock()
    dev = JackpotPanel(bus, seed=5, timing=FAST, key=dev_key, clock=clock, **(dev_kw or {}))
    dev.start()
    cl = JackpotPanelClient(
        bus, **{"timeout": 0.3, "retries": 1, "key": KEY, "clock": clock, **(cl_kw or {})}
    )
    try:
        cl.wait_online(2.0)
        yield dev, cl
    finally:
        cl.close()
        dev.stop()


def reasons(cl: JackpotPanelClient) -> list[int]:
    return [e.detail["reason"] for e in cl.events if e.kind == "security"]


def test_mac_test_vector_matches_a_straight_hmac() -> None:
    key = bytes.fromhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
    payload = bytes.fromhex("c409000007000103")  # PrizeCents 2500, DrawCounter 7, tag 1, box 3
    data_id, fv = 0x307, 0x0000_0001_0000_0007
    want = hmac.new(
        key, b"\x03\x07" + payload + b"\x00\x00\x00\x01\x00\x00\x00\x07", hashlib.sha256
    ).digest()[:8]
    assert authenticator(key, data_id, payload, fv) == want
    assert authenticator(DeviceKey("k", key), data_id, payload, fv) == want
    assert want == bytes.fromhex("2f1ef7c513ac89c8")  # the vector of docs/protocol.md
    assert len(want) * 8 >= 64
    # the data id, the payload and every bit of the freshness value are authenticated
    assert authenticator(key, 0x317, payload, fv) != want
    assert authenticator(key, data_id, payload, fv + (1 << 40)) != want
    assert authenticator(key, data_id, payload[:-1] + b"\x04", fv) != want


def test_freshness_is_reconstructed_as_secoc_does() -> None:
    v = FreshnessVerifier(KEY, 0x307, last=0x1_FFFE)
    payload = bytes(8)

    def mac(fv: int) -> bytes:
        return authenticator(KEY, 0x307, payload, fv)

    # low 16 bits 0x0003 after 0x1FFFE: the counter wrapped, the full value is 0x20003
    assert v.verify(payload, 0x0003, mac(0x2_0003)).freshness == 0x2_0003
    assert v.last == 0x2_0003
    # the same frame again is a byte-identical repeat, not a new result
    assert v.verify(payload, 0x0003, mac(0x2_0003)).fresh is False
    with pytest.raises(SecurityFault) as err:  # authentic but older: reordered
        v.verify(payload, 0x0002, mac(0x2_0002))
    assert err.value.reason == "reordered"
    with pytest.raises(SecurityFault) as err:
        v.verify(payload, 0x0004, b"\x00" * 8)
    assert err.value.reason == "forged"
    assert v.last == 0x2_0003


def test_key_is_never_shown(tmp_path: Path, caplog: LogCaptureFixture) -> None:
    secret = "ab" * 32
    key = load_key({"key": secret, "key_id": "lab-panel"})
    assert key is not None and key.key == bytes.fromhex(secret)
    assert secret not in repr(key) and secret not in str(key) and "lab-panel" in repr(key)
    f = tmp_path / "panel.key"
    f.write_text(secret + "\n")
    assert load_key({"key_file": str(f)}) == DeviceKey("panel.key", bytes.fromhex(secret))
    raw = tmp_path / "raw.key"
    raw.write_bytes(bytes(range(200, 232)))
    with pytest.raises(DeviceKeyError, match="hex digits"):  # never used as raw bytes
        load_key({"key_file": raw})
    for bad in ({"key": "abcd"}, {"key": "zz" * 20}, {"key_file": tmp_path / "no"}, {"key": 5}):
        with pytest.raises(DeviceKeyError) as err:
            load_key(bad)
        assert "zz" * 20 not in str(err.value)
    with caplog.at_level(logging.DEBUG):
        dev = make_device("jackpot", "interface=virtual,channel=x", {"key": secret})
        assert isinstance(dev, JackpotPanel)
        assert dev.key is not None and dev.key.key_id == "profile"
    assert secret not in caplog.text and secret.upper() not in caplog.text


def test_a_key_file_that_is_not_a_small_regular_file_is_refused_unread(tmp_path: Path) -> None:
    """Issue 41: a FIFO as the key file hung ``certify jackpot-panel``; /dev/zero was read
    without a bound.  Both are refused at once, naming the file and what it is."""
    fifo = tmp_path / "panel.key"
    os.mkfifo(fifo)
    with pytest.raises(DeviceKeyError, match=r"key file .*panel\.key"):
        load_key({"key_file": str(fifo)})  # returns at once: opened O_NONBLOCK, refused by fstat
    with pytest.raises(DeviceKeyError, match="key file /dev/zero"):
        load_key({"key_file": "/dev/zero"})
    big = tmp_path / "big.key"
    big.write_text("ab" * 4096)
    with pytest.raises(DeviceKeyError, match="over the 4096 accepted"):
        load_key({"key_file": str(big)})
    with pytest.raises(DeviceKeyError, match="does not exist"):
        load_key({"key_file": str(tmp_path / "missing.key")})


def test_authenticated_result_passes_and_capture_carries_only_the_mac(
    vbus: str, tmp_path: Path, caplog: LogCaptureFixture
) -> None:
    cap = tmp_path / "panel.blf"
    with caplog.at_level(logging.DEBUG), pair(vbus, cl_kw={"capture": cap}) as (dev, cl):
        for round_id in (1, 2):
            cl.arm(round_id, [1, 2])
            cl.press(1)
            cl.press(2)
            assert cl.result(1) > 0 and cl.result(2) > 0
        assert cl.freshness == dev.draws == 4
        # STATUS makes the panel repeat this round's results: not new draws, not faults
        cl.status()
        cl.arm(3, [1])
        cl.press(1)
        assert cl.result(1) > 0
        assert reasons(cl) == [] and cl.security_faults == 0
        assert cl.counts["JackpotResultMac"] >= 5
    assert KEY.key.hex() not in caplog.text
    dec = CaptureDecoder()
    names = [r.name for msg in can.LogReader(str(cap)) if (r := dec.feed(msg))]
    assert names.count("JackpotResultMac") >= 5
    assert KEY.key not in cap.read_bytes()


def test_sdk_panel_surfaces_security_fault_as_device_error(vbus: str) -> None:
    with pair(vbus) as (dev, cl):
        panel = CanJackpotPanel(cl)
        assert panel.press(1, 0, "player") > 0
        dev.inject("forge_result")
        with pytest.raises(DeviceError) as err:  # rule 16.12 applies at the table
            panel.press(2, 0, "player")
        assert isinstance(err.value, SecurityFault)


def test_forged_result_is_refused(vbus: str) -> None:
    with pair(vbus) as (dev, cl):
        cl.arm(1, [1])
        dev.inject("forge_result", 1_000_000)
        cl.press(1)
        with pytest.raises(SecurityFault) as err:
            cl.result(1)
        assert err.value.reason == "forged"
        assert reasons(cl) == [SECURITY_REASONS["forged"]]
        assert cl.freshness == 0  # nothing was accepted


def test_wrong_key_is_refused_as_forged(vbus: str) -> None:
    other = DeviceKey("other", b"\x55" * 32)
    with pair(vbus, dev_key=other) as (_dev, cl):
        cl.arm(1, [1])
        cl.press(1)
        with pytest.raises(SecurityFault, match="forged"):
            cl.result(1)


def test_replayed_result_is_refused(vbus: str) -> None:
    with pair(vbus) as (dev, cl):
        cl.arm(1, [1])
        cl.press(1)
        first = cl.result(1)
        assert first > 0
        cl.arm(2, [1])
        dev.inject("replay_result")  # the panel sends round 1's signed result again
        cl.press(1)
        with pytest.raises(SecurityFault) as err:
            cl.result(1)
        assert err.value.reason == "replayed"
        assert reasons(cl) == [SECURITY_REASONS["replayed"]]
        assert cl.freshness == 1


def test_reordered_results_are_refused(vbus: str) -> None:
    with pair(vbus) as (dev, cl):
        cl.arm(1, [1, 2])
        dev.inject("reorder_results")  # box 1's result is held and sent after box 2's
        cl.press(1)
        cl.press(2)
        with pytest.raises(SecurityFault) as err:
            cl.result(1)
        assert err.value.reason == "reordered"
        assert reasons(cl) == [SECURITY_REASONS["reordered"]]
        assert cl.freshness == 2  # box 2's (newer) result was accepted
        assert cl.result(2) > 0


def test_unauthenticated_panel_is_refused_when_required(vbus: str, tmp_path: Path) -> None:
    cap = tmp_path / "bare.blf"
    with pair(vbus, dev_key=None, cl_kw={"timeout": 0.15, "capture": cap}) as (dev, cl):
        cl.arm(1, [1])
        cl.press(1)
        with pytest.raises(SecurityFault) as err:
            cl.result(1)
        assert err.value.reason == "unauthenticated"
        assert reasons(cl) == [SECURITY_REASONS["unauthenticated"]]
    data = read_campaign_capture([cap], dev.base)  # offline: the same one refusal
    prizes, refused = verify_results(data.jackpot, KEY, dev.base, require_auth=True)
    assert prizes == [] and [r["reason"] for r in refused] == ["unauthenticated"]


def test_unauthenticated_mode_still_works_without_a_requirement(vbus: str) -> None:
    with pair(vbus, dev_key=None, cl_kw={"key": None}) as (_dev, cl):
        cl.arm(1, [1])
        cl.press(1)
        assert cl.result(1) > 0
    with pytest.raises(ValueError, match="key"):
        JackpotPanelClient(vbus, require_auth=True)


def test_a_lost_mac_is_recovered_not_faulted(vbus: str, tmp_path: Path) -> None:
    """A result whose MAC frame is lost is asked for again (STATUS), not refused: live, and
    offline from the capture."""
    cap = tmp_path / "lost.blf"
    with pair(vbus, cl_kw={"capture": cap}) as (dev, cl):
        codec = Codec(dev.base)
        mac_id = codec.id_of("JackpotResultMac")
        dropped: list[can.Message] = []

        def hook(msg: can.Message) -> can.Message | None:
            if msg.arbitration_id == mac_id and msg.is_extended_id and not dropped:
                dropped.append(msg)
                return None
            return msg

        assert dev.node is not None
        dev.node.bus.tx_hook = hook
        cl.arm(1, [1])
        cl.press(1)
        cents = cl.result(1, timeout=0.2)
        assert cents > 0 and dropped and cl.security_faults == 0
    data = read_campaign_capture([cap], dev.base)
    assert [f.what for f in data.jackpot].count("status") == 1
    assert verify_results(data.jackpot, KEY, dev.base, require_auth=True) == ([cents], [])


def test_freshness_survives_a_panel_reboot(vbus: str) -> None:
    with pair(vbus) as (_dev, cl):
        cl.arm(1, [1])
        cl.press(1)
        cl.result(1)
        cl.reboot()
        deadline_ok = False
        for _ in range(5):
            try:
                cl.arm(2, [1])
                deadline_ok = True
                break
            except DeviceTimeout:
                continue
        assert deadline_ok
        cl.press(1)
        assert cl.result(1) > 0 and cl.freshness == 2


def _window() -> tuple[MacWindow[str], Codec, int]:
    codec = Codec(0x300)
    data_id = codec.id_of("JackpotResult")
    return MacWindow(FreshnessVerifier(KEY, data_id)), codec, data_id


def _signed(codec: Codec, data_id: int, fv: int, cents: int, box: int) -> tuple[bytes, bytes]:
    sig = {"PrizeCents": cents, "DrawCounter": fv & 0xFFFF, "RoundTag": 1, "Box": box}
    payload = bytes(codec.encode("JackpotResult", sig).data)
    return payload, authenticator(KEY, data_id, payload, fv)


def test_results_overtaking_their_macs_are_paired_oldest_first() -> None:
    """result, result, MAC, MAC (a later result wins arbitration over a queued MAC): both
    authenticated; a lost MAC in the middle makes only its result unauthenticated; a MAC that
    verifies no pending result is refused as forged, naming the oldest pending."""
    win, codec, did = _window()
    (p1, m1), (p2, m2), (_, m3) = (_signed(codec, did, fv, 100 * fv, fv) for fv in (1, 2, 3))
    assert win.add("r1", p1, 1) is None and win.add("r2", p2, 2) is None
    first, second = win.match(m1), win.match(m2)
    assert first is not None and first.result == "r1" and first.lost == ()
    assert first.outcome == Verified(1, fresh=True)
    assert second is not None and second.result == "r2" and second.outcome == Verified(2, True)
    assert len(win) == 0 and win.match(m3) is None  # a MAC without a result
    # r4, r5, r6 with r5's MAC lost: r4 and r6 authenticated, r5 given up as lost
    (p4, m4), (p5, _), (p6, m6) = (_signed(codec, did, fv, 7, 1) for fv in (4, 5, 6))
    for name, p, fv in (("r4", p4, 4), ("r5", p5, 5), ("r6", p6, 6)):
        win.add(name, p, fv)
    a, b = win.match(m4), win.match(m6)
    assert a is not None and a.result == "r4" and a.outcome == Verified(4, True)
    assert b is not None and (b.result, b.lost, b.outcome) == ("r6", ("r5",), Verified(6, True))
    # a MAC matching no pending result: forged, the oldest pending refused, the next kept
    (p7, m7), (p8, m8) = (_signed(codec, did, fv, 5, 2) for fv in (7, 8))
    win.add("r7", p7, 7)
    win.add("r8", p8, 8)
    bad = win.match(bytes(x ^ 0xFF for x in m7))
    assert bad is not None and bad.result == "r7" and bad.lost == ()
    assert isinstance(bad.outcome, SecurityFault) and bad.outcome.reason == "forged"
    assert win.verifier.last == 6  # nothing accepted by the forgery
    good = win.match(m8)
    assert good is not None and good.result == "r8" and good.outcome == Verified(8, True)


def test_mac_window_keeps_freshness_and_its_bound() -> None:
    """A MAC authenticating an old freshness value still refuses its result (reordered),
    whatever candidate it pairs with; a full window gives its oldest result up as lost."""
    win, codec, did = _window()
    (p1, m1), (p2, m2) = (_signed(codec, did, fv, 50, fv) for fv in (1, 2))
    win.add("r2", p2, 2)
    win.add("r1", p1, 1)  # held by the panel and sent after the newer one
    newer, older = win.match(m2), win.match(m1)
    assert newer is not None and newer.outcome == Verified(2, True)
    assert older is not None and older.result == "r1"
    assert isinstance(older.outcome, SecurityFault) and older.outcome.reason == "reordered"
    pushed = [win.add(f"x{i}", p1, 1) for i in range(MAC_WINDOW + 1)]
    assert pushed == [None] * MAC_WINDOW + ["x0"] and len(win) == MAC_WINDOW
    assert win.drain() == [f"x{i}" for i in range(1, MAC_WINDOW + 1)] and len(win) == 0


def _frames(*spec: tuple[str, Any]) -> list[JackpotFrame]:
    """Captured jackpot frames of part 1 at base 0x300: ("arm", round), ("status", request
    id), ("result", fv) (of 100 * fv cents, box fv), ("mac", fv)."""
    codec = Codec(0x300)
    did = codec.id_of("JackpotResult")
    out = []
    for t, (what, v) in enumerate(spec):
        if what == "arm":
            sig = {"Value": v}
        elif what == "status":
            sig = {"RequestId": v}
        else:
            sig = {"PrizeCents": 100 * v, "DrawCounter": v & 0xFFFF, "RoundTag": 1, "Box": v}
            payload = bytes(codec.encode("JackpotResult", sig).data)
            if what == "mac":
                sig = {"Mac": int.from_bytes(authenticator(KEY, did, payload, v), "little")}
        out.append(JackpotFrame(1, float(t), what, sig))
    return out


def _offline(*spec: tuple[str, Any]) -> tuple[list[int], list[str]]:
    prizes, refused = verify_results(_frames(*spec), KEY, 0x300, require_auth=True)
    return prizes, [r["reason"] for r in refused]


def test_offline_check_pairs_results_and_macs_as_the_live_client() -> None:
    """The offline check pairs through the live client's MacWindow: result, result, MAC,
    MAC is two authenticated results (pairing each MAC with the last result judged it one
    forged and one unauthenticated); a repeat asked for by a STATUS (once per request id)
    is accepted even after the next round is armed, any other is a replay."""
    overtaken = _offline(("arm", 1), ("result", 1), ("result", 2), ("mac", 1), ("mac", 2))
    assert overtaken == ([100, 200], [])
    assert _offline(("arm", 1), ("result", 1), ("result", 2), ("mac", 2)) == (
        [200],
        ["unauthenticated"],
    )
    asked = [("arm", 1), ("result", 1), ("mac", 1), ("status", 9), ("status", 9), ("arm", 2)]
    repeat = [("result", 1), ("mac", 1)]
    assert _offline(*asked, *repeat) == ([100], [])
    # a MAC lost, the result asked for again and recovered: no fault, as live
    assert _offline(("arm", 1), ("result", 1), ("status", 3), *repeat) == ([100], [])
    assert _offline(*asked, *repeat, *repeat) == ([100], ["replayed"])  # asked for once
    assert _offline(("arm", 1), ("result", 1), ("mac", 1), ("arm", 2), *repeat) == (
        [100],
        ["replayed"],
    )


def test_two_boxes_pressed_back_to_back_are_both_authenticated(vbus: str, tmp_path: Path) -> None:
    """On the simulated bus a later box's result overtakes the earlier one's queued MAC
    (arbitration: the 11-bit id before the 29-bit one): result, result, MAC, MAC on the
    wire, and every result accepted, none refused, live and offline (from the capture)."""
    cap = tmp_path / "boxes.blf"
    with pair(vbus, cl_kw={"capture": cap}) as (dev, cl):
        live: list[int] = []
        for rnd in (1, 2):
            cl.arm(rnd, [1, 2, 3])
            for box in (1, 2, 3):
                cl.press(box)
            live += [cl.result(box) for box in (1, 2, 3)]
        assert len(live) == 6 and min(live) > 0
        assert cl.freshness == dev.draws == 6
        assert cl.security_faults == 0 and reasons(cl) == []
    dec = CaptureDecoder()
    names = [r.name for msg in can.LogReader(str(cap)) if (r := dec.feed(msg))]
    wire = [n for n in names if n.startswith("JackpotResult")]
    assert wire.count("JackpotResult") == wire.count("JackpotResultMac") == 6
    pairs = list(itertools.pairwise(wire))
    assert ("JackpotResult", "JackpotResult") in pairs  # a result overtook a MAC
    # the offline verdict of the same capture is the live one: all 6 accepted, none refused
    data = read_campaign_capture([cap], cl.base)
    prizes, refused = verify_results(data.jackpot, KEY, cl.base, require_auth=True)
    assert refused == [] and sorted(prizes) == sorted(live)
