"""Validating wrappers over the counting kernels of NIST SP 800-22 rev 1a
(``native/src/sp800_22.c``).

Every function takes ``data``: a ``(m, nbytes)`` C-contiguous uint8 array, one sequence a row,
bits packed most significant bit first (``numpy.packbits`` order), and ``n``: the bits of each
row to test (``1 <= n <= 8 * nbytes``).  The p-values are computed from these counts in
:mod:`feltlab.rig.rng.sp800_22`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import check

RUN_CAP: int = int(lib.FL_STS_RUN_CAP)
"""Longest runs above this are counted at it (:func:`longest_run`)."""


def packed_rows(data: object, n: int) -> np.ndarray:
    """``data`` checked: a C-contiguous 2-D uint8 array with at least ``n`` bits a row.
    TypeError / ValueError naming the problem and the fix."""
    if not isinstance(data, np.ndarray):
        raise TypeError(f"sequences must be a numpy array, got {type(data).__name__}")
    if data.dtype != np.uint8 or data.ndim != 2:
        raise TypeError(
            f"sequences must be a 2-D uint8 array (m, nbytes) packed MSB first "
            f"(numpy.packbits), got dtype {data.dtype} and shape {data.shape}"
        )
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n_bits must be a positive integer, got {n!r}")
    if int(n) > 8 * data.shape[1]:
        raise ValueError(
            f"n_bits={n} needs {(int(n) + 7) // 8} bytes a row but sequences has "
            f"{data.shape[1]}; pass fewer bits or longer rows"
        )
    if not data.flags.c_contiguous:
        raise ValueError("sequences must be C-contiguous; pass np.ascontiguousarray(sequences)")
    return data


def _buf(data: np.ndarray) -> Any:
    return ffi.from_buffer("uint8_t[]", data)


def frequency(data: np.ndarray, n: int) -> npt.NDArray[np.uint64]:
    """The ones of each row: ``(m,)`` uint64 (SP 800-22 2.1)."""
    d = packed_rows(data, n)
    out = np.zeros(d.shape[0], dtype=np.uint64)
    st = lib.fl_sts_frequency(
        _buf(d), d.shape[0], d.shape[1], n, ffi.from_buffer("uint64_t[]", out)
    )
    check(st, "sp800_22 frequency")
    return out


def block_frequency(data: np.ndarray, n: int, block: int) -> npt.NDArray[np.float64]:
    """chi^2 = 4 M sum (pi_i - 1/2)^2 over the n // M blocks of M = ``block`` bits:
    ``(m,)`` float64 (2.2)."""
    d = packed_rows(data, n)
    out = np.zeros(d.shape[0], dtype=np.float64)
    st = lib.fl_sts_block_frequency(
        _buf(d), d.shape[0], d.shape[1], n, block, ffi.from_buffer("double[]", out)
    )
    check(st, "sp800_22 block frequency")
    return out


def cusum(data: np.ndarray, n: int) -> npt.NDArray[np.int64]:
    """``(m, 3)`` int64: S_n, max_k S_k and min_k S_k of the partial sums of 2 eps - 1,
    k = 0..n (2.13)."""
    d = packed_rows(data, n)
    out = np.zeros((d.shape[0], 3), dtype=np.int64)
    st = lib.fl_sts_cusum(_buf(d), d.shape[0], d.shape[1], n, ffi.from_buffer("int64_t[]", out))
    check(st, "sp800_22 cumulative sums")
    return out


def runs(data: np.ndarray, n: int) -> npt.NDArray[np.uint64]:
    """``(m, 2)`` uint64: the ones and V_n, the number of runs (2.3)."""
    d = packed_rows(data, n)
    out = np.zeros((d.shape[0], 2), dtype=np.uint64)
    st = lib.fl_sts_runs(_buf(d), d.shape[0], d.shape[1], n, ffi.from_buffer("uint64_t[]", out))
    check(st, "sp800_22 runs")
    return out


def longest_run(data: np.ndarray, n: int, block: int) -> npt.NDArray[np.uint32]:
    """``(m, RUN_CAP + 1)`` uint32: blocks of ``block`` bits (a multiple of 8) whose longest
    run of ones is v, v capped at RUN_CAP (2.4)."""
    d = packed_rows(data, n)
    out = np.zeros((d.shape[0], RUN_CAP + 1), dtype=np.uint32)
    st = lib.fl_sts_longest_run(
        _buf(d), d.shape[0], d.shape[1], n, block, ffi.from_buffer("uint32_t[]", out)
    )
    check(st, "sp800_22 longest run")
    return out


def rank(data: np.ndarray, n: int) -> npt.NDArray[np.uint32]:
    """``(m, 3)`` uint32: 32x32 matrices over GF(2) of rank 32, 31 and lower (2.5)."""
    d = packed_rows(data, n)
    out = np.zeros((d.shape[0], 3), dtype=np.uint32)
    st = lib.fl_sts_rank(_buf(d), d.shape[0], d.shape[1], n, ffi.from_buffer("uint32_t[]", out))
    check(st, "sp800_22 rank")
    return out


def template_counts(
    data: np.ndarray, n: int, templates: npt.NDArray[np.int64], m: int, blocks: int
) -> npt.NDArray[np.uint32]:
    """``(m_seq, n_templates, blocks)`` uint32: W_j, the non-overlapping matches of each
    ``m``-bit template (given as integers, first bit most significant) in each of ``blocks``
    blocks of n // blocks bits (2.7)."""
    d = packed_rows(data, n)
    if not 2 <= m <= 21:
        raise ValueError(f"template length m must be in 2..21, got {m}")
    index = np.full(1 << m, -1, dtype=np.int32)
    index[np.asarray(templates, dtype=np.int64)] = np.arange(len(templates), dtype=np.int32)
    out = np.zeros((d.shape[0], len(templates), blocks), dtype=np.uint32)
    st = lib.fl_sts_template_counts(
        _buf(d),
        d.shape[0],
        d.shape[1],
        n,
        m,
        ffi.from_buffer("int32_t[]", index),
        len(templates),
        blocks,
        ffi.from_buffer("uint32_t[]", out),
    )
    check(st, "sp800_22 non-overlapping template")
    return out


