"""Seed derivation: how one user-given seed becomes every generator of a run.

One home for the seed tree of simulate, the tournament and the rig's campaigns (as NumPy's
``SeedSequence`` is for NumPy): a child seed is a hash of the parent seed and a label path, so
any seed 0..2^64-1 gives valid, independent children, and no child is an overflowing
``seed * k + i``.

A changed derivation changes what a seed reproduces, so it is versioned:
:data:`SEED_DERIVATION_VERSION` goes into every record that carries a seed (the simulation
result, the tournament result, the certification record).  Version 1 is the derivation of
feltlab 0.1, kept bit for bit:

- :func:`derive_seed`: SHA-256 of ``"<domain>:<seed>:<label>:..."`` (labels joined by ``:``),
  the first ``bits / 8`` bytes read little-endian.  The domain names the purpose:
  :data:`CHILD` (the rig's child seeds, 64 bits), :data:`DEVICE_PART` (a simulated device's
  seed for one collection part, 64 bits) and :data:`STREAM` (no domain: the 256-bit ChaCha20
  keys of tournament tables, sessions and bots).
- :func:`chunk_generator`: chunk ``i`` of a simulation draws from xoshiro256** seeded with the
  seed and jumped ``i + 1`` times (2^128 outputs per jump), so chunks never overlap and a seed
  gives the same result on any number of workers.

What a seed reproduces also depends on the C simulator that consumes the chunk generators:
``feltlab.native.SIM_VERSION`` (``FL_SIM_VERSION`` in native/include/feltlab_core.h).
Simulator version 2 (issue 17) prepares shoes four at a time, shoe ``k`` of a chunk drawn from
the chunk generator long-jumped ``k % 4`` times; version 1 dealt every shoe from the chunk
generator itself.  The derivation of the chunk generators is unchanged (still version 1), so
a simulation result records both: ``seed_derivation`` and ``simulator_version``.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from feltlab import native

SEED_DERIVATION_VERSION = 1
"""The version of the derivation below; recorded beside every seed."""

U64_MAX = (1 << 64) - 1

CHILD = "feltlab-seed"
"""Domain of the rig's child seeds (power simulations, null replicates): 64-bit seeds."""
DEVICE_PART = "feltlab"
"""Domain of a simulated device's ChaCha20 seed for one collection part: 64-bit seeds."""
STREAM = ""
"""No domain: the 256-bit ChaCha20 keys of tournament tables, sessions and bots."""


def derive_seed(seed: int, *labels: object, domain: str = CHILD, bits: int = 64) -> int:
    """The child seed named by ``labels`` under ``seed`` in ``domain`` (see the module
    docstring): an int of ``bits`` bits (8..256, a multiple of 8).

    Raises ValueError for a negative seed or a bit count outside 8..256.
    """
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    if not (8 <= bits <= 256 and bits % 8 == 0):
        raise ValueError(f"bits must be a multiple of 8 in 8..256, got {bits}")
    parts = (domain, seed, *labels) if domain else (seed, *labels)
    text = ":".join(str(x) for x in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[: bits // 8], "little")


def child_seed(seed: int, *labels: int | str) -> int:
    """The 64-bit seed of the child ``labels`` of ``seed`` (domain :data:`CHILD`)."""
    return derive_seed(seed, *labels, domain=CHILD)


def part_seed(seed: int, part: int) -> int:
    """The simulated device's 64-bit ChaCha20 seed for collection part ``part`` (domain
    :data:`DEVICE_PART`): a resumed campaign restarts the device on a new, independent
    stream, never a repeat of the last part's."""
    return derive_seed(seed, part, domain=DEVICE_PART)


def stream_key(seed: int, *labels: object) -> int:
    """A 256-bit ChaCha20 key for the stream named by ``labels`` under ``seed`` (domain
    :data:`STREAM`): every tournament table, session and bot has its own stream."""
    return derive_seed(seed, *labels, domain=STREAM, bits=256)


_LAST_CHUNK: dict[int, tuple[int, dict[str, Any]]] = {}  # seed -> (chunk, its generator's state)
_LAST_CHUNK_LOCK = threading.Lock()


def chunk_generator(seed: int, chunk: int) -> native.Xoshiro256StarStar:
    """The generator of simulation chunk ``chunk`` (0-based) of ``seed``: xoshiro256** seeded
    with ``seed`` and jumped ``chunk + 1`` times.

    The state of the last chunk made for each seed is kept (a few seeds at once), so that a
    run asking for chunks 0, 1, 2, ... jumps once a chunk instead of ``chunk + 1`` times
    (the whole run was quadratic in its number of chunks: ``simulate --chunk 7``).  The same
    generator either way: jumps compose."""
    with _LAST_CHUNK_LOCK:
        last = _LAST_CHUNK.get(seed)
    if last is not None and last[0] <= chunk:
        g = native.Xoshiro256StarStar(0)
        g.setstate(last[1])
        jumps = chunk - last[0]
    else:
        g = native.Xoshiro256StarStar(seed)
        jumps = chunk + 1
    for _ in range(jumps):
        g.jump()
    with _LAST_CHUNK_LOCK:
        if len(_LAST_CHUNK) >= 16:
            _LAST_CHUNK.clear()
        _LAST_CHUNK[seed] = (chunk, g.getstate())
    return g


__all__ = [
    "CHILD",
    "DEVICE_PART",
    "SEED_DERIVATION_VERSION",
    "STREAM",
    "U64_MAX",
    "child_seed",
    "chunk_generator",
    "derive_seed",
    "part_seed",
    "stream_key",
]
