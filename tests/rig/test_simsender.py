"""The simulated device's lean ISO-TP sender (rig/bus/simsender.py) sends what can-isotp's
sender sends, frame for frame and instant for instant, against a can-isotp receiver with any
block size and STmin; and it ends a transfer on N_Bs and OVERFLOW as can-isotp does."""

from __future__ import annotations

from typing import Any

import can
import pytest

from feltlab.rig.bus.simsender import SimIsoTpSender, stmin_seconds
from feltlab.rig.bus.transport import Node
from feltlab.rig.clock import SimClock

BUS = "interface=virtual,channel=simsender"
DATA, FC = 0x132, 0x133


def _transfer(send_only: bool, blocksize: int, stmin: int, payloads: list[bytes]) -> Any:
    clock = SimClock()
    dev = Node(BUS, clock=clock)
    host = Node(BUS, clock=clock)
    wire: list[tuple[float, int, bytes]] = []
    spy = Node(BUS, clock=clock)
    spy.add_listener(lambda m: wire.append((m.timestamp, m.arbitration_id, bytes(m.data))))
    try:
        tx = dev.open_channel("SHOE", DATA, FC, send_only=send_only)
        rx = host.open_channel("SHOE", FC, DATA, blocksize=blocksize, stmin=stmin)
        for p in payloads:
            tx.send(p)
        got = [rx.recv(5.0) for _ in payloads]
        return wire, got
    finally:
        for n in (dev, host, spy):
            n.close()


@pytest.mark.parametrize(("blocksize", "stmin"), [(0, 0), (3, 0), (0, 2), (4, 0xF5), (1, 1)])
def test_the_lean_sender_puts_can_isotps_frames_on_the_wire(blocksize: int, stmin: int) -> None:
    payloads = [bytes(range(256)) * 2 + b"end", b"tiny", bytes(7), bytes(8), bytes(4095)]
    lean_wire, lean_got = _transfer(True, blocksize, stmin, payloads)
    ref_wire, ref_got = _transfer(False, blocksize, stmin, payloads)
    assert lean_got == ref_got == payloads
    assert [(i, d) for _, i, d in lean_wire] == [(i, d) for _, i, d in ref_wire]
    assert [t for t, _, _ in lean_wire] == pytest.approx([t for t, _, _ in ref_wire], abs=1e-6)
    # the first frame of 4095 bytes, then 585 consecutive frames
    assert sum(1 for _, i, d in lean_wire if i == DATA and d[0] >> 4 == 2) == sum(
        -(-(len(p) - 6) // 7) for p in payloads if len(p) > 7
    )


def test_stmin_codes() -> None:
    assert stmin_seconds(0) == 0 and stmin_seconds(0x7F) == 0.127
    assert stmin_seconds(0xF1) == pytest.approx(1e-4) and stmin_seconds(0xF9) == pytest.approx(9e-4)
    assert stmin_seconds(0x80) is None and stmin_seconds(0xFA) is None


def test_no_flow_control_ends_the_transfer_after_n_bs_and_the_next_payload_goes() -> None:
    clock = SimClock()
    dev = Node(BUS, clock=clock)
    sent: list[tuple[float, bytes]] = []
    spy = Node(BUS, clock=clock)
    spy.add_listener(lambda m: sent.append((m.timestamp - clock.epoch, bytes(m.data))))
    try:
        tx = dev.open_channel("SHOE", DATA, FC, send_only=True, fc_timeout=0.25)
        assert isinstance(tx, SimIsoTpSender)
        tx.send(bytes(20))
        tx.send(b"ok")
        clock.wait(lambda: len(sent) >= 2, 1.0)
        assert tx.errors == ["FlowControlTimeoutError: Reception of FlowControl timed out"]
        assert [d[:2] for _, d in sent] == [bytes([0x10, 20]), b"\x02o"]
        # the single frame follows the timeout (0.25 s, strictly after) plus its bit time
        assert 0.25 < sent[1][0] < 0.2505
        # an OVERFLOW flow control ends the next transfer at once
        tx.send(bytes(30))
        clock.wait(lambda: len(sent) >= 3, 0.1)
        host = Node(BUS, clock=clock)
        host.send(can.Message(arbitration_id=FC, data=bytes([0x32, 0, 0]), is_extended_id=False))
        clock.wait(lambda: not tx.transmitting(), 0.1)
        assert tx.errors[-1].startswith("OverflowError") and not tx.transmitting()
        host.close()
    finally:
        dev.close()
        spy.close()
