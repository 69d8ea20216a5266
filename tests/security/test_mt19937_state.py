"""MT19937's whole state from 624 consecutive outputs (rig/security/mt19937.py): against
Python's ``random`` (MT19937: ``getrandbits(32)`` is one output) and the library's
``mt19937_outputs``; tempering undone exactly; a stream that is not MT19937 is said to be
not; the command's record and exit codes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.rng.generators import chacha_words, mt19937_outputs
from feltlab.rig.security.mt19937 import N, predict, recover_state, state_recovery, temper, untemper


def test_untemper_inverts_temper() -> None:
    x = np.random.default_rng(3).integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32)
    x[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]
    assert np.array_equal(untemper(temper(x)), x)


def test_state_of_pythons_random() -> None:
    r = random.Random(20261206)
    words = [r.getrandbits(32) for _ in range(N)]
    state = recover_state(words)
    # after 624 outputs Python's generator holds exactly the array they came from
    assert state.tolist() == list(r.getstate()[1][:N])
    want = [r.getrandbits(32) for _ in range(2000)]
    assert predict(state, 2000).tolist() == want


def test_state_from_any_624_consecutive_library_outputs() -> None:
    words = mt19937_outputs(5489, 3000)
    for start in (0, 1, 397, 1000):
        rec = state_recovery(words[start:])
        assert rec["predicted"] == 3000 - start - N
        assert rec["correct"] == rec["predicted"] and rec["first_wrong"] is None
    assert state_recovery(words[:N])["next"] == mt19937_outputs(5489, N + 8)[N:].tolist()


def test_other_streams_are_not_predicted() -> None:
    rec = state_recovery(chacha_words(1, 1000))
    assert rec["correct"] < 5 and rec["first_wrong"] == N
    words = mt19937_outputs(1, 1300)
    gap = np.concatenate([words[:N], words[N + 1 :]])  # one output missing
    assert state_recovery(gap)["first_wrong"] == N


def test_command_recovers_from_a_file(tmp_path: Path) -> None:
    r = random.Random(9)
    words = [r.getrandbits(32) for _ in range(700)]
    text = tmp_path / "out.txt"
    text.write_text("\n".join(map(str, words)) + "\n")
    res = CliRunner().invoke(
        main, ["certify", "predict", "--outputs", str(text), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith(
        "FAIL: predictable: MT19937's state recovered from 624 outputs; the next 76 predicted"
    )
    rec = json.loads((tmp_path / "o" / "record.json").read_text())
    assert rec["recovery"]["correct"] == 76
    raw = tmp_path / "out.bin"
    raw.write_bytes(np.asarray(chacha_words(4, 700), "<u4").tobytes())
    res = CliRunner().invoke(
        main,
        [
            "certify",
            "predict",
            "--outputs",
            str(raw),
            "--format",
            "u32le",
            "--json",
            "--out",
            str(tmp_path / "p"),
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 3 and json.loads(res.stdout)["verdict"] == "INCONCLUSIVE"
    text.write_text("1 2 x\n")
    res = CliRunner().invoke(main, ["certify", "predict", "--outputs", str(text)])
    assert res.exit_code == 2
    assert res.stderr.strip() == (f"error: {text}: value 3 ('x') is not an integer 0..4294967295")
