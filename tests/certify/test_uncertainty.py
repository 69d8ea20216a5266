"""Issue 13, item 5: the rig knows its own uncertainty.  Deterministic: synthetic overshoot
samples, hand-made margins; the one real-time calibration asserts only what holds under any
load (counts, signs, sources)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from feltlab.rig.certify import measures, uncertainty, uncertainty_measure
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_campaign
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.certify.uncertainty import (
    HostUncertainty,
    calibrate_host,
    combine,
    from_samples,
    read_calibrations,
    record_calibration,
    spread,
    timestamp_source,
)
from feltlab.rig.certify.uncertainty_measure import CalibrationError
from feltlab.rig.clock import RealClock, SimClock


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def test_overshoot_percentiles_from_synthetic_samples() -> None:
    # 99 sleeps overshoot by 0.1 ms, one by 10 ms: p99 interpolates (numpy's linear rule)
    over = [1e-4] * 99 + [1e-2]
    s = spread(over)
    assert (s.n, s.p50, s.max) == (100, 1e-4, 1e-2)
    assert s.p99 == pytest.approx(1e-4 + 0.01 * (1e-2 - 1e-4))  # index 98.01
    hu = from_samples(over, [2e-4] * 10 + [3e-3], resolution=1e-6, label="before", epoch=0.0)
    assert hu.seconds == pytest.approx(max(s.p99, spread([2e-4] * 10 + [3e-3]).p99) + 2e-6)
    assert hu.seconds_max == pytest.approx(1e-2 + 2e-6)
    assert hu.loopback is not None and hu.loopback.n == 11 and hu.loopback_reason is None
    # an overshoot below 0 (a sleep rounded short) counts as 0
    assert spread([-1e-6, 0.0]).p50 == 0.0
    with pytest.raises(CalibrationError, match="no calibration samples"):
        spread([])
    with pytest.raises(CalibrationError, match="finite"):
        spread([float("inf")])


def test_inconclusive_rule_on_hand_made_margins() -> None:
    limit = 0.030
    # beyond the limit by 1 ms, the host uncertain by 2 ms: INCONCLUSIVE, not FAIL
    m = measures.within("heartbeat_jitter.p99", 0.031, "s", None, limit, uncertainty=0.002)
    assert m.verdict is Verdict.INCONCLUSIVE
    assert m.detail["margin_s"] == pytest.approx(-0.001)
    assert m.detail["uncertainty_s"] == 0.002 and "beyond the limit" in m.detail["reason"]
    # beyond by 1 ms, uncertain by 0.5 ms: FAIL
    m = measures.within("x", 0.031, "s", None, limit, uncertainty=0.0005)
    assert m.verdict is Verdict.FAIL
    # within the limit by 0.5 ms, uncertain by 1 ms: INCONCLUSIVE (the device may be over)
    m = measures.within("x", 0.0295, "s", None, limit, uncertainty=0.001)
    assert m.verdict is Verdict.INCONCLUSIVE and m.detail["margin_s"] == pytest.approx(0.0005)
    assert "within the limit" in m.detail["reason"]
    # within by 10 ms: PASS; the true value at most exactly the (inclusive) limit: PASS
    assert measures.within("x", 0.020, "s", None, limit, uncertainty=0.001).verdict is Verdict.PASS
    assert measures.within("x", 0.25, "s", None, 0.5, uncertainty=0.25).verdict is Verdict.PASS
    edge = measures.within("x", 0.2501, "s", None, 0.5, uncertainty=0.25)
    assert edge.verdict is Verdict.INCONCLUSIVE

    # a latency (host frame to the device's reply) is only ever lengthened by the host:
    # under the limit it is a PASS however unsure the host; over it by less than u, unsure
    def latency(value: float) -> measures.Measurement:
        return measures.within("fc.p99", value, "s", None, 0.05, uncertainty=0.01, lengthened=True)

    assert latency(0.049).verdict is Verdict.PASS
    m = latency(0.055)
    assert m.verdict is Verdict.INCONCLUSIVE and "only lengthen" in m.detail["reason"]
    assert latency(0.061).verdict is Verdict.FAIL
    # a lower limit too (the heartbeat's mean period)
    m = measures.within("heartbeat.period", 0.0951, "s", 0.095, 0.105, uncertainty=0.0002)
    assert m.verdict is Verdict.INCONCLUSIVE and m.detail["margin_s"] == pytest.approx(0.0001)
    # simulated time (0) and no calibration (None): the plain rule
    for u in (0.0, None):
        assert measures.within("x", 0.031, "s", None, limit, uncertainty=u).verdict is Verdict.FAIL


def test_timing_measurements_take_the_uncertainty_per_statistic() -> None:
    samples = np.linspace(0.001, 0.040, 100)  # p99 = 0.03961, max = 0.040
    ms = measures.timing_measurements(
        "first_card",
        samples,
        limit_p99=0.0395,
        limit_max=0.050,
        uncertainty=0.0005,
        uncertainty_max=0.02,
    )
    by = {m.name: m for m in ms}
    assert by["first_card.p99"].verdict is Verdict.INCONCLUSIVE  # 0.11 ms over, 0.5 ms unsure
    assert by["first_card.max"].verdict is Verdict.INCONCLUSIVE  # 10 ms under, 20 ms unsure
    assert by["first_card.p50"].verdict is Verdict.PASS  # no limit: nothing to be unsure of
    one_sided = measures.timing_measurements(
        "first_card",
        samples,
        limit_p99=0.0395,
        limit_max=0.050,
        uncertainty=0.0005,
        uncertainty_max=0.02,
        lengthened=True,
    )
    assert [m.verdict for m in one_sided][2:] == [Verdict.INCONCLUSIVE, Verdict.PASS]
    plain = measures.timing_measurements("first_card", samples, limit_p99=0.0395, limit_max=0.05)
    assert [m.verdict for m in plain][2:] == [Verdict.FAIL, Verdict.PASS]


def test_a_p99_of_few_samples_takes_the_max_uncertainty() -> None:
    # 5 samples: the p99 lies between the two largest, so the p99 bound (99 of 100 delays)
    # does not cover it; it takes the max bound.  100 samples: the p99 bound again.
    few = np.array([0.001, 0.002, 0.003, 0.004, 0.040])  # p99 = 0.03856
    kw: dict[str, Any] = {"limit_p99": 0.030, "uncertainty": 0.002, "uncertainty_max": 0.02}
    by = {m.name: m for m in measures.timing_measurements("jitter", few, **kw)}
    assert by["jitter.p99"].verdict is Verdict.INCONCLUSIVE
    assert by["jitter.p99"].detail["uncertainty_s"] == 0.02
    many = np.concatenate([np.full(99, 0.001), [0.040]])  # p99 = 0.00139: no matter
    many[-2] = 0.035  # p99 = 0.035 + 0.01 * 0.005 = 0.03505
    by = {m.name: m for m in measures.timing_measurements("jitter", many, **kw)}
    assert by["jitter.p99"].verdict is Verdict.FAIL  # 5 ms over, 2 ms unsure


def test_the_sibling_sampler_measures_another_process() -> None:
    from feltlab.rig.certify.uncertainty_measure import SiblingSampler

    s = SiblingSampler(delay=0.001, every=0.005)
    deadline = time.monotonic() + 30.0
    while len(s.samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    got = s.stop()
    assert len(got) >= 3 and all(x >= 0.0 and np.isfinite(x) for x in got)
    assert s.stop() == got  # stopping twice is harmless


def test_simulated_time_is_exactly_zero_and_measures_nothing() -> None:
    clock = SimClock()
    hu = calibrate_host(clock, "interface=virtual,channel=sim-calibration")
    assert (hu.seconds, hu.seconds_max, hu.source) == (0.0, 0.0, "simulated time")
    assert hu.simulated and hu.timer is None and hu.loopback is None
    assert clock.now() == 0.0  # no simulated time spent either
    both = combine([hu, HostUncertainty.simulated_time("during")])
    assert both is not None and both.simulated and both.seconds_max == 0.0
    assert [m[0] for m in both.measured] == ["before", "during"]


def test_combine_keeps_the_worst_and_every_measurement() -> None:
    before = from_samples([1e-4] * 10, None, resolution=1e-6, label="before", epoch=1.0)
    during = from_samples(
        [1e-4] * 9 + [5e-3], [1e-4] * 5, resolution=1e-6, label="during shoe 100", epoch=2.0
    )
    both = combine([before, during])
    assert both is not None
    assert both.seconds == max(before.seconds, during.seconds) == during.seconds
    assert both.seconds_max == pytest.approx(5e-3 + 2e-6)
    assert [m[0] for m in both.measured] == ["before", "during shoe 100"]
    assert combine([]) is None
    assert before.loopback is None and before.loopback_reason == "not measured"


def test_a_device_on_the_host_counts_the_overshoot_on_its_side_too(tmp_path: Path) -> None:
    # 99 sleeps 1 ms late, one 8 ms: alone p99 is the receiver's; a device on this host
    # wakes late by the same latency, so its bound adds the overshoot p99 (max) once more
    over = [1e-3] * 99 + [8e-3]
    p99 = spread(over).p99
    alone = from_samples(over, [5e-4] * 10, resolution=1e-6, label="before", epoch=0.0)
    shared = from_samples(
        over, [5e-4] * 10, resolution=1e-6, label="before", epoch=0.0, device_on_host=True
    )
    assert alone.seconds == pytest.approx(p99 + 2e-6)
    assert shared.seconds == pytest.approx(2 * p99 + 2e-6)
    assert shared.seconds_max == pytest.approx(2 * 8e-3 + 2e-6)
    assert not alone.device_on_host and shared.device_on_host
    both = combine([alone, shared])
    assert both is not None and both.device_on_host and both.seconds == shared.seconds
    record_calibration(tmp_path, shared)
    assert read_calibrations(tmp_path) == [shared]
    assert shared.to_dict()["device_on_host"] is True


def test_calibrations_round_trip_through_the_campaign_file(tmp_path: Path) -> None:
    hu = from_samples(
        [2e-4, 3e-4],
        [1e-4],
        resolution=1e-7,
        label="before",
        epoch=5.0,
        sources={
            "interface=slcan,channel=/dev/ttyACM0": timestamp_source(
                "interface=slcan,channel=/dev/ttyACM0"
            )
        },
    )
    record_calibration(tmp_path, hu)
    record_calibration(tmp_path, HostUncertainty.simulated_time())
    (tmp_path / uncertainty.CALIBRATION_FILE).open("a").write("not json\n")
    got = read_calibrations(tmp_path)
    assert got[0] == hu and got[1].simulated and len(got) == 2
    assert read_calibrations(tmp_path / "none") == []


def test_timestamp_sources_of_the_buses() -> None:
    for spec in (None, "interface=udp_multicast,channel=ff11::1", "interface=slcan,channel=x"):
        assert timestamp_source(spec).startswith("software")
    assert timestamp_source("interface=pcan,channel=PCAN_USBBUS1").startswith("hardware")
    assert "kernel" in timestamp_source("interface=socketcan,channel=can0")
    assert uncertainty_measure.loopback_spec("interface=slcan,channel=/dev/ttyACM0") is None
    sib = uncertainty_measure.loopback_spec("interface=udp_multicast,channel=ff11::1,port=43113")
    assert sib is not None and dict(sib.options)["port"] == 43114  # never the device's port
    v = uncertainty_measure.loopback_spec("interface=virtual,channel=dut")
    assert v is not None and v.channel != "dut"


def test_an_open_python_can_bus_is_named_by_its_interface() -> None:
    from feltlab.rig.bus.transport import RigBus, open_bus

    bus = open_bus("interface=virtual,channel=open-bus-calibration")
    try:
        assert uncertainty_measure.interface_of(bus) == "virtual"
        assert uncertainty_measure.interface_of(
            RigBus(open_bus("interface=virtual,channel=o2"))
        ) == ("virtual")
        assert timestamp_source(bus).startswith("software")
        sib = uncertainty_measure.loopback_spec(bus)
        assert sib is not None and sib.interface == "virtual" and "calibration" in sib.channel
        hu = calibrate_host(SimClock(), bus)
        assert hu.simulated
    finally:
        bus.shutdown()


def test_a_real_calibration_on_a_virtual_bus() -> None:
    """Real time: only what holds under any load (counts, signs, what was measured)."""
    clock = RealClock("test-calibration")
    try:
        hu = calibrate_host(
            clock,
            "interface=virtual,channel=cal-test",
            samples=5,
            delay=0.0005,
            loopback_samples=3,
            when="before",
        )
        slc = calibrate_host(clock, "interface=slcan,channel=/dev/null", samples=2)
    finally:
        clock.close()
    assert hu.source == "measured" and hu.timer is not None and hu.timer.n == 5
    assert hu.loopback is not None and hu.loopback.n == 3 and hu.loopback.p50 > 0
    assert hu.seconds >= hu.timer.p99 and hu.seconds_max >= hu.seconds > 0
    assert hu.measured[0][0] == "before" and hu.timer_delay_s == 0.0005
    assert slc.loopback is None and "one serial adapter" in (slc.loopback_reason or "")
    with pytest.raises(CalibrationError, match="samples >= 1"):
        calibrate_host(RealClock(), None, samples=0)


def test_calibrate_into_records_and_never_raises(tmp_path: Path) -> None:
    sim = uncertainty.calibrate_into(tmp_path, SimClock(), None, when="before")
    assert sim is not None and sim.simulated
    # a bus spec it cannot parse: logged, None, nothing recorded
    assert uncertainty.calibrate_into(tmp_path, RealClock(), "interface=bogus", when="x") is None
    assert [c.measured[0][0] for c in read_calibrations(tmp_path)] == ["before"]


def test_host_monitor_keeps_a_bounded_sample_and_the_worst(tmp_path: Path) -> None:
    mon = uncertainty.HostMonitor(SimClock(), None, tmp_path)
    mon.MAX_SAMPLES = 50
    for i in range(1000):  # synthetic overshoots: 0.1 ms, one of 20 ms
        mon.add(0.02 if i == 700 else 1e-4)
    assert len(mon.samples) == 50 and mon.seen == 1000 and mon.worst == 0.02
    with uncertainty.HostMonitor(SimClock(), None, tmp_path) as sim:
        assert sim._thread is None  # simulated time: nothing sampled
    assert read_calibrations(tmp_path)[-1].simulated
    real = RealClock("test-monitor")
    try:
        with uncertainty.HostMonitor(real, None, tmp_path, every=0.001) as live:
            time.sleep(0.05)
    finally:
        real.close()
    last = read_calibrations(tmp_path)[-1]
    assert live.seen >= 1 and last.timer is not None and last.timer.n == live.seen + 1
    assert last.measured[0][0] == "during collection" and last.loopback is None


def test_host_monitor_of_a_device_on_the_host_samples_a_sibling(tmp_path: Path) -> None:
    real = RealClock("test-monitor-sibling")
    try:
        mon = uncertainty.HostMonitor(real, None, tmp_path, every=0.002, device_on_host=True)
        with mon:
            deadline = time.monotonic() + 30.0
            while (mon._sibling is None or len(mon._sibling.samples) < 3) and (
                time.monotonic() < deadline
            ):
                time.sleep(0.02)
    finally:
        real.close()
    last = read_calibrations(tmp_path)[-1]
    assert len(mon.sibling_samples) >= 3 and last.device_on_host
    assert last.device_side is not None and last.device_side.n == len(mon.sibling_samples)
    assert last.timer is not None
    assert last.seconds >= last.timer.p99 + last.device_side.p99


def test_a_campaign_records_its_uncertainty_and_uses_it(tmp_path: Path) -> None:
    prof = quick_profile("batch")
    res = run_campaign(CampaignOptions(prof, tmp_path / "c", size=3, seed=4, clock="real"))
    hu = res.record["host_uncertainty"]
    assert hu["source"] == "measured" and res.record["clock"]["mode"] == "real"
    labels = [m["label"] for m in hu["measured"]]
    assert labels == ["before", "during collection", "after collection"]
    assert (tmp_path / "c" / uncertainty.CALIBRATION_FILE).exists()
    # the same capture judged with a hand-made uncertainty larger than a margin
    captures = [tmp_path / "c" / "capture-001.blf"]
    a0, _ = analyze_campaign(captures, prof, alpha=0.01, seed=4)
    p99 = next(m.value for m in a0.measurements if m.name == "shuffle_cycle.p99")
    assert p99 is not None
    tight = replace(prof, limits={**prof.limits, "shuffle_cycle_p99": p99 * 0.99})
    host = from_samples([p99] * 3, None, resolution=1e-9, epoch=0.0)
    a, _ = analyze_campaign(captures, tight, alpha=0.01, seed=4, host=host)
    m = next(m for m in a.measurements if m.name == "shuffle_cycle.p99")
    assert m.verdict is Verdict.INCONCLUSIVE and m.detail["uncertainty_s"] == host.seconds
    plain, _ = analyze_campaign(
        captures, tight, alpha=0.01, seed=4, host=HostUncertainty.simulated_time()
    )
    assert next(m for m in plain.measurements if m.name == "shuffle_cycle.p99").verdict is (
        Verdict.FAIL
    )
    rec = json.loads((tmp_path / "c" / "record.json").read_text())
    assert rec["host_uncertainty"] == hu
    assert "Host timing uncertainty" in (tmp_path / "c" / "report.html").read_text()
