"""Issue 41, class 2: every frame of a part is bound to its campaign.  A journal's lines
carry a MAC chained from its header under the campaign's key (derived from the lab key), and
a closed part's entry a tag over its SHA-256: no edit, reordering, splice, swap, replaced
header or truncation-then-append survives ``--resume`` or ``analyze``; a line torn by a crash
still reads.  Before the fix (main at 60ad0f9) a journal of another campaign's frames under
this campaign's header was resumed and PASSed (tests/hardening/test_capture_ownership.py's
last case, then)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from feltlab.rig.bus.capture import read_capture, read_journal, verify_journal
from feltlab.rig.bus.writer import CaptureWriter, journal_path
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.binding import campaign_key, lab_key_path
from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.errors import RigError


def fast() -> Profile:
    return quick_profile("batch", null_replicates=39)


def _state(folder: Path) -> dict:  # type: ignore[type-arg]
    return dict(json.loads((folder / "campaign.json").read_text()))


def genuine_journal(folder: Path, part: int, frames_from: Path) -> Path:
    """The journal campaign ``folder``'s writer leaves for ``part`` when killed (frames of
    capture ``frames_from``): header, chained lines, the NUL bytes of its unwritten rest."""
    state = _state(folder)
    key = campaign_key(state, strict=True)
    scratch = folder.parent / f"scratch-{folder.name}-{part}"
    scratch.mkdir(exist_ok=True)
    w = CaptureWriter(
        scratch / "x.blf", owner={"campaign": state["campaign_id"], "part": part}, chain_key=key
    )
    for m in read_capture(frames_from):
        w.on_message_received(m)
    target = folder / f"capture-{part:03d}.journal.log"
    shutil.copy(journal_path(scratch / "x.blf"), target)  # as a kill -9 leaves it
    w.stop()
    shutil.rmtree(scratch)
    return target


@pytest.fixture(scope="module")
def camps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Campaign A interrupted at once (part 1 closed, resumable) and campaign B complete,
    on one lab (one lab key), as an attacker with both folders has them."""
    root = tmp_path_factory.mktemp("bind")
    (root / "lab").mkdir()
    mp = pytest.MonkeyPatch()
    mp.setenv("FELTLAB_LAB_KEY", str(root / "lab" / "lab.key"))
    try:
        stop = threading.Event()
        stop.set()
        run_campaign(CampaignOptions(fast(), root / "a", size=12, seed=3), stop=stop)
        run_campaign(CampaignOptions(fast(), root / "b", size=12, seed=2))
    finally:
        mp.undo()
    return root / "a", root / "b"


