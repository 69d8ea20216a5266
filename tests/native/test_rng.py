"""Generators: xoshiro256** against an independent model of the reference code, ChaCha20
against the RFC 8439 test vectors, state save/restore and independent streams."""

from collections.abc import Sequence

import pytest

from feltlab import native

M64 = (1 << 64) - 1


# ---------------------------------------------------------------- xoshiro256**


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & M64


class RefXoshiro:
    """Pure-Python transcription of https://prng.di.unimi.it/xoshiro256starstar.c."""

    JUMP = (0x180EC6D33CFD0ABA, 0xD5A61266F0C9392C, 0xA9582618E03FC9AA, 0x39ABDC4529B1661C)
    LONG_JUMP = (0x76E15D3EFEFDCBBF, 0xC5004E441C522FB3, 0x77710069854EE241, 0x39109BB02ACBE635)

    def __init__(self, s: Sequence[int]) -> None:
        self.s = list(s)

    def next(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def _jump(self, poly: Sequence[int]) -> None:
        t = [0, 0, 0, 0]
        for word in poly:
            for b in range(64):
                if word & (1 << b):
                    t = [t[i] ^ self.s[i] for i in range(4)]
                self.next()
        self.s = t

    def jump(self) -> None:
        self._jump(self.JUMP)

    def long_jump(self) -> None:
        self._jump(self.LONG_JUMP)


def splitmix64_words(seed: int, n: int = 4) -> list[int]:
    out, x = [], seed
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


def test_xoshiro_first_output_hand_checked() -> None:
    # state {1, 2, 3, 4}: rotl(2 * 5, 7) * 9 = 1280 * 9 = 11520
    g = native.Xoshiro256StarStar.from_words(1, 2, 3, 4)
    assert int(g.random_raw(1)[0]) == 11520


@pytest.mark.parametrize("seed", [0, 1, 42, M64])
def test_xoshiro_matches_reference_model(seed: int) -> None:
    g = native.Xoshiro256StarStar(seed)
    assert g.getstate()["s"] == splitmix64_words(seed)
    ref = RefXoshiro(splitmix64_words(seed))
    assert [int(v) for v in g.random_raw(1000)] == [ref.next() for _ in range(1000)]


def test_xoshiro_jump_and_long_jump_match_reference_model() -> None:
    g = native.Xoshiro256StarStar(7)
    ref = RefXoshiro(splitmix64_words(7))
    g.random_raw(3)
    for _ in range(3):
        ref.next()
    g.jump()
    ref.jump()
    assert g.getstate()["s"] == ref.s
    g.long_jump()
    ref.long_jump()
    assert g.getstate()["s"] == ref.s
    assert [int(v) for v in g.random_raw(10)] == [ref.next() for _ in range(10)]


def test_jump_commutes_with_next() -> None:
    # the jump is a polynomial in the (linear) transition: jump(next(s)) == next(jump(s))
    a = native.Xoshiro256StarStar(5)
    b = a.copy()
    a.random_raw(1)
    a.jump()
    b.jump()
    b.random_raw(1)
    assert a.getstate() == b.getstate()


def test_xoshiro_jumps_are_the_reference_jumps() -> None:
    g = native.Xoshiro256StarStar(11)
    ref = RefXoshiro(splitmix64_words(11))
    for _ in range(3):
        g.jump()
        ref.jump()
        assert g.getstate()["s"] == ref.s


def test_xoshiro_state_roundtrip_and_copy() -> None:
    g = native.Xoshiro256StarStar(3)
    g.random_raw(17)
    state = g.getstate()
    first = g.random_raw(50)
    g.setstate(state)
    assert (g.random_raw(50) == first).all()
    clone = g.copy()
    assert (clone.random_raw(5) == g.random_raw(5)).all()


def test_xoshiro_bad_state_and_seed() -> None:
    g = native.Xoshiro256StarStar(1)
    with pytest.raises(ValueError, match="all zero"):
        g.setstate({"bit_generator": "xoshiro256**", "s": [0, 0, 0, 0]})
    with pytest.raises(ValueError, match="getstate"):
        g.setstate({"bit_generator": "chacha20"})
    with pytest.raises(ValueError, match="seed must be in"):
        native.Xoshiro256StarStar(-1)
    with pytest.raises(ValueError, match="seed must be in"):
        native.Xoshiro256StarStar(1 << 64)
    with pytest.raises(TypeError, match="seed must be an integer"):
        native.Xoshiro256StarStar("7")  # type: ignore[arg-type]


def test_unseeded_generators_differ() -> None:
    assert native.Xoshiro256StarStar().getstate() != native.Xoshiro256StarStar().getstate()
    assert native.ChaCha20().keystream(32) != native.ChaCha20().keystream(32)


# ---------------------------------------------------------------- ChaCha20 (RFC 8439)

RFC_KEY = bytes(range(32))


def test_chacha20_block_function_rfc8439_2_3_2() -> None:
    state = [
        0x61707865, 0x3320646E, 0x79622D32, 0x6B206574,
        0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C,
        0x13121110, 0x17161514, 0x1B1A1918, 0x1F1E1D1C,
        0x00000001, 0x09000000, 0x4A000000, 0x00000000,
    ]  # fmt: skip
    expected = [
        0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3,
        0xC7F4D1C7, 0x0368C033, 0x9AAA2204, 0x4E6CD4C3,
        0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9,
        0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2,
    ]  # fmt: skip
    assert native.chacha20_block(state) == expected
    # the same block as the generator's keystream
    g = native.ChaCha20(RFC_KEY, nonce=bytes.fromhex("000000090000004a00000000"), counter=1)
    assert g.keystream(64) == b"".join(w.to_bytes(4, "little") for w in expected)


PLAINTEXT = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
    b"future, sunscreen would be it."
)
CIPHERTEXT = bytes.fromhex(
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
    "5af90bbf74a35be6b40b8eedf2785e42874d"
)


