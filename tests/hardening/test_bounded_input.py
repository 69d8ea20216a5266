"""Issue 30, class 5: every input bounded in size, depth and time, and regular files only
where a file is expected: a BLF decompression bomb is refused before it inflates; a FIFO where
a capture, journal, campaign.json, trial log or calibration log belongs is refused at once
(it hung view, analyze, --resume and certify); a record with 100,000 long errors prints in
bounded time; ``shuffle --shoes`` never holds more than a chunk of shoes."""

from __future__ import annotations

import json
import os
import shutil
import struct
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import can
import numpy as np
import pytest
from click.testing import CliRunner

from feltlab import native
from feltlab.cli import main
from feltlab.cli.shuffle import SHUFFLE_CHUNK
from feltlab.rig.bus.capture import read_capture
from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.errors import RigError
from feltlab.rig.live.cli import view


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def _bomb(path: Path, inflated: int) -> None:
    """A BLF whose one container holds ``inflated`` bytes of one CAN frame object repeated
    (python-can's own header, then the crafted container)."""
    with can.BLFWriter(str(path)) as w:
        w.on_message_received(can.Message(timestamp=1.7e9, arbitration_id=0x100, data=b"\0" * 8))
    data = bytearray(path.read_bytes())
    header_size = struct.unpack_from("<4sL", data)[1]
    # one CAN_MESSAGE object (type 1) of 48 bytes, as python-can writes it
    obj = struct.pack("<4sHHLL", b"LOBJ", 32, 1, 48, 1) + struct.pack("<LHHQ", 2, 0, 0, 10)
    obj += struct.pack("<HBBL8s", 1, 0, 8, 0x100, b"\0" * 8)
    packed = zlib.compress(obj * (inflated // len(obj)), 9)
    body = struct.pack("<H6xL4x", 2, inflated) + packed
    container = struct.pack("<4sHHLL", b"LOBJ", 16, 1, 16 + len(body), 10) + body
    container += b"\0" * (len(container) % 4)
    path.write_bytes(bytes(data[:header_size]) + container)


def _bounded(fn: Callable[[], Any], seconds: float = 10.0) -> BaseException | None:
    """Run ``fn`` on a thread; fail if it has not ended within ``seconds`` (a hang)."""
    out: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            out.append(None)
        except BaseException as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "hung"
    return out[0]


def test_a_blf_decompression_bomb_is_refused_before_it_inflates(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.blf"
    _bomb(bomb, 64 << 20)  # 64 MiB from about 65 kB
    assert bomb.stat().st_size < 200_000
    t0 = time.perf_counter()
    with pytest.raises(RigError, match="decompression bomb"):
        list(read_capture(bomb))
    assert time.perf_counter() - t0 < 5.0
    err = _bounded(lambda: analyze_path(bomb, None, out=None))
    assert isinstance(err, RigError) and "decompression bomb" in str(err)
    # a legitimate capture of the rig, up to its largest container, still reads
    ok = tmp_path / "ok.blf"
    with can.BLFWriter(str(ok)) as w:
        for i in range(20_000):
            w.on_message_received(
                can.Message(timestamp=1.7e9 + i * 1e-3, arbitration_id=0x100 + i % 16,
                            data=(i * 2654435761 % 2**64).to_bytes(8, "little"))
            )  # fmt: skip
    assert len(list(read_capture(ok))) == 20_000


@pytest.fixture(scope="module")
def stopped_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fifo") / "c"
    prof = quick_profile("batch", null_replicates=39)
    run_campaign(CampaignOptions(prof, out, size=6, seed=3))
    return out


@pytest.mark.parametrize(
    "name",
    ["campaign.json", "record.json", "faults.jsonl", "host-uncertainty.jsonl", "capture-001.blf"],
)
def test_a_fifo_where_a_file_belongs_is_refused_at_once(
    stopped_template: Path, tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "c"
    shutil.copytree(stopped_template, folder)
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    runner = CliRunner()
    for call in (
        lambda: analyze_path(folder, None, out=None),
        lambda: runner.invoke(view, [str(folder)], catch_exceptions=False),
        lambda: resume_campaign(folder),
    ):
        err = _bounded(call)
        if err is not None:  # refused, with the file named, as one line
            assert isinstance(err, RigError | ValueError), repr(err)
            assert name in str(err) and "\n" not in str(err)


def test_a_record_with_100000_long_errors_prints_in_bounded_time(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    record = {
        "verdict": "ERROR",
        "kind": "batch",
        "errors": ["[/bogus] [bold]" + "x" * 500 for _ in range(100_000)],
        "measurements": [],
    }
    (folder / "record.json").write_text(json.dumps(record))
    t0 = time.perf_counter()
    res = CliRunner().invoke(view, [str(folder)])
    assert res.exit_code == 0, res.output
    assert time.perf_counter() - t0 < 30
    assert "[/bogus]" in res.output  # printed as text, not read as markup
    assert "... and 99800 more errors" in res.output
    assert max(len(line) for line in res.output.splitlines()) < 2000


@pytest.mark.parametrize("digits", [4000, 5000])
def test_a_record_with_a_huge_count_is_one_line_exit_2(tmp_path: Path, digits: int) -> None:
    """Issue 41: ``view`` of a record with a 4,000-digit count was a traceback (an int too
    large for a float); 5,000 digits are over Python's int-from-text limit (a ValueError)."""
    folder = tmp_path / "c"
    folder.mkdir()
    huge = "9" * digits
    record = (
        '{"verdict": "PASS", "kind": "batch", "errors": [], "measurements": [{"name": '
        '"collection.shoes_missing", "value": ' + huge + ', "unit": "shoes", "low": null, '
        '"high": 0.0, "verdict": "PASS", "detail": {}}]}'
    )
    (folder / "record.json").write_text(record)
    res = CliRunner().invoke(view, [str(folder)])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(f"error: {folder}") and "record.json" in res.output
    assert len(res.output.splitlines()) == 1 and len(res.output) < 400
    assert "Traceback" not in res.output


def test_shuffle_streams_its_shoes_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = native.shuffle_batch

    def spy(rng: Any, n: int, decks: int, **kw: Any) -> np.ndarray:
        sizes.append(n)
        return real(rng, n, decks, **kw)

    monkeypatch.setattr(native, "shuffle_batch", spy)
    res = CliRunner().invoke(main, ["shuffle", "--shoes", "40000", "--decks", "1", "--json"])
    assert res.exit_code == 0, res.output
    assert max(sizes) == SHUFFLE_CHUNK and sum(sizes) == 40000
    out = json.loads(res.output)
    assert out["all_permutations"] is True and out["shoes"] == 40000
    # the shoes are the stream's: the first shown is the first of one big batch
    big = real(native.make_rng("xoshiro256**", 1), 3, 1, ids=True)
    assert (
        out["shown"][0][0]
        == json.loads(
            CliRunner().invoke(main, ["shuffle", "--shoes", "3", "--decks", "1", "--json"]).output
        )["shown"][0][0]
    )
    assert len(big) == 3
