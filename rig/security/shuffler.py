"""A seeded shuffler as its profile declares it (docs/security.md, "Predictability"): the
generator, the seeding (its width in bits and its source) and the shuffle (the Fisher-Yates
direction and how a draw is scaled to a range); and the shoe such a shuffler deals from a
seed, computed in Python from the library of generators (:mod:`feltlab.rig.rng.generators`),
the simulated timer-seeded shuffler of ``feltlab certify predict --simulate``.

The shuffle is of the card ids ``0..52 decks - 1`` in factory order (a card's code is its id
mod 52), dealt from index 0 (native/src/seedsearch.c's comment gives both directions and the
three scalings).  ``tests/security/test_seedsearch.py`` checks that the C core's shuffle
(:func:`feltlab.native.seedsearch.shuffle`) is this one, bit for bit, for every generator,
scaling and direction.

A profile declares it in a ``[predictability]`` table (TOML)::

    [predictability]
    generator = "msvc-rand"       # a generator of feltlab.native.seedsearch.GENERATORS
    seed_bits = 32                # the seed's width
    seed_source = "timer-ms"      # timer-ms, timer-us, clock, counter, entropy
    direction = "down"            # Fisher-Yates: down (Durstenfeld) or up
    scaling = "modulo"            # modulo, multiply-shift, rejection
    decks = 6
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.inputs import read_text_regular
from feltlab.native.seedsearch import DIRECTIONS, GENERATORS, SCALINGS, SEED_BITS, WORD_BITS
from feltlab.rig.errors import DeclarationError
from feltlab.rig.rng.generators import (
    chacha_words,
    glibc_seed,
    java_seed,
    lcg_states,
    mt19937_outputs,
    xorshift128p_outputs,
)
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS

SOURCES: dict[str, str] = {
    "timer-ms": "milliseconds since power-up",
    "timer-us": "microseconds since power-up",
    "clock": "seconds of the wall clock",
    "counter": "shuffles counted",
    "entropy": "bits of an entropy source",
}
"""The seed's source, by name, to what one unit of the seed is."""

_UNIT_SECONDS = {"timer-ms": 1e-3, "timer-us": 1e-6, "clock": 1.0}

MAX_SEED_BITS = 256
"""The widest seed declared (a 256-bit key); more than 64 bits is never searched."""


@dataclass(frozen=True)
class Declaration:
    """A seeded shuffler: ``generator`` (a name of :data:`feltlab.native.seedsearch
    .GENERATORS`), ``seed_bits`` (1..256) and ``seed_source`` (:data:`SOURCES`), the shuffle's
    ``direction`` (``down``/``up``) and ``scaling`` (``modulo``, ``multiply-shift``,
    ``rejection``), ``decks`` (1..8); ``seed_range`` ``(lo, hi)`` inclusive narrows the seeds
    searched (None: ``0 .. 2^seed_bits - 1``)."""

    generator: str
    seed_bits: int
    seed_source: str = "timer-ms"
    direction: str = "down"
    scaling: str = "modulo"
    decks: int = 6
    seed_range: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for value, table, what in (
            (self.generator, GENERATORS, "generator"),
            (self.seed_source, SOURCES, "seed_source"),
            (self.direction, DIRECTIONS, "direction"),
            (self.scaling, SCALINGS, "scaling"),
        ):
            if value not in table:
                raise DeclarationError(
                    f"unknown {what} {value!r}; choose one of {', '.join(table)}"
                )
        if not 1 <= self.seed_bits <= MAX_SEED_BITS:
            raise DeclarationError(f"seed_bits must be in 1..{MAX_SEED_BITS}, got {self.seed_bits}")
        if not ANY_MIN_DECKS <= self.decks <= MAX_DECKS:
            raise DeclarationError(
                f"decks must be in {ANY_MIN_DECKS}..{MAX_DECKS}, got {self.decks}"
            )
        if self.seed_range is not None:
            lo, hi = self.seed_range
            if not 0 <= lo <= hi < 1 << self.seed_bits:
                raise DeclarationError(
                    f"seed range {lo}:{hi} is not within 0..2^{self.seed_bits} - 1: give "
                    "LO:HI with LO <= HI inside the declared seed width"
                )

    @property
    def cards(self) -> int:
        """Cards in the shoe."""
        return 52 * self.decks

    @property
    def effective_bits(self) -> int:
        """The seed bits the generator keeps: the declared width, or the generator's own
        (:data:`feltlab.native.seedsearch.SEED_BITS`) when narrower: MT19937 seeded with 64
        bits has 2^32 distinct shoes."""
        return min(self.seed_bits, SEED_BITS[self.generator])

    @property
    def bounds(self) -> tuple[int, int]:
        """The seeds searched, ``(lo, hi)`` inclusive: the declared range, else every seed
        of :attr:`effective_bits` bits."""
        return self.seed_range or (0, (1 << self.effective_bits) - 1)

    @property
    def space(self) -> int:
        """How many seeds the declaration allows."""
        lo, hi = self.bounds
        return hi - lo + 1

    def meaning(self) -> str:
        """What the seed space is in the source's units, e.g. ``2^20 milliseconds since
        power-up (17.5 minutes)``."""
        text = f"{self.space:,} {SOURCES[self.seed_source]}"
        unit = _UNIT_SECONDS.get(self.seed_source)
        if unit is not None:
            text += f" ({human_seconds(self.space * unit)})"
        return text

    def describe(self) -> dict[str, Any]:
        """The record's ``declaration``."""
        out = asdict(self)
        out["seed_range"] = list(self.bounds)
        out["word_bits"] = WORD_BITS[self.generator]
        out["effective_seed_bits"] = self.effective_bits
        return out


