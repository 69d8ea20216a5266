"""The C counting kernels of SP 800-22 (feltlab.native.sp800_22) against plain numpy/Python
definitions on random bits, at lengths that end inside a byte and a 64-bit word, and their
refusals of sizes outside their domain."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab.native import CoreError
from feltlab.native import sp800_22 as kernels

RNG = np.random.default_rng(2207)
N = 2 * 64 * 9 + 13  # ends mid-byte and mid-word
BITS = RNG.integers(0, 2, size=(3, N)).astype(np.uint8)
BITS[1, 300:340] = 1  # a long run
DATA = np.packbits(BITS, axis=1)


def test_frequency_runs_and_cusum() -> None:
    assert kernels.frequency(DATA, N).tolist() == BITS.sum(axis=1).tolist()
    runs = kernels.runs(DATA, N)
    assert runs[:, 1].tolist() == (1 + (np.diff(BITS, axis=1) != 0).sum(axis=1)).tolist()
    walk = np.cumsum(2 * BITS.astype(np.int64) - 1, axis=1)
    c = kernels.cusum(DATA, N)
    assert c[:, 0].tolist() == walk[:, -1].tolist()
    assert c[:, 1].tolist() == np.maximum(walk.max(axis=1), 0).tolist()
    assert c[:, 2].tolist() == np.minimum(walk.min(axis=1), 0).tolist()


def test_block_frequency_and_longest_run() -> None:
    m = 37
    pis = BITS[:, : (N // m) * m].reshape(3, -1, m).mean(axis=2)
    assert kernels.block_frequency(DATA, N, m) == pytest.approx(
        4 * m * ((pis - 0.5) ** 2).sum(axis=1)
    )
    hist = kernels.longest_run(DATA, N, 128)
    for s in range(3):
        want = np.zeros(kernels.RUN_CAP + 1, dtype=int)
        for b in BITS[s, : (N // 128) * 128].reshape(-1, 128):
            longest = max(len(r) for r in "".join(map(str, b)).split("0"))
            want[min(longest, kernels.RUN_CAP)] += 1
        assert hist[s].tolist() == want.tolist()


def test_templates_and_overlapping() -> None:
    """Non-overlapping matches of 0011 (after a match the scan jumps 4 bits) and overlapping
    matches of 111, per block."""
    w = kernels.template_counts(DATA, N, np.array([0b0011, 0b0111]), 4, 3)
    o = kernels.overlapping(DATA, N, 3, 100, 40)
    bl = N // 3
    for s in range(3):
        for t, pattern in enumerate(("0011", "0111")):
            for j in range(3):
                text = "".join(map(str, BITS[s, j * bl : (j + 1) * bl]))
                count, i = 0, 0
                while i <= len(text) - 4:
                    if text[i : i + 4] == pattern:
                        count, i = count + 1, i + 4
                    else:
                        i += 1
                assert w[s, t, j] == count
        want = np.zeros(41, dtype=int)
        for b in range(N // 100):
            text = "".join(map(str, BITS[s, b * 100 : (b + 1) * 100]))
            want[min(sum(text[i : i + 3] == "111" for i in range(98)), 40)] += 1
        assert o[s].tolist() == want.tolist()


def test_pattern_sums_wrap_around() -> None:
    for w in (1, 3, 5):
        out = kernels.pattern_sums(DATA, N, w)
        for s in range(3):
            ext = np.concatenate([BITS[s], BITS[s, : w - 1]])
            for lvl in range(3):
                width = w - lvl
                if width < 1:
                    assert out[s, lvl, 0] == N * N
                    continue
                vals = np.array([int("".join(map(str, ext[i : i + width])), 2) for i in range(N)])
                c = np.bincount(vals, minlength=1 << width).astype(float)
                assert out[s, lvl, 0] == c @ c
                nz = c[c > 0]
                assert out[s, lvl, 1] == pytest.approx(float(np.sum(nz * np.log(nz / N))))


def test_excursions() -> None:
    cycles, nu, xi = kernels.excursions(DATA, N)
    for s in range(3):
        walk = np.cumsum(2 * BITS[s].astype(int) - 1)
        cuts = np.flatnonzero(walk == 0)
        segments = np.split(walk, cuts + 1)
        segments = [g for g in segments if len(g)]
        assert cycles[s] == len(segments)
        for x, state in enumerate((-4, -3, -2, -1, 1, 2, 3, 4)):
            want = np.bincount([min(int((g == state).sum()), 5) for g in segments], minlength=6)
            assert nu[s, x].tolist() == want.tolist()
        states = [*range(-9, 0), *range(1, 10)]
        assert xi[s].tolist() == [int((walk == v).sum()) for v in states]


def _bm(bits: list[int]) -> int:
    """Massey's algorithm, textbook form."""
    n = len(bits)
    c, b = [1] + [0] * n, [1] + [0] * n
    length, m = 0, -1
    for i in range(n):
        d = bits[i]
        for k in range(1, length + 1):
            d ^= c[k] & bits[i - k]
        if d:
            t = c[:]
            for k in range(n + 1 - (i - m)):
                c[k + i - m] ^= b[k]
            if 2 * length <= i:
                length, m, b = i + 1 - length, i, t
    return length


def test_linear_complexity_and_rank() -> None:
    for block in (20, 200):
        hist = kernels.linear_complexity(DATA, N, block)
        for s in range(3):
            want = np.zeros(block + 1, dtype=int)
            for j in range(N // block):
                want[_bm(BITS[s, j * block : (j + 1) * block].tolist())] += 1
            assert hist[s].tolist() == want.tolist()
    eye = np.packbits(np.eye(32, dtype=np.uint8).reshape(1, -1), axis=1)
    low = eye.copy()
    low[0, 124:128] = 0  # the last row zero: rank 31
    assert kernels.rank(np.vstack([eye, low]), 1024).tolist() == [[1, 0, 0], [0, 1, 0]]


def test_universal_distances() -> None:
    L, Q, K = 3, 8, (N // 3) - 8
    fn = kernels.universal(DATA, N, L, Q, K)
    for s in range(3):
        last: dict[int, int] = {}
        total = 0.0
        for i in range(1, Q + K + 1):
            v = int("".join(map(str, BITS[s, (i - 1) * L : i * L])), 2)
            if i > Q:
                total += np.log2(i - last.get(v, 0))
            last[v] = i
        assert fn[s] == pytest.approx(total / K)


@pytest.mark.parametrize(
    "call",
    [
        lambda: kernels.block_frequency(DATA, N, N + 1),
        lambda: kernels.longest_run(DATA, N, 12),
        lambda: kernels.universal(DATA, N, 17, 8, 8),
        lambda: kernels.universal(DATA, N, 3, 8, N),
        lambda: kernels.pattern_sums(DATA, N, 25),
        lambda: kernels.overlapping(DATA, N, 0, 100, 5),
        lambda: kernels.linear_complexity(DATA, N, 1),
        lambda: kernels.template_counts(DATA, 20, np.array([1]), 9, 8),
    ],
)
def test_kernels_refuse_sizes_outside_their_domain(call: object) -> None:
    with pytest.raises((CoreError, ValueError), match=r"outside its domain|must be in"):
        call()  # type: ignore[operator]
