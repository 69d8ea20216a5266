"""A simulation beside the analyzer's exact house edge: :func:`exact_check` compares a
:class:`~feltlab.simulation.run.SimulationResult` with
:func:`feltlab.math.main_wager.analyze_main` for the same rules and strategy tables."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import struct
from dataclasses import dataclass

import numpy as np

from feltlab import cache
from feltlab.intervals import Z95
from feltlab.math.main_wager import analyze_main
from feltlab.math.strategy_tables import strategy_tables
from feltlab.native.analyzer import analyzer_build
from feltlab.rules import Rules
from feltlab.simulation.run import SimulationResult

Z_WARNING = 4.0
"""A fresh-shoe simulation whose house edge lies more than this many standard errors from the
analyzer's exact figure is reported with a loud warning (a z that large has a chance below
1e-4 for a correct simulator: a fault, not chance)."""


@dataclass(frozen=True)
class ExactCheck:
    """A simulation beside the analyzer's exact house edge for a **fresh shoe** under the
    same rules and the same strategy tables (``feltlab.math.main_wager.analyze_main(rules,
    "table")``; per initial unit).  ``difference``: the simulated house edge less the exact
    one, ``half_width`` its 95% half-width (the simulation's: the exact figure has no error)
    and ``z`` the difference in standard errors.  Dealt from a fresh shoe
    (``fresh_shoe``), the difference is the simulator's error and ``|z| >``
    :data:`Z_WARNING` a fault (``alarming``); dealt with a cutting card, it is the cut-card
    effect (with its interval), never a warning.  ``approximate``: the analyzer left out
    some split terms (``Analysis.p_split_approx`` > 0: no hole card, ENHC "original" or
    "original and busted"), so the exact figure carries that small approximation."""

    exact_edge: float
    difference: float
    half_width: float
    z: float
    fresh_shoe: bool
    approximate: bool

    @property
    def alarming(self) -> bool:
        """True when a fresh-shoe simulation disagrees with the exact figure by more than
        :data:`Z_WARNING` standard errors."""
        return self.fresh_shoe and abs(self.z) > Z_WARNING


EXACT_FORMAT = 1
"""Version of the cached exact figure's layout (part of its cache key)."""
_EXACT_PAYLOAD = struct.Struct("<dd")  # the expectation and p_split_approx


def exact_figure_key(rules: Rules) -> str:
    """The cache key (a SHA-256 hex string) of :func:`exact_table_figure` of ``rules``:
    every field of the rules, the strategy tables the analyzer plays (their bytes: they
    follow the rules and the strategy code) and the analyzer's build
    (:func:`feltlab.native.analyzer.analyzer_build`: its version and the compiled core)."""
    # function-level: the strategy tables and the analyzer's facade load only when the
    # exact figure is asked for (feltlab simulate imports this module before its run)

    t = strategy_tables(rules)
    fields = [f"{f.name}={getattr(rules, f.name)!r}" for f in dataclasses.fields(rules)]
    tables = hashlib.sha256(
        b"".join(np.ascontiguousarray(a).tobytes() for a in (t.hard, t.soft, t.pair, t.surr))
    ).hexdigest()
    return cache.digest("exact", EXACT_FORMAT, *fields, f"tables={tables}", analyzer_build())


def _seal(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + payload).digest()


def exact_table_figure(rules: Rules) -> tuple[float, float]:
    """The analyzer's exact fresh-shoe expectation per initial unit of the simulator's
    strategy tables under ``rules`` and its ``p_split_approx``
    (:func:`feltlab.math.main_wager.analyze_main` with ``"table"``), cached on disk
    (``feltlab.cache``, kind ``exact``) under a key of every rule field, the tables and the
    analyzer's build, so ``feltlab simulate`` does not recompute it at each start (1.3 s
    under the NZ rules).  The cached file carries a SHA-256 of its key and payload: a file
    truncated, altered or stored under another key is not trusted but computed again (and
    rewritten).  Raises ValueError for rules the analyzer refuses."""
    key = exact_figure_key(rules)
    arr = cache.load("exact", key)
    size = _EXACT_PAYLOAD.size
    if arr is not None and arr.shape == (size + 32,):
        raw = arr.tobytes()
        if _seal(key, raw[:size]) == raw[size:]:
            ev, p_approx = _EXACT_PAYLOAD.unpack(raw[:size])
            return ev, p_approx
    # function-level: the analyzer's wrapper (and its import chain) only on a cache miss

    a = analyze_main(rules, "table")
    payload = _EXACT_PAYLOAD.pack(a.ev, a.p_split_approx)
    sealed = np.frombuffer(payload + _seal(key, payload), dtype=np.uint8)
    cache.store("exact", key, sealed)
    return a.ev, a.p_split_approx


def exact_check(res: SimulationResult, fresh_shoe: bool) -> ExactCheck:
    """``res`` against the analyzer's exact fresh-shoe figure for its rules and strategy
    tables (see :class:`ExactCheck`; cached on disk, :func:`exact_table_figure`);
    ``fresh_shoe``: whether ``res`` was dealt from a fresh shoe every round.  Raises
    ValueError for rules the analyzer refuses."""
    ev, p_approx = exact_table_figure(res.rules)
    exact = -ev
    se = res.half_width / Z95
    diff = res.house_edge - exact
    if not math.isfinite(se):  # no interval (one round): no z either
        z = math.nan
    else:
        z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return ExactCheck(exact, diff, res.half_width, z, fresh_shoe, p_approx > 0)
