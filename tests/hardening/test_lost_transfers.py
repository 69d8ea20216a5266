"""Issue 41 (a new user's trip): ``capture decode`` dropped without a word a payload transfer
that lost a frame (1,999 SHOE lines from 2,000, exit 0).  Now the transfer is a line of its own
(an error naming the payload) and a summary on stderr counts every transfer not decoded: one
whose ISO-TP sequence broke, and one cut off at the end of the capture."""

from __future__ import annotations

from pathlib import Path

import can
from click.testing import CliRunner

from feltlab.cli import main

SHOE_ID = 0x10A  # the batch shuffler's SHOE payload channel at base 0x100


def _write(path: Path, msgs: list[can.Message]) -> None:
    with path.open("w") as f:
        writer = can.CanutilsLogWriter(f)
        for m in msgs:
            writer.on_message_received(m)


def test_a_transfer_that_lost_a_frame_is_shown_and_counted(tmp_path: Path) -> None:
    run = CliRunner().invoke(
        main, ["certify", "shuffler", "--shoes", "2", "--seed", "5", "--out", str(tmp_path / "c")]
    )
    assert run.exit_code == 3, run.output
    msgs = list(can.BLFReader(str(tmp_path / "c" / "capture-001.blf")))
    shoe = [i for i, m in enumerate(msgs) if m.arbitration_id == SHOE_ID]
    whole = CliRunner().invoke(main, ["capture", "decode", str(tmp_path / "c" / "capture-001.blf")])
    assert whole.exit_code == 0
    assert [ln for ln in whole.stdout.splitlines() if " SHOE " in ln] == [
        ln for ln in whole.stdout.splitlines() if " SHOE cards=312" in ln
    ]
    assert sum(" SHOE cards=312" in ln for ln in whole.stdout.splitlines()) == 2
    assert "lost a frame" not in whole.output

    _write(tmp_path / "gap.log", [m for i, m in enumerate(msgs) if i != shoe[4]])
    gap = CliRunner().invoke(main, ["capture", "decode", str(tmp_path / "gap.log")])
    assert gap.exit_code == 0 and "Traceback" not in gap.output
    lines = gap.stdout.splitlines()
    assert sum(" SHOE cards=312" in ln for ln in lines) == 1
    (lost,) = [ln for ln in lines if "SHOE ERROR" in ln]
    assert "SHOE transfer lost a frame (ISO-TP sequence broken at 0x10A)" in lost
    assert "1 payload transfer(s) lost a frame and were not decoded (1 shown as errors" in (
        gap.stderr
    )

    _write(tmp_path / "cut.log", msgs[: shoe[3] + 1])
    cut = CliRunner().invoke(main, ["capture", "decode", str(tmp_path / "cut.log")])
    assert cut.exit_code == 0
    assert "(0 shown as errors above, 1 cut off at the end of the capture)" in cut.stderr
