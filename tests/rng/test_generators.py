"""The library of flawed generators against their definitions: the published first outputs,
a word-for-word scalar recurrence, and each model's law on its bits."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab import native
from feltlab.rig.errors import ModelError
from feltlab.rig.rng.generators import (
    GENERATORS,
    glibc_seed,
    java_seed,
    lcg_states,
    mt19937_outputs,
    parse_generator,
    splitmix64,
    xorshift128p_outputs,
)

M64 = (1 << 64) - 1


def bits(g: str, m: int, n: int, seed: int = 1) -> np.ndarray:
    """``(m, n)`` 0/1 array of generator ``g``'s sequences."""
    return np.unpackbits(parse_generator(g).sequences(m, n, seed), axis=1)[:, :n]


def stream_bits(values: list[int], width: int) -> str:
    return "".join(format(v, f"0{width}b") for v in values)


def test_glibc_type0_from_seed_1() -> None:
    # x_1 = 1103515245 * 1 + 12345; the next by hand from the recurrence mod 2^31
    x = [1]
    for _ in range(5):
        x.append((1103515245 * x[-1] + 12345) % (1 << 31))
    assert x[1] == 1103527590
    assert lcg_states(1103515245, 12345, 31, glibc_seed(1), 5).tolist() == x[1:]
    got = "".join(map(str, bits("glibc-rand", 1, 5 * 31)[0]))
    assert got == stream_bits(x[1:], 31)
    assert glibc_seed(0) == 1  # srand(0) seeds as srand(1)


def test_msvc_rand_published_outputs() -> None:
    # srand(1): the classic first outputs of the Microsoft C runtime's rand()
    s = lcg_states(214013, 2531011, 32, 1, 10)
    out = ((s >> np.uint64(16)) & np.uint64(0x7FFF)).tolist()
    assert out == [41, 18467, 6334, 26500, 19169, 15724, 11478, 29358, 26962, 24464]
    got = "".join(map(str, bits("msvc-rand", 1, 150)[0]))
    assert got == stream_bits(out, 15)
    low = "".join(map(str, bits("msvc-rand-low", 1, 80)[0]))
    assert low == stream_bits([v & 0xFF for v in out], 8)
    top = "".join(map(str, bits("msvc-rand-top", 1, 80)[0]))
    assert top == stream_bits([v >> 7 for v in out], 8)


def test_java_util_random_42() -> None:
    s = lcg_states(0x5DEECE66D, 0xB, 48, java_seed(42), 2)
    ints = [int(v >> np.uint64(16)) for v in s]
    signed = [v - (1 << 32) if v >= 1 << 31 else v for v in ints]
    assert signed[0] == -1170105035  # new java.util.Random(42).nextInt()
    assert signed[1] == 234785527
    got = "".join(map(str, bits("java-random", 1, 64, seed=42)[0]))
    assert got == stream_bits(ints, 32)
    top = "".join(map(str, bits("java-random-top", 1, 16, seed=42)[0]))
    assert top == stream_bits([int(v >> np.uint64(40)) for v in s], 8)


def test_lcg_lanes_continue_one_stream() -> None:
    # 2^14 lanes started by jump-ahead give the same states as one step at a time
    n = 40_000
    fast = lcg_states(1103515245, 12345, 31, 7, n)
    x, ref = 7, []
    for _ in range(n):
        x = (1103515245 * x + 12345) % (1 << 31)
        ref.append(x)
    assert fast.tolist() == ref


def test_glibc_low_bits_law() -> None:
    b = bits("glibc-rand-low:bits=1", 1, 4096)[0]
    assert np.all(b[1:] != b[:-1])  # bit 0 alternates
    b8 = bits("glibc-rand-low", 1, 3 * 2048)[0]
    assert np.array_equal(b8[:2048], b8[2048:4096])  # the low byte repeats every 256 outputs


def test_mt19937_reference_outputs() -> None:
    out = mt19937_outputs(5489, 10_000)
    assert int(out[0]) == 3499211612  # init_genrand(5489), mt19937ar
    assert int(out[-1]) == 4123659995  # C++ [rand.predef]: the 10000th output of std::mt19937


