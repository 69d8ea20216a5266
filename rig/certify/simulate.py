"""Simulated shoes from the C core's shuffle models (:func:`simulate_shoes`): the named
alternatives the battery's power is computed against (:mod:`feltlab.rig.certify.power`).
Re-exported by :mod:`feltlab.rig.certify.battery`."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rig.devices.models import ShuffleModel, parse_model
from feltlab.rig.errors import ModelError


def simulate_shoes(
    model: str | ShuffleModel, n_shoes: int, n_cards: int, seed: int
) -> npt.NDArray[np.uint16]:
    """``(n_shoes, n_cards)`` uint16 input positions produced by a shuffle model of the C
    core's library (any name of :func:`~feltlab.rig.devices.models.parse_model`, e.g.
    ``fisher-yates``, ``riffle:k=7``, ``shelf:m=10``, ``lcg``, ``short-seed:bits=12``), one C
    call.  Each shoe starts from the loaded order 0..n-1; row r, column c is the loaded
    position of the card dealt c-th in shoe r (``missing``: ``native.NO_POSITION`` in the
    last column).

    Seeding (reproducible): one :class:`native.ModelStream` driven by
    ``Xoshiro256StarStar(seed)``, shoes in row order; a stateful model takes its power-up
    state from that generator's first word (``lcg``: its low 31 bits; ``reboot``: the seed of
    its power-up xoshiro256**), so its state carries across the rows as on a device.
    ``fisher-yates``, ``riffle`` and ``shelf`` draw exactly as ``native.shuffle``,
    ``native.riffle_shuffle`` and ``native.shelf_shuffle`` called shoe by shoe.

    Raises ValueError (:class:`ModelError`) for an unknown model or one the shoe cannot take
    (a ``pos`` beyond ``n_cards``)."""
    m = parse_model(model) if isinstance(model, str) else model
    try:
        return m.stream().shoes(native.Xoshiro256StarStar(seed), n_shoes, n_cards)
    except ValueError as exc:
        raise ModelError(str(exc)) from None
