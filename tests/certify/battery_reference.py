"""A straightforward numpy implementation of the battery's statistics.

The reference the C kernels of ``feltlab.native`` (``check_permutations``, ``battery_pass``,
``adjacent_rank_pairs``, ``successive_shoe_rho``) are checked against (tests/certify) and
benchmarked against (benchmarks/bench_battery.py): the same definitions (native/src/stats.c),
written the obvious way with whole-array numpy operations, no Python loop over shoes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from feltlab import native


def check_permutations(perm: npt.NDArray[np.uint16]) -> tuple[int, int, int] | None:
    """None when every row is a permutation of 0..n-1, else ``(shoe, column, value)`` of the
    first value out of range or seen twice (as the C kernel reports it)."""
    n = perm.shape[1]
    ok = (np.sort(perm, axis=1) == np.arange(n, dtype=perm.dtype)).all(axis=1)
    if ok.all():
        return None
    s = int(np.argmin(ok))
    seen: set[int] = set()
    for j, v in enumerate(perm[s].tolist()):
        if v >= n or v in seen:
            return s, j, v
        seen.add(v)
    raise AssertionError("unreachable")  # pragma: no cover


def battery_pass(perm: npt.NDArray[np.uint16]) -> native.ShoeStatistics:
    """Rising sequences, turning points, successions, rising-sequence-guesser hits and the
    card-by-position table, as :func:`feltlab.native.battery_pass` (same definitions)."""
    n_shoes, n = perm.shape
    p = perm.astype(np.int64)
    pos = np.argsort(p, axis=1, kind="stable")  # pos[s, v] = output position of input v
    rising = 1 + (pos[:, 1:] < pos[:, :-1]).sum(axis=1)
    up = p[:, 1:] > p[:, :-1]
    turning = (up[:, 1:] != up[:, :-1]).sum(axis=1)
    successions = (p[:, 1:] == p[:, :-1] + 1).sum(axis=1)
    # the guesser: the smallest unseen card above the last one seen, else the smallest unseen
    unseen = np.ones((n_shoes, n), dtype=bool)
    cards = np.arange(n)
    last = np.full(n_shoes, -1, dtype=np.int64)
    rows = np.arange(n_shoes)
    guesses = np.zeros(n_shoes, dtype=np.int64)
    for j in range(n):
        above = unseen & (cards > last[:, None])
        guess = np.where(above.any(axis=1), above.argmax(axis=1), unseen.argmax(axis=1))
        v = p[:, j]
        guesses += guess == v
        unseen[rows, v] = False
        last = v
    flat = (p * n + cards).ravel()
    counts = np.bincount(flat, minlength=n * n).reshape(n, n).astype(np.int64)
    u16 = np.uint16
    return native.ShoeStatistics(
        rising.astype(u16),
        turning.astype(u16),
        successions.astype(u16),
        guesses.astype(u16),
        counts,
    )


def adjacent_rank_pairs(codes: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """``(13, 13)`` counts of (rank, rank of the next card)."""
    r = (codes >> 2).astype(np.int64)
    return np.bincount((r[:, :-1] * 13 + r[:, 1:]).ravel(), minlength=169).reshape(13, 13)


def successive_shoe_rho(perm: npt.NDArray[np.uint16]) -> npt.NDArray[np.float64]:
    """Spearman's rho of the cards' positions in each shoe and the next."""
    n = perm.shape[1]
    pos = np.argsort(perm, axis=1, kind="stable").astype(np.float64) - (n - 1) / 2
    denom = n * (n * n - 1) / 12
    out: npt.NDArray[np.float64] = (pos[:-1] * pos[1:]).sum(axis=1) / denom
    return out
