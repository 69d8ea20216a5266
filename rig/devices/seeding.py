"""A simulated batch shuffler's seeding (the ``seeding`` device option, issue 40;
docs/security.md, "Predictability"): each shoe a Fisher-Yates shuffle of the loaded order by
a declared generator, reseeded at each shuffle from a declared source of a declared width,
the way the Deck Mate 2's generator was seeded from a timer (IOActive, Black Hat 2023).

Grammar (:func:`parse_seeding`): ``GENERATOR:SOURCE:BITS[:DIRECTION[:SCALING]]``, e.g.
``msvc-rand:timer-ms:20`` (MSVC's ``rand()`` seeded by the low 20 bits of the milliseconds
since power-up) or ``mt19937:timer-ms:32``.  The names are those of a profile's
``[predictability]`` table (:mod:`feltlab.native.seedsearch`'s generators, scalings and
directions); the seed is, at each SHUFFLE:

- ``timer-ms`` / ``timer-us``: the device clock's milliseconds / microseconds since the
  device last booted, mod 2^BITS;
- ``clock``: whole seconds of the device clock, mod 2^BITS;
- ``counter``: the shoes shuffled since power-up (the first shoe 1), mod 2^BITS;
- ``entropy``: BITS bits of the device's ChaCha20 generator.

The shoe is :func:`feltlab.native.seedsearch.shuffle` of that seed (the C core's shuffle,
which ``feltlab certify predict`` replays), so a device's shoes are exactly what its
declaration says.  BITS is 1..64 (the C core's seed).  A device on simulated time is
deterministic: its timer reads the simulated clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native import ChaCha20
from feltlab.native.seedsearch import DIRECTIONS, GENERATORS, SCALINGS, shuffle

SOURCES = ("timer-ms", "timer-us", "clock", "counter", "entropy")
"""The seed sources a simulated device can read (a profile's ``seed_source`` names)."""

MAX_BITS = 64


@dataclass(frozen=True)
class Seeding:
    """How a simulated shuffler seeds its generator at each shuffle (module docstring):
    ``generator``, ``source`` (:data:`SOURCES`), ``bits`` (1..64), ``direction``,
    ``scaling``."""

    generator: str
    source: str
    bits: int
    direction: str = "down"
    scaling: str = "modulo"

    def __post_init__(self) -> None:
        for value, names, what in (
            (self.generator, GENERATORS, "generator"),
            (self.source, SOURCES, "source"),
            (self.direction, DIRECTIONS, "direction"),
            (self.scaling, SCALINGS, "scaling"),
        ):
            if value not in names:
                raise ValueError(
                    f"seeding: unknown {what} {value!r}; choose one of {', '.join(names)}"
                )
        if not 1 <= self.bits <= MAX_BITS:
            raise ValueError(f"seeding: BITS must be 1..{MAX_BITS}, got {self.bits}")

    def seed(self, uptime: float, now: float, shoes: int, rng: ChaCha20) -> int:
        """The seed of a shuffle at ``uptime`` seconds since boot and ``now`` on the device
        clock, the ``shoes``-th shoe since power-up, ``rng`` the device's generator."""
        mask = (1 << self.bits) - 1
        if self.source == "timer-ms":
            return int(uptime * 1000) & mask
        if self.source == "timer-us":
            return int(uptime * 1_000_000) & mask
        if self.source == "clock":
            return int(now) & mask
        if self.source == "counter":
            return shoes & mask
        return int(rng.random_raw(1)[0]) & mask

    def permutation(self, seed: int, n_cards: int) -> npt.NDArray[np.uint16]:
        """The positions of the loaded order dealt (``(n_cards,)`` uint16, dealt order):
        the declared shuffle of ``0..n_cards-1`` seeded by ``seed``."""
        return shuffle(self.generator, self.scaling, self.direction, seed, n_cards)

    def declaration(self) -> dict[str, Any]:
        """The ``[predictability]`` keys that declare this seeding (without ``decks``)."""
        return {
            "generator": self.generator,
            "seed_bits": self.bits,
            "seed_source": self.source,
            "direction": self.direction,
            "scaling": self.scaling,
        }

    def __str__(self) -> str:
        return f"{self.generator}:{self.source}:{self.bits}:{self.direction}:{self.scaling}"


def parse_seeding(text: str) -> Seeding:
    """The :class:`Seeding` of ``GENERATOR:SOURCE:BITS[:DIRECTION[:SCALING]]``.  Raises
    ValueError naming the part that is wrong and the form."""
    if not isinstance(text, str):
        raise ValueError(
            f"seeding must be a string GENERATOR:SOURCE:BITS (e.g. msvc-rand:timer-ms:20), "
            f"got {text!r}"
        )
    parts = [p.strip() for p in text.split(":")]
    if not 3 <= len(parts) <= 5:
        raise ValueError(
            f"seeding {text!r}: give GENERATOR:SOURCE:BITS[:DIRECTION[:SCALING]], e.g. "
            "msvc-rand:timer-ms:20"
        )
    try:
        bits = int(parts[2], 0)
    except ValueError:
        raise ValueError(f"seeding {text!r}: BITS {parts[2]!r} is not an integer") from None
    return Seeding(parts[0], parts[1], bits, *parts[3:])


__all__ = ["MAX_BITS", "SOURCES", "Seeding", "parse_seeding"]
