"""The continuous shuffler's return-gap check and its exact null distribution.

The declared model (the simulated device of :mod:`feltlab.rig.devices` and the bundled
``continuous.toml``): the shuffler holds its cards in ``slots`` slots; a returned card goes into
a slot chosen uniformly at random, at a depth chosen uniformly among the ``len(slot) + 1``
places; DEAL takes the top card of a slot chosen uniformly among the non-empty ones.

The campaign loads ``N`` cards (LOAD, replace: each card inserted by the same rule, in load
order), then repeats: DEAL a card, return it at once (INSERT).  For every returned card the
statistic records the *gap*: the number of cards dealt after its return before it appears
again.  Gaps of cards that have not reappeared by the end are censored (left out), identically
in the observed campaign and in its simulations.

The gaps of one campaign are dependent (they share the slots), so a plain chi-square p-value
would be wrong.  Instead the null distribution of the whole statistic is simulated exactly:
the campaign is replayed under the declared model with the same N, the same number of deals
and an independent seeded generator, ``replicates`` times.  Gap probabilities per bin come from
a separate pooled simulation; the statistic is Pearson's chi-square of the observed gap
histogram against them, and the p-value is the Monte Carlo rank
``(1 + #{T_sim >= T_obs}) / (replicates + 1)``, which is exact (valid at every sample size).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.cards import card_str
from feltlab.seeds import child_seed

BINS = 16


def simulate_gaps(
    n_cards: int, slots: int, deals: int, seed: int, buffer: int = 0
) -> npt.NDArray[np.int64]:
    """The return gaps of one simulated campaign of the declared model (see module doc), with
    a first-in first-out buffer of ``buffer`` returned cards before the slots (a card enters
    them when ``buffer`` later cards have been returned: its gap is at least ``buffer``; the
    ideal machine is ``slots=1``).  The same draws as without a buffer when ``buffer`` is 0."""
    rng = native.Xoshiro256StarStar(seed)
    words = rng.random_raw(2 * n_cards + 3 * deals).tolist()
    k = 0
    store: list[list[int]] = [[] for _ in range(slots)]

    def insert(card: int) -> None:
        nonlocal k
        s = store[(words[k] * slots) >> 64]
        s.insert((words[k + 1] * (len(s) + 1)) >> 64, card)
        k += 2

    for card in range(n_cards):
        insert(card)
    returned = [-1] * n_cards
    gaps: list[int] = []
    nonempty = [i for i in range(slots) if store[i]]
    held: deque[int] = deque()
    for t in range(deals):
        nonempty = [i for i in range(slots) if store[i]]
        if not nonempty:
            break
        slot = store[nonempty[(words[k] * len(nonempty)) >> 64]]
        k += 1
        card = slot.pop(0)
        if returned[card] >= 0:
            gaps.append(t - returned[card] - 1)
        held.append(card)
        if len(held) > buffer:
            insert(held.popleft())
        returned[card] = t
    return np.asarray(gaps, dtype=np.int64)


def observed_gaps(events: list[tuple[Any, ...]]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """The return gaps of a captured campaign and its integrity problems (a card dealt that
    the shuffler did not hold, named).  ``events`` from :mod:`feltlab.rig.certify.decode`."""
    inside: dict[tuple[int, int], int] = {}
    returned: dict[tuple[int, int], int] = {}
    gaps: list[int] = []
    problems: list[str] = []
    t = 0
    for ev in events:
        if ev[0] == "load":
            _, mode, codes, decks = ev
            if mode == 0:
                inside.clear()
                returned.clear()
            for c, d in zip(codes.tolist(), decks.tolist(), strict=True):
                inside[(c, d)] = inside.get((c, d), 0) + 1
        elif ev[0] == "insert":
            key = (int(ev[1]), int(ev[2]))
            inside[key] = inside.get(key, 0) + 1
            returned[key] = t - 1
        elif ev[0] == "deal":
            key = (int(ev[1]), int(ev[2]))
            if inside.get(key, 0) <= 0:
                problems.append(
                    f"deal {ev[3]}: {card_str(key[0], symbols=False)} of deck {key[1]} was "
                    "dealt but the shuffler did not hold it"
                )
            else:
                inside[key] -= 1
            r = returned.pop(key, None)
            if r is not None:
                gaps.append(t - r - 1)
            t += 1
    return np.asarray(gaps, dtype=np.int64), problems


@dataclass(frozen=True)
class GapTest:
    """The return-gap check: the chi-square statistic, its Monte Carlo p-value, the bins and
    the observed and expected counts."""

    statistic: float
    p_value: float
    replicates: int
    edges: list[int]
    observed: list[int]
    expected: list[float]
    n_gaps: int
    mean_gap: float
    expected_mean_gap: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "replicates": self.replicates,
            "bin_edges": self.edges,
            "observed": self.observed,
            "expected": self.expected,
            "n_gaps": self.n_gaps,
            "mean_gap": self.mean_gap,
            "expected_mean_gap": self.expected_mean_gap,
            "method": "Monte Carlo null of the declared slot model (see docs/certification.md)",
        }


def _chi2(gaps: npt.NDArray[np.int64], edges: npt.NDArray[np.int64], probs: np.ndarray) -> float:
    obs = np.histogram(gaps, bins=edges)[0].astype(np.float64)
    exp = probs * obs.sum()
    keep = exp > 0
    return float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum())


def gap_test(
    gaps: npt.NDArray[np.int64],
    *,
    n_cards: int,
    slots: int,
    deals: int,
    seed: int,
    replicates: int = 199,
    progress: Any = None,
    buffer: int = 0,
) -> GapTest:
    """Test observed ``gaps`` against the declared model (module doc; ``buffer``: its declared
    buffer, :func:`simulate_gaps`).  ``progress()`` is called once per simulated replicate.
    Raises ValueError when there are no gaps."""
    if gaps.size == 0:
        raise ValueError("no card reappeared after its return: deal more cards")
    pooled = np.concatenate(
        [
            simulate_gaps(n_cards, slots, deals, child_seed(seed, "gap-pool", i), buffer)
            for i in range(5)
        ]
    )
    qs = np.quantile(pooled, np.linspace(0, 1, BINS + 1)[1:-1])
    edges = np.unique(np.concatenate([[0], np.ceil(qs).astype(np.int64), [deals + 1]]))
    probs = np.histogram(pooled, bins=edges)[0] / pooled.size
    t_obs = _chi2(gaps, edges, probs)
    exceed = 0
    for i in range(replicates):
        sim = simulate_gaps(n_cards, slots, deals, child_seed(seed, "gap-null", i), buffer)
        exceed += _chi2(sim, edges, probs) >= t_obs
        if progress is not None:
            progress()
    obs = np.histogram(gaps, bins=edges)[0]
    return GapTest(
        t_obs,
        (1 + exceed) / (replicates + 1),
        replicates,
        [int(e) for e in edges],
        [int(o) for o in obs],
        [float(p * obs.sum()) for p in probs],
        int(gaps.size),
        float(gaps.mean()),
        float(pooled.mean()) if pooled.size else math.nan,
    )
