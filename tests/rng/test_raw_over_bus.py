"""Raw output collected from a simulated device over CAN FD (issue 39 item 5): the same
verdicts and p-values as the same words read from a file, the bus time in the record, and
``feltlab analyze`` re-running the battery from the capture alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab import native
from feltlab.cli import main

M, N = 3, 40_000  # three sequences of 4 x 10^4 bits: 3,750 words, 4 blocks


def _certify(*args: str) -> dict[str, Any]:
    r = CliRunner().invoke(main, ["certify", "rng", *args, "--json"])
    assert r.exit_code in (0, 1, 3), r.output
    return dict(json.loads(r.output)["record"])


def _columns(record: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """Each test's verdict and NOT RUN reason, and each p-value column's second-level
    figures: sequences passing, the ten-bin histogram of its p-values, the two P-values."""
    tests = [(t["name"], t["verdict"], t["not_run"]) for t in record["rng"]["tests"]]
    cols = [
        (c["test"], c["label"], c["passed"], c["histogram"], c["proportion_p"], c["uniformity_p"])
        for c in record["rng"]["columns"]
    ]
    assert len(tests) == 15 and len(cols) > 100  # judged columns: 157 here, NOT RUN ones out
    return tests, cols


def test_device_over_fd_gives_the_file_verdicts(tmp_path: Path) -> None:
    bus = _certify(
        "--device", "batch", "--sequences", str(M), "--bits", str(N), "--seed", "7",
        "--out", str(tmp_path / "bus"),
    )  # fmt: skip
    # the same words written as a file by another route: the device's ChaCha20 keystream
    # (key 7) as 32-bit outputs, most significant byte first
    stream = native.ChaCha20(7).keystream(M * N // 8)
    words = np.frombuffer(stream, "<u4").astype(">u4").tobytes()
    (tmp_path / "words.bin").write_bytes(words)
    assert (tmp_path / "bus" / "raw.bin").read_bytes() == words
    file = _certify(
        str(tmp_path / "words.bin"), "--sequences", str(M), "--bits", str(N),
        "--out", str(tmp_path / "file"),
    )  # fmt: skip
    assert bus["verdict"] == file["verdict"]
    assert _columns(bus) == _columns(file)
    collected = bus["source"]["collection"]
    assert collected["bus"]["fd"] and collected["bus"]["data_bitrate"] == 2_000_000
    assert collected["blocks"] == 4 and collected["resends"] == 0
    low = collected["bus"]["model_seconds_no_stuffing"]
    assert low < collected["bus"]["bus_seconds"] < collected["bus"]["model_seconds_worst_stuffing"]
    # analyze: the words decoded from the capture, the battery re-run: the same verdicts
    r = CliRunner().invoke(main, ["analyze", str(tmp_path / "bus"), "--json"])
    assert r.exit_code in (0, 1, 3), r.output
    again = json.loads(r.output)["record"]
    assert again["verdict"] == bus["verdict"] and _columns(again) == _columns(bus)
    assert again["source"]["decoded_from"] == "capture.blf"


def test_analyze_refuses_a_capture_that_is_not_the_collection(tmp_path: Path) -> None:
    _certify("--device", "batch", "--sequences", "1", "--bits", "20000", "--seed", "3",
             "--out", str(tmp_path))  # fmt: skip
    raw = json.loads((tmp_path / "raw.json").read_text())
    raw["sha256"] = "0" * 64
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    r = CliRunner().invoke(main, ["analyze", str(tmp_path)])
    assert r.exit_code == 2 and "not those collected" in r.output


def test_device_needs_a_sample_size() -> None:
    r = CliRunner().invoke(main, ["certify", "rng", "--device", "batch", "--bits", "1000"])
    assert r.exit_code == 2 and "give both" in r.output


@pytest.mark.parametrize("extra", [["--generator", "chacha20"], ["some.bin"]])
def test_device_is_one_source(extra: list[str]) -> None:
    r = CliRunner().invoke(
        main, ["certify", "rng", "--device", "batch", "--sequences", "1", "--bits", "9", *extra]
    )
    assert r.exit_code == 2 and "one of them" in r.output


def test_bus_rates_from_the_profile() -> None:
    from feltlab.rig.certify.rawout import bus_rates
    from feltlab.rig.errors import RigError

    assert bus_rates({"bitrate": 250_000}) == (250_000, None)
    assert bus_rates({"fd": True}) == (500_000, 2_000_000)
    assert bus_rates({"fd": True, "bitrate": 1_000_000, "data_bitrate": 5_000_000}) == (
        1_000_000,
        5_000_000,
    )
    with pytest.raises(RigError, match="add fd = true"):
        bus_rates({"data_bitrate": 2_000_000})
    with pytest.raises(RigError, match="below the bitrate"):
        bus_rates({"fd": True, "bitrate": 1_000_000, "data_bitrate": 500_000})


def test_profile_declares_the_data_bitrate(tmp_path: Path) -> None:
    from feltlab.rig.profiles import resolve_profile

    text = resolve_profile("batch6").read_text()
    prof = tmp_path / "fd4.toml"
    prof.write_text(text.replace("[device]\n", "[device]\nfd = true\ndata_bitrate = 4000000\n", 1))
    rec = _certify("--device", "batch", "--profile", str(prof), "--sequences", "1", "--bits",
                   "30000", "--seed", "2", "--out", str(tmp_path / "a"))  # fmt: skip
    bus = rec["source"]["collection"]["bus"]
    assert (bus["fd"], bus["bitrate"], bus["data_bitrate"]) == (True, 500_000, 4_000_000)
    classic = tmp_path / "classic.toml"
    classic.write_text(text)  # no fd: classic CAN, 7 bytes a frame
    rec2 = _certify("--device", "batch", "--profile", str(classic), "--sequences", "1", "--bits",
                    "30000", "--seed", "2", "--out", str(tmp_path / "b"))  # fmt: skip
    bus2 = rec2["source"]["collection"]["bus"]
    assert not bus2["fd"] and bus2["bus_seconds"] > 5 * bus["bus_seconds"]
    assert (tmp_path / "a" / "raw.bin").read_bytes() == (tmp_path / "b" / "raw.bin").read_bytes()


def test_a_flawed_device_fails_as_its_file_does(tmp_path: Path) -> None:
    from feltlab.rig.certify.rawout import collect_simulated
    from feltlab.rig.certify.rng_certificate import certify_sequences
    from feltlab.rig.devices.rawout import StuckBitSource
    from feltlab.rig.rng.sources import read_bitstream

    m, n = 3, 100_000
    collect_simulated(tmp_path / "bus", m * n // 32, seed=5, flaw=lambda s: StuckBitSource(s, 0))
    # the same flaw by another route: ChaCha20 (key 5) words, bit 0 set, MSB first
    words = np.frombuffer(native.ChaCha20(5).keystream(m * n // 8), "<u4") | np.uint32(1)
    (tmp_path / "flawed.bin").write_bytes(words.astype(">u4").tobytes())
    device = {"name": "stuck bit 0", "kind": "rng", "simulated": True, "model": None}
    verdicts = []
    for path in (tmp_path / "bus" / "raw.bin", tmp_path / "flawed.bin"):
        bs = read_bitstream(path, "bytes", sequences=m, bits=n)
        result = certify_sequences(bs.sequences, n, device, {}, seed=1)
        verdicts.append((result.record["verdict"], result.record["rng"]["failing_tests"]))
    # one bit in 32 stuck: the frequency statistic is sqrt(n)/32 = 9.9 standard deviations
    assert verdicts[0] == verdicts[1] and verdicts[0][0] == "FAIL"
    assert "frequency" in verdicts[0][1]
