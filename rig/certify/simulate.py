"""Simulated shoes from the C core's shuffle models (:func:`simulate_shoes`): the named
alternatives the battery's power is computed against (:mod:`feltlab.rig.certify.power`).
Re-exported by :mod:`feltlab.rig.certify.battery`."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from feltlab import native

SHUFFLE_MODELS = ("fisher-yates", "riffle:k=N", "shelf:m=N[,passes=P]")


def simulate_shoes(model: str, n_shoes: int, n_cards: int, seed: int) -> npt.NDArray[np.uint16]:
    """``(n_shoes, n_cards)`` uint16 input positions produced by a shuffle model of the C core:
    ``fisher-yates``, ``riffle:k=N`` (N GSR riffles) or ``shelf:m=N[,passes=P]``.  Each shoe
    starts from the loaded order 0..n-1.  Raises ValueError for an unknown model."""
    rng = native.Xoshiro256StarStar(seed)
    kind, _, params = model.partition(":")
    kv = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
    out = np.empty((n_shoes, n_cards), dtype=np.uint16)
    base = np.arange(n_cards, dtype=np.uint16)
    try:
        for row in out:
            row[:] = base
            if kind == "fisher-yates":
                native.shuffle(row, rng)
            elif kind == "riffle":
                native.riffle_shuffle(row, rng, int(kv["k"]))
            elif kind == "shelf":
                native.shelf_shuffle(row, rng, int(kv["m"]), int(kv.get("passes", 1)))
            else:
                raise KeyError(kind)
    except (KeyError, ValueError) as exc:
        raise ValueError(f"unknown shuffle model {model!r}; use one of {SHUFFLE_MODELS}") from exc
    return out
