"""Analysis throughput of the whole randomness battery: 1,000,000 decks of 52 cards.

- ``feltlab battery (C kernels)``: :func:`feltlab.rig.certify.battery.run_battery` with card codes
  (integrity, the one-pass C kernel for rising sequences, turning points, successions, the
  guesser and the position table, successive-shoe rho, adjacent rank pairs, then every
  p-value and Holm).  Target: under 3 s on one core.
- ``numpy reference``: the same statistics by tests/certify/battery_reference.py (test-only), the
  straightforward whole-array numpy implementation (in chunks of 100,000 shoes to bound
  memory), followed by the same p-value step, in the same run.

Run ``python benchmarks/bench_battery.py [DECKS]`` for a plain report, or through
pytest-benchmark (``make bench``; under ``--benchmark-disable`` a 20,000-deck smoke run).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
import pytest

from feltlab import native
from feltlab.rig.certify import battery
from tests.certify import battery_reference as ref

DECKS = 1_000_000
CHUNK = 100_000


def make_batch(decks: int, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``decks`` fair one-deck shoes as input positions (uint16) and card codes (uint8)."""
    ids = native.shuffle_batch(native.Xoshiro256StarStar(seed), decks, decks=1, ids=True)
    return np.ascontiguousarray(ids.astype(np.uint16)), np.ascontiguousarray(ids.astype(np.uint8))


def c_battery(perm: np.ndarray, codes: np.ndarray) -> battery.BatteryResult:
    return battery.run_battery(perm, codes=codes)


def numpy_battery(perm: np.ndarray, codes: np.ndarray) -> dict[str, Any]:
    """The battery's statistics by the numpy reference, then the same p-values."""
    n_shoes, n = perm.shape
    parts: list[native.ShoeStatistics] = []
    rhos = []
    pairs = np.zeros((13, 13), dtype=np.int64)
    for lo in range(0, n_shoes, CHUNK):
        block = perm[lo : lo + CHUNK]
        if ref.check_permutations(block) is not None:
            raise ValueError("not a permutation")
        parts.append(ref.battery_pass(block))
        pairs += ref.adjacent_rank_pairs(codes[lo : lo + CHUNK])
        rhos.append(ref.successive_shoe_rho(perm[lo : lo + CHUNK + 1]))
    s = native.ShoeStatistics(
        np.concatenate([p.rising for p in parts]),
        np.concatenate([p.turning for p in parts]),
        np.concatenate([p.successions for p in parts]),
        np.concatenate([p.guesses for p in parts]),
        sum((p.position_counts for p in parts), np.zeros((n, n), dtype=np.int64)),
    )
    rho = np.concatenate(rhos)
    checks = [
        battery._position_uniformity(perm, s, None),
        battery.z_result("rising_sequences", perm, s),
        battery._rising_distribution(perm, s, None),
        battery.z_result("turning_points", perm, s),
        battery.z_result("successions", perm, s),
        battery.z_result("next_card_guessing", perm, s),
    ]
    z = float(rho.sum() / np.sqrt(rho.size / (n - 1)))
    return {
        "statistics": {c.name: c.statistic for c in checks},
        "rho_z": z,
        "pairs": pairs,
        "adjusted": battery.holm([c.p_value for c in checks]),
    }


def _timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def report(decks: int = DECKS) -> dict[str, float]:
    """Time both paths on ``decks`` decks; check they agree; return the figures."""
    perm, codes = make_batch(decks)
    t_c, res = _timed(c_battery, perm, codes)
    t_np, ref_out = _timed(numpy_battery, perm, codes)
    for name, stat in ref_out["statistics"].items():
        assert np.isclose(res.check(name).statistic, stat, rtol=1e-9, atol=1e-9), name
    return {
        "decks": decks,
        "c_seconds": t_c,
        "numpy_seconds": t_np,
        "c_decks_per_s": decks / t_c,
        "numpy_decks_per_s": decks / t_np,
        "speedup": t_np / t_c,
    }


@pytest.fixture(scope="module")
def batch(request: pytest.FixtureRequest) -> tuple[np.ndarray, np.ndarray]:
    disabled = request.config.getoption("benchmark_disable", False)
    return make_batch(20_000 if disabled else DECKS)


def _info(benchmark: Any, path: str, decks: int) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is not None and stats.stats.mean:
        benchmark.extra_info.update(
            {"path": path, "battery_decks": decks, "decks_per_s": decks / stats.stats.mean}
        )


def test_battery_c_kernels(benchmark: Any, batch: tuple[np.ndarray, np.ndarray]) -> None:
    perm, codes = batch
    res = benchmark.pedantic(c_battery, args=(perm, codes), rounds=3, iterations=1)
    assert res.n_shoes == perm.shape[0]
    _info(benchmark, "feltlab battery (C kernels)", perm.shape[0])


def test_battery_numpy_reference(benchmark: Any, batch: tuple[np.ndarray, np.ndarray]) -> None:
    perm, codes = batch
    out = benchmark.pedantic(numpy_battery, args=(perm, codes), rounds=1, iterations=1)
    c = c_battery(perm, codes)
    for name, stat in out["statistics"].items():
        assert np.isclose(c.check(name).statistic, stat, rtol=1e-9, atol=1e-9), name
    _info(benchmark, "numpy reference", perm.shape[0])


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else DECKS
    r = report(n)
    print(
        f"battery on {r['decks']:,} decks of 52 cards, one core:\n"
        f"  feltlab (C kernels): {r['c_seconds']:.3f} s  ({r['c_decks_per_s']:,.0f} decks/s)\n"
        f"  numpy reference:     {r['numpy_seconds']:.3f} s  "
        f"({r['numpy_decks_per_s']:,.0f} decks/s)\n"
        f"  speed-up: {r['speedup']:.1f}x; target (C) < 3 s: "
        f"{'met' if r['c_seconds'] < 3 else 'NOT met'}"
    )
