"""Child seeds of a campaign seed.

Every generator a campaign derives from its seed (the simulated device's stream per part, the
power simulations, the continuous shuffler's null replicates) gets its own 64-bit seed, hashed
from the campaign seed and a label path (SHA-256, like NumPy's ``SeedSequence``): any campaign
seed 0..2^64-1 gives valid, independent child seeds, never an overflowing ``seed * k + i``.
"""

from __future__ import annotations

import hashlib

U64_MAX = (1 << 64) - 1


def child_seed(seed: int, *path: int | str) -> int:
    """The 64-bit seed of the child ``path`` (labels and indexes) of ``seed``."""
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    text = "feltlab-seed:" + ":".join(str(x) for x in (seed, *path))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


__all__ = ["U64_MAX", "child_seed"]
