"""The library of shuffle models: ``simulate_shoes(model, SHOES, 312, seed)`` (6-deck shoes,
uint16 input positions, one C call), the call the power estimation makes thousands of times.

Each model is one benchmark (group ``models 6 decks``) recording shoes/s and ns/card in
``extra_info`` with ``decks=6``, so that run with ``bench_shuffle.py`` the conftest's ratio
table puts every model against the named baseline ``numpy permuted`` (6 decks) of the same
run; ``per-shoe native.shuffle loop`` is the way ``simulate_shoes`` drew Fisher-Yates shoes
before (a Python loop over rows), for context::

    .venv/bin/python -m pytest benchmarks/bench_shuffle.py benchmarks/bench_models.py \\
        --benchmark-only -k "6decks or models"
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from feltlab import native
from feltlab.rig.certify.simulate import simulate_shoes

SHOES = 5_000
CARDS = 312
MODELS = (
    "fisher-yates",
    "riffle:k=7",
    "shelf:m=10",
    "overhand",
    "overhand:passes=10",
    "strip",
    "position-bias",
    "naive",
    "modulo",
    "lcg",
    "short-seed",
    "reboot",
    "stuck",
    "missing",
    "duplicate",
)


def _record(benchmark: Any, path: str, shoes: int) -> None:
    benchmark.extra_info.update(path=path, decks=CARDS // 52, cards=CARDS, shoes=shoes)
    if benchmark.stats is not None:  # None under --benchmark-disable
        mean = benchmark.stats.stats.mean
        benchmark.extra_info["shoes_per_s"] = shoes / mean
        benchmark.extra_info["ns_per_card"] = mean / (shoes * CARDS) * 1e9


@pytest.mark.benchmark(group="models 6 decks")
@pytest.mark.parametrize("model", MODELS)
def test_simulate_shoes(benchmark: Any, model: str) -> None:
    shoes = benchmark(simulate_shoes, model, SHOES, CARDS, 1)
    assert shoes.shape == (SHOES, CARDS) and shoes.dtype == np.uint16
    _record(benchmark, f"simulate_shoes {model}", SHOES)


@pytest.mark.benchmark(group="models 6 decks")
def test_per_shoe_shuffle_loop(benchmark: Any) -> None:
    def run() -> np.ndarray:
        rng = native.Xoshiro256StarStar(1)
        out = np.empty((SHOES, CARDS), dtype=np.uint16)
        base = np.arange(CARDS, dtype=np.uint16)
        for row in out:
            row[:] = base
            native.shuffle(row, rng)
        return out

    out = benchmark(run)
    assert out.tolist()[:3] == simulate_shoes("fisher-yates", 3, CARDS, 1).tolist()
    _record(benchmark, "per-shoe native.shuffle loop", SHOES)
