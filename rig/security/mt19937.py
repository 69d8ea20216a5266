"""MT19937's whole state from 624 consecutive 32-bit outputs, and its next outputs
(docs/security.md, "MT19937").

The Mersenne Twister (Matsumoto and Nishimura, ACM TOMACS 8(1), 1998) outputs
``temper(x_k)`` where ``x_{k+624} = x_{k+397} ^ twist(x_k, x_{k+1})``.  Tempering is a
bijection of 32-bit words (two right shifts, two masked left shifts, each undone by
repeating it), so 624 consecutive outputs give 624 consecutive ``x_k``: the generator's whole
state, from which every later output follows.  This is why a generator that passes every
statistical test (MT19937 passes SP 800-22) is no protection against prediction
(25 CFR 547.14(c), 58 Pa. Code 810a.5(a)(4)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.inputs import read_regular
from feltlab.rig.errors import DeclarationError

N = 624
"""Words of MT19937's state, and consecutive outputs that recover it."""

_B, _C = 0x9D2C5680, 0xEFC60000
_WORD_FORMATS = ("u32le", "u32be", "text")
MAX_BYTES = 64 << 20


def _undo_right(y: npt.NDArray[np.uint32], shift: int) -> npt.NDArray[np.uint32]:
    r = y.copy()
    for _ in range(32 // shift + 1):
        r = y ^ (r >> np.uint32(shift))
    return r


def _undo_left(y: npt.NDArray[np.uint32], shift: int, mask: int) -> npt.NDArray[np.uint32]:
    r = y.copy()
    for _ in range(32 // shift + 1):
        r = y ^ ((r << np.uint32(shift)) & np.uint32(mask))
    return r


def temper(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """MT19937's tempering of each word (``np.uint32``)."""
    y = x ^ (x >> np.uint32(11))
    y ^= (y << np.uint32(7)) & np.uint32(_B)
    y ^= (y << np.uint32(15)) & np.uint32(_C)
    out: npt.NDArray[np.uint32] = y ^ (y >> np.uint32(18))
    return out


def untemper(z: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """The inverse of :func:`temper`: the state words behind outputs ``z`` (``np.uint32``)."""
    y = _undo_right(z.astype(np.uint32), 18)
    y = _undo_left(y, 15, _C)
    y = _undo_left(y, 7, _B)
    return _undo_right(y, 11)


def recover_state(outputs: npt.ArrayLike) -> npt.NDArray[np.uint32]:
    """The state (``(624,)`` uint32) behind the first 624 of ``outputs`` (consecutive
    32-bit outputs, anywhere in the stream).  ValueError for fewer than 624."""
    out = np.asarray(outputs, dtype=np.uint64)
    if out.size < N:
        raise ValueError(f"MT19937's state needs {N} consecutive outputs, got {out.size}")
    if int(out[:N].max()) >= 1 << 32:
        raise ValueError("MT19937's outputs are 32-bit words; a value is 2^32 or more")
    return untemper(out[:N].astype(np.uint32))


def predict(state: npt.NDArray[np.uint32], count: int) -> npt.NDArray[np.uint32]:
    """The ``count`` outputs that follow the 624 outputs whose state is ``state`` (numpy's
    MT19937 bit generator, its state set to the recovered words at position 624)."""
    bg = np.random.MT19937()
    bg.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.asarray(state, np.uint32), "pos": N},
    }
    return bg.random_raw(count).astype(np.uint32)


def read_words(path: str | Path, fmt: str) -> npt.NDArray[np.uint64]:
    """The 32-bit outputs of the file ``path``: ``u32le``/``u32be`` (4 bytes a word) or
    ``text`` (integers 0..2^32-1 separated by white space or commas).  Raises
    DeclarationError for a missing file, an unknown format, a length that is no whole number
    of words, or a value that is not a 32-bit integer (its position named)."""
    if fmt not in _WORD_FORMATS:
        raise DeclarationError(
            f"unknown --format {fmt!r}; choose one of {', '.join(_WORD_FORMATS)}"
        )
    raw = read_regular(path, "outputs file", MAX_BYTES, DeclarationError)
    if raw is None:
        raise DeclarationError(f"outputs file {path} does not exist")
    if fmt != "text":
        if len(raw) % 4:
            raise DeclarationError(
                f"{path}: {len(raw)} bytes is no whole number of 32-bit words; is it --format text?"
            )
        return np.frombuffer(raw, "<u4" if fmt == "u32le" else ">u4").astype(np.uint64)
    tokens = raw.replace(b",", b" ").split()
    words = np.zeros(len(tokens), np.uint64)
    for i, tok in enumerate(tokens):
        try:
            v = int(tok, 0)
        except ValueError:
            v = -1
        if not 0 <= v < 1 << 32:
            raise DeclarationError(
                f"{path}: value {i + 1} ({tok[:20].decode(errors='replace')!r}) is not an "
                "integer 0..4294967295"
            )
        words[i] = v
    return words


def state_recovery(outputs: npt.NDArray[np.uint64]) -> dict[str, Any]:
    """The record of recovering MT19937's state from ``outputs`` and predicting the rest:
    ``outputs``, ``used`` (624), ``predicted`` (the outputs after them), ``correct`` (of
    those, how many the recovered state predicted exactly), ``first_wrong`` (index, or None),
    ``next`` (the 8 outputs after the file's, predicted).  ValueError for fewer than 624."""
    state = recover_state(outputs)
    rest = outputs[N:].astype(np.uint32)
    guess = predict(state, rest.size + 8)
    right = guess[: rest.size] == rest
    wrong = np.flatnonzero(~right)
    return {
        "generator": "mt19937",
        "outputs": int(outputs.size),
        "used": N,
        "predicted": int(rest.size),
        "correct": int(right.sum()),
        "first_wrong": int(N + wrong[0]) if wrong.size else None,
        "next": [int(x) for x in guess[rest.size :]],
    }


__all__ = ["N", "predict", "read_words", "recover_state", "state_recovery", "temper", "untemper"]
