"""A simulation beside the analyzer's exact house edge: :func:`exact_check` compares a
:class:`~feltlab.simulation.run.SimulationResult` with
:func:`feltlab.math.main_wager.analyze_main` for the same rules and strategy tables."""

from __future__ import annotations

import math
from dataclasses import dataclass

from feltlab.intervals import Z95
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


def exact_check(res: SimulationResult, fresh_shoe: bool) -> ExactCheck:
    """``res`` against the analyzer's exact fresh-shoe figure for its rules and strategy
    tables (see :class:`ExactCheck`); ``fresh_shoe``: whether ``res`` was dealt from a
    fresh shoe every round.  Raises ValueError for rules the analyzer refuses."""
    from feltlab.math.main_wager import analyze_main

    a = analyze_main(res.rules, "table")
    exact = -a.ev
    se = res.half_width / Z95
    diff = res.house_edge - exact
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return ExactCheck(exact, diff, res.half_width, z, fresh_shoe, a.p_split_approx > 0)
