"""Crash safety (issue 9): ``feltlab certify shuffler`` killed with SIGKILL in a real
subprocess loses at most the shoe in flight; the capture reads afterwards (from its journal)
and ``--resume`` completes the campaign with PASS, every shoe collected before the kill
present and identical.  The bus is an in-process virtual bus (``interface=virtual``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.bus.capture import read_journal
from feltlab.rig.bus.writer import journal_path
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.profile import load_profile


def _toml(data: dict[str, Any]) -> str:
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for table, values in data.items():
        if isinstance(values, dict):
            lines.append(f"[{table}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def _written(journal: Path) -> int:
    """Bytes of frames in a journal (its mapped file is pre-sized: the rest is NUL bytes)."""
    if not journal.exists():
        return 0
    return len(journal.read_bytes().split(b"\0", 1)[0])


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CAN_")}


@pytest.mark.slow
def test_kill_9_loses_at_most_the_shoe_in_flight_and_resume_completes(tmp_path: Path) -> None:
    prof = load_profile(None, "batch")
    raw = dict(prof.raw)
    raw["device"] = {k: v for k, v in prof.device.items() if k != "bitrate"}
    raw["campaign"] = dict(prof.campaign)
    prof_file = tmp_path / "fast.toml"
    prof_file.write_text(_toml(raw))
    out = tmp_path / "campaign"
    cmd = [sys.executable, "-m", "feltlab.cli", "certify", "shuffler", "--profile", str(prof_file)]
    cmd += ["--shoes", "5000", "--seed", "13", "--out", str(out)]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = journal_path(out / "capture-001.blf")
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and _written(journal) < 400_000:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            time.sleep(0.05)
        assert _written(journal) >= 400_000
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "record.json").exists()  # killed: nothing was finalised
    # the capture reads after the crash: from its journal
    frames = read_journal(journal)
    before = read_campaign_capture([out / "capture-001.blf"], prof.base)
    got = len(before.shoes)
    assert got >= 10 and before.frames == len(frames)
    # at most the shoe in flight is lost: shoes 1..got are all there, none skipped
    assert [s.number for s in before.shoes] == list(range(1, got + 1))
    # resume (a smaller target keeps the test short): PASS, the killed part kept as it was
    state = json.loads((out / "campaign.json").read_text())
    state["size"] = got + 30
    (out / "campaign.json").write_text(json.dumps(state))
    res = subprocess.run(
        [sys.executable, "-m", "feltlab.cli", "certify", "shuffler", "--resume", str(out)],
        env=_env(),
        capture_output=True,
        timeout=120,
    )
    rec = json.loads((out / "record.json").read_text())
    # every check PASSes; the verdict is PASS only if got + 30 shoes catch every named
    # alternative of the bundled profile (biased needs 244), else INCONCLUSIVE
    caught = rec["battery"]["power"]["caught"]
    want = (0, "PASS") if caught else (3, "INCONCLUSIVE")
    assert res.returncode == want[0], res.stdout.decode()[-3000:] + res.stderr.decode()[-3000:]
    assert all(c["verdict"] == "PASS" for c in rec["battery"]["checks"])
    assert rec["verdict"] == want[1] and rec["battery"]["n_shoes"] == got + 30
    assert rec["captures"] == ["capture-001.blf", "capture-002.blf"]
    assert rec["recovered_parts"] == ["capture-001.blf"]
    assert not journal.exists()  # rebuilt into a complete BLF
    after = read_campaign_capture([out / "capture-001.blf", out / "capture-002.blf"], prof.base)
    for a, b in zip(before.shoes, after.shoes[:got], strict=True):
        assert (a.part, a.number) == (b.part, b.number)
        assert (a.shoe.codes == b.shoe.codes).all()
        assert (a.shoe.card_decks == b.shoe.card_decks).all()
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert {"capture-001.blf", "capture-002.blf"} <= set(manifest)