def test_chacha20_encryption_rfc8439_2_4_2() -> None:
    g = native.ChaCha20(RFC_KEY, nonce=bytes.fromhex("000000000000004a00000000"), counter=1)
    stream = g.keystream(len(PLAINTEXT))
    assert bytes(p ^ k for p, k in zip(PLAINTEXT, stream, strict=True)) == CIPHERTEXT


def test_chacha20_words_are_little_endian_keystream() -> None:
    a = native.ChaCha20(9)
    b = native.ChaCha20(9)
    stream = a.keystream(8 * 20)
    words = b.random_raw(20)
    assert [int(w) for w in words] == [
        int.from_bytes(stream[8 * i : 8 * i + 8], "little") for i in range(20)
    ]


def test_chacha20_state_roundtrip_mid_block() -> None:
    g = native.ChaCha20(12345)
    g.keystream(100)  # inside the second block
    state = g.getstate()
    assert state["block"] == 1 and state["offset"] == 36
    after = g.keystream(200)
    g2 = native.ChaCha20(1)
    g2.setstate(state)
    assert g2.keystream(200) == after


def test_chacha20_counter_carries_into_nonce_word() -> None:
    # block 2^32 - 1 then block 2^32: the counter carries into nonce word 0
    g = native.ChaCha20(5)
    st = g.getstate()
    st.update(block=(1 << 32) - 1, offset=0)
    g.setstate(st)
    g.keystream(64)
    assert g.getstate()["block"] == 1 << 32
    nonce = (1).to_bytes(4, "little") + bytes.fromhex(st["stream"])
    h = native.ChaCha20(bytes.fromhex(st["key"]), nonce=nonce, counter=0)
    assert g.keystream(64) == h.keystream(64)


def test_chacha20_bad_arguments() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        native.ChaCha20(b"short")
    with pytest.raises(ValueError, match="nonce must be 12 bytes"):
        native.ChaCha20(1, nonce=b"123")
    with pytest.raises(ValueError, match="counter must be in"):
        native.ChaCha20(1, counter=1 << 32)
    with pytest.raises(ValueError, match="unknown generator"):
        native.make_rng("mt19937", 1)
