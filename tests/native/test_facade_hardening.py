"""Issue 14, item 7: the C core's facade checks the byte order of output arrays."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab import native


def test_a_big_endian_output_array_is_refused_not_filled() -> None:
    rng = native.Xoshiro256StarStar(seed=1)
    out = np.zeros((3, 312), dtype=">u2")
    with pytest.raises(TypeError, match=r"non-native byte order.*uint16"):
        native.shuffle_batch(rng, 3, decks=6, ids=True, out=out)
    assert not out.any()  # nothing was written
    good = np.zeros((3, 312), dtype=np.uint16)
    native.shuffle_batch(rng, 3, decks=6, ids=True, out=good)
    assert all(sorted(row.tolist()) == list(range(312)) for row in good)
