"""The C core's seed search (native/src/seedsearch.c) against the library of generators
(rig/rng/generators.py) and the Python shuffle of the declared shuffler
(rig/security/shuffler.py): every generator's words, and every generator, scaling and
direction's shoe, bit for bit; the search's matches and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab.native import NO_CARD
from feltlab.native import seedsearch as ss
from feltlab.rig.rng.generators import (
    chacha_words,
    glibc_seed,
    java_seed,
    lcg_states,
    mt19937_outputs,
    xorshift128p_outputs,
)
from feltlab.rig.security.shuffler import Declaration, library_shoe

SEEDS = (0, 1, 42, (1 << 32) + 5, (1 << 63) + 7)


def _library(generator: str, seed: int, n: int) -> np.ndarray:
    """The library's words, written out here from generators.py's own functions."""
    if generator == "glibc-rand":
        return lcg_states(1103515245, 12345, 31, glibc_seed(seed), n)
    if generator == "msvc-rand":
        return (lcg_states(214013, 2531011, 32, seed & 0xFFFFFFFF, n) >> np.uint64(16)) & np.uint64(
            0x7FFF
        )
    if generator == "java-random":
        return lcg_states(0x5DEECE66D, 0xB, 48, java_seed(seed), n) >> np.uint64(16)
    if generator == "mt19937":
        return mt19937_outputs(seed, n)
    if generator == "xorshift128+":
        return xorshift128p_outputs(seed, n)
    return chacha_words(seed, n)


@pytest.mark.parametrize("generator", list(ss.GENERATORS))
def test_words_are_the_librarys(generator: str) -> None:
    for seed in SEEDS:
        # 1,300 words: MT19937 twice past its 624-word twist, ChaCha20 over 80 blocks
        assert np.array_equal(ss.words(generator, seed, 1300), _library(generator, seed, 1300))


def test_words_match_published_values() -> None:
    # generators.py's sources: glibc from seed 1, MSVC srand(1), new Random(42).nextInt(),
    # MT19937 init_genrand(5489)'s first output (the reference implementation's)
    assert ss.words("glibc-rand", 1, 1)[0] == 1103527590
    assert ss.words("msvc-rand", 1, 4).tolist() == [41, 18467, 6334, 26500]
    assert ss.words("java-random", 42, 1)[0] == (-1170105035) & 0xFFFFFFFF
    assert ss.words("mt19937", 5489, 1)[0] == 3499211612


@pytest.mark.parametrize("generator", list(ss.GENERATORS))
def test_shuffle_is_the_python_shuffle_bit_for_bit(generator: str) -> None:
    for scaling in ss.SCALINGS:
        for direction in ss.DIRECTIONS:
            for decks, seed in ((6, 123456789), (1, 7), (8, (1 << 40) + 3)):
                decl = Declaration(generator, 64, direction=direction, scaling=scaling, decks=decks)
                want = library_shoe(decl, seed)
                got = ss.shuffle(generator, scaling, direction, seed, 52 * decks)
                assert np.array_equal(got, want), (scaling, direction, decks)
                assert sorted(got.tolist()) == list(range(52 * decks))


def test_rejection_redraws_the_top_of_the_range() -> None:
    # MSVC's 15-bit words against r = 312: 2^15 mod 312 = 8 values at the top are redrawn, so
    # some seed's first draw is redrawn and rejection then differs from modulo
    differs = [
        s
        for s in range(3000)
        if not np.array_equal(
            ss.shuffle("msvc-rand", "rejection", "down", s, 312),
            ss.shuffle("msvc-rand", "modulo", "down", s, 312),
        )
    ]
    assert differs
    s = differs[0]
    words = ss.words("msvc-rand", s, 400)
    limits = [(1 << 15) - (1 << 15) % r for r in range(312, 1, -1)]
    assert any(int(w) >= lim for w, lim in zip(words, limits, strict=False))


@pytest.mark.parametrize("generator", list(ss.GENERATORS))
def test_search_finds_exactly_the_seed(generator: str) -> None:
    for direction in ss.DIRECTIONS:
        seed = 5000 + 17
        shoe = (ss.shuffle(generator, "modulo", direction, seed, 312) % 52).astype(np.uint8)
        observed = np.full(312, NO_CARD, np.uint8)
        known = [311, 310, 309, 308, 307, 306] if direction == "down" else list(range(6))
        observed[known] = shoe[known]
        found, count, steps = ss.search(generator, "modulo", direction, observed, 4096, 8192)
        assert found == [seed] and count == 1
        # each of the 4,096 candidates replays at least one step and at most six
        assert 4096 <= steps <= 6 * 4096


def test_search_of_first_dealt_cards_replays_the_whole_shuffle() -> None:
    seed = 300
    shoe = (ss.shuffle("java-random", "multiply-shift", "down", seed, 104) % 52).astype(np.uint8)
    observed = np.full(104, NO_CARD, np.uint8)
    observed[:8] = shoe[:8]  # a down shuffle settles the first dealt cards last
    found, count, steps = ss.search("java-random", "multiply-shift", "down", observed, 0, 512)
    assert found == [seed] and count == 1
    assert steps > 512 * 90  # most candidates run 96 of the 103 steps before a first card


def test_search_refuses_bad_input() -> None:
    observed = np.full(312, NO_CARD, np.uint8)
    with pytest.raises(ValueError, match="no known card"):
        ss.search("mt19937", "modulo", "down", observed, 0, 10)
    observed[0] = 52
    with pytest.raises(ValueError, match=r"card code is 0\.\.51"):
        ss.search("mt19937", "modulo", "down", observed, 0, 10)
    observed[0] = 3
    with pytest.raises(ValueError, match="unknown generator"):
        ss.search("rand48", "modulo", "down", observed, 0, 10)
    with pytest.raises(ValueError, match="whole number of 52-card decks"):
        ss.shuffle("mt19937", "modulo", "down", 1, 100)
    with pytest.raises(ValueError, match="hi must be in"):
        ss.search("mt19937", "modulo", "down", observed, 10, 5)


def test_equivalent_seeds_deal_the_same_shoe() -> None:
    # the seed bits a generator drops (native/seedsearch.py SEED_BITS): MSVC's words never
    # see state bit 31, MT19937 keeps the seed mod 2^32, glibc mod 2^31 (0 taken as 1)
    def same(g: str, a: int, b: int) -> bool:
        return bool(
            np.array_equal(
                ss.shuffle(g, "modulo", "down", a, 52), ss.shuffle(g, "modulo", "down", b, 52)
            )
        )

    assert same("msvc-rand", 12345, 12345 + (1 << 31))
    assert same("mt19937", 12345, 12345 + (1 << 32))
    assert same("glibc-rand", 12345, 12345 + (1 << 31)) and same("glibc-rand", 0, 1)
    assert not same("java-random", 12345, 12345 + (1 << 47))
    assert not same("mt19937", 12345, 12345 + (1 << 31))
    assert not same("xorshift128+", 12345, 12345 + (1 << 63))
    assert not same("chacha20", 12345, 12345 + (1 << 63))
    assert ss.SEED_BITS["msvc-rand"] == 31 and ss.SEED_BITS["mt19937"] == 32
