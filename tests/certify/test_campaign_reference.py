"""The C battery kernels give exactly the statistics of the straightforward numpy reference
(tests/certify/battery_reference.py), on fair, faulty and hand-made batches."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab import native
from feltlab.rig.certify.simulate import simulate_shoes

from . import battery_reference as ref


@pytest.mark.parametrize(
    ("model", "n_cards"),
    [("fisher-yates", 52), ("riffle:k=3", 52), ("shelf:m=10", 208), ("fisher-yates", 312)],
)
def test_c_kernels_equal_numpy_reference(model: str, n_cards: int) -> None:
    perm = simulate_shoes(model, 300, n_cards, seed=17)
    c = native.battery_pass(perm)
    r = ref.battery_pass(perm)
    for name in ("rising", "turning", "successions", "guesses", "position_counts"):
        assert np.array_equal(getattr(c, name), getattr(r, name)), name
    assert np.allclose(native.successive_shoe_rho(perm), ref.successive_shoe_rho(perm), 0, 1e-12)
    codes = (perm % 52).astype(np.uint8)
    assert np.array_equal(native.adjacent_rank_pairs(codes), ref.adjacent_rank_pairs(codes))
    assert native.check_permutations(perm) is None and ref.check_permutations(perm) is None


def test_permutation_failures_agree() -> None:
    perm = simulate_shoes("fisher-yates", 20, 52, seed=3)
    perm[11, 30] = perm[11, 4]
    assert native.check_permutations(perm) == ref.check_permutations(perm)
    perm = simulate_shoes("fisher-yates", 20, 52, seed=3)
    perm[2, 7] = 52
    assert native.check_permutations(perm) == ref.check_permutations(perm) == (2, 7, 52)
