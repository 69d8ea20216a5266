"""Raw generator output read from a file, split into the sequences of a bitstream battery.

A lab holds what a raw-output collection tool wrote while running the production code (GLI-19
section 3.3 calls for it; iTech Labs and TestTech ask for it): one of

- ``bytes``: raw bytes, each byte's most significant bit first (the form of NIST SP 800-22's
  own data files read in binary, and of ``dieharder -g 201``);
- ``u32le``, ``u32be``, ``u64le``, ``u64be``: the generator's 32- or 64-bit words in either
  byte order, each word's bits most significant first (a word 0x80000000 is a one and 31
  zeros, whatever its byte order in the file);
- ``text``: decimal integers separated by spaces or newlines, with a declared range
  ``LO:HI`` whose size is a power of two, 2^k: each value ``v`` gives the k bits of
  ``v - LO``, most significant first.  A range whose size is not a power of two is refused:
  the bits of such values are not equally likely (values 0..5 never have the top two bits
  11), so a bitstream test would fail a fair generator.  Scaled output is a distribution to
  test as such, not a bitstream.

The bits are the file's, in order, split into ``m`` sequences of ``n`` bits
(:func:`read_bitstream`): sequence ``i`` is bits ``i n .. (i + 1) n - 1``.  Sequences are
packed as the battery takes them (:mod:`feltlab.rig.rng.sp800_22`): a C-contiguous
``np.uint8`` array ``(m, ceil(n / 8))``, most significant bit first, a sequence's last byte
padded with zeros.  Only the bytes the sequences need are read (in blocks, through
:func:`feltlab.inputs.open_regular`), so a large file costs what the test uses.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from feltlab.inputs import open_regular
from feltlab.rig.errors import SourceError

FORMATS: dict[str, tuple[str | None, int]] = {
    "bytes": (None, 8),
    "u32le": ("<u4", 32),
    "u32be": (">u4", 32),
    "u64le": ("<u8", 64),
    "u64be": (">u8", 64),
    "text": (None, 0),
}
"""Each file format: its numpy word dtype (None: bytes as they are, or text) and the bits a
word holds (0 for text: the declared range's)."""

DEFAULT_BITS = 1_000_000
"""A sequence's bits when ``--bits`` is not given: SP 800-22's n for its sample (section 4.3:
1,000 sequences of 10^6 bits), or the whole file when it holds fewer."""

MAX_BYTES = 1 << 31
"""The most bytes of bits a run reads (2 GiB: 17 x the NIST sample of 125 MB); more is refused
before any work."""

MAX_TEXT_BYTES = 1 << 34
"""The most bytes of text a run reads (16 GiB), parsed in blocks of :data:`TEXT_BLOCK`."""

TEXT_BLOCK = 1 << 22
"""Bytes of text parsed at a time (4 MiB; the parse keeps a few arrays of this length)."""

_SPACE = np.zeros(256, bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True
_POW10 = np.array([10**i for i in range(20)], np.uint64)


@dataclass(frozen=True)
class ValueRange:
    """A text file's declared range ``low..high`` (inclusive) of ``2**bits`` values."""

    low: int
    high: int
    bits: int

    def __str__(self) -> str:
        return f"{self.low}:{self.high}"


def parse_range(text: str) -> ValueRange:
    """``"LO:HI"`` (decimal or 0x hex) as a :class:`ValueRange`.

    Raises :class:`SourceError` for a malformed range, one outside the 64-bit integers, or
    one whose size is not a power of two (the reason and the fix in the message)."""
    lo_text, colon, hi_text = text.partition(":")
    try:
        if not colon:
            raise ValueError(text)
        low, high = int(lo_text.strip(), 0), int(hi_text.strip(), 0)
    except ValueError:
        raise SourceError(
            f"--range {text!r} is not LO:HI: give the generator's range of integers, e.g. "
            "0:4294967295 for 32-bit words"
        ) from None
    if high <= low:
        raise SourceError(f"--range {text}: HI must be above LO")
    if low < -(1 << 63) or high > (1 << 64) - 1 or (low < 0 and high > (1 << 63) - 1):
        raise SourceError(
            f"--range {text} is outside the 64-bit integers (signed -2^63..2^63-1 or unsigned "
            "0..2^64-1)"
        )
    size = high - low + 1
    if size & (size - 1):
        k = size.bit_length() - 1
        raise SourceError(
            f"--range {text} holds {size:,} values, not a power of two: the bits of such values "
            f"are not equally likely (the top bit is 1 for {size - (1 << k):,} of {size:,} "
            "values, not half), so a fair generator would fail a bitstream test; give the "
            f"generator's raw range before scaling (a power of two, e.g. 0:{(1 << 32) - 1}), or "
            "test the scaled values as a distribution"
        )
    return ValueRange(low, high, size.bit_length() - 1)


@dataclass(frozen=True)
class Bitstream:
    """``m`` sequences of ``n_bits`` bits: ``sequences`` is ``np.uint8`` ``(m, ceil(n / 8))``,
    C-contiguous, most significant bit first; ``source`` describes where they came from (the
    record's ``source``)."""

    sequences: npt.NDArray[np.uint8]
    n_bits: int
    source: dict[str, Any]

    @property
    def m(self) -> int:
        """The number of sequences."""
        return int(self.sequences.shape[0])


def pack_values(values: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint8]:
    """The ``bits`` low bits of each value, most significant first, concatenated and packed
    (``np.uint8``, MSB first; the last byte padded with zeros).  ``bits`` 1..64."""
    v = np.ascontiguousarray(values, np.uint64)
    if bits in (8, 16, 32, 64):
        dt = np.dtype({8: "u1", 16: ">u2", 32: ">u4", 64: ">u8"}[bits])
        mask = np.uint64((1 << bits) - 1)
        packed: npt.NDArray[np.uint8] = (v & mask).astype(dt).view(np.uint8).ravel()
        return packed
    out = []
    step = 1 << 15  # values a pass: 8 of them always fill whole bytes
    shifts = np.arange(bits - 1, -1, -1, dtype=np.uint64)
    for i in range(0, v.size, step):
        chunk = v[i : i + step]
        b = ((chunk[:, None] >> shifts) & np.uint64(1)).astype(np.uint8)
        out.append(np.packbits(b.ravel()))
    return np.concatenate(out) if out else np.zeros(0, np.uint8)


def split_sequences(packed: npt.NDArray[np.uint8], m: int, n_bits: int) -> npt.NDArray[np.uint8]:
    """The first ``m * n_bits`` bits of the packed stream ``packed`` as ``m`` sequences of
    ``n_bits`` bits, ``np.uint8`` ``(m, ceil(n_bits / 8))`` (each sequence starts a byte;
    its last byte padded with zeros)."""
    if n_bits % 8 == 0:
        return np.ascontiguousarray(packed[: m * n_bits // 8].reshape(m, n_bits // 8))
    out = np.empty((m, -(-n_bits // 8)), np.uint8)
    per = max(1, (1 << 24) // n_bits)  # sequences a pass (16 M bits unpacked at a time)
    for i in range(0, m, per):
        j = min(m, i + per)
        lo_bit = i * n_bits
        first = lo_bit // 8
        raw = packed[first : -(-(j * n_bits) // 8)]
        bits = np.unpackbits(raw)[lo_bit - 8 * first : lo_bit - 8 * first + (j - i) * n_bits]
        out[i:j] = np.packbits(bits.reshape(j - i, n_bits), axis=1)
    return out


def _plan(
    available_bits: int, sequences: int | None, bits: int | None, short: str
) -> tuple[int, int]:
    """``(m, n)`` from the options and the bits the file holds; ``short`` completes the
    one-line error when the file holds too little."""
    n = bits if bits is not None else min(DEFAULT_BITS, available_bits)
    if n < 1:
        raise SourceError(f"{short}: it holds no bits")
    m = sequences if sequences is not None else available_bits // n
    if m < 1 or m * n > available_bits:
        raise SourceError(
            f"{short}: {m or 1:,} sequence(s) of {n:,} bits need {(m or 1) * n:,} bits, it "
            f"holds {available_bits:,}; give fewer --sequences or --bits, or collect more output"
        )
    return m, n


def _read_exact(f: BinaryIO, size: int) -> bytes:
    parts = []
    got = 0
    while got < size:
        chunk = f.read(min(1 << 24, size - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _binary(
    path: Path, fmt: str, sequences: int | None, bits: int | None
) -> tuple[npt.NDArray[np.uint8], int, int, dict[str, Any]]:
    dtype, word_bits = FORMATS[fmt]
    word_bytes = word_bits // 8
    with open_regular(path, "raw output file", SourceError) as (f, size):
        if size % word_bytes:
            raise SourceError(
                f"{path} is {size:,} bytes, not a whole number of {word_bytes}-byte words: a "
                f"{fmt} file holds whole words (its last {size % word_bytes} byte(s) at offset "
                f"{size - size % word_bytes:,} are a part word); check --format"
            )
        m, n = _plan(8 * size, sequences, bits, f"{path} ({size:,} bytes, {fmt})")
        words = -(-(m * n) // word_bits)
        need = words * word_bytes
        if need > MAX_BYTES:
            raise SourceError(
                f"{m:,} sequences of {n:,} bits need {need:,} bytes, over the {MAX_BYTES:,} a "
                "run reads; give fewer --sequences"
            )
        raw = _read_exact(f, need)
    if len(raw) < need:
        raise SourceError(f"{path} shrank while it was read: {len(raw):,} of {need:,} bytes")
    digest = hashlib.sha256(raw).hexdigest()
    if dtype is None or dtype.startswith(">"):
        packed = np.frombuffer(raw, np.uint8)  # big-endian words are already MSB first
    else:
        packed = np.frombuffer(raw, dtype).astype(">" + dtype[1:]).view(np.uint8)
    info = {"file_bytes": size, "bytes_read": need, "sha256_of_bytes_read": digest}
    if word_bits > 8:
        info["words_read"] = words
    return packed, m, n, info


def _line_col(block: bytes, offset: int, at: tuple[int, int]) -> tuple[int, int]:
    """Line and column (1-based) of ``block[offset]``, the block starting ``at`` (lines
    before it, bytes of its first line before it)."""
    line_start = block.rfind(b"\n", 0, offset) + 1
    col = offset - line_start + 1 + (at[1] if line_start == 0 else 0)
    return at[0] + block.count(b"\n", 0, offset) + 1, col


def _token_at(block: bytes, offset: int) -> tuple[int, str]:
    """The start and text (at most 30 bytes each side) of the token holding ``offset``."""
    end = offset
    while end < len(block) and not _SPACE[block[end]] and end - offset < 30:
        end += 1
    start = offset
    while start > 0 and not _SPACE[block[start - 1]] and offset - start < 30:
        start -= 1
    return start, block[start:end].decode("ascii", "replace")


def _parse_block(
    block: bytes, where: str, at: tuple[int, int], vr: ValueRange
) -> npt.NDArray[np.uint64]:
    """The values ``v - LO`` of the integers in ``block`` (whole tokens; the block starts
    ``at`` (lines, columns) into the file), as ``np.uint64``; :class:`SourceError` naming the
    line and column of the first malformed or out-of-range one."""

    def fail(offset: int, why: str) -> SourceError:
        line, col = _line_col(block, offset, at)
        return SourceError(f"{where}: line {line}, column {col}: {why}")

    b = np.frombuffer(block, np.uint8)
    digit = (b >= 48) & (b <= 57)
    space = _SPACE[b]
    sign = (b == 43) | (b == 45)
    bad = np.flatnonzero(~(digit | space | sign))
    if bad.size:
        start, tok = _token_at(block, int(bad[0]))
        raise fail(
            start,
            f"{tok!r} is not a decimal integer (integers are separated by spaces or newlines)",
        )
    s_idx = np.flatnonzero(sign)
    if s_idx.size:
        nxt = np.append(digit, False)[s_idx + 1]
        prev = np.insert(space, 0, True)[s_idx]
        wrong = s_idx[~(nxt & prev)]
        if wrong.size:
            start, tok = _token_at(block, int(wrong[0]))
            raise fail(start, f"{tok!r} is not a decimal integer")
    edges = np.diff(np.concatenate(([0], digit.view(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    lengths = ends - starts
    di = np.flatnonzero(digit)
    tok_of = np.repeat(np.arange(starts.size), lengths)
    exp = np.minimum(ends[tok_of] - di - 1, 19)
    terms = (b[di] - 48).astype(np.uint64) * _POW10[exp]
    mag = (
        np.add.reduceat(terms, np.concatenate(([0], np.cumsum(lengths)[:-1])))
        if di.size
        else (np.zeros(0, np.uint64))
    )
    neg = np.insert(b == 45, 0, False)[starts]
    long = np.flatnonzero(lengths >= 20)  # rare: exact with Python integers
    big: dict[int, int] = {}
    for j in long:
        digits = block[starts[j] : ends[j]].lstrip(b"0") or b"0"
        # beyond 20 digits a value is outside every 64-bit range: not converted (Python
        # refuses int() of over 4,300 digits, and a megabyte token would cost seconds)
        val = int(digits) if len(digits) <= 20 else 1 << 65
        big[int(j)] = val
        mag[j] = np.uint64(min(val, (1 << 64) - 1))
    lo, hi = vr.low, vr.high
    if lo >= 0:
        out_of = neg & (mag > 0) | (mag < np.uint64(lo)) | (mag > np.uint64(hi))
    else:
        out_of = np.where(neg, mag > np.uint64(-lo), mag > np.uint64(hi))
    for i, val in big.items():
        out_of[i] |= not lo <= (-val if neg[i] else val) <= hi
    if out_of.any():
        t = int(np.flatnonzero(out_of)[0])
        sgn = "-" if neg[t] else ""
        text = block[starts[t] : ends[t]].decode()
        text = text if len(text) <= 30 else f"{text[:20]}... ({len(text):,} digits)"
        raise fail(
            int(starts[t]) - int(neg[t]),
            f"{sgn}{text} is outside --range {vr}; give the range the generator's values take",
        )
    if lo >= 0:
        return mag - np.uint64(lo)
    off = np.uint64(-lo)
    return np.where(neg, off - mag, mag + off)


def _text(
    path: Path, vr: ValueRange, sequences: int | None, bits: int | None
) -> tuple[npt.NDArray[np.uint8], int, int, dict[str, Any]]:
    want = None if sequences is None or bits is None else -(-(sequences * bits) // vr.bits)
    digest = hashlib.sha256()
    parts: list[npt.NDArray[np.uint8]] = []  # packed bits: 1 bit a bit, not 64 a value
    whole = 8 // math.gcd(vr.bits, 8)  # values that fill whole bytes
    pending = np.zeros(0, np.uint64)
    count = 0
    lines = 0
    col = 0
    read = 0
    with open_regular(path, "raw output file", SourceError) as (f, size):
        carry = b""
        while want is None or count < want:
            chunk = f.read(TEXT_BLOCK)
            read += len(chunk)
            if read > MAX_TEXT_BYTES:
                raise SourceError(
                    f"{path}: over {MAX_TEXT_BYTES:,} bytes of text read; give --sequences and "
                    "--bits to read a part of it"
                )
            digest.update(chunk)
            block = carry + chunk
            if chunk:
                cut = max(block.rfind(s) for s in (b" ", b"\n", b"\t", b"\r", b"\v", b"\f")) + 1
                if cut == 0 and len(block) > TEXT_BLOCK:
                    raise SourceError(
                        f"{path}: line {lines + 1}: a token of over "
                        f"{TEXT_BLOCK:,} bytes is not an integer"
                    )
                block, carry = block[:cut], block[cut:]
            else:
                carry = b""
            vals = _parse_block(block, str(path), (lines, col), vr)
            nl = block.rfind(b"\n")
            lines += block.count(b"\n")
            col = len(block) - nl - 1 if nl >= 0 else col + len(block)
            count += vals.size
            if count * vr.bits > 8 * MAX_BYTES:
                raise SourceError(
                    f"{path}: over {MAX_BYTES:,} bytes of bits (a run reads at most that); give "
                    "--sequences and --bits to read a part of it"
                )
            pending = np.concatenate((pending, vals))
            cut_at = pending.size - pending.size % whole if chunk else pending.size
            parts.append(pack_values(pending[:cut_at], vr.bits))
            pending = pending[cut_at:]
            if not chunk:
                break
    parts.append(pack_values(pending, vr.bits))  # the last values: padded at the end only
    packed = np.concatenate(parts)
    short = f"{path} ({count:,} values of {vr.bits} bits in --range {vr})"
    m, n = _plan(count * vr.bits, sequences, bits, short)
    used = -(-(m * n) // vr.bits)
    info = {
        "file_bytes": size,
        "bytes_read": read,
        "sha256_of_bytes_read": digest.hexdigest(),
        "values_read": count,
        "values_used": used,
        "range": str(vr),
        "bits_per_value": vr.bits,
    }
    return packed, m, n, info


def read_bitstream(
    path: str | Path,
    fmt: str = "bytes",
    *,
    sequences: int | None = None,
    bits: int | None = None,
    value_range: str | ValueRange | None = None,
) -> Bitstream:
    """``sequences`` sequences of ``bits`` bits read from the file ``path`` in format
    ``fmt`` (:data:`FORMATS`; ``value_range`` "LO:HI" for ``text``, refused otherwise).

    ``bits`` defaults to :data:`DEFAULT_BITS` (the whole file if it holds fewer),
    ``sequences`` to as many as the file holds.  Raises :class:`SourceError` (one line) for a
    missing or non-regular file, an unknown format, a range that is not a power of two, a
    malformed or out-of-range value (its line and column), a words file that is not whole
    words, and a file too short for the sequences asked (the bits needed and held)."""
    p = Path(path)
    if fmt not in FORMATS:
        raise SourceError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    for name, v in (("--sequences", sequences), ("--bits", bits)):
        if v is not None and v < 1:
            raise SourceError(f"{name} must be at least 1, got {v}")
    vr: ValueRange | None = None
    if fmt == "text":
        if value_range is None:
            raise SourceError(
                "a text file needs --range LO:HI, the range of the generator's integers (e.g. "
                "0:4294967295 for 32-bit words): its bits are what is tested"
            )
        vr = value_range if isinstance(value_range, ValueRange) else parse_range(value_range)
        packed, m, n, info = _text(p, vr, sequences, bits)
    else:
        if value_range is not None:
            raise SourceError(f"--range is for --format text; a {fmt} file's words are all bits")
        packed, m, n, info = _binary(p, fmt, sequences, bits)
    source = {"path": str(p), "format": fmt, "sequences": m, "bits": n, **info}
    return Bitstream(split_sequences(packed, m, n), n, source)


__all__ = [
    "DEFAULT_BITS",
    "FORMATS",
    "Bitstream",
    "ValueRange",
    "pack_values",
    "parse_range",
    "read_bitstream",
    "split_sequences",
]
