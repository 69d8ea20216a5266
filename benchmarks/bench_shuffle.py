"""Shuffling whole shoes: feltlab's C core against numpy and the standard library.

Every path shuffles uint8 card codes of 6-deck (312 cards) and 8-deck (416 cards) shoes into
buffers allocated and touched before timing (no page faults in the timed region):

- ``feltlab xoshiro256** batch`` / ``feltlab chacha20 batch``: ``native.shuffle_batch(rng,
  out=out, decks=d)``, one C call for the whole batch (each row: new shoe, then Fisher-Yates);
- ``numpy permuted``: ``Generator.permuted(arr, axis=1, out=arr)`` on the (n, cards) batch
  (PCG64, numpy's default): the named baseline, one call for the whole batch;
- ``numpy shuffle loop``: ``Generator.shuffle`` per shoe in a Python loop (fewer shoes);
- ``random.shuffle loop``: ``random.Random.shuffle`` on a list per shoe (fewer shoes).

Each records shoes/s and ns/card (from the mean time of one call) in ``extra_info``;
benchmarks/conftest.py prints the ratios against ``numpy permuted`` after the run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from feltlab import native

BATCH_SHOES = 20_000  # one call of the batch paths
NUMPY_LOOP_SHOES = 2_000  # the per-shoe Python loops are 2-3 orders of magnitude slower
RANDOM_LOOP_SHOES = 200
HANDS = 1_000_000

BASELINE = "numpy permuted"
DECKS = [
    pytest.param(d, id=f"{d}decks", marks=pytest.mark.benchmark(group=f"shuffle {d} decks"))
    for d in (6, 8)
]


def _record(benchmark: Any, path: str, decks: int, shoes: int, **info: Any) -> None:
    """Store what the conftest's ratio table needs; rates only when the benchmark was timed."""
    cards = decks * 52
    benchmark.extra_info.update(path=path, decks=decks, cards=cards, shoes=shoes, **info)
    if benchmark.stats is not None:  # None under --benchmark-disable
        mean = benchmark.stats.stats.mean
        benchmark.extra_info["shoes_per_s"] = shoes / mean
        benchmark.extra_info["ns_per_card"] = mean / (shoes * cards) * 1e9


def _touched(shoes: int, decks: int) -> np.ndarray:
    """A C-contiguous (shoes, cards) uint8 batch whose pages are all written, every row a shoe
    in new-shoe order."""
    out = np.empty((shoes, decks * 52), dtype=np.uint8)
    out[:] = native.new_shoe(decks)
    return out


def _assert_shoes(batch: np.ndarray, decks: int) -> None:
    """Every checked row is a shuffled permutation of the shoe."""
    want = np.sort(native.new_shoe(decks))
    rows = batch[:: max(1, len(batch) // 64)]
    assert (np.sort(rows, axis=1) == want).all()
    assert not (rows == native.new_shoe(decks)).all(axis=1).any()


@pytest.mark.parametrize("decks", DECKS)
@pytest.mark.parametrize(
    "make_rng",
    [
        pytest.param(lambda: native.Xoshiro256StarStar(1), id="xoshiro256**"),
        pytest.param(lambda: native.ChaCha20(1), id="chacha20"),
    ],
)
def test_feltlab_shuffle_batch(
    benchmark: Any, decks: int, make_rng: Callable[[], native.BitGenerator]
) -> None:
    rng = make_rng()
    out = _touched(BATCH_SHOES, decks)
    result = benchmark(native.shuffle_batch, rng, out=out, decks=decks)
    assert result is out
    _assert_shoes(out, decks)
    _record(benchmark, f"feltlab {rng.name} batch", decks, BATCH_SHOES, rng=rng.name)


@pytest.mark.parametrize("decks", DECKS)
def test_numpy_permuted(benchmark: Any, decks: int) -> None:
    gen = np.random.default_rng(1)
    arr = _touched(BATCH_SHOES, decks)
    benchmark(gen.permuted, arr, axis=1, out=arr)
    _assert_shoes(arr, decks)
    _record(benchmark, BASELINE, decks, BATCH_SHOES, rng=type(gen.bit_generator).__name__)


@pytest.mark.parametrize("decks", DECKS)
def test_numpy_shuffle_loop(benchmark: Any, decks: int) -> None:
    gen = np.random.default_rng(1)
    arr = _touched(NUMPY_LOOP_SHOES, decks)
    rows = list(arr)  # views made once, outside the timed loop

    def run() -> None:
        shuffle = gen.shuffle
        for row in rows:
            shuffle(row)

    benchmark(run)
    _assert_shoes(arr, decks)
    _record(
        benchmark,
        "numpy shuffle loop",
        decks,
        NUMPY_LOOP_SHOES,
        rng=type(gen.bit_generator).__name__,
    )


@pytest.mark.parametrize("decks", DECKS)
def test_random_shuffle_loop(benchmark: Any, decks: int) -> None:
    gen = random.Random(1)
    shoes = [native.new_shoe(decks).tolist() for _ in range(RANDOM_LOOP_SHOES)]

    def run() -> None:
        shuffle = gen.shuffle
        for shoe in shoes:
            shuffle(shoe)

    benchmark(run)
    _assert_shoes(np.array(shoes, dtype=np.uint8), decks)
    _record(benchmark, "random.shuffle loop", decks, RANDOM_LOOP_SHOES, rng="MT19937")


@pytest.mark.benchmark(group="evaluate_hands")
def test_evaluate_hands(benchmark: Any) -> None:
    """(1e6, 3) hands from shuffled shoes; every other hand has two cards (NO_CARD padding)."""
    decks = 6
    shoes = -(-HANDS * 3 // (decks * 52))
    cards = native.shuffle_batch(native.Xoshiro256StarStar(2), shoes, decks)
    hands = np.ascontiguousarray(cards.reshape(-1)[: HANDS * 3].reshape(HANDS, 3))
    hands[::2, 2] = native.NO_CARD

    values = benchmark(native.evaluate_hands, hands)

    assert values.total.shape == (HANDS,)
    assert (values.hard_total <= values.total).all() and (values.total <= 31).all()
    assert not values.blackjack[1::2].any()  # three-card hands are never blackjack
    assert values.blackjack[::2].any() and values.bust[1::2].any()
    benchmark.extra_info.update(path="evaluate_hands", hands=HANDS, max_cards=3)
    if benchmark.stats is not None:
        mean = benchmark.stats.stats.mean
        benchmark.extra_info["hands_per_s"] = HANDS / mean
        benchmark.extra_info["ns_per_hand"] = mean / HANDS * 1e9
