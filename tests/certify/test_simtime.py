"""Simulated time (issue 13): the in-process bus, ISO-TP, the devices and the host's timeouts on
one :class:`SimClock`; a campaign is a pure function of its seed; replies are paired with their
requests (protocol 2.0), so a stale reply is discarded and counted and no latency is negative."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import can
import numpy as np
import pytest
from click.testing import CliRunner

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.certify.record import verdict_summary
from feltlab.rig.cli.certify import certify as certify_cmd
from feltlab.rig.clients import BatchShufflerClient
from feltlab.rig.clock import SimClock, SimulationStall
from feltlab.rig.devices import BatchShuffler, Timing
from feltlab.rig.kinds import DeviceKind
from feltlab.rig.protocol.bittime import frame_bits
from feltlab.rig.protocol.codec import Channel, Opcode, Result

BUS = "interface=virtual,channel=simtime"


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def fast() -> Profile:
    return quick_profile("batch", null_replicates=39)


def test_sim_clock_runs_events_in_time_order_and_ties_in_schedule_order() -> None:
    clock = SimClock()
    seen: list[tuple[float, str]] = []
    clock.call_later(0.2, lambda: seen.append((clock.now(), "b")))
    clock.call_later(0.1, lambda: seen.append((clock.now(), "a")))
    clock.call_later(0.2, lambda: seen.append((clock.now(), "c")))
    assert clock.wait(lambda: len(seen) == 3, 1.0)
    assert seen == [(0.1, "a"), (0.2, "b"), (0.2, "c")]
    # a wait that nothing satisfies ends exactly at its deadline, without sleeping
    assert clock.wait(lambda: None, 5.0) is None and clock.now() == pytest.approx(5.2)
    assert clock.wall() == pytest.approx(946_684_800.0 + 5.2)


def test_sim_clock_refuses_a_zero_delay_loop_and_a_wait_past_its_horizon() -> None:
    clock = SimClock(max_events=1000)

    def again() -> None:
        clock.call_soon(again)

    clock.call_soon(again)
    with pytest.raises(SimulationStall, match="zero-delay loop"):
        clock.wait(lambda: None, 1.0)
    with pytest.raises(SimulationStall, match="horizon"):
        SimClock(horizon=10.0).wait(lambda: None, 11.0)


def test_a_crashing_callback_is_kept_not_raised_into_the_waiter() -> None:
    clock = SimClock()

    def crash() -> None:
        raise ZeroDivisionError("division by zero")

    clock.call_later(0.1, crash)
    assert clock.wait(lambda: None, 0.5) is None
    assert clock.crashes == [(0.1, "ZeroDivisionError: division by zero")]


def test_a_frame_takes_its_bit_time_on_the_simulated_wire() -> None:
    """A heartbeat at 500 kbit/s arrives exactly frame_bits / 500000 s after it was sent."""
    clock = SimClock()
    dev = BatchShuffler(BUS, seed=1, clock=clock, timing=Timing(heartbeat_period=0.1))
    got: list[can.Message] = []
    from feltlab.rig.bus.transport import Node

    node = Node(BUS, clock=clock)
    node.add_listener(got.append)
    dev.start()
    try:
        assert clock.wait(lambda: got, 1.0)
        msg = got[0]
        bits = frame_bits(msg.arbitration_id, msg.data)
        assert 111 <= bits <= 135
        # an epoch stamp near 1e9 s resolves 2**-23 s (1.2e-7 s), as BLF stores it
        assert msg.timestamp - clock.epoch == pytest.approx(bits / 500_000, abs=1.2e-7)
        assert clock.wait(lambda: len(got) >= 3, 1.0)
        gaps = np.diff([m.timestamp for m in got[:3]])
        # sent 0.1 s apart, each arriving after its own bit time (its stuff bits depend on
        # its Counter): nothing else on the wire
        bit_times = np.array([frame_bits(m.arbitration_id, m.data) for m in got[:3]]) / 500_000
        assert gaps == pytest.approx(0.1 + np.diff(bit_times), abs=2.4e-7)
    finally:
        node.close()
        dev.stop()


def test_same_seed_same_capture_and_record_on_any_host(tmp_path: Path) -> None:
    """Two campaigns with one seed: byte-identical captures and the same verdicts and
    statistics, while another thread keeps the interpreter busy (host load cannot reach a
    simulated campaign)."""
    stop = threading.Event()

    def burn() -> None:
        x = 0
        while not stop.is_set():
            x += 1

    busy = threading.Thread(target=burn, daemon=True)
    busy.start()
    try:
        a = run_campaign(CampaignOptions(fast(), tmp_path / "a", size=40, seed=11))
        b = run_campaign(CampaignOptions(fast(), tmp_path / "b", size=40, seed=11))
    finally:
        stop.set()
        busy.join()
    cap_a = (tmp_path / "a" / "capture-001.blf").read_bytes()
    assert cap_a == (tmp_path / "b" / "capture-001.blf").read_bytes()
    assert verdict_summary(a.record) == verdict_summary(b.record)
    assert a.verdict is Verdict.PASS and a.record["clock"]["mode"] == "sim"
    assert "simulated time" in (tmp_path / "a" / "report.html").read_text()
    # the offline analysis of the capture reaches the same verdicts
    again = analyze_path(tmp_path / "a", None, out=None)
    assert verdict_summary(again.record) == verdict_summary(a.record)


def test_simulated_clock_cannot_drive_an_external_bus(tmp_path: Path) -> None:
    opts = CampaignOptions(fast(), tmp_path / "x", bus="interface=udp_multicast", clock="sim")
    with pytest.raises(CampaignError, match="real time"):
        opts.clock_mode  # noqa: B018
    res = CliRunner().invoke(
        certify_cmd,
        ["shuffler", "--bus", "interface=udp_multicast", "--clock", "sim", "--out", "x"],
    )
    assert res.exit_code == 2 and "real time" in res.output


class LaggingShuffler(BatchShuffler):
    """Answers each READ_SHOE first with the previous read's transfer (its old request id),
    then with the right one: the host one reply behind, as seen on a busy host."""

    _previous: bytes | None = None

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.READ_SHOE and self.shoe is not None and self.state.name == "READY":
            payload = replace(self.shoe, request_id=rid).encode()
            self._ack(rid, op, Result.OK, len(payload))
            if self._previous is not None:
                self._send_payload(Channel.SHOE, self._previous)
            self._send_payload(Channel.SHOE, payload)
            self._previous = payload
            return True
        return super()._execute_kind(rid, op, a8, a32)


def test_a_stale_shoe_transfer_is_discarded_and_counted_never_taken() -> None:
    clock = SimClock()
    dev = LaggingShuffler(BUS, seed=3, clock=clock).start()
    cl = BatchShufflerClient(BUS, clock=clock, timeout=0.5)
    try:
        cl.wait_online(1.0)
        first = cl.read_shoe(cl.shuffle())
        assert cl.stale_replies == 0
        n = cl.shuffle()
        shoe = cl.read_shoe(n)
        assert shoe.shoe_number == n == first.shoe_number + 1
        assert cl.stale_replies == 1
        assert any(e.kind == "stale_reply" for e in cl.events)
    finally:
        cl.close()
        dev.stop()


def test_latencies_of_a_lagging_device_are_paired_and_never_negative(
    tmp_path: Path, replace_kind: Callable[..., DeviceKind]
) -> None:
    """The campaign that used to abort on a negative first-card latency: every sample runs
    from a request to its own reply, the stale transfers are counted in the capture."""
    replace_kind("batch", simulator=LaggingShuffler)
    res = run_campaign(CampaignOptions(fast(), tmp_path / "lag", size=30, seed=2))
    rec = res.record
    assert rec["battery"] is not None and rec["battery"]["n_shoes"] == 30
    firsts = [m for m in rec["measurements"] if m["name"].startswith("first_card.")]
    assert firsts and all(m["value"] is not None and m["value"] > 0 for m in firsts)
    from feltlab.rig.certify.decode import read_campaign_capture

    data = read_campaign_capture([tmp_path / "lag" / "capture-001.blf"], 0x100)
    assert data.stale_replies == 29  # every read after the first brings one stale transfer
    assert min(data.timings["first_card"]) > 0


class _CutAfter:
    """A wire chaos hook: passes frames unchanged, and loses every consecutive frame of
    ``rxid`` after the first ``keep`` (a sender gone silent mid-transfer)."""

    def __init__(self, rxid: int, keep: int) -> None:
        self.rxid, self.keep, self.seen = rxid, keep, 0
        self.last_end = 0.0

    def deliveries(
        self, sender: object, msg: can.Message, end: float
    ) -> list[tuple[float, can.Message]]:
        if msg.arbitration_id == self.rxid and msg.data[0] >> 4 == 2:
            self.seen += 1
            if self.seen > self.keep:
                return []
            self.last_end = end
        return [(end, msg)]


@pytest.mark.parametrize("keep", [1, 9, 40])
def test_iso_tp_times_out_exactly_n_cr_after_the_last_frame(keep: int) -> None:
    """Consecutive frames that need no answer wait in the receiver's queue and are processed
    in one pass, but with their own arrival times: the N_Cr timeout still falls due exactly
    cf_timeout after the last frame that arrived, and a whole payload still arrives."""
    from feltlab.rig.bus.transport import Node

    clock = SimClock()
    a, b = Node(BUS, clock=clock), Node(BUS, clock=clock)
    tx = a.open_channel("tx", 0x7A0, 0x7A8)
    rx = b.open_channel("rx", 0x7A8, 0x7A0, cf_timeout=0.25)
    try:
        payload = bytes(range(256)) * 2  # 512 bytes: a first frame and 73 consecutive frames
        tx.send(payload)
        assert rx.recv(1.0) == payload
        cut = _CutAfter(0x7A0, keep)
        from feltlab.rig.bus.simbus import sim_wire

        sim_wire(clock, "simtime", None).chaos = cut
        failed_at: list[float] = []
        real_error = rx._on_error

        def on_error(error: Exception) -> None:
            failed_at.append(clock.now())
            real_error(error)

        rx.logic.error_handler = on_error
        tx.send(payload)
        with pytest.raises(Exception, match="ISO-TP rx"):
            rx.recv(2.0)
        assert failed_at, "no N_Cr timeout"
        # can-isotp times out strictly after the timeout; the channel wakes 1 us after it
        assert failed_at[0] == pytest.approx(cut.last_end + 0.25 + 1e-6, abs=1e-9)
    finally:
        a.close()
        b.close()
