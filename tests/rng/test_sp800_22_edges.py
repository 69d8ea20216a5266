"""Hostile arguments to the SP 800-22 kernels and p-values (the battery's edge cases; the
published vectors are in h39a's tests): each refused in a line, none a p-value from nothing."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab.native import sp800_22 as kernels
from feltlab.native.core import CoreError
from feltlab.rig.rng.sp800_22 import cusum_p_value, run_battery

ROWS = np.random.default_rng(1).integers(0, 256, (2, 200), dtype=np.uint8)


@pytest.mark.parametrize(("q", "k"), [(2**64 - 1, 2), (2, 2**64 - 1), (2**63, 2**63)])
def test_universal_blocks_that_wrap_past_2_64_are_refused(q: int, k: int) -> None:
    """Q + K wrapped to 1 or 0 and passed the C core's Q + K <= n / L (the C check is tested in
    native/tests/test_core.c; the wrapper refuses Q, K above n first)."""
    with pytest.raises((ValueError, CoreError), match="universal"):
        kernels.universal(ROWS, 1600, 6, q, k)
    assert kernels.universal(ROWS, 1600, 6, 200, 66).shape == (2,)  # Q + K = n / L still runs


@pytest.mark.parametrize(("z", "n"), [(1.0, 10**6), (1.0, 65536), (1.0, 38912), (2.0, 6272)])
def test_cusum_p_value_of_the_smallest_excursion_is_at_most_1(z: float, n: int) -> None:
    """z = 1 (an alternating sequence) summed to 1.0000000000000075 at n = 10^6."""
    assert cusum_p_value(z, n) == pytest.approx(1.0, abs=1e-12)
    assert 0.0 <= cusum_p_value(z, n) <= 1.0
    assert cusum_p_value(4.0, 10) == pytest.approx(0.4116588, abs=1e-6)  # 2.13.8, to its 7 places


def test_alternating_bits_give_p_values_in_0_1() -> None:
    rows = np.full((2, 125), 0xAA, np.uint8)
    result = run_battery(rows, 1000)
    for t in result.tests:
        p = t.p_values[t.sequence_ran]
        assert not (p > 1.0).any() and not (p < 0.0).any(), t.name
