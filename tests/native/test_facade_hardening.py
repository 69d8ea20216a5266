"""Issue 14, item 7: the C core's facade checks the byte order of output arrays and makes
``spawn()`` safe from several threads on one generator."""

from __future__ import annotations

import threading

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


@pytest.mark.parametrize("cls", [native.Xoshiro256StarStar, native.ChaCha20])
def test_spawn_from_several_threads_never_duplicates_a_stream(cls: type) -> None:
    parent = cls(7)
    got: list[list[native.BitGenerator]] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        got.append(parent.spawn(16))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    firsts = [int(g.random_raw(1)[0]) for children in got for g in children]
    assert len(firsts) == 128 and len(set(firsts)) == 128
