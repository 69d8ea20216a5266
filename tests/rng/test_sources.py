"""The raw-output readers (feltlab.rig.rng.sources) on hand-made files whose bits are known."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from feltlab.rig.errors import SourceError
from feltlab.rig.rng import sources
from feltlab.rig.rng.sources import pack_values, parse_range, read_bitstream, split_sequences


def bits_of(seqs: np.ndarray, n: int) -> list[str]:
    return ["".join(map(str, np.unpackbits(row)[:n])) for row in seqs]


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def test_bytes_are_read_most_significant_bit_first(tmp_path: Path) -> None:
    p = write(tmp_path, "a.bin", bytes([0x80, 0x01, 0xC3]))
    got = read_bitstream(p, "bytes", sequences=1, bits=24)
    assert bits_of(got.sequences, 24) == ["100000000000000111000011"]
    assert got.source["bytes_read"] == 3 and got.source["file_bytes"] == 3


def test_sequences_not_byte_aligned_split_at_their_bit(tmp_path: Path) -> None:
    p = write(tmp_path, "a.bin", bytes([0b10110011, 0b10001111, 0b01000000]))
    got = read_bitstream(p, "bytes", sequences=3, bits=6)
    assert got.sequences.shape == (3, 1)
    assert bits_of(got.sequences, 6) == ["101100", "111000", "111101"]
    assert got.sequences[0, 0] == 0b10110000  # the last byte's unused bits are zero


@pytest.mark.parametrize(
    ("fmt", "data", "expected"),
    [
        ("u32le", bytes([0x00, 0x00, 0x00, 0x80]), "1" + "0" * 31),
        ("u32be", bytes([0x80, 0x00, 0x00, 0x00]), "1" + "0" * 31),
        ("u32le", bytes([0x01, 0x00, 0x00, 0x00]), "0" * 31 + "1"),
        ("u64le", bytes([0x01] + [0] * 6 + [0x40]), "01" + "0" * 61 + "1"),
        ("u64be", bytes([0x40] + [0] * 6 + [0x01]), "01" + "0" * 61 + "1"),
    ],
)
def test_words_give_their_bits_most_significant_first_in_either_byte_order(
    tmp_path: Path, fmt: str, data: bytes, expected: str
) -> None:
    p = write(tmp_path, "w.bin", data)
    got = read_bitstream(p, fmt, sequences=1, bits=len(expected))
    assert bits_of(got.sequences, len(expected)) == [expected]


def test_u32le_and_u32be_of_the_same_words_agree(tmp_path: Path) -> None:
    words = np.array([0xDEADBEEF, 0x01234567, 0x89ABCDEF, 0xFFFFFFFE], np.uint32)
    le = write(tmp_path, "le.bin", words.astype("<u4").tobytes())
    be = write(tmp_path, "be.bin", words.astype(">u4").tobytes())
    a = read_bitstream(le, "u32le", sequences=2, bits=64).sequences
    b = read_bitstream(be, "u32be", sequences=2, bits=64).sequences
    assert np.array_equal(a, b)
    assert a[0].tobytes() == bytes.fromhex("DEADBEEF01234567")


def test_a_words_file_with_a_part_word_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path, "w.bin", bytes(10))
    with pytest.raises(SourceError, match=r"not a whole number of 4-byte words.*offset 8"):
        read_bitstream(p, "u32le")


def test_text_values_give_the_bits_of_the_range(tmp_path: Path) -> None:
    # -8:7 is 16 values (4 bits): v - (-8) = 9 10 11 7 8 15
    p = write(tmp_path, "t.txt", "1 2 3\n  -1 0\n7\n")
    got = read_bitstream(p, "text", value_range="-8:7")
    assert got.n_bits == 24 and got.m == 1
    assert bits_of(got.sequences, 24) == ["100110101011011110001111"]
    assert got.source["values_read"] == 6 and got.source["bits_per_value"] == 4


def test_text_31_bit_values_concatenate(tmp_path: Path) -> None:
    vals = [0x7FFFFFFF, 0, 1, 0x40000000]
    p = write(tmp_path, "t.txt", "\n".join(map(str, vals)) + "\n")
    got = read_bitstream(p, "text", value_range="0:2147483647", sequences=2, bits=62)
    expected = "".join(format(v, "031b") for v in vals)
    assert bits_of(got.sequences, 62) == [expected[:62], expected[62:]]


def test_a_range_that_is_not_a_power_of_two_is_refused_with_the_reason() -> None:
    with pytest.raises(
        SourceError,
        match=r"holds 6 values, not a power of two.*top bit is 1 "
        r"for 2 of 6",
    ):
        parse_range("0:5")
    with pytest.raises(SourceError, match="not a power of two"):
        parse_range("1:1000000000")
    assert parse_range("0:4294967295").bits == 32
    assert parse_range("-128:127").bits == 8
    assert parse_range("0:18446744073709551615").bits == 64


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("1 2 x3\n", "line 1, column 5: 'x3' is not a decimal integer"),
        ("1 2\n3 4-\n", "line 2, column 3: '4-' is not a decimal integer"),
        ("1 2\n\n3 1.5\n", "line 3, column 3: '1.5' is not a decimal integer"),
        ("1_0\n", "line 1, column 1: '1_0' is not a decimal integer"),
        ("0 1\n2 9 3\n", "line 2, column 3: 9 is outside --range 0:7"),
        ("0 -1\n", "line 1, column 3: -1 is outside --range 0:7"),
    ],
)
def test_malformed_text_names_its_line_and_column(tmp_path: Path, text: str, where: str) -> None:
    p = write(tmp_path, "t.txt", text)
    with pytest.raises(SourceError) as err:
        read_bitstream(p, "text", value_range="0:7")
    assert where in str(err.value) and "\n" not in str(err.value)


def test_positions_are_right_across_text_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "TEXT_BLOCK", 7)  # tokens cut across many blocks
    p = write(tmp_path, "t.txt", "1 2 3 4\n55 6 77 8 9\n")
    with pytest.raises(SourceError, match="line 2, column 6: 77 is outside"):
        read_bitstream(p, "text", value_range="0:63")
    monkeypatch.setattr(sources, "TEXT_BLOCK", 25)
    p = write(tmp_path, "u.txt", "18446744073709551615 18446744073709551616")
    with pytest.raises(SourceError, match="line 1, column 22: 18446744073709551616 is outside"):
        read_bitstream(p, "text", value_range="0:18446744073709551615")


def test_too_little_data_says_the_bits_needed_and_held(tmp_path: Path) -> None:
    p = write(tmp_path, "a.bin", bytes(1000))
    with pytest.raises(SourceError) as err:
        read_bitstream(p, "bytes", sequences=10, bits=1000)
    msg = str(err.value)
    assert "1,000 bytes" in msg and "need 10,000 bits, it holds 8,000" in msg
    assert "\n" not in msg


def test_defaults_take_whole_sequences_or_the_whole_short_file(tmp_path: Path) -> None:
    p = write(tmp_path, "a.bin", bytes(1250))  # 10,000 bits: fewer than 10^6
    got = read_bitstream(p, "bytes")
    assert (got.m, got.n_bits) == (1, 10_000)
    got = read_bitstream(p, "bytes", bits=3000)
    assert (got.m, got.n_bits) == (3, 3000)


def test_only_the_bytes_needed_are_read(tmp_path: Path) -> None:
    p = write(tmp_path, "a.bin", os.urandom(4096))
    got = read_bitstream(p, "u32be", sequences=2, bits=40)
    assert got.source["bytes_read"] == 12 and got.source["words_read"] == 3


def test_options_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    p = write(tmp_path, "a.bin", bytes(8))
    with pytest.raises(SourceError, match="needs --range"):
        read_bitstream(p, "text")
    with pytest.raises(SourceError, match="--range is for --format text"):
        read_bitstream(p, "bytes", value_range="0:255")
    with pytest.raises(SourceError, match="unknown format"):
        read_bitstream(p, "hex")
    with pytest.raises(SourceError, match="does not exist"):
        read_bitstream(tmp_path / "missing.bin")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SourceError, match="not a regular file"):
        read_bitstream(fifo)


def test_pack_and_split_agree_with_numpy_bits() -> None:
    rng = np.random.default_rng(5)
    for k in (1, 3, 8, 13, 31, 32, 64):
        v = rng.integers(0, 1 << min(k, 63), size=37, dtype=np.uint64)
        bits = "".join(format(int(x), f"0{k}b") for x in v)
        packed = pack_values(v, k)
        assert "".join(map(str, np.unpackbits(packed)[: len(bits)])) == bits
    stream = rng.integers(0, 256, size=100, dtype=np.uint8)
    flat = np.unpackbits(stream)
    seqs = split_sequences(stream, 7, 101)
    for i in range(7):
        assert np.array_equal(np.unpackbits(seqs[i])[:101], flat[i * 101 : (i + 1) * 101])


@pytest.mark.parametrize(("bits", "block"), [(3, 7), (5, 25), (1, 4), (8, 13), (12, 9)])
def test_text_packed_block_by_block_equals_the_values_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bits: int, block: int
) -> None:
    """Text is packed as it is parsed (a value kept 64 bits wide until the end made a 100 MB
    file of 0s and 1s take 1.1 GB); values whose bits straddle the blocks' byte edges keep
    their order."""
    values = np.random.default_rng(bits).integers(0, 1 << bits, 301, dtype=np.uint64)
    t = tmp_path / "v.txt"
    t.write_text(" ".join(map(str, values)) + "\n")
    monkeypatch.setattr(sources, "TEXT_BLOCK", block)
    bs = read_bitstream(t, "text", value_range=f"0:{(1 << bits) - 1}")
    expected = np.unpackbits(pack_values(values, bits))[: 301 * bits]
    assert bs.n_bits == 301 * bits and bs.m == 1
    assert np.array_equal(np.unpackbits(bs.sequences[0])[: bs.n_bits], expected)


def test_text_over_the_bits_a_run_reads_is_refused_while_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = tmp_path / "v.txt"
    t.write_text("1 0 " * 100)
    monkeypatch.setattr(sources, "MAX_BYTES", 16)  # 128 bits
    monkeypatch.setattr(sources, "TEXT_BLOCK", 64)
    with pytest.raises(SourceError, match=r"over 16 bytes of bits.*give --sequences and --bits"):
        read_bitstream(t, "text", value_range="0:1")
    assert read_bitstream(t, "text", value_range="0:1", sequences=1, bits=100).n_bits == 100


def test_a_long_token_is_out_of_range_or_its_value_without_int_conversion(tmp_path: Path) -> None:
    """A token over 4,300 digits made int() raise Python's own digit-limit message (no line,
    no column, no fix); leading zeros are accepted at any length."""
    t = tmp_path / "long.txt"
    t.write_text("1 " + "7" * 10_000 + "\n")
    with pytest.raises(SourceError) as err:
        read_bitstream(t, "text", value_range="0:7")
    assert str(err.value) == (
        f"{t}: line 1, column 3: 77777777777777777777... (10,000 digits) is outside --range "
        "0:7; give the range the generator's values take"
    )
    t.write_text("1 " + "0" * 10_000 + "3 -" + "0" * 30 + "2\n")
    bs = read_bitstream(t, "text", value_range="-4:3")
    assert np.unpackbits(bs.sequences[0])[:9].tolist() == [1, 0, 1, 1, 1, 1, 0, 1, 0]
