"""The simulated device's lean ISO-TP sender (rig/bus/simsender.py) sends what can-isotp's
sender sends, frame for frame and instant for instant, against a can-isotp receiver with any
block size and STmin; and it ends a transfer on N_Bs and OVERFLOW as can-isotp does."""

from __future__ import annotations

import functools
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


def _receive(
    absorb: bool, frames: list[tuple[float, bytes]], blocksize: int, runs: bool = False
) -> Any:
    """Hand-made frames (at simulated instants; frames of one instant queued together, back
    to back on the wire) into a host channel; what it answers on the wire (flow controls,
    with their instants), the payloads it completes and its errors.  ``runs``: the wire
    may move quiet frames as runs (``SimWire._move_run``)."""
    from feltlab.rig.bus.simbus import SimIsoTpChannel, SimWire

    clock = SimClock()
    dev = Node(BUS, clock=clock)
    host = Node(BUS, clock=clock)
    answers: list[tuple[float, bytes]] = []
    dev.add_listener(lambda m: answers.append((m.timestamp - clock.epoch, bytes(m.data))))
    from feltlab.rig.bus.simbus import _ClockLogic

    saved = SimIsoTpChannel.absorb
    SimIsoTpChannel.absorb = absorb
    lean = _ClockLogic.absorb_consecutive_frame
    taken = []

    def counted(self: Any, data: bytes) -> bool:
        ok = lean(self, data)
        taken.append(ok)
        return ok

    _ClockLogic.absorb_consecutive_frame = counted  # type: ignore[method-assign]
    limit = SimWire.RUN_LIMIT
    SimWire.RUN_LIMIT = limit if runs else 0
    try:
        rx = host.open_channel("SHOE", FC, DATA, blocksize=blocksize, cf_timeout=0.25)
        at_once: dict[float, list[can.Message]] = {}
        for at, data in frames:
            frame = can.Message(arbitration_id=DATA, data=data, is_extended_id=False)
            at_once.setdefault(at, []).append(frame)

        def send_all(group: list[can.Message]) -> None:
            for m in group:
                dev.send(m)

        for at, group in at_once.items():
            clock.call_at(at, functools.partial(send_all, group))
        clock.wait(lambda: None, frames[-1][0] + 1.0)
        got = []
        while rx.stack.available():
            got.append(bytes(rx.stack.recv()))
        return answers, got, list(rx.errors), sum(taken)
    finally:
        _ClockLogic.absorb_consecutive_frame = lean  # type: ignore[method-assign]
        SimIsoTpChannel.absorb = saved
        SimWire.RUN_LIMIT = limit
        for n in (dev, host):
            n.close()


def _cf(seq: int, fill: int) -> bytes:
    return bytes([0x20 | (seq & 0x0F)]) + bytes([fill]) * 7


@pytest.mark.parametrize("blocksize", [0, 2, 5])
def test_quiet_consecutive_frames_taken_the_lean_way_as_can_isotp_takes_them(
    blocksize: int,
) -> None:
    """The host channel's lean path for consecutive frames that need no answer
    (``_ClockLogic.absorb_consecutive_frame``) ends in can-isotp's very state: the same flow
    controls at the same instants, the same payloads, the same errors, for in-order frames,
    a wrong sequence number, a frame after N_Cr, a short frame, a new first frame mid-way and
    a stray consecutive frame."""
    ff = bytes([0x10, 40]) + bytes(range(6))  # 40 bytes: 6 + 5 consecutive frames
    t = [0.001 * k for k in range(1, 60)]
    frames = [(t[0], ff)] + [(t[k], _cf(k, k)) for k in range(1, 6)]  # complete
    frames += [(t[8], ff), (t[9], _cf(1, 9)), (t[10], _cf(3, 9))]  # wrong sequence number
    frames += [(t[12], ff), (t[13], _cf(1, 1)), (0.4, _cf(2, 2))]  # after N_Cr
    frames += [(0.5, ff), (0.501, _cf(1, 1)), (0.502, _cf(2, 2)[:5])]  # short frame
    frames += [(0.6, ff), (0.601, _cf(1, 1)), (0.602, ff)]  # a new first frame
    frames += [(0.603 + 0.001 * k, _cf(k, k)) for k in range(1, 6)]  # ... which completes
    frames += [(0.7, _cf(1, 7))]  # nothing being received
    lean = _receive(True, frames, blocksize)
    ref = _receive(False, frames, blocksize)
    assert lean[:3] == ref[:3]
    assert lean[3] >= 5 and ref[3] == 0  # the lean path taken, and not taken
    answers, got, errors, _ = lean
    assert (
        len(got) == 2
        and got[0] == bytes(range(6)) + b"".join(bytes([k]) * 7 for k in range(1, 6))[:34]
    )
    assert any("SequenceNumber" in e for e in errors) and any("timed out" in e for e in errors)
    assert sum(1 for _, d in answers if d[0] >> 4 == 3) >= 6  # flow controls answered


@pytest.mark.parametrize("blocksize", [0, 2, 5])
def test_runs_of_consecutive_frames_taken_as_can_isotp_takes_them_one_by_one(
    blocksize: int,
) -> None:
    """Frames queued back to back and moved by the wire as runs (``SimWire._move_run``,
    the host channel's ``_ClockLogic.absorb_run_count`` and ``absorb_run``) end in
    can-isotp's very state: the same flow controls at the same instants, payloads and
    errors, for a run that completes a payload, ends a block, holds a wrong sequence number,
    a short frame or a new first frame, and one that starts after N_Cr."""
    ff = bytes([0x10, 60]) + bytes(range(6))  # 60 bytes: 6 + 8 consecutive frames
    cfs = [_cf(k, k) for k in range(1, 9)]
    frames = [(0.001, ff)] + [(0.002, d) for d in cfs]  # complete, in one run
    frames += [(0.010, ff)] + [(0.011, d) for d in [*cfs[:3], _cf(5, 5), *cfs[4:]]]  # seq
    frames += [(0.020, ff)] + [(0.021, d) for d in [*cfs[:2], cfs[2][:5], *cfs[3:]]]  # short
    frames += [(0.030, ff)] + [(0.031, d) for d in [*cfs[:3], ff, *cfs]]  # new first frame
    frames += [(0.040, ff), (0.3, cfs[0])] + [(0.3, d) for d in cfs[1:]]  # after N_Cr
    frames += [(0.5, ff)] + [(0.501, d) for d in cfs]  # completes again
    ref = _receive(False, frames, blocksize)
    one = _receive(True, frames, blocksize)
    run = _receive(True, frames, blocksize, runs=True)
    assert run[:3] == one[:3] == ref[:3]
    assert len(run[1]) >= 2  # payloads completed
    # frames absorbed in runs, not one by one (with blocks of 2, a run's first frame always
    # ends a block: a flow control is due, so every frame goes alone)
    assert run[3] < one[3] if blocksize != 2 else run[3] == one[3]
