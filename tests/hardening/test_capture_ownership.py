"""Issue 14, item 4: captures belong to their campaign.  Each part is recorded with its
campaign id, device seed and SHA-256; ``--resume`` and ``analyze`` refuse a foreign capture; a
truncated BLF is detected from its header when analysed as a file; ``capture record`` refuses to
overwrite."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.cli.capture import capture as capture_cmd
from feltlab.rig.errors import RigError
from feltlab.seeds import part_seed


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def fast() -> Profile:
    return quick_profile("batch", null_replicates=39)


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("own")
    a, b = root / "a", root / "b"
    run_campaign(CampaignOptions(fast(), a, size=12, seed=1))
    run_campaign(CampaignOptions(fast(), b, size=12, seed=2))
    return a, b


def test_each_part_is_recorded_with_its_campaign(two: tuple[Path, Path]) -> None:
    a, _ = two
    state = json.loads((a / "campaign.json").read_text())
    (part,) = state["parts"]
    assert part["part"] == 1 and part["file"] == "capture-001.blf"
    assert part["campaign_id"] == state["campaign_id"]
    assert part["device_seed"] == part_seed(1, 1) and len(part["sha256"]) == 64


def test_analyze_refuses_a_foreign_capture(two: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = two
    mixed = tmp_path / "mixed"
    shutil.copytree(a, mixed)
    shutil.copy(b / "capture-001.blf", mixed / "capture-001.blf")
    with pytest.raises(CampaignError, match="does not belong to campaign"):
        analyze_path(mixed, None, out=None)
    assert analyze_path(a, None, out=None).verdict is Verdict.PASS


def test_resume_refuses_a_foreign_capture(two: tuple[Path, Path], tmp_path: Path) -> None:
    _, b = two
    out = tmp_path / "c"
    stop = threading.Event()
    stop.set()  # interrupted at once: a part with a few frames, then resume
    run_campaign(CampaignOptions(fast(), out, size=12, seed=3), stop=stop)
    shutil.copy(b / "capture-001.blf", out / "capture-001.blf")
    with pytest.raises(CampaignError, match="does not belong to campaign"):
        resume_campaign(out)


def test_a_truncated_blf_analysed_as_a_file_is_an_error(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two
    cut = tmp_path / "cut.blf"
    data = (a / "capture-001.blf").read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(RigError, match="is truncated: its header declares"):
        analyze_path(cut, None, out=None)


def test_capture_record_never_overwrites(tmp_path: Path) -> None:
    f = tmp_path / "x.blf"
    f.write_bytes(b"precious")
    res = CliRunner().invoke(
        capture_cmd, ["record", str(f), "--bus", "interface=virtual,channel=x", "--duration", "0"]
    )
    assert res.exit_code == 2 and "never overwrites" in res.output
    assert f.read_bytes() == b"precious"


# -- issue 30, class 2: no part accepted without proof ------------------------------------


def _journal(path: Path, header: str | None, frames_from: Path) -> None:
    """A journal as a killed campaign leaves it: ``header`` (None: none), then the frames of
    capture ``frames_from`` as candump lines, then the NUL bytes of its unwritten rest."""
    from feltlab.rig.bus.capture import read_capture

    lines = [] if header is None else [header]
    for m in read_capture(frames_from):
        lines.append(f"({m.timestamp:.9f}) can0 {m.arbitration_id:03X}#{m.data.hex().upper()} R")
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\0" * 4096)


@pytest.fixture
def stopped(tmp_path: Path) -> Path:
    """A campaign interrupted at once: part 1 closed with a few frames, resumable."""
    out = tmp_path / "c"
    stop = threading.Event()
    stop.set()
    run_campaign(CampaignOptions(fast(), out, size=12, seed=3), stop=stop)
    return out


def test_a_journal_names_its_campaign_on_its_first_line(stopped: Path) -> None:
    from feltlab.rig.bus.capture import journal_owner, read_journal
    from feltlab.rig.bus.writer import CaptureWriter, journal_path

    cid = json.loads((stopped / "campaign.json").read_text())["campaign_id"]
    w = CaptureWriter(stopped / "x.blf", owner={"campaign": cid, "part": 7})
    try:
        j = journal_path(stopped / "x.blf")
        assert j.read_bytes().startswith(f"# feltlab-journal 1 campaign={cid} part=7\n".encode())
        assert journal_owner(j) == {"campaign": cid, "part": "7"}
        assert read_journal(j) == []  # the header is not a frame
    finally:
        w.stop()


def test_resume_refuses_journals_without_proof(two: tuple[Path, Path], stopped: Path) -> None:
    _, b = two
    mine = json.loads((stopped / "campaign.json").read_text())["campaign_id"]
    theirs = json.loads((b / "campaign.json").read_text())["campaign_id"]
    j = stopped / "capture-002.journal.log"
    cases = {
        f"# feltlab-journal 1 campaign={theirs} part=2": f"names campaign {theirs} part 2",
        f"# feltlab-journal 1 campaign={mine} part=5": f"names campaign {mine} part 5",
        None: "names no campaign",  # a journal from before headers, or hand-made
        "(1.0) can0 123#00 R": "names no campaign",  # a frame where the header should be
    }
    for header, why in cases.items():
        _journal(j, header, b / "capture-001.blf")
        with pytest.raises(CampaignError, match=why):
            resume_campaign(stopped)
        assert not (stopped / "capture-002.blf").exists()  # nothing rebuilt from it
        assert j.exists()  # and nothing of it thrown away
        with pytest.raises(CampaignError, match=why):
            analyze_path(stopped, None, out=None)
    # its own journal (written by this campaign's writer, this part) is accepted and rebuilt;
    # another's frames under its header are not (issue 41: test_journal_binding.py)
    from tests.hardening.test_journal_binding import genuine_journal

    genuine_journal(stopped, 2, b / "capture-001.blf")
    res = resume_campaign(stopped)
    assert res.verdict is not Verdict.ABORTED
    assert (
        "capture-002.blf" in json.loads((stopped / "campaign.json").read_text())["recovered_parts"]
    )


def test_a_foreign_blf_before_the_first_part_closes_is_refused(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    _, b = two
    out = tmp_path / "early"
    stop = threading.Event()
    stop.set()
    run_campaign(CampaignOptions(fast(), out, size=12, seed=4), stop=stop)
    state = json.loads((out / "campaign.json").read_text())
    state["parts"] = []  # as the folder stands before its first part closes
    (out / "campaign.json").write_text(json.dumps(state))
    shutil.copy(b / "capture-001.blf", out / "capture-001.blf")
    with pytest.raises(CampaignError, match="was not collected by campaign"):
        resume_campaign(out)


@pytest.mark.parametrize("edit", ["drop", "null", "not-a-list"])
def test_removing_parts_does_not_turn_the_check_off(
    two: tuple[Path, Path], tmp_path: Path, edit: str
) -> None:
    a, b = two
    mixed = tmp_path / "mixed"
    shutil.copytree(a, mixed)
    shutil.copy(b / "capture-001.blf", mixed / "capture-001.blf")
    state = json.loads((mixed / "campaign.json").read_text())
    if edit == "drop":
        del state["parts"]
    else:
        state["parts"] = None if edit == "null" else {"capture-001.blf": "x"}
    (mixed / "campaign.json").write_text(json.dumps(state))
    with pytest.raises(CampaignError, match="parts"):
        analyze_path(mixed, None, out=None)
    with pytest.raises(CampaignError, match="parts"):
        resume_campaign(mixed)


def _fields(m: object) -> tuple[object, ...]:
    return (m.timestamp, m.arbitration_id, bytes(m.data), m.is_extended_id)  # type: ignore[attr-defined]


def test_first_frame_reads_the_head_of_a_journal_only(
    two: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The part's time base (campaign.json's ``first_stamp``) is the first frame of the
    journal while it is there, read from its head: the same frame as the whole journal's
    first, also when the head ends inside a line or holds no whole line; None for a journal
    with no frame; the BLF's own first frame when it has no journal."""
    from feltlab.rig.bus import capture
    from feltlab.rig.bus.capture import first_frame, read_capture, read_journal
    from feltlab.rig.bus.writer import journal_path

    a, _ = two
    blf = a / "capture-001.blf"
    closed = next(iter(read_capture(blf)))
    assert _fields(first_frame(blf)) == _fields(closed)
    copy = tmp_path / "capture-001.blf"
    shutil.copy(blf, copy)
    j = journal_path(copy)
    _journal(j, "# feltlab-journal 1 campaign=x part=1", blf)
    whole = read_journal(j)
    assert len(whole) > 100
    want = _fields(whole[0])
    assert _fields(first_frame(j)) == want
    assert _fields(first_frame(copy)) == want  # a BLF's journal, while it is there
    line = len(j.read_bytes().split(b"\n", 2)[1])
    # the head (the header is 38 characters and a newline) ends inside the second frame's
    # line, inside the first's (no whole frame line: read it all), inside the header
    for head in (39 + line + 10, 39 + line - 5, 20):
        monkeypatch.setattr(capture, "JOURNAL_HEAD_BYTES", head)
        assert _fields(first_frame(j)) == want
    j.write_bytes(b"# feltlab-journal 1 campaign=x part=1\n" + b"\0" * 64)
    assert first_frame(j) is None
