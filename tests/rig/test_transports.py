"""The real transports: udp_multicast with the device in its own process (feltlab device
run), slcan through python-can's driver and a simulated Lawicel adapter on a pty; the CLI."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main as feltlab_main
from feltlab.rig.bus.slcan_sim import SimulatedSlcanAdapter
from feltlab.rig.clients import BatchShufflerClient, JackpotPanelClient
from feltlab.rig.devices import BatchShuffler

from .conftest import spawn_device as _spawn
from .conftest import stop_device as _stop
from .conftest import wait_threads_gone


def test_udp_multicast_device_in_its_own_process(udp_spec: str, tmp_path: Path) -> None:
    before = set(threading.enumerate())
    profile = tmp_path / "device.toml"
    profile.write_text('[device]\nkind = "batch"\ndecks = 8\nheartbeat_period = 0.05\n')
    proc = _spawn(
        [
            "device",
            "run",
            "batch",
            "--model",
            "shelf:m=10",
            "--bus",
            udp_spec + ",bitrate=1000000",
            "--seed",
            "3",
            "--profile",
            str(profile),
            "--duration",
            "30",
        ]
    )
    try:
        cl = BatchShufflerClient(udp_spec, timeout=0.5, capture=tmp_path / "udp.blf")
        try:
            hb = cl.wait_online(5.0)
            assert hb.signals["PeriodMs"] == 50
            col = cl.collect(5)
            # udp may drop frames: every shoe is intact or missing with a reason
            assert len(col.shoes) + len(col.missing) == 5
            for s in col.shoes:
                assert sorted(s.ids().tolist()) == list(range(416))
            assert all(reason for _, reason in col.missing)
            cl.inject_fault("corrupt_frame")
            n = cl.shuffle()
            assert cl.read_shoe(n).shoe_number == n and cl.transfer_retries >= 1
        finally:
            cl.close()
    finally:
        out = _stop(proc)
    assert "stopped" in out
    assert wait_threads_gone(before) == []


def test_udp_multicast_jackpot_panel(udp_spec: str) -> None:
    proc = _spawn(
        [
            "device",
            "run",
            "jackpot",
            "--bus",
            udp_spec,
            "--seed",
            "1",
            "--base",
            "0x310",
            "--duration",
            "30",
        ]
    )
    try:
        with JackpotPanelClient(udp_spec, base=0x310, timeout=0.5) as cl:
            cl.wait_online(5.0)
            cl.arm(1, [3])
            cl.press(3)
            assert cl.result() > 0
    finally:
        _stop(proc)


def test_slcan_through_simulated_lawicel_adapter(vbus: str, tmp_path: Path) -> None:
    before = set(threading.enumerate())
    dev = BatchShuffler(vbus, seed=5, bitrate=500_000).start()
    adapter = SimulatedSlcanAdapter(vbus)
    try:
        spec = f"interface=slcan,channel={adapter.port},bitrate=500000"
        with BatchShufflerClient(spec, timeout=1.0, capture=tmp_path / "slcan.asc") as cl:
            cl.wait_online(3.0)
            col = cl.collect(2)
            assert not col.missing and col.ids().shape == (2, 312)
            dev.inject("silence_mid_transfer", 5)
            n = cl.shuffle()
            assert cl.read_shoe(n).shoe_number == n
        assert adapter.bitrate == 500_000 and adapter.frames_to_can > 0
        assert adapter.frames_to_serial > 100
    finally:
        adapter.close()
        dev.stop()
    assert wait_threads_gone(before) == []


def test_slcan_adapter_protocol() -> None:
    import os

    with SimulatedSlcanAdapter("interface=virtual,channel=lawicel-unit") as ad:
        assert ad._command("") == b"\r"
        assert ad._command("V") == b"V1013\r"
        assert ad._command("t1238") == b"\a"  # closed: refused
        assert ad._command("S4") == b"\r" and ad.bitrate == 125_000
        assert ad._command("O") == b"\r"
        assert ad._command("S6") == b"\a"  # no bitrate change while open
        assert ad._command("t12321122") == b"z\r"
        assert ad._command("t1239zz") == b"\a"
        assert os.path.exists(ad.port)


def test_cli_capture_decode(vbus: str, tmp_path: Path) -> None:
    cap = tmp_path / "c.blf"
    dev = BatchShuffler(vbus, seed=1).start()
    try:
        with BatchShufflerClient(vbus, capture=cap) as cl:
            cl.wait_online(2.0)
            cl.collect(1)
    finally:
        dev.stop()
    res = CliRunner().invoke(feltlab_main, ["capture", "decode", str(cap)])
    assert res.exit_code == 0, res.output
    assert "Heartbeat" in res.output and "SHOE cards=312 shoe=1" in res.output
    res = CliRunner().invoke(
        feltlab_main, ["capture", "decode", "--json", "--base", "0x100", str(cap)]
    )
    assert res.exit_code == 0 and '"name": "SHOE"' in res.output


def test_cli_device_run_errors() -> None:
    r = CliRunner().invoke(
        feltlab_main,
        ["device", "run", "batch", "--model", "bogus", "--bus", "interface=virtual,channel=x"],
    )
    assert r.exit_code != 0 and "unknown shuffle model" in r.output
    r = CliRunner().invoke(
        feltlab_main,
        ["device", "run", "batch", "--bus", "interface=udp_multicast,channel=239.74.163.2"],
    )
    assert r.exit_code != 0 and "ff11" in r.output


def test_cli_device_run_in_process(vbus: str) -> None:
    r = CliRunner().invoke(
        feltlab_main,
        ["device", "run", "continuous", "--bus", vbus, "--duration", "0.2", "--seed", "1"],
    )
    assert r.exit_code == 0 and "ready" in r.output and "stopped" in r.output


def test_rig_is_a_plugin_and_sdk_does_not_import_it() -> None:
    code = (
        "import sys, feltlab.plugin_manager as pm\n"
        "pm.get_plugin_manager(entry_points=False)\n"
        "alone = any(m.startswith('feltlab.rig') for m in sys.modules)\n"
        "names = [n for n, _ in pm.get_plugin_manager().list_name_plugin()]\n"
        "print('rig' in names, alone)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["True", "False"]
    import pathlib

    sdk = pathlib.Path(__file__).resolve().parents[2] / "sdk"
    import re

    pattern = re.compile(r"^\s*(from|import)\s+feltlab\.rig", re.M)
    assert not any(pattern.search(p.read_text()) for p in sdk.rglob("*.py"))


@pytest.mark.parametrize("suffix", [".blf", ".asc", ".log"])
def test_capture_formats(vbus: str, tmp_path: Path, suffix: str) -> None:
    from feltlab.rig.bus.capture import decode_capture

    cap = tmp_path / f"x{suffix}"
    dev = BatchShuffler(vbus, seed=1).start()
    try:
        with BatchShufflerClient(vbus, capture=cap) as cl:
            cl.wait_online(2.0)
            cl.ping()
            time.sleep(0.02)
    finally:
        dev.stop()
    names = [r.name for r in decode_capture(cap)]
    assert "Command" in names and "Ack" in names