def human_seconds(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it at least 1: s, minutes, hours, days,
    years (365.25 days); years over 10^6 in scientific notation."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600)):
        if seconds >= size:
            value = seconds / size
            text = f"{value:.3g}" if value < 1e6 else f"{value:.2e}"
            return f"{text} {unit[:-1] if text == '1' else unit}"
    if seconds >= 60:
        text = f"{seconds / 60:.3g}"
        return f"{text} minute{'' if text == '1' else 's'}"
    return f"{seconds:.3g} s"


def parse_range(text: str) -> tuple[int, int]:
    """``LO:HI`` (decimal or 0x hex, inclusive) as a pair.  DeclarationError otherwise."""
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(lo.strip(), 0), int(hi.strip(), 0)
    except ValueError:
        raise DeclarationError(
            f"seed range {text!r}: give LO:HI, two integers (e.g. 0:1048575)"
        ) from None


_KEYS = ("generator", "seed_bits", "seed_source", "direction", "scaling", "decks", "seed_range")
_TYPES: dict[str, type] = {
    "generator": str,
    "seed_bits": int,
    "seed_source": str,
    "direction": str,
    "scaling": str,
    "decks": int,
}


def load_declaration(path: str | Path | None, overrides: Mapping[str, Any]) -> Declaration:
    """The declaration of the profile ``path``'s ``[predictability]`` table (None: none),
    each key of ``overrides`` that is not None put over it.  Raises DeclarationError for an
    unreadable profile, an unknown key, a missing generator or seed width, or a bad value."""
    table: dict[str, Any] = {}
    if path is not None:
        text = read_text_regular(path, "profile", 1 << 20, DeclarationError)
        if text is None:
            raise DeclarationError(f"profile {path} does not exist")
        try:
            table = dict(tomllib.loads(text).get("predictability", {}))
        except (tomllib.TOMLDecodeError, TypeError, ValueError) as exc:
            raise DeclarationError(f"profile {path}: {exc}") from None
    return declaration_from_table(
        table, overrides, where=None if path is None else f"profile {path}"
    )


def declaration_from_table(
    table: Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    where: str | None = None,
) -> Declaration:
    """The declaration of a ``[predictability]`` table (a parsed profile's, or a device's
    :meth:`feltlab.rig.devices.seeding.Seeding.declaration`), each key of ``overrides`` that
    is not None put over it; ``where`` names the table's file in errors.  Raises
    DeclarationError for an unknown key, a missing generator or seed width, or a bad
    value."""
    table = dict(table)
    if where is not None:
        unknown = sorted(set(table) - set(_KEYS))
        if unknown:
            raise DeclarationError(
                f"{where}: unknown [predictability] key(s) {', '.join(unknown)}; "
                f"the keys are {', '.join(_KEYS)}"
            )
    table.update({k: v for k, v in (overrides or {}).items() if v is not None})
    for key in ("generator", "seed_bits"):
        if key not in table:
            raise DeclarationError(
                f"no {key} declared: give --{key.replace('_', '-')} or a profile whose "
                f"[predictability] table names it"
            )
    for key, kind in _TYPES.items():
        value = table.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            prefix = f"{where}: " if where is not None else ""
            raise DeclarationError(
                f"{prefix}{key} = {value!r} must be {'an integer' if kind is int else 'a string'}"
            )
    if isinstance(table.get("seed_range"), str):
        table["seed_range"] = parse_range(table["seed_range"])
    elif isinstance(table.get("seed_range"), list):
        table["seed_range"] = tuple(table["seed_range"])
    try:
        return Declaration(**table)
    except TypeError as exc:
        raise DeclarationError(f"bad declaration: {exc}") from None


# -- the library's shoe of a seed -----------------------------------------------------------


def _library_words(generator: str) -> Callable[[int, int], npt.NDArray[np.uint64]]:
    """``(seed, count) -> the generator's first count words`` from the library of
    generators (rig/rng/generators.py)."""
    if generator == "glibc-rand":
        return lambda s, n: lcg_states(1103515245, 12345, 31, glibc_seed(s), n)
    if generator == "msvc-rand":
        return lambda s, n: (
            (lcg_states(214013, 2531011, 32, s & 0xFFFFFFFF, n) >> np.uint64(16))
            & np.uint64(0x7FFF)
        )
    if generator == "java-random":
        return lambda s, n: lcg_states(0x5DEECE66D, 0xB, 48, java_seed(s), n) >> np.uint64(16)
    if generator == "mt19937":
        return mt19937_outputs
    if generator == "xorshift128+":
        return xorshift128p_outputs
    return chacha_words


class _Draws:
    """A generator's words drawn one by one and scaled as declared."""

    def __init__(self, decl: Declaration, seed: int) -> None:
        self.words = _library_words(decl.generator)
        self.seed = seed
        self.w = WORD_BITS[decl.generator]
        self.scaling = decl.scaling
        self.buf: list[int] = []
        self.at = 0

    def word(self) -> int:
        if self.at == len(self.buf):  # each count's words are a prefix of a longer count's
            self.buf = [int(x) for x in self.words(self.seed, max(1024, 2 * len(self.buf)))]
        self.at += 1
        return self.buf[self.at - 1]

    def below(self, r: int) -> int:
        x = self.word()
        if self.scaling == "modulo":
            return x % r
        if self.scaling == "multiply-shift":
            return (x * r) >> self.w
        limit = (1 << self.w) - (1 << self.w) % r
        while x >= limit:
            x = self.word()
        return x % r


def library_shoe(decl: Declaration, seed: int) -> npt.NDArray[np.uint16]:
    """The shoe (``(52 decks,)`` uint16 card ids, dealt order) the declared shuffler deals
    from ``seed`` (0..2^64-1), drawn from the library of generators in Python."""
    draws = _Draws(decl, seed)
    n = decl.cards
    a = list(range(n))
    for k in range(n - 1):
        if decl.direction == "down":
            i = n - 1 - k
            j = draws.below(i + 1)
        else:
            i = k
            j = i + draws.below(n - i)
        a[i], a[j] = a[j], a[i]
    return np.array(a, np.uint16)


def settle_order(direction: str, n: int) -> list[int]:
    """The dealt positions in the order the shuffle settles them for good: ``down`` n-1, n-2,
    ..., 0 (the last card of the shoe first); ``up`` 0, 1, ..., n-1."""
    return list(range(n - 1, -1, -1)) if direction == "down" else list(range(n))


def information_bits(codes: npt.NDArray[np.uint8], positions: list[int], decks: int) -> float:
    """``-log2`` of the chance that a uniformly shuffled shoe of ``decks`` decks deals the
    card codes of ``codes`` at ``positions``: the bits those cards carry (for one deck and the
    first six cards, log2 of 52 51 50 49 48 47 = 33.8)."""
    left = [decks] * 52
    n = 52 * decks
    bits = 0.0
    for t, p in enumerate(positions):
        c = int(codes[p])
        if left[c] == 0:
            return math.inf
        bits += math.log2((n - t) / left[c])
        left[c] -= 1
    return bits


__all__ = [
    "MAX_SEED_BITS",
    "SOURCES",
    "Declaration",
    "declaration_from_table",
    "human_seconds",
    "information_bits",
    "library_shoe",
    "load_declaration",
    "parse_range",
    "settle_order",
]
