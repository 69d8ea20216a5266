"""The laws of library shuffle models known in closed form, for the battery's power.

Simulated shoes measure an alternative's law with Monte Carlo error, and an alternative close
to the battery's limit (the library's ``biased``, ``position-bias`` and ``short-seed``) turns
that error into a verdict that moves with the simulation's seed.  Where the model's law is
known exactly, its power needs no simulation at all:

- **position law** (:func:`position_law`): the ``(n, n)`` matrix P[i, p], the probability
  that the card loaded at input position i ends at output position p, exactly, for

  - ``fisher-yates``: 1/n everywhere;
  - ``naive`` (``biased``): for i = 0..n-1 swap a[i] and a[J], J uniform on 0..n-1.  The
    step that swaps position k moves the card at k to a uniform position and the card at
    any other position p to k with probability 1/n, so column k becomes 1/n and every other
    column p becomes P[:, p] (1 - 1/n) + P[:, k] / n: n steps of O(n^2);
  - ``modulo:bits=b``: Durstenfeld's loop (k = n-1 down to 1, swap a[k] and a[J]) with
    P(J = j) = (floor(2^b / (k+1)) + [j < 2^b mod (k+1)]) / 2^b: column k becomes
    sum_j P(j) P[:, j], column j < k becomes P[:, j] (1 - P(j)) + P[:, k] P(j);
  - ``position-bias:pos=c,stay=s,width=w`` and ``stuck:pos=c``: with probability q = s/100
    (1 for ``stuck``) card c is at a uniform position of its window W (|W| = m: positions
    within w of c, clipped) and the others are uniform on the rest; else a Fisher-Yates shoe
    (native/src/models.c): P[c, p] = (1-q)/n + q [p in W]/m and, for i != c,
    P[i, p] = (1-q)/n + q (m - [p in W]) / (m (n-1)).

- **repeat law** (:func:`seed_space`): ``short-seed:bits=b`` deals one of 2^b equally likely
  shoes (one Fisher-Yates shoe per seed, distinct orders but with probability under 2^(2b)/n!),
  so N shoes repeat one with probability 1 - prod_{k<N} (1 - k / 2^b), the birthday problem,
  exactly (:func:`repeat_probability`).

Sources: J. Atwood, "The danger of naivete", 2007 (the naive shuffle); D. Knuth, TAOCP 2,
3.4.1-3.4.2 (modulo bias, Fisher-Yates); W. Feller, An Introduction to Probability Theory,
vol. 1, II.3 (the birthday problem).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from feltlab.rig.devices.models import ModelKind, ShuffleModel, parse_model

#: Model kinds whose position law :func:`position_law` gives exactly.
EXACT_POSITION_KINDS = frozenset(
    {
        ModelKind.FISHER_YATES,
        ModelKind.NAIVE,
        ModelKind.MODULO,
        ModelKind.POSITION_BIAS,
        ModelKind.STUCK,
    }
)
_DIRECT_SUM = 2_000_000  # up to this many shoes the birthday product is summed term by term


def _naive(n: int) -> npt.NDArray[np.float64]:
    law = np.eye(n)
    for k in range(n):
        col = law[:, k].copy()
        law *= 1 - 1 / n
        law += col[:, None] / n
        law[:, k] = 1 / n
    return law


def _modulo(n: int, bits: int) -> npt.NDArray[np.float64]:
    law = np.eye(n)
    space = 1 << bits
    for k in range(n - 1, 0, -1):
        size = k + 1
        pj = np.full(size, float(space // size))
        pj[: space % size] += 1
        pj /= space
        old_k = law[:, k].copy()
        law[:, k] = (law[:, :size] * pj).sum(axis=1)  # numpy's own sum, not BLAS threads
        law[:, :k] = law[:, :k] * (1 - pj[:k]) + old_k[:, None] * pj[:k]
    return law


def _stay(n: int, pos: int, q: float, width: int) -> npt.NDArray[np.float64]:
    window = np.zeros(n)
    window[max(pos - width, 0) : min(pos + width, n - 1) + 1] = 1.0
    m = float(window.sum())
    law = np.tile((1 - q) / n + q * (m - window) / (m * (n - 1)), (n, 1))
    law[pos] = (1 - q) / n + q * window / m
    return law


def position_law(model: str | ShuffleModel, n: int) -> npt.NDArray[np.float64] | None:
    """``(n, n)`` float64: P[i, p], the exact probability that the card loaded at position
    i ends at position p after one shoe of ``model`` on ``n`` cards (rows and columns sum
    to 1), or None for a model whose position law is not known in closed form (the module's
    docstring gives each).  Raises ModelError for a bad name or a ``pos`` beyond the shoe."""
    m = parse_model(model) if isinstance(model, str) else model
    if m.kind not in EXACT_POSITION_KINDS:
        return None
    m.check_fits(n)
    s = m.settings
    if m.kind == ModelKind.FISHER_YATES:
        return np.full((n, n), 1 / n)
    if m.kind == ModelKind.NAIVE:
        return _naive(n)
    if m.kind == ModelKind.MODULO:
        return _modulo(n, s["bits"])
    if m.kind == ModelKind.STUCK:
        return _stay(n, s["pos"], 1.0, 0)
    return _stay(n, s["pos"], s["stay"] / 100, s["width"])


def seed_space(model: str | ShuffleModel) -> int | None:
    """The number of equally likely shoes ``model`` deals (``short-seed:bits=b``: 2^b), or
    None when its shoes are not drawn from such a set."""
    m = parse_model(model) if isinstance(model, str) else model
    return 1 << m.settings["bits"] if m.kind == ModelKind.SHORT_SEED else None


def repeat_probability(n_shoes: int, space: int) -> float:
    """P(two of ``n_shoes`` independent uniform draws from ``space`` orders are equal):
    1 - prod_{k<N} (1 - k/space), the birthday problem, exactly (summed in logs up to
    2,000,000 shoes; beyond, to second order in N/space, whose error is below 1e-12)."""
    if n_shoes > space:
        return 1.0
    pairs = n_shoes * (n_shoes - 1) / 2 / space
    if pairs > 745:  # exp(-745) underflows: a repeat is certain to double precision
        return 1.0
    if n_shoes <= _DIRECT_SUM:
        log_none = float(np.log1p(-np.arange(n_shoes, dtype=np.float64) / space).sum())
    else:
        log_none = -pairs - (n_shoes - 1) * n_shoes * (2 * n_shoes - 1) / (12 * space * space)
    return float(-math.expm1(log_none))


__all__ = ["EXACT_POSITION_KINDS", "position_law", "repeat_probability", "seed_space"]
