"""Validating wrappers over the compiled core (see ``feltlab.native`` for the card model)."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import secrets
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib

CARDS_PER_DECK: int = int(lib.FL_CARDS_PER_DECK)
MAX_DECKS: int = int(lib.FL_MAX_DECKS)
NO_CARD: int = int(lib.FL_NO_CARD)
# The rule encodings of the simulator's and the analyzer's rules (feltlab_core.h's enums).
DOUBLE_ANY: int = int(lib.FL_DOUBLE_ANY)
DOUBLE_HARD: int = int(lib.FL_DOUBLE_HARD)
DOUBLE_HARD_9_11: int = int(lib.FL_DOUBLE_HARD_9_11)
DOUBLE_HARD_10_11: int = int(lib.FL_DOUBLE_HARD_10_11)
SURRENDER_NONE: int = int(lib.FL_SURRENDER_NONE)
SURRENDER_LATE: int = int(lib.FL_SURRENDER_LATE)
SURRENDER_EARLY: int = int(lib.FL_SURRENDER_EARLY)
TAKES_ORIGINAL: int = int(lib.FL_TAKES_ORIGINAL)
TAKES_ORIGINAL_AND_BUSTED: int = int(lib.FL_TAKES_ORIGINAL_AND_BUSTED)
TAKES_ALL: int = int(lib.FL_TAKES_ALL)
can_frame_bits_unchecked = lib.fl_can_frame_bits
"""The bits a classic CAN frame occupies on the wire, stuff bits counted from its CRC-15
(native/src/can.c): ``(arbitration_id, extended, data, n) -> int`` with no argument checks,
for the simulated wire's per-frame hot path; :func:`feltlab.rig.protocol.bittime.frame_bits`
is the checked front."""
_U64_MAX = (1 << 64) - 1

_STATUS_TEXT = {
    lib.FL_ERR_NULL: "a required buffer was missing",
    lib.FL_ERR_DECKS: f"decks must be an integer in 1..{MAX_DECKS}",
    lib.FL_ERR_RANGE: "a size or bound was outside its domain",
    lib.FL_ERR_CARD: "a card code was outside 0..51",
    lib.FL_ERR_KIND: "the generator is not initialised",
    lib.FL_ERR_EXHAUSTED: "the ChaCha20 stream is exhausted (2^64 blocks); seed a new generator",
    lib.FL_ERR_CARDS_OUT: (
        "a round ran out of cards: the strategy drew more than the cards kept behind the "
        "cutting card (or the continuous shuffler held); place the cutting card further "
        "forward (a lower --penetration) or deal every round from a fresh shoe (--fresh-shoe)"
    ),
}


class CoreError(RuntimeError):
    """The C core refused a call that passed the Python-side checks (a feltlab bug or an
    exhausted ChaCha20 stream); the message names the C status."""


def check(status: int, what: str) -> None:
    """Raise :class:`CoreError` naming ``what`` when the C core's ``status`` is not ``FL_OK``."""
    if status != lib.FL_OK:
        raise CoreError(f"{what}: {_STATUS_TEXT.get(status, f'status {status}')}")


