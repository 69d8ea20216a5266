"""A BLF capture's frames as read back, without parsing the file (issue 13: the campaign
analyses the frames it wrote): :meth:`CaptureWriter.frames_as_read` must equal what
python-can's reader gives, field by field and timestamps to the bit, or be None."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import can
import pytest

from feltlab.rig.bus.capture import read_capture
from feltlab.rig.bus.writer import CaptureWriter, KeptBLFWriter
from feltlab.rig.certify import decode
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import quick_profile

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


def written(path: Path, msgs: list[can.Message], *, background: bool = False) -> CaptureWriter:
    w = CaptureWriter(path)
    for m in msgs:
        w.on_message_received(m)
    w.background = background
    w.stop()
    return w


def frame_by_frame(path: Path, msgs: list[can.Message]) -> bytes:
    """The BLF python-can writes when given each frame as it comes (channel 0, level 1)."""
    w = can.BLFWriter(str(path), compression_level=1)
    for m in msgs:
        saved, m.channel = m.channel, 0
        w.on_message_received(m)
        m.channel = saved
    w.stop()
    return path.read_bytes()


def test_frames_as_read_are_the_readers_frames_to_the_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = written(tmp_path / "c.blf", assorted())
    kept = w.frames_as_read()
    assert kept is not None and len(kept) == 205
    assert fields(kept) == fields(list(read_capture(tmp_path / "c.blf")))
    assert all(type(m) is can.Message and type(m.data) is bytearray for m in kept)
    from feltlab.rig.bus import writer

    monkeypatch.setattr(writer, "_MESSAGE_SLOTS", frozenset())  # another python-can's Message
    built = w.frames_as_read()  # through its own constructor: the same frames
    assert built is not None and fields(built) == fields(kept)
    monkeypatch.undo()
    assert w.read_back_agrees(kept) and w.read_back_agrees(kept, check=10**6)
    # the stamp before the first is stored as the first's truncated millisecond
    assert kept[2].timestamp == 1_764_547_200.0
    assert kept[3].is_remote_frame and kept[3].dlc == 3 and kept[3].data == b""
    assert not kept[0].is_extended_id and kept[4].is_extended_id
    tampered = [*kept[:3], can.Message(timestamp=kept[3].timestamp + 1e-6), *kept[4:]]
    assert not w.read_back_agrees(tampered)
    assert not w.read_back_agrees([*kept, kept[-1]])  # one frame more than the file holds


def test_the_blf_written_at_close_is_the_blf_written_frame_by_frame(tmp_path: Path) -> None:
    """Kept and written at close, in this process or in a forked one, or turned into a writer
    frame by frame by an error frame or a frame past the limit: byte for byte python-can's
    file written frame by frame."""
    msgs = assorted()
    want = frame_by_frame(tmp_path / "ref.blf", msgs)
    assert written(tmp_path / "a.blf", msgs).path.read_bytes() == want
    bg = written(tmp_path / "b.blf", msgs, background=True)
    assert bg.pending and (tmp_path / "b.journal.log").exists()  # until the file is written
    bg.wait()
    assert not bg.pending and bg.path.read_bytes() == want
    assert not (tmp_path / "b.journal.log").exists()  # removed once the file was written
    err = can.Message(timestamp=msgs[-1].timestamp + 1, arbitration_id=2, is_error_frame=True)
    mixed = [*msgs[:50], err, *msgs[50:]]
    w = written(tmp_path / "e.blf", mixed)
    assert w.frames_as_read() is None  # not kept: read back from the file
    assert w.path.read_bytes() == frame_by_frame(tmp_path / "eref.blf", mixed)
    small = CaptureWriter(tmp_path / "l.blf")
    small.KEEP_LIMIT = 20
    for m in msgs:
        small.on_message_received(m)
    small.stop()
    assert small.frames_as_read() is None and small.path.read_bytes() == want


def test_a_blf_of_many_containers_is_python_cans_to_the_byte(tmp_path: Path) -> None:
    """6,000 frames (288,000 bytes of objects: two full containers of 131,072 and a partial
    one) written at close in one numpy array (``KeptBLFWriter.add_kept``), also when the
    writer turned to frame by frame after 2,500 kept frames: python-can's bytes."""
    base = assorted()
    msgs = [
        can.Message(
            timestamp=base[0].timestamp + k * 0.000287 + (k % 7) * 1e-10,
            arbitration_id=(0x1ABCDE if k % 5 == 0 else 0x110 + k % 3),
            is_extended_id=k % 5 == 0,
            is_remote_frame=k % 11 == 0,
            dlc=k % 9,
            data=b"" if k % 11 == 0 else bytes((k + i) % 256 for i in range(k % 9)),
            is_rx=k % 2 == 0,
        )
        for k in range(6000)
    ]
    want = frame_by_frame(tmp_path / "ref.blf", msgs)
    direct = KeptBLFWriter(str(tmp_path / "d.blf"), compression_level=1)
    kept = [
        (
            m.timestamp,
            m.arbitration_id,
            m.is_extended_id,
            m.is_remote_frame,
            m.is_rx,
            m.dlc,
            bytes(m.data),
        )
        for m in msgs
    ]
    assert direct.add_kept(kept)  # this python-can's layout: written in one array
    direct.stop()
    assert (tmp_path / "d.blf").read_bytes() == want
    assert written(tmp_path / "a.blf", msgs).path.read_bytes() == want
    turned = CaptureWriter(tmp_path / "t.blf")
    turned.KEEP_LIMIT = 2500
    for m in msgs:
        turned.on_message_received(m)
    turned.stop()
    assert turned.path.read_bytes() == want


