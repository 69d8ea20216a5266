"""A BLF capture's frames as read back, without parsing the file (issue 13: the campaign
analyses the frames it wrote): :meth:`CaptureWriter.frames_as_read` must equal what
python-can's reader gives, field by field and timestamps to the bit, or be None."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import can
import pytest

from feltlab.rig.bus.capture import CaptureWriter, read_capture
from feltlab.rig.certify import campaign as certify
from feltlab.rig.certify import decode
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import CampaignOptions, analyze_path, run_campaign

FIELDS = (
    "timestamp",
    "arbitration_id",
    "is_extended_id",
    "is_remote_frame",
    "is_error_frame",
    "is_fd",
    "is_rx",
    "dlc",
    "data",
    "channel",
    "bitrate_switch",
    "error_state_indicator",
)


def fields(msgs: list[can.Message]) -> list[tuple[Any, ...]]:
    return [tuple(getattr(m, f) for f in FIELDS) for m in msgs]


def assorted() -> list[can.Message]:
    """Frames whose read-back is not the identity: sub-nanosecond and hour-long offsets from
    a first stamp that is not a whole millisecond, one before it (stored as 0), a remote
    frame with a DLC and no data, a short frame, extended ids, both directions."""
    t0 = 1_764_547_200.000456789
    std = {"is_extended_id": False}
    out = [
        can.Message(timestamp=t0, arbitration_id=0x100, data=bytes(range(8)), is_rx=True, **std),
        can.Message(timestamp=t0 + 3e-10, arbitration_id=0x101, data=b"\x01\x02\x03", **std),
        can.Message(timestamp=t0 - 0.004, arbitration_id=0x102, data=b"", is_rx=True, **std),
        can.Message(
            timestamp=t0 + 0.1234567891,
            arbitration_id=0x103,
            is_remote_frame=True,
            dlc=3,
            is_rx=False,
            **std,
        ),
        can.Message(
            timestamp=t0 + 3600.000000001,
            arbitration_id=(0x105 << 18) | 0x2A,
            is_extended_id=True,
            data=b"\xff" * 8,
            is_rx=True,
        ),
    ]
    out += [
        can.Message(
            timestamp=t0 + 7 + k * 0.000123457, arbitration_id=0x104, data=bytes([k]) * 8, **std
        )
        for k in range(200)
    ]
    return out


def written(path: Path, msgs: list[can.Message]) -> CaptureWriter:
    w = CaptureWriter(path)
    for m in msgs:
        w.on_message_received(m)
    w.stop()
    return w


def test_frames_as_read_are_the_readers_frames_to_the_bit(tmp_path: Path) -> None:
    w = written(tmp_path / "c.blf", assorted())
    kept = w.frames_as_read()
    assert kept is not None and len(kept) == 205
    assert fields(kept) == fields(list(read_capture(tmp_path / "c.blf")))
    # the stamp before the first is stored as the first's truncated millisecond
    assert kept[2].timestamp == 1_764_547_200.0
    assert kept[3].is_remote_frame and kept[3].dlc == 3 and kept[3].data == b""
    assert not kept[0].is_extended_id and kept[4].is_extended_id


def test_frames_as_read_refuses_what_it_cannot_vouch_for(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path / "open.blf")
    w.on_message_received(can.Message(timestamp=1e9, arbitration_id=1, data=b"x"))
    assert w.frames_as_read() is None  # not closed yet
    w.stop()
    assert w.frames_as_read() is not None
    (tmp_path / "open.blf").write_bytes((tmp_path / "open.blf").read_bytes() + b"\0" * 4)
    assert w.frames_as_read() is None  # the file changed since it was closed
    err = can.Message(timestamp=1e9 + 1, arbitration_id=2, is_error_frame=True, dlc=0)
    assert written(tmp_path / "err.blf", [*assorted(), err]).frames_as_read() is None
    fd = can.Message(timestamp=1e9 + 1, arbitration_id=3, is_fd=True, data=bytes(12))
    assert written(tmp_path / "fd.blf", [fd]).frames_as_read() is None
    assert written(tmp_path / "c.log", assorted()).frames_as_read() is None  # candump text
    assert written(tmp_path / "empty.blf", []).frames_as_read() == []


def test_a_campaign_analyses_its_kept_frames_and_analyze_reads_the_file_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_can_env: None
) -> None:
    """The campaign's analysis does not parse the capture it wrote (reading it would fail
    here), and ``feltlab analyze`` of the file reaches the very same record figures."""
    prof = certify.quick_profile("batch", power_replicates=3, null_replicates=39)

    def refuse(path: Any) -> Any:
        raise AssertionError(f"{path} parsed again")

    with monkeypatch.context() as m:
        m.setattr(decode, "read_capture", refuse)
        res = run_campaign(CampaignOptions(prof, tmp_path / "a", size=30, seed=5))
    assert res.verdict is Verdict.PASS
    again = analyze_path(tmp_path / "a", None, out=None)
    assert again.record["battery"] == res.record["battery"]
    assert again.record["measurements"] == res.record["measurements"]
