"""The binary expansions of pi, e, sqrt(2) and sqrt(3), 10^6 bits each: computed once (about
10 s of big-integer arithmetic, tests/rng/expansions.py) and kept in pytest's cache directory,
so later sessions read 125 kB files.  Under pytest-xdist the workers share that folder and take
turns under a file lock: the first computes, the others read its files (each worker computed
them on a fresh clone, 55 s a worker at load 10)."""

from __future__ import annotations

import fcntl

import numpy as np
import pytest

from .expansions import expansion_bits

N_BITS = 1_000_000
CONSTANTS = ("pi", "e", "sqrt2", "sqrt3")


@pytest.fixture(scope="session")
def expansions(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, np.ndarray]:
    """name -> (1, 125000) uint8, the first 10^6 bits packed MSB first."""
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    folder = cache.mkdir("sp800_22_expansions") if cache else tmp_path_factory.mktemp("bits")
    out = {}
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        for name in CONSTANTS:
            path = folder / f"{name}-{N_BITS}.bin"
            nbytes = N_BITS // 8
            if path.exists() and path.stat().st_size == nbytes:
                bits = np.fromfile(path, dtype=np.uint8)
            else:
                bits = expansion_bits(name, N_BITS)
                bits.tofile(path)
            out[name] = bits.reshape(1, nbytes)
    return out
