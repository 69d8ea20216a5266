"""Simulated shoes from the C core's shuffle models (:func:`simulate_shoes`): the named
alternatives the battery's power is estimated against (:func:`estimate_power`).  Both are
re-exported by :mod:`feltlab.rig.certify.battery`."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rig.devices.models import MODEL_NAMES, ShuffleModel, parse_model
from feltlab.rig.errors import ModelError
from feltlab.seeds import child_seed

SHUFFLE_MODELS = MODEL_NAMES
"""The shuffle model kinds :func:`simulate_shoes` takes (the grammar:
:mod:`feltlab.rig.devices.models`)."""


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


def estimate_power(
    model: str,
    n_shoes: int,
    n_cards: int,
    *,
    alpha: float = 0.01,
    replicates: int = 20,
    seed: int = 0,
    loaded_ids: npt.ArrayLike | None = None,
    workers: int | None = None,
) -> dict[str, float]:
    """The fraction of ``replicates`` simulated campaigns of ``n_shoes`` shoes from ``model``
    that each check rejects (Holm-adjusted, at ``alpha``): each check's power against that
    named alternative at this sample size.  Also the battery's overall power, as "battery".
    ``loaded_ids`` (the ``n_cards`` physical ids of the loaded order, as the campaign's):
    the simulated shoes' card codes, so that the checks of the delivered cards (adjacent rank
    pairs) are in the power runs too, and Holm's correction runs over the same family as the
    campaign's battery.

    The replicates run on ``workers`` threads (default: up to 4, the C core releases the
    GIL); each has its own seed, ``child_seed(seed, "power", model, r)``, so the estimate does
    not depend on them."""

    from feltlab.rig.certify.battery import BatteryResult, Verdict, run_battery

    loaded = None if loaded_ids is None else np.asarray(loaded_ids, dtype=np.int64)

    def replicate(r: int) -> BatteryResult:
        shoes = simulate_shoes(model, n_shoes, n_cards, child_seed(seed, "power", model, r))
        codes = None if loaded is None else np.ascontiguousarray((loaded[shoes] % 52), np.uint8)
        return run_battery(shoes, alpha=alpha, codes=codes)

    if workers is None:
        workers = min(os.cpu_count() or 1, 4)
    workers = max(1, min(replicates, workers))
    with ThreadPoolExecutor(workers, thread_name_prefix="feltlab-power") as pool:
        results = list(pool.map(replicate, range(replicates)))
    hits: dict[str, int] = {}
    for res in results:
        for c in res.checks:
            hits[c.name] = hits.get(c.name, 0) + (c.verdict is Verdict.FAIL)
        hits["battery"] = hits.get("battery", 0) + (res.verdict is Verdict.FAIL)
    return {k: v / replicates for k, v in hits.items()}


@dataclass(frozen=True)
class PowerJob:
    """The arguments of one :func:`estimate_power` run, hashable, so that a helper process
    can compute it while the campaign collects (:mod:`feltlab.rig.certify.ahead`).
    ``loaded_ids``: the loaded order's physical ids as int64 bytes (None: codes unknown)."""

    model: str
    n_shoes: int
    n_cards: int
    alpha: float
    replicates: int
    seed: int
    loaded_ids: bytes | None = None

    @classmethod
    def of(
        cls,
        model: str,
        n_shoes: int,
        n_cards: int,
        *,
        alpha: float,
        replicates: int,
        seed: int,
        loaded_ids: npt.ArrayLike | None = None,
    ) -> PowerJob:
        ids = None if loaded_ids is None else np.asarray(loaded_ids, dtype=np.int64).tobytes()
        return cls(model, int(n_shoes), int(n_cards), float(alpha), int(replicates), int(seed), ids)

    def compute(self, workers: int | None = None) -> dict[str, float]:
        """:func:`estimate_power` of these arguments, in this process."""
        ids = None if self.loaded_ids is None else np.frombuffer(self.loaded_ids, np.int64)
        return estimate_power(
            self.model,
            self.n_shoes,
            self.n_cards,
            alpha=self.alpha,
            replicates=self.replicates,
            seed=self.seed,
            loaded_ids=ids,
            workers=workers,
        )

    def run(self) -> dict[str, float]:
        """The estimate: the helper process's (:func:`feltlab.rig.certify.ahead.computed_ahead`)
        when it computed this very job, else :meth:`compute` here; the same either way."""
        from feltlab.rig.certify.ahead import computed_ahead

        got = computed_ahead(self)
        return got if isinstance(got, dict) else self.compute()
