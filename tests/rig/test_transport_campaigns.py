"""Issue 13, item 6: certification campaigns over every transport, in real time.

A fair batch shuffler in its own process (``feltlab device run``) is certified over
udp_multicast, and through the simulated Lawicel adapter on a pty (python-can's ``slcan``
driver on the host side, the adapter bridged to the device's udp_multicast group: the
adapter must not echo the host's own frames back).  These run in real time, so they assert
only what holds under any load: the shoes arrive intact and counted, no check is an ERROR,
a timing verdict is PASS or INCONCLUSIVE (never FAIL), and the campaign is PASS or
INCONCLUSIVE.  The device shares this host's CPU, so the campaigns say so
(``device_on_host``): its own timers wake late by the host's scheduling latency too."""

from __future__ import annotations

import os
import select
import termios
import time
import tty
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.bus.slcan_sim import SimulatedSlcanAdapter
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.certify.record import CampaignResult

from .conftest import spawn_device, stop_device

SHOES = 5


def _device(spec: str, tmp_path: Path) -> Any:
    profile = tmp_path / "device.toml"
    profile.write_text('[device]\nkind = "batch"\ndecks = 6\nheartbeat_period = 0.1\n')
    return spawn_device(
        [
            "device",
            "run",
            "batch",
            "--bus",
            spec,
            "--seed",
            "9",
            "--profile",
            str(profile),
            "--duration",
            "60",
        ]
    )


def _assert_fair_in_real_time(res: CampaignResult) -> None:
    rec = res.record
    bad = [
        (m["name"], m["value"], m["verdict"], m["detail"].get("reason"))
        for m in rec["measurements"]
        if m["verdict"] not in ("PASS", "INCONCLUSIVE")
    ]
    assert bad == [], (bad, rec["errors"])
    assert rec["errors"] == []
    assert res.verdict in (Verdict.PASS, Verdict.INCONCLUSIVE)
    bat = rec["battery"]
    assert bat["n_shoes"] == SHOES and bat["n_cards"] == 312 and bat["integrity"] is None
    assert rec["collection"]["collected"] == SHOES and rec["collection"]["missing_count"] == 0
    assert rec["device"]["simulated"] is False and rec["clock"]["mode"] == "real"
    hu = rec["host_uncertainty"]
    assert hu["source"] == "measured" and hu["seconds"] > 0
    # the device runs on this host (feltlab device run): its side's latency is counted
    assert hu["device_on_host"] is True and rec["device"]["on_certifying_host"] is True
    assert all(s.startswith("software") for s in hu["timestamp_sources"].values())


def test_udp_multicast_campaign_with_the_device_in_its_own_process(
    udp_spec: str, tmp_path: Path
) -> None:
    proc = _device(udp_spec, tmp_path)
    try:
        prof = quick_profile("batch")
        res = run_campaign(
            CampaignOptions(
                prof, tmp_path / "c", bus=udp_spec, size=SHOES, seed=1, device_on_host=True
            )
        )
    finally:
        stop_device(proc)
    _assert_fair_in_real_time(res)
    assert res.record["host_uncertainty"]["loopback_round_trip"]["n"] > 0


def test_slcan_campaign_through_the_simulated_adapter_on_a_pty(
    udp_spec: str, tmp_path: Path
) -> None:
    proc = _device(udp_spec, tmp_path)
    adapter = SimulatedSlcanAdapter(udp_spec)
    try:
        prof = quick_profile("batch")
        bus = f"interface=slcan,channel={adapter.port},bitrate=500000"
        res = run_campaign(
            CampaignOptions(prof, tmp_path / "c", bus=bus, size=SHOES, seed=1, device_on_host=True)
        )
    finally:
        adapter.close()
        stop_device(proc)
    _assert_fair_in_real_time(res)
    assert adapter.bitrate == 500_000 and adapter.own_frames_dropped > 0
    hu = res.record["host_uncertainty"]
    assert hu["loopback_round_trip"] is None and "serial adapter" in hu["loopback_reason"]
    assert "interface=slcan" in res.record["device"]["bus"]


def test_the_simulated_adapter_never_echoes_the_hosts_frames(udp_spec: str) -> None:
    """A frame the host transmits reaches the CAN side and never comes back over the serial
    line, though udp_multicast loops it back to the adapter (a real Lawicel adapter does
    not echo either)."""
    import can

    from feltlab.rig.bus.transport import open_bus

    other = open_bus(udp_spec)  # another node on the adapter's CAN side
    with SimulatedSlcanAdapter(udp_spec) as ad:
        fd = os.open(ad.port, os.O_RDWR | os.O_NOCTTY)
        try:
            tty.setraw(fd)
            termios.tcflush(fd, termios.TCIOFLUSH)
            os.write(fd, b"O\rt12321122\r")
            got = other.recv(2.0)  # the frame reached the CAN side
            assert got is not None and got.arbitration_id == 0x123
            assert bytes(got.data) == b"\x11\x22"
            other.send(can.Message(arbitration_id=0x456, is_extended_id=False, data=b"\x33"))
            deadline = time.monotonic() + 2.0
            lines = b""
            while b"t4561" not in lines and time.monotonic() < deadline:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    lines += os.read(fd, 4096)
            assert b"t456133\r" in lines  # another node's frame is forwarded
            assert b"t123" not in lines  # the host's own never comes back
            assert ad.own_frames_dropped == 1
        finally:
            os.close(fd)
            other.shutdown()


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""