def as_int(value: object, name: str, lo: int, hi: int) -> int:
    """``value`` as an int in ``lo..hi``; TypeError if it is no integer (a bool is none),
    ValueError outside the range, both naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer in {lo}..{hi}, got {type(value).__name__}")
    v = int(value)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {v}")
    return v


def as_flag(value: object, name: str) -> int:
    """``value`` as the C core's 0 or 1: a bool, or an integer 0 or 1 (``h17=2`` is no flag,
    where ``int(bool(2))`` took it as true); TypeError naming ``name`` otherwise."""
    if not isinstance(value, bool | int | np.bool_ | np.integer) or int(value) not in (0, 1):
        raise TypeError(f"{name} must be a bool (or 0 or 1), got {value!r}")
    return int(value)


def check_decks(decks: object) -> int:
    """``decks`` as an int in 1..``MAX_DECKS`` (errors as :func:`as_int`)."""
    return as_int(decks, "decks", 1, MAX_DECKS)


def _writable_c_array(arr: object, name: str, dtypes: tuple[type, ...], ndim: int) -> np.ndarray:
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(arr).__name__}")
    if arr.dtype.type not in dtypes:
        want = " or ".join(np.dtype(d).name for d in dtypes)
        raise TypeError(f"{name} must have dtype {want}, got {arr.dtype}")
    if not arr.dtype.isnative:
        raise TypeError(
            f"{name} has non-native byte order ({arr.dtype.str}); the core writes native "
            f"integers: pass an array of dtype {arr.dtype.newbyteorder('=').name}"
        )
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; pass np.ascontiguousarray({name})")
    if not arr.flags.writeable:
        raise ValueError(f"{name} is read-only; pass a writable copy ({name}.copy())")
    return arr


# ---------------------------------------------------------------- generators


class BitGenerator(ABC):
    """A seedable, reproducible source of 64-bit words owned by the caller.

    Not shared state: each object holds its own C state; a lock serialises calls on one object
    (the core releases the GIL), so give each thread or worker its own, seeded by
    :func:`feltlab.seeds.child_seed`.
    """

    name: ClassVar[str] = ""
    _kind: ClassVar[int] = 0

    def __init__(self) -> None:
        self._state: Any = ffi.new("fl_rng *")
        self._lock = threading.Lock()

    @property
    def lock(self) -> threading.Lock:
        """The lock that serialises calls on this generator's C state: hold it around a core
        call given :func:`rng_ptr` of this generator (the core releases the GIL)."""
        return self._lock

    # -- raw output -------------------------------------------------------
    def random_raw(self, size: int = 1) -> npt.NDArray[np.uint64]:
        """``size`` raw 64-bit outputs, shape ``(size,)``, dtype uint64."""
        n = as_int(size, "size", 0, 1 << 40)
        out = np.empty(n, dtype=np.uint64)
        with self._lock:
            check(
                lib.fl_rng_fill_u64(self._state, ffi.from_buffer("uint64_t[]", out), n),
                "random_raw",
            )
        return out

    def integers(self, bound: int, size: int = 1) -> npt.NDArray[np.uint64]:
        """Unbiased integers in ``[0, bound)``, shape ``(size,)``, dtype uint64.

        Lemire's nearly-divisionless method (D. Lemire, "Fast Random Integer Generation in an
        Interval", ACM TOMACS 29(1), 2019).  ``bound`` is in 1..2^64-1.
        """
        b = as_int(bound, "bound", 1, _U64_MAX)
        n = as_int(size, "size", 0, 1 << 40)
        out = np.empty(n, dtype=np.uint64)
        with self._lock:
            check(
                lib.fl_rng_bounded(self._state, b, ffi.from_buffer("uint64_t[]", out), n),
                "integers",
            )
        return out

    # -- state -------------------------------------------------------------
    # (independent streams for parallel chunks come from feltlab.seeds, the one scheme: a
    # child seed per chunk, hashed from the parent seed and a label path)
    @abstractmethod
    def getstate(self) -> dict[str, Any]:
        """The full state as a JSON-serialisable dict; :meth:`setstate` restores it."""

    @abstractmethod
    def setstate(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`getstate`; raises ValueError for a malformed one."""

    def copy(self) -> Self:
        """An independent generator in the same state (it will repeat this one's output)."""
        clone = object.__new__(type(self))
        BitGenerator.__init__(clone)
        clone.setstate(self.getstate())
        return clone

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class Xoshiro256StarStar(BitGenerator):
    """xoshiro256** 1.0 (D. Blackman and S. Vigna, "Scrambled Linear Pseudorandom Number
    Generators", ACM TOMS 47(4), 2021): the fast generator for simulation.

    ``seed`` (0..2^64-1, or None for fresh entropy) is expanded to the 256-bit state by
    SplitMix64, as the authors recommend.  :meth:`jump` advances 2^128 outputs and
    :meth:`long_jump` 2^192 (the simulator's lanes are long jumps apart); independent streams
    for parallel chunks are seeded by feltlab.seeds.  Not for games or certified
    devices: use :class:`ChaCha20` there.
    """

    name = "xoshiro256**"
    _kind = 1

    def __init__(self, seed: int | None = None) -> None:
        super().__init__()
        s = secrets.randbits(64) if seed is None else as_int(seed, "seed", 0, _U64_MAX)
        lib.fl_rng_seed_xoshiro(self._state, s)

    @classmethod
    def from_words(cls, s0: int, s1: int, s2: int, s3: int) -> Xoshiro256StarStar:
        """A generator with the given four 64-bit state words (not all zero)."""
        g = cls(0)
        g.setstate({"bit_generator": cls.name, "s": [s0, s1, s2, s3]})
        return g

    def jump(self) -> None:
        """Advance by 2^128 outputs (the reference ``jump()``)."""
        with self._lock:
            check(lib.fl_xoshiro_jump(self._state), "jump")

    def long_jump(self) -> None:
        """Advance by 2^192 outputs (the reference ``long_jump()``)."""
        with self._lock:
            check(lib.fl_xoshiro_long_jump(self._state), "long_jump")

    def getstate(self) -> dict[str, Any]:
        words = ffi.new("uint64_t[4]")
        with self._lock:
            check(lib.fl_xoshiro_get(self._state, words), "getstate")
        return {"bit_generator": self.name, "s": [int(w) for w in words]}

    def setstate(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("bit_generator") != self.name:
            raise ValueError(f"state must be a dict from {self.name} getstate(), got {state!r}")
        s = state.get("s")
        if not isinstance(s, list | tuple) or len(s) != 4:
            raise ValueError("state['s'] must be a list of four 64-bit words")
        words = [as_int(w, "state['s'][i]", 0, _U64_MAX) for w in s]
        if not any(words):
            raise ValueError("state['s'] must not be all zero (xoshiro's one fixed point)")
        with self._lock:
            check(lib.fl_rng_set_xoshiro(self._state, words), "setstate")


class ChaCha20(BitGenerator):
    """ChaCha20 keystream as a generator (RFC 8439 block function, 20 rounds, 96-bit nonce):
    the cryptographically strong generator for games and certified devices.

    ``seed``: a 32-byte key, an integer 0..2^256-1 (its 32 little-endian bytes are the key),
    or None for a key from ``os.urandom``.  ``nonce`` is 12 bytes, ``counter`` the first
    32-bit block counter.  For the first 2^32 blocks the output is exactly the RFC 8439
    keystream; the counter then carries into nonce word 0 (a 64-bit block counter, the
    original Bernstein layout).  Each 64-bit output is 8 keystream bytes, little-endian.
    """

    name = "chacha20"
    _kind = 2

    def __init__(
        self,
        seed: int | bytes | None = None,
        *,
        nonce: bytes = bytes(12),
        counter: int = 0,
    ) -> None:
        super().__init__()
        if seed is None:
            key = os.urandom(32)
        elif isinstance(seed, bytes | bytearray):
            if len(seed) != 32:
                raise ValueError(f"a ChaCha20 key must be 32 bytes, got {len(seed)}")
            key = bytes(seed)
        else:
            key = as_int(seed, "seed", 0, (1 << 256) - 1).to_bytes(32, "little")
        if not isinstance(nonce, bytes | bytearray) or len(nonce) != 12:
            raise ValueError("nonce must be 12 bytes (RFC 8439 96-bit nonce)")
        c = as_int(counter, "counter", 0, (1 << 32) - 1)
        check(
            lib.fl_rng_seed_chacha(
                self._state,
                ffi.from_buffer("uint8_t[]", key),
                ffi.from_buffer("uint8_t[]", bytes(nonce)),
                c,
            ),
            "seed",
        )

    def keystream(self, n: int) -> bytes:
        """The next ``n`` keystream bytes (RFC 8439 section 2.4)."""
        count = as_int(n, "n", 0, 1 << 40)
        buf = bytearray(count)
        with self._lock:
            check(
                lib.fl_chacha_keystream(self._state, ffi.from_buffer("uint8_t[]", buf), count),
                "keystream",
            )
        return bytes(buf)

    def getstate(self) -> dict[str, Any]:
        key = ffi.new("uint8_t[32]")
        nonce = ffi.new("uint8_t[12]")
        block = ffi.new("uint64_t *")
        offset = ffi.new("uint32_t *")
        with self._lock:
            check(lib.fl_chacha_get_key(self._state, key, nonce), "getstate")
            check(lib.fl_chacha_tell(self._state, block, offset), "getstate")
        return {
            "bit_generator": self.name,
            "key": bytes(ffi.buffer(key)).hex(),
            "stream": bytes(ffi.buffer(nonce))[4:].hex(),
            "block": int(block[0]),
            "offset": int(offset[0]),
        }

    def setstate(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("bit_generator") != self.name:
            raise ValueError(f"state must be a dict from {self.name} getstate(), got {state!r}")
        try:
            key = bytes.fromhex(state["key"])
            stream = bytes.fromhex(state["stream"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError("state needs hex 'key' (32 bytes) and 'stream' (8 bytes)") from exc
        if len(key) != 32 or len(stream) != 8:
            raise ValueError("state needs hex 'key' (32 bytes) and 'stream' (8 bytes)")
        block = as_int(state.get("block"), "state['block']", 0, _U64_MAX)
        offset = as_int(state.get("offset"), "state['offset']", 0, 63)
        nonce = (block >> 32).to_bytes(4, "little") + stream
        with self._lock:
            check(
                lib.fl_rng_seed_chacha(
                    self._state,
                    ffi.from_buffer("uint8_t[]", key),
                    ffi.from_buffer("uint8_t[]", nonce),
                    block & 0xFFFFFFFF,
                ),
                "setstate",
            )
            check(lib.fl_chacha_seek(self._state, block, offset), "setstate")


RngName = Literal["xoshiro256**", "chacha20"]


def make_rng(name: str, seed: int | None = None) -> BitGenerator:
    """A generator by name: ``"xoshiro256**"`` (alias ``"xoshiro"``) or ``"chacha20"``."""
    key = name.lower()
    if key in ("xoshiro256**", "xoshiro256starstar", "xoshiro"):
        return Xoshiro256StarStar(seed)
    if key in ("chacha20", "chacha"):
        return ChaCha20(seed)
    raise ValueError(f"unknown generator {name!r}; choose 'xoshiro256**' or 'chacha20'")


def rng_ptr(rng: object) -> Any:
    """The C state pointer of a feltlab generator (Xoshiro256StarStar or ChaCha20); TypeError
    for any other object."""
    if not isinstance(rng, BitGenerator):
        raise TypeError(
            f"rng must be a feltlab.native generator (Xoshiro256StarStar or ChaCha20), "
            f"got {type(rng).__name__}"
        )
    return rng._state


def chacha20_block(state: list[int] | tuple[int, ...]) -> list[int]:
    """The RFC 8439 section 2.3 block function on 16 uint32 words; returns 16 words."""
    if len(state) != 16:
        raise ValueError(f"state must be 16 32-bit words, got {len(state)}")
    words = [as_int(w, "state[i]", 0, 0xFFFFFFFF) for w in state]
    out = ffi.new("uint32_t[16]")
    lib.fl_chacha20_block(words, out)
    return [int(w) for w in out]


def batch_draw_word(x: int, width: int, n: int, k: int, bound: int) -> tuple[int, ...] | None:
    """One attempt of the batched bounded draw at word width ``width`` (1..64 bits).

    From the word ``x`` (< 2^width) derives ``k`` indexes, index i in ``[0, n - i)``, exactly as
    the shuffles do at width 64 (Brackett-Rozinsky and Lemire, "Batched Ranged Random Integer
    Generation", Softw. Pract. Exper. 55(1), 2025).  Returns the indexes, or None when the word
    is rejected.  Raises ValueError for arguments outside the method's domain.
    """
    idx = ffi.new("uint64_t[64]")
    r = lib.fl_batch_draw_word(x, width, n, k, bound, idx)
    if r < 0:
        raise ValueError(
            "need 1 <= width <= 64, x < 2^width, 1 <= k <= n, "
            "n(n-1)...(n-k+1) <= 2^width and bound >= that product"
        )
    return tuple(int(idx[i]) for i in range(k)) if r else None


# ---------------------------------------------------------------- cards and shoes


def new_deck_order() -> npt.NDArray[np.uint8]:
    """One deck in new-deck order as codes, shape (52,), uint8: A-K spades, A-K diamonds,
    K-A clubs, K-A hearts (the order a new US-made deck comes in)."""
    out = np.empty(52, dtype=np.uint8)
    lib.fl_new_deck_order(ffi.from_buffer("uint8_t[]", out))
    return out


def new_shoe(decks: int, *, ids: bool = False) -> npt.NDArray[np.uint8] | npt.NDArray[np.uint16]:
    """A shoe of ``decks`` (1..8) decks, each in new-deck order, shape (decks * 52,).

    ``ids=False``: card codes, uint8; ``ids=True``: physical ids ``deck * 52 + code``, uint16.
    """
    d = check_decks(decks)
    if ids:
        out16 = np.empty(d * 52, dtype=np.uint16)
        check(lib.fl_new_shoe_ids(d, ffi.from_buffer("uint16_t[]", out16), out16.size), "new_shoe")
        return out16
    out8 = np.empty(d * 52, dtype=np.uint8)
    check(lib.fl_new_shoe_codes(d, ffi.from_buffer("uint8_t[]", out8), out8.size), "new_shoe")
    return out8


def shuffle(cards: np.ndarray, rng: BitGenerator) -> None:
    """Fisher-Yates (Durstenfeld) shuffle of a 1-D uint8 or uint16 array, in place.

    Indexes are drawn several to a 64-bit word, unbiased (batched Lemire method).  Raises
    TypeError for another dtype, ValueError for a non-contiguous or read-only array.
    """
    arr = _writable_c_array(cards, "cards", (np.uint8, np.uint16), 1)
    ptr = rng_ptr(rng)
    with rng._lock:
        if arr.dtype == np.uint8:
            status = lib.fl_shuffle_u8(ptr, ffi.from_buffer("uint8_t[]", arr), arr.size)
        else:
            status = lib.fl_shuffle_u16(ptr, ffi.from_buffer("uint16_t[]", arr), arr.size)
    check(status, "shuffle")


def shuffle_batch(
    rng: BitGenerator,
    n_shoes: int | None = None,
    decks: int = 6,
    *,
    ids: bool = False,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``n_shoes`` independently shuffled shoes of ``decks`` decks, in one C call.

    Each row is a Fisher-Yates shuffle of a new shoe (see :func:`new_shoe`).  Rows are
    shuffled four at a time from ``rng``, their index draws taking turns (four independent
    dependency chains in flight), then the last ``n_shoes % 4`` rows one at a time; so a seed
    gives the same batch every time, and a batch of 4k shoes followed by another batch equals
    one batch of both sizes together.  Returns an
    ``(n_shoes, decks * 52)`` C-contiguous array: uint8 codes, or uint16 ids when ``ids``.
    ``out`` (optional) is a caller-owned array of that shape and dtype to fill instead, in
    which case ``n_shoes`` may be omitted.
    """
    d = check_decks(decks)
    dtype = np.uint16 if ids else np.uint8
    if out is None:
        if n_shoes is None:
            raise TypeError("give n_shoes (the number of shoes) or out (an array to fill)")
        n = as_int(n_shoes, "n_shoes", 0, 1 << 40)
        arr = np.empty((n, d * 52), dtype=dtype)
    else:
        arr = _writable_c_array(out, "out", (dtype,), 2)
        if arr.shape[1] != d * 52:
            raise ValueError(f"out must have {d * 52} columns for {d} decks, got {arr.shape[1]}")
        if n_shoes is not None and as_int(n_shoes, "n_shoes", 0, 1 << 40) != arr.shape[0]:
            raise ValueError(f"n_shoes={n_shoes} disagrees with out.shape[0]={arr.shape[0]}")
        n = arr.shape[0]
    ptr = rng_ptr(rng)
    with rng._lock:
        if ids:
            status = lib.fl_shuffle_batch_ids(ptr, d, ffi.from_buffer("uint16_t[]", arr), n)
        else:
            status = lib.fl_shuffle_batch_codes(ptr, d, ffi.from_buffer("uint8_t[]", arr), n)
    check(status, "shuffle_batch")
    return arr


MAX_MODEL_CARDS: int = int(lib.FL_MAX_MODEL_CARDS)
MAX_SHELVES: int = int(lib.FL_MAX_SHELVES)


def _model_array(cards: object) -> np.ndarray:
    arr = _writable_c_array(cards, "cards", (np.uint8, np.uint16), 1)
    if arr.size > MAX_MODEL_CARDS:
        raise ValueError(f"cards must hold at most {MAX_MODEL_CARDS} cards, got {arr.size}")
    return arr


def riffle_shuffle(cards: np.ndarray, rng: BitGenerator, passes: int = 1) -> None:
    """``passes`` Gilbert-Shannon-Reeds riffles of a 1-D uint8/uint16 array, in place.

    Index 0 is the top card.  Each riffle cuts at a Binomial(n, 1/2) position and interleaves
    with every interleaving equally likely (D. Bayer and P. Diaconis, "Trailing the dovetail
    shuffle to its lair", Ann. Appl. Probab. 2(2), 1992).  At most 4096 cards; ``passes`` >= 0.
    Raises TypeError/ValueError for a bad array or count.
    """
    arr = _model_array(cards)
    k = as_int(passes, "passes", 0, 1 << 16)
    ptr = rng_ptr(rng)
    with rng._lock:
        if arr.dtype == np.uint8:
            st = lib.fl_riffle_u8(ptr, ffi.from_buffer("uint8_t[]", arr), arr.size, k)
        else:
            st = lib.fl_riffle_u16(ptr, ffi.from_buffer("uint16_t[]", arr), arr.size, k)
    check(st, "riffle_shuffle")


def shelf_shuffle(cards: np.ndarray, rng: BitGenerator, shelves: int, passes: int = 1) -> None:
    """``passes`` passes of a 1-D uint8/uint16 array through a ``shelves``-shelf machine, in
    place.

    Each card in turn from the top goes to a uniformly chosen shelf, on top of or under the
    cards already there with probability 1/2; shelves unload in order, shelf 0 on top (P.
    Diaconis, J. Fulman and S. Holmes, "Analysis of casino shelf shuffling machines", Ann. Appl.
    Probab. 23(4), 2013).  ``shelves`` in 1..256, at most 4096 cards.
    """
    arr = _model_array(cards)
    m = as_int(shelves, "shelves", 1, MAX_SHELVES)
    k = as_int(passes, "passes", 0, 1 << 16)
    ptr = rng_ptr(rng)
    with rng._lock:
        if arr.dtype == np.uint8:
            st = lib.fl_shelf_u8(ptr, ffi.from_buffer("uint8_t[]", arr), arr.size, m, k)
        else:
            st = lib.fl_shelf_u16(ptr, ffi.from_buffer("uint16_t[]", arr), arr.size, m, k)
    check(st, "shelf_shuffle")


NO_POSITION: int = int(lib.FL_NO_POSITION)
"""The input position written in the last column of a ``missing`` shoe (65535)."""

MAX_MODEL_PASSES: int = int(lib.FL_MAX_MODEL_PASSES)

MODEL_PARAMS: dict[str, tuple[str, ...]] = {
    "fisher-yates": (),
    "riffle": ("k",),
    "shelf": ("m", "passes"),
    "overhand": ("passes", "cut"),
    "strip": ("cuts", "passes"),
    "position-bias": ("pos", "stay", "width"),
    "naive": (),
    "modulo": ("bits",),
    "lcg": ("shift",),
    "short-seed": ("bits",),
    "reboot": ("every",),
    "stuck": ("pos",),
    "missing": ("pos",),
    "duplicate": ("pos",),
}
"""The C core's shuffle models (native/src/models.c) and their parameters, in the order the
core takes them.  Names, defaults and ranges: :mod:`feltlab.rig.devices.models`."""

_MODEL_KIND = {
    k: int(getattr(lib, "FL_MODEL_" + k.upper().replace("-", "_"))) for k in MODEL_PARAMS
}
_U32_MAX = (1 << 32) - 1


class ModelStream:
    """One shuffle model of the C core's library and the state a device keeps across shoes
    (the LCG's state, the power-up generator of ``reboot``), drawing from the caller's
    generator.  ``kind``: a key of :data:`MODEL_PARAMS`; ``params``: every one of its keys,
    as integers (defaults are :func:`feltlab.rig.devices.models.parse_model`'s).

    Raises ValueError for an unknown kind, a missing or unknown key or a value out of range
    (the ranges of docs/certification.md, "The library of shuffle models").  Thread-safe (a
    lock a stream); the core releases the GIL.
    """

    def __init__(self, kind: str, params: Mapping[str, int] | None = None) -> None:
        keys = MODEL_PARAMS.get(kind)
        if keys is None:
            raise ValueError(
                f"unknown shuffle model kind {kind!r}; known: {', '.join(MODEL_PARAMS)}"
            )
        given = dict(params or {})
        if set(given) != set(keys):
            raise ValueError(
                f"model {kind} takes exactly the parameters ({', '.join(keys) or 'none'}), "
                f"got ({', '.join(sorted(given)) or 'none'})"
            )
        values = [as_int(given[k], f"{kind} {k}", 0, _U32_MAX) for k in keys]
        self.kind = kind
        self.params: dict[str, int] = dict(zip(keys, values, strict=True))
        self._state: Any = ffi.new("fl_model_stream *")
        self._lock = threading.Lock()
        st = lib.fl_model_init(
            self._state, _MODEL_KIND[kind], ffi.new("uint32_t[]", values or [0]), len(values)
        )
        if st == lib.FL_ERR_RANGE:
            raise ValueError(
                f"model {kind}: a parameter is out of range ({self.params}); see the library's "
                "ranges in docs/certification.md"
            )
        check(st, "model")

    @property
    def shoes_drawn(self) -> int:
        """Shoes this stream has drawn so far."""
        return int(self._state.shoes)

    def _check_cards(self, n_cards: object) -> int:
        n = as_int(n_cards, "n_cards", 0, MAX_MODEL_CARDS)
        p = self.params
        if "pos" in p and p["pos"] >= n:
            raise ValueError(
                f"model {self.kind}: pos={p['pos']} is not a card of a {n}-card shoe: "
                f"give pos in 0..{n - 1}"
            )
        if self.kind == "strip" and p["cuts"] > max(n - 1, 0):
            raise ValueError(
                f"model strip: {p['cuts']} cuts do not fit the {max(n - 1, 0)} gaps of a "
                f"{n}-card shoe"
            )
        if self.kind == "duplicate" and n < 2:
            raise ValueError("model duplicate needs a shoe of at least 2 cards")
        return n

    def shoes(
        self, rng: BitGenerator, n_shoes: int, n_cards: int, *, out: np.ndarray | None = None
    ) -> npt.NDArray[np.uint16]:
        """``n_shoes`` shoes of ``n_cards`` cards, one C call: an ``(n_shoes, n_cards)`` uint16
        array of input positions (row r, column c: the loaded position of the card dealt c-th
        in shoe r; each shoe starts from the loaded order 0..n-1), drawn from ``rng`` in row
        order.  A ``missing`` shoe has :data:`NO_POSITION` in its last column.  ``out``: a
        caller-owned C-contiguous uint16 array of that shape to fill instead.

        Raises ValueError for a size out of range or a parameter the shoe cannot take (a
        ``pos`` beyond it), TypeError for a bad ``rng`` or ``out``.
        """
        n = self._check_cards(n_cards)
        rows = as_int(n_shoes, "n_shoes", 0, 1 << 40)
        if out is None:
            arr = np.empty((rows, n), dtype=np.uint16)
        else:
            arr = _writable_c_array(out, "out", (np.uint16,), 2)
            if arr.shape != (rows, n):
                raise ValueError(f"out must have shape {(rows, n)}, got {arr.shape}")
        ptr = rng_ptr(rng)
        with rng._lock, self._lock:
            st = lib.fl_model_shoes(self._state, ptr, ffi.from_buffer("uint16_t[]", arr), rows, n)
        check(st, f"model {self.kind}")
        return arr

    def shoe(self, rng: BitGenerator, n_cards: int) -> npt.NDArray[np.uint16]:
        """One shoe's input positions, shape ``(n_cards,)`` (``missing``: ``n_cards - 1``)."""
        row: npt.NDArray[np.uint16] = self.shoes(rng, 1, n_cards).reshape(-1)
        return row[:-1].copy() if self.kind == "missing" and row.size else row

    def __repr__(self) -> str:
        return f"<ModelStream {self.kind} {self.params} shoes={self.shoes_drawn}>"


@functools.cache
def core_digest() -> str:
    """The hex SHA-256 of the compiled core's shared library file (``_core``'s): a key part
    for figures the C code computes, new whenever the core is rebuilt with other code or
    flags (``feltlab.rig.certify.power``'s cached rows).  A library that cannot be read
    gives a digest of this process alone (nothing cached under it is reused)."""
    spec = importlib.util.find_spec(f"{__package__}._core")  # the library lib and ffi are
    try:
        with open(str(spec.origin if spec is not None else ""), "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return hashlib.sha256(f"unreadable {os.getpid()} {id(spec)}".encode()).hexdigest()


def core_info() -> dict[str, str]:
    """The compiled core's version, compiler and compile flags."""
    return {
        "version": ffi.string(lib.fl_core_version()).decode(),
        "compiler": ffi.string(lib.fl_core_compiler()).decode(),
        "flags": ffi.string(lib.fl_core_flags()).decode(),
    }