def test_frames_as_read_refuses_what_it_cannot_vouch_for(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path / "open.blf")
    w.on_message_received(can.Message(timestamp=1e9, arbitration_id=1, data=b"x"))
    assert w.frames_as_read() is None  # not closed yet
    w.stop()
    assert w.frames_as_read() is not None
    fd = can.Message(timestamp=1e9 + 1, arbitration_id=3, is_fd=True, data=bytes(12))
    assert written(tmp_path / "fd.blf", [fd]).frames_as_read() is None
    assert written(tmp_path / "c.log", assorted()).frames_as_read() is None  # candump text
    assert written(tmp_path / "empty.blf", []).frames_as_read() == []


def test_a_campaign_analyses_its_kept_frames_and_analyze_reads_the_file_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_can_env: None
) -> None:
    """The campaign's analysis does not parse the capture it wrote (reading it would fail
    here), and ``feltlab analyze`` of the file reaches the very same record figures."""
    prof = quick_profile("batch", null_replicates=39)

    def refuse(path: Any) -> Any:
        raise AssertionError(f"{path} parsed again")

    with monkeypatch.context() as m:
        m.setattr(decode, "read_capture", refuse)
        res = run_campaign(CampaignOptions(prof, tmp_path / "a", size=30, seed=5))
    assert res.verdict is Verdict.PASS
    again = analyze_path(tmp_path / "a", None, out=None)
    assert again.record["battery"] == res.record["battery"]
    assert again.record["measurements"] == res.record["measurements"]


def test_a_blf_that_cannot_be_written_stops_the_campaign_before_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_can_env: None
) -> None:
    """A full disk when the part's BLF is written (in the forked writer, then again here):
    the OSError goes up (the command prints its one-line error), no record is written, the
    journal stays, and --resume rebuilds the BLF from it and completes the campaign."""
    import errno

    from feltlab.rig.bus.writer import journal_path

    real = CaptureWriter._blf_writer

    def full(self: CaptureWriter, path: Path) -> Any:
        if path.name.endswith(".writing"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(self, path)

    prof = quick_profile("batch", null_replicates=39)
    out = tmp_path / "full"
    with monkeypatch.context() as m:
        m.setattr(CaptureWriter, "_blf_writer", full)
        with pytest.raises(OSError) as err:
            run_campaign(CampaignOptions(prof, out, size=20, seed=4))
    assert err.value.errno == errno.ENOSPC
    assert not (out / "record.json").exists()
    assert journal_path(out / "capture-001.blf").exists()
    res = resume_campaign(out)
    assert res.verdict is Verdict.PASS and res.record["collection"]["collected"] == 20
    assert res.record["recovered_parts"] == ["capture-001.blf"]
