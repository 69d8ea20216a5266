"""Shuffle models: names, permutations, and the deliberately faulty ones."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from feltlab import native
from feltlab.rig.devices import models
from feltlab.rig.errors import ModelError


def _apply(name: str, n: int = 312, seed: int = 1) -> npt.NDArray[np.uint16]:
    return models.parse_model(name).apply(np.arange(n, dtype=np.uint16), native.ChaCha20(seed))


@pytest.mark.parametrize(
    "name", ["fisher-yates", "riffle:k=7", "riffle:k=1", "shelf:m=10", "shelf:m=10,passes=2"]
)
def test_good_models_permute(name: str) -> None:
    out = _apply(name)
    assert out.dtype == np.uint16 and sorted(out.tolist()) == list(range(312))
    assert not (out == np.arange(312)).all()
    assert (out == _apply(name)).all()  # seeded: reproducible
    assert not models.parse_model(name).faulty


def test_riffle_zero_passes_is_identity() -> None:
    assert (_apply("riffle:k=0") == np.arange(312)).all()


def test_one_riffle_has_at_most_two_rising_sequences() -> None:
    out = _apply("riffle:k=1", n=52)
    pos = np.argsort(out)  # where each original card went
    descents = int((np.diff(pos) < 0).sum())
    assert descents <= 1


def test_stuck_card_never_moves() -> None:
    for seed in range(5):
        out = _apply("stuck:pos=17", seed=seed)
        assert out[17] == 17 and sorted(out.tolist()) == list(range(312))


def test_missing_and_duplicate_cards() -> None:
    miss = _apply("missing")
    assert miss.size == 311 and len(set(miss.tolist())) == 311
    dup = _apply("duplicate:pos=3")
    assert dup.size == 312 and len(set(dup.tolist())) == 311


def test_biased_model_is_detectably_biased() -> None:
    m = models.parse_model("biased")
    rng = native.ChaCha20(5)
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(5400):
        key = tuple(m.apply(np.arange(3, dtype=np.uint16), rng).tolist())
        counts[key] = counts.get(key, 0) + 1
    # the naive swap shuffle of 3 cards: 27 equally likely paths over 6 orders (4 or 5 each)
    assert len(counts) == 6
    assert max(counts.values()) / min(counts.values()) > 1.15
    assert m.faulty


@pytest.mark.parametrize(
    "bad", ["bogus", "riffle:n=3", "riffle:k=x", "shelf:m=0", "riffle:k=99", "stuck:pos"]
)
def test_bad_model_names(bad: str) -> None:
    with pytest.raises(ModelError):
        models.parse_model(bad)


def test_describe() -> None:
    d = models.describe(models.parse_model("shelf:m=12,passes=2"))
    assert d == {
        "name": "shelf:m=12,passes=2",
        "kind": "shelf",
        "params": {"m": 12, "passes": 2},
        "faulty": False,
    }


def test_the_model_catalogue_is_the_c_cores() -> None:
    """The library's kinds and their parameters, in the order the C core takes them, are
    native/src/models.c's (feltlab.native.MODEL_PARAMS): the two lists cannot drift."""
    assert tuple(native.MODEL_PARAMS) == models.MODEL_NAMES
    for name in models.MODEL_NAMES:
        assert tuple(models.parse_model(name).settings) == native.MODEL_PARAMS[name], name
    assert set(models.MODEL_NAMES) >= models.MIXING | models.STATEFUL
