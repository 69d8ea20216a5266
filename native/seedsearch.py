"""Validating wrappers over the seed search of a seeded shuffler (``native/src/seedsearch.c``,
issue 40, docs/security.md).

Generators by name (:data:`GENERATORS`; each bit for bit the one of the library of flawed
generators, ``feltlab.rig.rng.generators``), the scaling of a draw to a range
(:data:`SCALINGS`) and the Fisher-Yates direction (:data:`DIRECTIONS`).  The shuffle is of
the card ids ``0..n-1`` in factory order, dealt from index 0.  :func:`search` releases the
GIL (cffi does around every call), so threads over disjoint ranges use every core.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import NO_CARD, as_int, check

GENERATORS: dict[str, int] = {
    "glibc-rand": int(lib.FL_SS_GLIBC),
    "msvc-rand": int(lib.FL_SS_MSVC),
    "java-random": int(lib.FL_SS_JAVA),
    "mt19937": int(lib.FL_SS_MT19937),
    "xorshift128+": int(lib.FL_SS_XORSHIFT128P),
    "chacha20": int(lib.FL_SS_CHACHA20),
}
"""The searchable generators, by their library name, to the C core's number."""

WORD_BITS: dict[str, int] = {
    "glibc-rand": 31,
    "msvc-rand": 15,
    "java-random": 32,
    "mt19937": 32,
    "xorshift128+": 64,
    "chacha20": 32,
}
"""The bits of each generator's word (the draw before scaling)."""

SEED_BITS: dict[str, int] = {
    "glibc-rand": 31,
    "msvc-rand": 31,
    "java-random": 48,
    "mt19937": 32,
    "xorshift128+": 64,
    "chacha20": 256,
}
"""The bits of a seed that change a generator's words (glibc: the seed mod 2^32, 0 taken as
1, mod 2^31; MSVC: mod 2^32, and its words, state bits 16..30, never see state bit 31 (an
LCG modulo 2^k carries only upwards), so seeds s and s + 2^31 deal the same shoes; MT19937:
mod 2^32; Java: mod 2^48): a wider seed repeats a narrower one, and the search reports the
smallest seed that deals the shoe."""

SCALINGS: dict[str, int] = {
    "modulo": int(lib.FL_SS_MODULO),
    "multiply-shift": int(lib.FL_SS_MULSHIFT),
    "rejection": int(lib.FL_SS_REJECTION),
}
"""How a w-bit word x becomes a draw in 0..r-1: ``x mod r``; ``(x r) >> w``; x redrawn while
``x >= 2^w - (2^w mod r)``, then ``x mod r``."""

DIRECTIONS: dict[str, int] = {"down": int(lib.FL_SS_DOWN), "up": int(lib.FL_SS_UP)}
"""Fisher-Yates: ``down`` (i = n-1..1, j = draw(i+1); Durstenfeld, Python's shuffle) or
``up`` (i = 0..n-2, j = i + draw(n-i))."""

MAX_SEED = (1 << 64) - 1
MAX_WORDS = 1 << 24


def _enum(table: dict[str, int], value: str, what: str) -> int:
    try:
        return table[value]
    except KeyError:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(table)}") from None


def _cards(n: int) -> int:
    n = as_int(n, "n_cards", 52, 52 * int(lib.FL_MAX_DECKS))
    if n % 52:
        raise ValueError(f"n_cards must be a whole number of 52-card decks, got {n}")
    return n


def words(generator: str, seed: int, n: int) -> npt.NDArray[np.uint64]:
    """The first ``n`` words (``(n,)`` uint64, before scaling) of ``generator`` seeded by
    ``seed`` (0..2^64-1).  ValueError for an unknown generator or n outside 0..2^24."""
    g = _enum(GENERATORS, generator, "generator")
    out = np.zeros(as_int(n, "n", 0, MAX_WORDS), np.uint64)
    st = lib.fl_ss_words(
        g, as_int(seed, "seed", 0, MAX_SEED), ffi.from_buffer("uint64_t[]", out), out.size
    )
    check(st, "seed search words")
    return out


def shuffle(
    generator: str, scaling: str, direction: str, seed: int, n_cards: int
) -> npt.NDArray[np.uint16]:
    """The shoe (``(n_cards,)`` uint16 card ids, dealt order) of the declared shuffle of the
    factory order seeded by ``seed``.  ValueError for an unknown name or a bad size."""
    n = _cards(n_cards)
    out = np.zeros(n, np.uint16)
    st = lib.fl_ss_shuffle(
        _enum(GENERATORS, generator, "generator"),
        _enum(SCALINGS, scaling, "scaling"),
        _enum(DIRECTIONS, direction, "direction"),
        as_int(seed, "seed", 0, MAX_SEED),
        n,
        ffi.from_buffer("uint16_t[]", out),
    )
    check(st, "seed search shuffle")
    return out


def search(
    generator: str,
    scaling: str,
    direction: str,
    observed: npt.NDArray[np.uint8],
    lo: int,
    hi: int,
    *,
    max_found: int = 16,
) -> tuple[list[int], int, int]:
    """The seeds of ``lo..hi-1`` whose shuffle deals every known card of ``observed``
    (``(n_cards,)`` uint8 card codes in dealt order, :data:`NO_CARD` where unknown):
    ``(the first max_found seeds, how many matched, shuffle steps replayed)``.  ValueError
    for no known card, a code over 51 or a bad range."""
    obs = np.ascontiguousarray(observed, dtype=np.uint8)
    if obs.ndim != 1:
        raise ValueError(f"observed must be one shoe (n_cards,), got shape {obs.shape}")
    n = _cards(int(obs.size))
    known = obs[obs != NO_CARD]
    if known.size == 0:
        raise ValueError("observed has no known card: give at least one card code 0..51")
    if int(known.max()) > 51:
        raise ValueError(
            f"observed holds {int(known.max())}: a card code is 0..51 ({NO_CARD} unknown)"
        )
    lo = as_int(lo, "lo", 0, MAX_SEED)
    hi = as_int(hi, "hi", lo, MAX_SEED)
    found = np.zeros(max(1, as_int(max_found, "max_found", 0, 1 << 20)), np.uint64)
    n_found = ffi.new("size_t *")
    steps = ffi.new("uint64_t *")
    st = lib.fl_ss_search(
        _enum(GENERATORS, generator, "generator"),
        _enum(SCALINGS, scaling, "scaling"),
        _enum(DIRECTIONS, direction, "direction"),
        n,
        ffi.from_buffer("uint8_t[]", obs),
        lo,
        hi,
        ffi.from_buffer("uint64_t[]", found),
        max_found,
        n_found,
        steps,
    )
    check(st, "seed search")
    k = int(n_found[0])
    return [int(s) for s in found[: min(k, max_found)]], k, int(steps[0])


__all__ = [
    "DIRECTIONS",
    "GENERATORS",
    "NO_CARD",
    "SCALINGS",
    "SEED_BITS",
    "WORD_BITS",
    "search",
    "shuffle",
    "words",
]
