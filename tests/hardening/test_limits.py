"""Issue 14, item 2: nothing a device sends bounds a wait.  An absurd shuffle duration in the
SHUFFLE acknowledgement, or an absurd heartbeat period, is capped by the profile's declared
limits and is a FAIL with the figure; the campaign never hangs (simulated time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import can
import pytest

from feltlab.rig import devices
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.certify.record import CampaignResult
from feltlab.rig.kinds import DeviceKind
from feltlab.rig.protocol.codec import Opcode, Result


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


class BraggingShuffler(devices.BatchShuffler):
    """Announces a shuffle of 4,000,000 s (about 46 days) in its acknowledgement."""

    def _ack(self, rid: int, op: int, result: Result, value: int = 0) -> None:
        if op == Opcode.SHUFFLE and result == Result.OK:
            value = 4_000_000_000  # ms
        super()._ack(rid, op, result, value)


class SlowHeartbeatShuffler(devices.BatchShuffler):
    """Announces a heartbeat period of 65,535 ms while beating every 0.1 s."""

    def _send(self, name: str, signals: dict[str, int]) -> can.Message | None:
        if name == "Heartbeat":
            signals = {**signals, "PeriodMs": 65_535}
        return super()._send(name, signals)


def _campaign(tmp_path: Path, replace_kind: Callable[..., DeviceKind], cls: type) -> CampaignResult:
    replace_kind("batch", simulator=cls)
    prof = quick_profile("batch", null_replicates=39)
    return run_campaign(CampaignOptions(prof, tmp_path / "c", size=20, seed=4))


def test_an_absurd_announced_shuffle_duration_is_a_fail_with_the_figure(
    tmp_path: Path, replace_kind: Callable[..., DeviceKind]
) -> None:
    res = _campaign(tmp_path, replace_kind, BraggingShuffler)
    assert res.verdict is Verdict.FAIL
    m = next(m for m in res.record["measurements"] if m["name"] == "shuffle_cycle.announced")
    assert m["value"] == 4_000_000.0 and m["high"] == 1.0 and m["verdict"] == "FAIL"
    assert "announced a 4000000.000 s shuffle" in m["detail"]["reason"]


def test_an_absurd_heartbeat_period_does_not_slow_lost_detection(
    tmp_path: Path, replace_kind: Callable[..., DeviceKind]
) -> None:
    res = _campaign(tmp_path, replace_kind, SlowHeartbeatShuffler)
    assert res.verdict is Verdict.FAIL
    m = next(m for m in res.record["measurements"] if m["name"] == "heartbeat.announced_period")
    assert m["value"] == 65.535 and m["verdict"] == "FAIL"
    assert m["high"] == pytest.approx(0.105)


def test_the_client_supervises_at_most_one_and_a_half_declared_periods() -> None:
    from feltlab.rig.clients import BatchShufflerClient
    from feltlab.rig.clock import SimClock

    clock = SimClock()
    bus = "interface=virtual,channel=limits"
    dev = SlowHeartbeatShuffler(bus, seed=1, clock=clock).start()
    cl = BatchShufflerClient(bus, clock=clock, heartbeat_period=0.1)
    try:
        cl.wait_online(1.0)
        assert cl.period == pytest.approx(0.15)
        assert [e.detail for e in cl.events if e.kind == "period_mismatch"] == [
            {"announced_ms": 65535, "declared_ms": 100}
        ]
        dev.inject("stop_heartbeats")
        last = cl._last_hb
        assert clock.wait(lambda: cl.lost, 10.0)
        assert clock.now() - last <= 3 * 0.15 + 0.05  # not 3 x 65.535 s
    finally:
        cl.close()
        dev.stop()