@pytest.fixture
def lab(camps: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of both folders and their lab, the lab in force."""
    root = camps[0].parent
    for name in ("a", "b", "lab"):
        shutil.copytree(root / name, tmp_path / name)
    monkeypatch.setenv("FELTLAB_LAB_KEY", str(tmp_path / "lab" / "lab.key"))
    return tmp_path


def _lines(j: Path) -> list[str]:
    return j.read_bytes().split(b"\0", 1)[0].decode().split("\n")


def _write(j: Path, lines: list[str]) -> None:
    j.write_bytes("\n".join(lines).encode() + b"\0" * 512)


def _refused(a: Path, match: str = "fails its chained MAC") -> None:
    with pytest.raises(CampaignError, match=match):
        resume_campaign(a)
    assert not (a / "capture-002.blf").exists()  # nothing rebuilt from it
    with pytest.raises(CampaignError, match=match):
        analyze_path(a, None, out=None)


def test_its_own_journal_is_resumed_and_a_torn_last_line_tolerated(lab: Path) -> None:
    a, b = lab / "a", lab / "b"
    j = genuine_journal(a, 2, b / "capture-001.blf")
    lines = _lines(j)
    assert lines[1].split(" mac=")[1] and len(lines[1].split(" mac=")[1]) == 32
    whole = len(lines) - 2  # the header, and "" after the last newline
    _write(j, [*lines[:-2], lines[-2][:17]])  # the last line torn by the crash
    assert verify_journal(j, campaign_key(_state(a), strict=True) or b"") == whole - 1
    assert len(read_journal(j)) == whole - 1
    res = resume_campaign(a)
    assert res.verdict is not Verdict.ABORTED
    assert "capture-002.blf" in _state(a)["recovered_parts"]
    assert analyze_path(a, None, out=None).verdict is res.verdict


def test_another_campaigns_journal_under_this_header_is_refused(lab: Path) -> None:
    a, b = lab / "a", lab / "b"
    theirs = genuine_journal(b, 2, b / "capture-001.blf")  # B's own writer, B's key
    lines = _lines(theirs)
    lines[0] = lines[0].replace(_state(b)["campaign_id"], _state(a)["campaign_id"])
    theirs.unlink()
    _write(a / "capture-002.journal.log", lines)
    _refused(a)


@pytest.mark.parametrize("attack", ["edit", "reorder", "splice", "truncate-append", "bare"])
def test_an_altered_journal_is_refused(lab: Path, attack: str) -> None:
    a, b = lab / "a", lab / "b"
    j = genuine_journal(a, 2, b / "capture-001.blf")
    lines = _lines(j)
    mid = len(lines) // 2
    if attack == "edit":  # one data byte of one frame
        body, tag = lines[mid].split(" mac=")
        lines[mid] = body[:-4] + ("0" if body[-4] != "0" else "1") + body[-3:] + " mac=" + tag
    elif attack == "reorder":
        lines[mid], lines[mid + 1] = lines[mid + 1], lines[mid]
    elif attack == "splice":  # the rest from B's own journal of the same part (B's key)
        other = _lines(genuine_journal(b, 2, b / "capture-001.blf"))
        lines = lines[:mid] + other[mid:]
    elif attack == "truncate-append":  # cut, then two lines of its own from earlier on
        lines = lines[:mid] + lines[3:5] + [""]
    else:  # the MACs stripped: plain candump text
        lines = [lines[0]] + [line.split(" mac=")[0] for line in lines[1:]]
    _write(j, lines)
    _refused(a)


def test_a_closed_part_swapped_with_its_sha256_rewritten_is_refused(lab: Path) -> None:
    a, b = lab / "a", lab / "b"
    shutil.copy(b / "capture-001.blf", a / "capture-001.blf")
    state = _state(a)
    state["parts"][0]["sha256"] = _state(b)["parts"][0]["sha256"]  # the attacker's edit
    (a / "campaign.json").write_text(json.dumps(state))
    _refused(a, "not bound to campaign")
    state["parts"][0]["tag"] = _state(b)["parts"][0]["tag"]  # B's tag: B's key, not A's
    (a / "campaign.json").write_text(json.dumps(state))
    _refused(a, "not bound to campaign")


def test_a_campaign_without_binding_or_lab_key_is_refused_where_it_must_be(lab: Path) -> None:
    a = lab / "a"
    state = _state(a)
    del state["binding"]  # removing it must not turn the check off
    (a / "campaign.json").write_text(json.dumps(state))
    _refused(a, "no binding")
    shutil.copytree(lab / "b", lab / "b2")
    lab_key_path().unlink()  # another host (or the lab key lost): no resume
    with pytest.raises(CampaignError, match="resume it on the host that started it"):
        resume_campaign(lab / "b2")
    assert analyze_path(lab / "b2", None, out=None).verdict is Verdict.PASS  # SHA-256s only


def test_verify_journal_names_the_line(lab: Path) -> None:
    a, b = lab / "a", lab / "b"
    j = genuine_journal(a, 2, b / "capture-001.blf")
    lines = _lines(j)
    lines[5], lines[6] = lines[6], lines[5]
    _write(j, lines)
    with pytest.raises(RigError, match="line 6 fails"):
        verify_journal(j, campaign_key(_state(a), strict=True) or b"")


def test_a_lab_key_that_cannot_be_made_is_named_before_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("FELTLAB_LAB_KEY", str(blocker / "lab.key"))
    with pytest.raises(CampaignError, match=r"lab key .*not-a-folder"):
        run_campaign(CampaignOptions(fast(), tmp_path / "out", size=12, seed=1))
    assert not (tmp_path / "out").exists()