def overlapping(data: np.ndarray, n: int, m: int, block: int, k: int) -> npt.NDArray[np.uint32]:
    """``(m_seq, k + 1)`` uint32: blocks of ``block`` bits in which the ``m`` ones occur
    (overlapping) 0, 1, ..., k or more times (2.8)."""
    d = packed_rows(data, n)
    out = np.zeros((d.shape[0], k + 1), dtype=np.uint32)
    st = lib.fl_sts_overlapping(
        _buf(d), d.shape[0], d.shape[1], n, m, block, k, ffi.from_buffer("uint32_t[]", out)
    )
    check(st, "sp800_22 overlapping template")
    return out


def universal(data: np.ndarray, n: int, L: int, Q: int, K: int) -> npt.NDArray[np.float64]:
    """f_n, the mean log2 distance to the last occurrence of each of the ``K`` L-bit test
    blocks after ``Q`` initialisation blocks: ``(m,)`` float64 (2.9)."""
    d = packed_rows(data, n)
    if not (1 <= K <= n and 1 <= Q <= n):
        raise ValueError(f"universal: Q = {Q} and K = {K} must be in 1..n = {n}")
    out = np.zeros(d.shape[0], dtype=np.float64)
    rows = max(1, (1 << 22) // K)  # the distances of a few rows at a time
    for start in range(0, d.shape[0], rows):
        part = d[start : start + rows]
        dist = np.zeros((part.shape[0], K), dtype=np.uint32)
        st = lib.fl_sts_universal(
            _buf(part),
            part.shape[0],
            part.shape[1],
            n,
            L,
            Q,
            K,
            ffi.from_buffer("uint32_t[]", dist),
        )
        check(st, "sp800_22 universal")
        out[start : start + rows] = np.log2(dist).sum(axis=1) / K
    return out


def pattern_sums(data: np.ndarray, n: int, w: int) -> npt.NDArray[np.float64]:
    """``(m, 3, 2)`` float64: over the n cyclic windows of w, w - 1 and w - 2 bits, the sum of
    the squared counts and sum c ln(c / n) (2.11, 2.12; a width below 1 gives n^2 and 0)."""
    d = packed_rows(data, n)
    if not 1 <= w <= 24:
        raise ValueError(f"pattern width must be in 1..24, got {w}")
    out = np.zeros((d.shape[0], 3, 2), dtype=np.float64)
    rows = max(1, (1 << 22) >> w)
    for start in range(0, d.shape[0], rows):
        part = d[start : start + rows]
        counts = np.zeros((part.shape[0], 1 << w), dtype=np.uint32)
        st = lib.fl_sts_pattern_counts(
            _buf(part), part.shape[0], part.shape[1], n, w, ffi.from_buffer("uint32_t[]", counts)
        )
        check(st, "sp800_22 serial / approximate entropy")
        c = counts.astype(np.float64)
        for level in range(3):
            o = out[start : start + rows, level]
            if w - level < 1:
                o[:, 0] = float(n) * n
                continue
            o[:, 0] = np.einsum("ij,ij->i", c, c)
            with np.errstate(divide="ignore", invalid="ignore"):
                o[:, 1] = np.where(c > 0, c * np.log(c / n), 0.0).sum(axis=1)
            c = c.reshape(c.shape[0], -1, 2).sum(axis=2)
    return out


def excursions(
    data: np.ndarray, n: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
    """The random walk's cycles J ``(m,)`` uint64; nu ``(m, 8, 6)`` uint32, cycles visiting
    state -4..-1, 1..4 exactly 0..4 or 5+ times; xi ``(m, 18)`` uint64, visits to -9..-1,
    1..9 (2.14, 2.15)."""
    d = packed_rows(data, n)
    m = d.shape[0]
    cycles = np.zeros(m, dtype=np.uint64)
    nu = np.zeros((m, 8, 6), dtype=np.uint32)
    xi = np.zeros((m, 18), dtype=np.uint64)
    st = lib.fl_sts_excursions(
        _buf(d),
        m,
        d.shape[1],
        n,
        ffi.from_buffer("uint64_t[]", cycles),
        ffi.from_buffer("uint32_t[]", nu),
        ffi.from_buffer("uint64_t[]", xi),
    )
    check(st, "sp800_22 random excursions")
    return cycles, nu, xi


def linear_complexity(data: np.ndarray, n: int, block: int) -> npt.NDArray[np.uint32]:
    """``(m, block + 1)`` uint32: blocks of ``block`` bits of linear complexity L
    (Berlekamp-Massey over GF(2)) (2.10)."""
    d = packed_rows(data, n)
    out = np.zeros((d.shape[0], block + 1), dtype=np.uint32)
    st = lib.fl_sts_linear_complexity(
        _buf(d), d.shape[0], d.shape[1], n, block, ffi.from_buffer("uint32_t[]", out)
    )
    check(st, "sp800_22 linear complexity")
    return out
