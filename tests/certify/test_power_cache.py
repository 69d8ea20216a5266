"""The power rows' on-disk cache (:meth:`feltlab.rig.certify.power.PowerJob.compute`): a
cached row is the computed one to the bit, a damaged cache file is recomputed, and the key
follows every input.  Small jobs (one deck, 200 simulated shoes): well under a second each."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from feltlab import cache, native
from feltlab.rig.certify import power
from feltlab.rig.certify.binding import lab_key
from feltlab.rig.certify.power import ROW_CACHE_KIND, AlternativePower, PowerJob


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FELTLAB_CACHE_DIR", str(tmp_path))
    return tmp_path


def _job(model: str = "riffle:k=7", decks: int = 1) -> PowerJob:
    loaded = native.new_shoe(decks, ids=True).astype(np.int64)
    return PowerJob.of(
        model, loaded.size, shoes=200, seed=0, n_shoes=300, alpha=0.01, loaded_ids=loaded
    )


def _text(row: AlternativePower) -> str:
    return json.dumps(row.to_dict())  # floats as their exact shortest repr


def _afresh_counted(monkeypatch: pytest.MonkeyPatch) -> list[PowerJob]:
    calls: list[PowerJob] = []
    real = PowerJob.compute_afresh

    def counted(self: PowerJob) -> AlternativePower:
        calls.append(self)
        return real(self)

    monkeypatch.setattr(PowerJob, "compute_afresh", counted)
    return calls


def test_a_cached_row_is_the_computed_one_to_the_bit(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job()
    calls = _afresh_counted(monkeypatch)
    first = job.compute()  # computed, then stored
    assert len(calls) == 1
    path = own_cache / ROW_CACHE_KIND / f"{job.cache_key()}.npy"
    assert path.is_file()
    again = job.compute()  # read back
    assert len(calls) == 1
    assert _text(again) == _text(first) == _text(job.compute_afresh())
    assert again.caught == first.caught and again.shoes_needed == first.shoes_needed


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "empty", "not-json", "another-job"],
)
def test_a_damaged_cache_file_is_recomputed(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    job = _job()
    want = _text(job.compute())
    path = own_cache / ROW_CACHE_KIND / f"{job.cache_key()}.npy"
    whole = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x93NUMPY not really" * 10)
    elif damage == "truncated":
        path.write_bytes(whole[: len(whole) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "not-json":
        cache.store(ROW_CACHE_KIND, job.cache_key(), np.frombuffer(b"{[1, 2", np.uint8))
    else:  # a well-formed row of another model under this key
        other = _job("shelf:m=10").compute()
        text = json.dumps(
            {
                "model": other.model,
                "n_shoes": other.n_shoes,
                "required": other.required,
                "checks": [
                    [c.check, c.power, c.low, c.high, c.shoes_needed, c.interval]
                    for c in other.checks
                ],
            }
        )
        tagged = json.dumps({"row": text, "tag": _tag(job.cache_key(), text)})
        cache.store(ROW_CACHE_KIND, job.cache_key(), np.frombuffer(tagged.encode(), np.uint8))
    calls = _afresh_counted(monkeypatch)
    assert _text(job.compute()) == want
    assert len(calls) == 1  # recomputed, and stored again whole
    assert _text(job.compute()) == want and len(calls) == 1


def _tag(key: str, text: str) -> str:
    """The tag the cache's writer gives ``text`` under ``key`` with this session's lab key
    (tests/conftest.py's $FELTLAB_LAB_KEY), computed here from RFC 2104, not by power.py."""
    lab = lab_key(create=True)
    assert lab is not None
    secret = hmac.new(lab, b"feltlab-power-row:v1", hashlib.sha256).digest()
    return hmac.new(secret, f"{key}\n{text}".encode(), hashlib.sha256).hexdigest()


def test_a_row_edited_in_the_cache_is_not_believed(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row edited into valid JSON (every power 0: the campaign would be INCONCLUSIVE) is
    refused by its tag and computed again; the same edit with a tag under the lab key is
    believed, which shows the tag is what refused it."""
    job = _job()
    want = _text(job.compute())
    key = job.cache_key()
    path = own_cache / ROW_CACHE_KIND / f"{key}.npy"
    stored = json.loads(np.load(path).tobytes().decode())
    row = json.loads(stored["row"])
    assert stored["tag"] == _tag(key, stored["row"])  # the writer's tag, as RFC 2104 gives
    for check in row["checks"]:
        check[1:3] = [0.0, 0.0]
    edited = json.dumps(row)
    for tag in (stored["tag"], "0" * 64):
        forged = json.dumps({"row": edited, "tag": tag}).encode()
        cache.store(ROW_CACHE_KIND, key, np.frombuffer(forged, np.uint8))
        calls = _afresh_counted(monkeypatch)
        assert _text(job.compute()) == want and len(calls) == 1
    vouched = json.dumps({"row": edited, "tag": _tag(key, edited)}).encode()
    cache.store(ROW_CACHE_KIND, key, np.frombuffer(vouched, np.uint8))
    assert all(c.power == 0.0 for c in job.compute().checks)


def test_without_a_lab_key_nothing_is_cached(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A lab key that cannot be made (its folder is a file): every row computed afresh,
    nothing written, the same row."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("FELTLAB_LAB_KEY", str(blocker / "lab.key"))
    job = _job()
    calls = _afresh_counted(monkeypatch)
    first, again = _text(job.compute()), _text(job.compute())
    assert first == again and len(calls) == 2
    assert not (own_cache / ROW_CACHE_KIND).exists()


def test_the_key_follows_every_input(monkeypatch: pytest.MonkeyPatch) -> None:
    job = _job()
    other_ids = np.roll(np.frombuffer(job.loaded_ids or b"", np.int64), 1).tobytes()
    changed = [
        dataclasses.replace(job, model="riffle:k=8"),
        dataclasses.replace(job, n_cards=104),
        dataclasses.replace(job, shoes=400),
        dataclasses.replace(job, seed=1),
        dataclasses.replace(job, n_shoes=301),
        dataclasses.replace(job, alpha=0.05),
        dataclasses.replace(job, required=0.95),
        dataclasses.replace(job, loaded_ids=other_ids),
        dataclasses.replace(job, loaded_ids=None),
    ]
    keys = {job.cache_key()} | {j.cache_key() for j in changed}
    assert len(keys) == 1 + len(changed)
    assert _job().cache_key() == job.cache_key()  # and nothing else: equal jobs, equal keys
    base = job.cache_key()
    monkeypatch.setattr(power, "ROW_CACHE_VERSION", power.ROW_CACHE_VERSION + 1)
    assert job.cache_key() != base
    monkeypatch.undo()
    monkeypatch.setattr(power, "BLOCKS", power.BLOCKS + 1)
    assert job.cache_key() != base
    monkeypatch.undo()
    power.code_digest.cache_clear()
    monkeypatch.setattr(power, "_ROW_CODE", (*power._ROW_CODE, "record"))
    try:
        assert job.cache_key() != base  # the code it reads is part of the key
    finally:
        monkeypatch.undo()
        power.code_digest.cache_clear()
    assert job.cache_key() == base


_ROW_IN_A_SUBPROCESS = """
import json, numpy as np
from feltlab import native
from feltlab.rig.certify.power import PowerJob
loaded = native.new_shoe(6, ids=True).astype(np.int64)
job = PowerJob.of("riffle:k=7", loaded.size, shoes=200, seed=0, n_shoes=300, alpha=0.01,
                  loaded_ids=loaded)
print(json.dumps(job.compute_afresh().to_dict()))
"""


def test_a_row_does_not_depend_on_the_blas_threads() -> None:
    """A 6-deck row (312 cards: the U-statistic's sums are long enough for OpenBLAS to split
    them over threads) computed with one BLAS thread and with two gives the same bits."""
    got = []
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        out = subprocess.run(
            [sys.executable, "-c", _ROW_IN_A_SUBPROCESS],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        got.append(out.stdout)
    assert got[0] == got[1]
    assert json.loads(got[0])["model"] == "riffle:k=7"


def test_the_core_digest_is_the_shared_librarys() -> None:
    spec = importlib.util.find_spec("feltlab.native._core")
    assert spec is not None and spec.origin is not None
    with open(spec.origin, "rb") as f:
        assert native.core_digest() == hashlib.sha256(f.read()).hexdigest()


def test_a_fifo_or_a_header_larger_than_its_file_is_no_cached_table(own_cache: Path) -> None:
    """``feltlab.cache`` opens without blocking and reads the .npy header first (NEP 1): a FIFO
    in the cache hung a campaign, and a header claiming 2**42 bytes was a MemoryError."""
    path = own_cache / "t" / "k.npy"
    path.parent.mkdir()
    os.mkfifo(path)
    assert cache.load("t", "k") is None
    path.unlink()
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "|u1", "fortran_order": False, "shape": (2**42,)}
        )
        f.write(b"\0" * 64)
    assert cache.load("t", "k") is None
    cache.store("t", "k", np.arange(5, dtype=np.uint8))
    assert cache.load("t", "k").tolist() == [0, 1, 2, 3, 4]  # type: ignore[union-attr]
