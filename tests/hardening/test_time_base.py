"""Issue 30, class 4: one time base for every capture format.  A campaign's part is recorded
with the epoch stamp of its first frame; a part read back from python-can ASC (stamps from 0,
a local-time header), candump, or a BLF whose header a tool wrote in local time is moved onto
it, so the fault windows (recorded in the campaign's clock) fall where they fell, and the same
campaign gives the same verdict from each format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import can
import pytest

from feltlab.rig.bus.capture import read_capture
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.certify.record import CampaignResult


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


@pytest.fixture(scope="module")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> CampaignResult:
    """A fault campaign: its fault windows are epoch spans of the campaign's clock."""
    out = tmp_path_factory.mktemp("tb") / "c"
    prof = quick_profile("batch", null_replicates=39)
    plan = "bus_loss,stop_heartbeats,jam"
    return run_campaign(CampaignOptions(prof, out, size=24, seed=11, faults=plan))


def _verdicts(record: dict[str, object]) -> dict[str, str]:
    ms = record["measurements"]
    assert isinstance(ms, list)
    out = {m["name"]: m["verdict"] for m in ms}
    out["verdict"] = str(record["verdict"])
    return out


def _rewrite(src: Path, dst: Path, shift: float = 0.0) -> None:
    with can.Logger(str(dst)) as w:
        for m in read_capture(src):
            m.timestamp += shift
            w.on_message_received(m)


@pytest.mark.parametrize(
    ("suffix", "shift"),
    [(".log", 0.0), (".asc", 0.0), (".blf", 13 * 3600.0), (".blf", -5.5 * 3600.0)],
    ids=["candump", "python-can-asc", "blf-local-time-nz", "blf-local-time-india"],
)
def test_every_format_gives_the_same_verdict(
    faulted: CampaignResult, tmp_path: Path, suffix: str, shift: float
) -> None:
    assert faulted.verdict is Verdict.PASS, faulted.record["errors"]
    base = _verdicts(analyze_path(faulted.directory / "capture-001.blf", None, out=None).record)
    assert base["verdict"] == "PASS"
    parts = json.loads((faulted.directory / "campaign.json").read_text())["parts"]
    assert isinstance(parts[0]["first_stamp"], float)  # the part's time base, recorded
    folder = tmp_path / "c"
    shutil.copytree(faulted.directory, folder)
    blf = folder / "capture-001.blf"
    converted = folder / f"capture-001{suffix}"
    tmp = tmp_path / f"x{suffix}"
    _rewrite(blf, tmp, shift)
    blf.unlink()
    shutil.move(tmp, converted)
    again = analyze_path(converted, None, out=None)
    assert _verdicts(again.record) == base
    outcomes = [f["outcome"] for f in again.record["faults"]]
    assert outcomes == [f["outcome"] for f in faulted.record["faults"]]


def test_a_malformed_device_frame_is_in_the_record_report_and_junit(
    faulted: CampaignResult, tmp_path: Path
) -> None:
    """A 7-byte JAM Fault frame (the DBC declares 8) from the device: a FAIL of its own,
    with the frame described, in the record, the report and JUnit."""
    msgs = list(read_capture(faulted.directory / "capture-001.blf"))
    base = faulted.record["profile"]["data"]["device"]["base"]
    mid = msgs[len(msgs) // 2]
    bad = can.Message(
        timestamp=mid.timestamp,
        arbitration_id=int(base) + 4,  # Fault
        data=bytes([3, 1, 2, 0, 0, 0, 0]),  # JAM, active, 7 bytes
        is_extended_id=False,
    )
    cap = tmp_path / "jam.blf"
    with can.Logger(str(cap)) as w:
        for m in [*msgs[: len(msgs) // 2], bad, *msgs[len(msgs) // 2 :]]:
            w.on_message_received(m)
    res = analyze_path(cap, None, out=tmp_path / "out")
    (m,) = [m for m in res.record["measurements"] if m["name"] == "protocol.malformed_frames"]
    assert m["value"] == 1.0 and m["verdict"] == "FAIL"
    assert f"0x{int(base) + 4:03X}" in m["detail"]["examples"][0]
    assert "7 bytes" in m["detail"]["examples"][0]
    assert res.verdict is Verdict.FAIL
    assert "protocol.malformed_frames" in (tmp_path / "out" / "report.html").read_text()
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'name="protocol.malformed_frames"' in junit and "<failure" in junit
    clean = analyze_path(faulted.directory / "capture-001.blf", None, out=None)
    (m,) = [m for m in clean.record["measurements"] if m["name"] == "protocol.malformed_frames"]
    assert m["value"] == 0.0 and m["verdict"] == "PASS"
