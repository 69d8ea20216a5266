"""Unbiased bounded integers, proven by exact counting over reduced word widths.

The batched bounded draw (Brackett-Rozinsky and Lemire 2025; Lemire 2019 when k = 1) is one
macro in the C core; the shuffles run it at 64 bits, and ``native.batch_draw_word`` runs the
same text at a reduced width w.  Enumerating every w-bit word shows that each k-tuple of
indexes is produced by exactly floor(2^w / P) accepted words (P = n (n-1) ... (n-k+1)), which
is unbiasedness: rejected words are redrawn independently.
"""

import math
from collections import Counter
from itertools import product

import numpy as np
import pytest
from scipy import stats

from feltlab import native


def _falling(n: int, k: int) -> int:
    return math.prod(range(n - k + 1, n + 1))


@pytest.mark.parametrize(
    ("width", "n", "k"),
    [(8, 3, 1), (8, 7, 1), (8, 100, 1), (8, 255, 1), (10, 10, 3), (12, 7, 4), (12, 16, 3),
     (12, 6, 5), (9, 22, 2), (12, 4096, 1)],
)  # fmt: skip
@pytest.mark.parametrize("loose", [False, True])
def test_batched_draw_is_exactly_uniform(width: int, n: int, k: int, loose: bool) -> None:
    prod = _falling(n, k)
    # the shuffles pass a bound >= the product (a cheap pre-check); test both
    bound = (1 << width) if loose else prod
    counts: Counter[tuple[int, ...]] = Counter()
    rejected = 0
    for x in range(1 << width):
        idx = native.batch_draw_word(x, width, n, k, bound)
        if idx is None:
            rejected += 1
        else:
            assert all(0 <= idx[i] < n - i for i in range(k))
            counts[idx] += 1
    assert rejected == (1 << width) % prod
    # every tuple of the product space occurs, and equally often
    assert len(counts) == prod
    assert set(counts.values()) == {(1 << width) // prod}
    expected = set(product(*[range(n - i) for i in range(k)]))
    assert set(counts) == expected


def test_plain_modulo_reduction_would_be_biased() -> None:
    # the same counting finds the bias of x mod n, so the test can fail
    counts = Counter(x % 3 for x in range(256))
    assert set(counts.values()) == {85, 86}


def test_batch_draw_rejects_arguments_outside_domain() -> None:
    with pytest.raises(ValueError):
        native.batch_draw_word(256, 8, 3, 1, 3)  # x >= 2^w
    with pytest.raises(ValueError):
        native.batch_draw_word(1, 8, 17, 2, 100)  # bound < 17 * 16
    with pytest.raises(ValueError):
        native.batch_draw_word(1, 8, 17, 3, 5000)  # product > 2^8


def test_integers_bounds_and_distribution() -> None:
    g = native.Xoshiro256StarStar(2024)
    draws = g.integers(6, 60_000)
    assert draws.dtype == np.uint64 and draws.min() == 0 and draws.max() == 5
    chi2 = stats.chisquare(np.bincount(draws.astype(np.int64), minlength=6))
    assert chi2.pvalue > 1e-4  # seeded: this exact sample passes
    assert (g.integers(1, 10) == 0).all()
    big = g.integers((1 << 64) - 1, 1000)
    assert big.max() > (1 << 63)  # the full 64-bit range is reachable
    with pytest.raises(ValueError, match="bound must be in"):
        g.integers(0)
