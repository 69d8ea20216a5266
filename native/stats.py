"""Validating wrappers over the permutation-statistics kernels of the certification battery
(``native/src/stats.c``): integrity of a batch of shuffled shoes and the statistics the battery
turns into verdicts.  Shapes and dtypes as in :mod:`feltlab.native`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import (
    MAX_MODEL_CARDS,
    check,
)


@dataclass(frozen=True)
class ShoeStatistics:
    """Per-shoe permutation statistics from one C pass (see :func:`battery_pass`).

    ``rising``, ``turning``, ``successions``, ``guesses``: shape ``(n_shoes,)``, uint16.
    ``position_counts``: ``(n, n)`` int64, ``[v, j]`` = shoes with input card v at output j.
    """

    rising: npt.NDArray[np.uint16]
    turning: npt.NDArray[np.uint16]
    successions: npt.NDArray[np.uint16]
    guesses: npt.NDArray[np.uint16]
    position_counts: npt.NDArray[np.int64]


def _perm_array(perm: object) -> np.ndarray:
    if not isinstance(perm, np.ndarray):
        raise TypeError(f"perm must be a numpy array, got {type(perm).__name__}")
    if perm.dtype != np.uint16:
        raise TypeError(f"perm must have dtype uint16 (input positions), got {perm.dtype}")
    if perm.ndim != 2 or not 1 <= perm.shape[1] <= MAX_MODEL_CARDS:
        raise ValueError(
            f"perm must be (n_shoes, n_cards) with 1..{MAX_MODEL_CARDS} cards, got {perm.shape}"
        )
    if not perm.flags.c_contiguous:
        raise ValueError("perm must be C-contiguous; pass np.ascontiguousarray(perm)")
    return perm


def check_permutations(perm: np.ndarray) -> tuple[int, int, int] | None:
    """None when every row of ``perm`` ``(n_shoes, n)`` uint16 is a permutation of 0..n-1;
    else ``(shoe, column, value)`` of the first value out of range or seen twice."""
    arr = _perm_array(perm)
    shoe, col, val = ffi.new("size_t *"), ffi.new("size_t *"), ffi.new("uint32_t *")
    st = lib.fl_check_permutations(
        ffi.from_buffer("uint16_t[]", arr), arr.shape[0], arr.shape[1], shoe, col, val
    )
    if st == lib.FL_ERR_CARD:
        return int(shoe[0]), int(col[0]), int(val[0])
    check(st, "check_permutations")
    return None


def battery_pass(perm: np.ndarray) -> ShoeStatistics:
    """Rising sequences, turning points, successions, correct next-card guesses and the
    card-by-position table of a batch of shoes, in one C pass.

    ``perm``: ``(n_shoes, n)`` uint16, row ``s`` column ``j`` = the input position of the card
    at output position j of shoe s.  Definitions and their null distributions: native/src/
    stats.c.  Raises ValueError naming the first shoe that is not a permutation.
    """
    arr = _perm_array(perm)
    n_shoes, n = arr.shape
    out = [np.empty(n_shoes, dtype=np.uint16) for _ in range(4)]
    counts = np.zeros((n, n), dtype=np.int64)
    bad = ffi.new("size_t *")
    st = lib.fl_battery_pass(
        ffi.from_buffer("uint16_t[]", arr),
        n_shoes,
        n,
        *[ffi.from_buffer("uint16_t[]", o) for o in out],
        ffi.from_buffer("int64_t[]", counts),
        bad,
    )
    if st == lib.FL_ERR_CARD:
        raise ValueError(f"shoe {int(bad[0])} is not a permutation of 0..{n - 1}")
    check(st, "battery_pass")
    return ShoeStatistics(out[0], out[1], out[2], out[3], counts)


def adjacent_rank_pairs(codes: np.ndarray) -> npt.NDArray[np.int64]:
    """``(13, 13)`` int64 counts of (rank of a card, rank of the card after it) over a
    ``(n_shoes, n)`` uint8 batch of card codes."""
    if not isinstance(codes, np.ndarray) or codes.dtype != np.uint8 or codes.ndim != 2:
        raise TypeError("codes must be a 2-D uint8 numpy array of card codes")
    if not codes.flags.c_contiguous:
        raise ValueError("codes must be C-contiguous; pass np.ascontiguousarray(codes)")
    counts = np.zeros((13, 13), dtype=np.int64)
    st = lib.fl_adjacent_rank_pairs(
        ffi.from_buffer("uint8_t[]", codes),
        codes.shape[0],
        codes.shape[1],
        ffi.from_buffer("int64_t[]", counts),
    )
    if st == lib.FL_ERR_CARD:
        raise ValueError("codes holds a value above 51: not a card code")
    check(st, "adjacent_rank_pairs")
    return counts


def successive_shoe_rho(perm: np.ndarray) -> npt.NDArray[np.float64]:
    """Spearman's rho between the cards' positions in each shoe and the next:
    ``(n_shoes - 1,)`` float64 (mean 0, variance 1/(n-1) for independent uniform shoes)."""
    arr = _perm_array(perm)
    n_shoes, n = arr.shape
    if n < 2:
        raise ValueError("perm needs at least 2 cards per shoe")
    rho = np.zeros(max(n_shoes - 1, 0), dtype=np.float64)
    st = lib.fl_successive_shoe_rho(
        ffi.from_buffer("uint16_t[]", arr), n_shoes, n, ffi.from_buffer("double[]", rho)
    )
    if st == lib.FL_ERR_CARD:
        raise ValueError("perm holds a row that is not a permutation")
    check(st, "successive_shoe_rho")
    return rho