def test_xorshift128plus_lanes_match_the_published_recurrence() -> None:
    a, st = splitmix64(11)
    b, _ = splitmix64(st)
    s0, s1, ref = a, b, []
    for _ in range(20_000):
        x, y = s0, s1
        ref.append((x + y) & M64)
        x ^= (x << 23) & M64
        s0, s1 = y, x ^ y ^ (x >> 18) ^ (y >> 5)
    assert xorshift128p_outputs(11, 20_000).tolist() == ref
    low = bits("xorshift128+-low", 1, 20_000, seed=11)[0]
    assert low.tolist() == [v & 1 for v in ref]


def test_splitmix64_reference() -> None:
    # Vigna's splitmix64.c from state 0: the first output
    assert splitmix64(0)[0] == 0xE220A8397B1DCDAF


def test_chacha20_is_the_core_keystream() -> None:
    got = parse_generator("chacha20").sequences(2, 64, 9)
    ks = native.ChaCha20(9).keystream(16)
    assert got.tobytes() == ks


def test_stuck_bit_float32_and_modulo_laws() -> None:
    words = bits("stuck-bit:bit=3", 4, 3200).reshape(-1, 32)
    assert not words[:, 31 - 3].any() and words[:, 31 - 4].any()
    ones = bits("stuck-bit:bit=0,value=1", 2, 3200).reshape(-1, 32)
    assert ones[:, 31].all()
    f = bits("float32", 4, 3200).reshape(-1, 32)
    assert not f[:, 24:].any() and f[:, :24].mean() == pytest.approx(0.5, abs=0.03)
    mod = parse_generator("modulo:r=6").sequences(1, 3 * 2000, 1)
    vals = np.packbits(np.unpackbits(mod[0]).reshape(-1, 3), axis=1, bitorder="big") >> 5
    assert vals.max() == 5 and set(np.unique(vals)) == {0, 1, 2, 3, 4, 5}


def test_biased_bit_frequency() -> None:
    # P(1) = round((0.5 + 0.01) * 65536) / 65536; 2e6 bits: sd of the mean 3.5e-4
    b = bits("biased:ppm=10000", 2, 1_000_000)
    p = round(0.51 * 65536) / 65536
    assert abs(b.mean() - p) < 5 * np.sqrt(p * (1 - p) / b.size)


def test_short_period_and_reused_key() -> None:
    b = bits("short-period:bits=1000", 1, 5000)[0]
    assert np.array_equal(b[:1000], b[1000:2000]) and np.array_equal(b[:1000], b[4000:])
    r = parse_generator("reused-key").sequences(3, 1001, 4)
    assert np.array_equal(r[0], r[1]) and np.array_equal(r[0], r[2])
    assert r[0, -1] & 0x7F == 0  # bits past n are zero
    r2 = parse_generator("reused-key:every=2").sequences(4, 256, 4)
    assert np.array_equal(r2[0], r2[2]) and not np.array_equal(r2[0], r2[1])


def test_seeds_reproduce_and_differ() -> None:
    for name in GENERATORS:
        g = parse_generator(name)
        a = g.sequences(2, 640, 5)
        assert np.array_equal(a, g.sequences(2, 640, 5)), name
        assert a.shape == (2, 80)
        if name not in ("short-period",):
            assert not np.array_equal(a, g.sequences(2, 640, 6)), name


def test_names_and_parameters_are_checked() -> None:
    assert parse_generator("stuck-bit:bit=5").name == "stuck-bit:bit=5"
    assert parse_generator("glibc-rand-low").name == "glibc-rand-low"
    with pytest.raises(ModelError, match="unknown generator 'lcg'; choose one of"):
        parse_generator("lcg")
    with pytest.raises(ModelError, match=r"bit must be in 0\.\.31"):
        parse_generator("stuck-bit:bit=32")
    with pytest.raises(ModelError, match="takes r=N"):
        parse_generator("modulo:q=3")
    with pytest.raises(ModelError, match="power of two"):
        parse_generator("modulo:r=1024")
    assert not GENERATORS["mt19937"].catchable and GENERATORS["chacha20"].fair
