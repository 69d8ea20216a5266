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
from feltlab.seeds import child_seed

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
