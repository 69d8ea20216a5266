"""Does the planner's lower bound hold? Whole simulated campaigns at the planned size (issue 44).

For every model of the default library (:data:`feltlab.rig.certify.power.DEFAULT_ALTERNATIVES`)
on 6 decks at alpha 0.01 and power 0.99: ``feltlab certify plan``'s figure N (the fewest shoes
at which the lower 95% bound of some check's power reaches 0.99) and the bound there, then
``CAMPAIGNS`` whole campaigns of N shoes simulated from the model
(:func:`feltlab.rig.certify.power.estimate_power`: the battery with card codes and Holm, as a
campaign runs it; seeds ``child_seed(7, "power", model, r)``, independent of the plan's).  The
power reached is the fraction of campaigns the battery FAILs, with its Clopper-Pearson 95%
interval (``scipy.stats.binomtest``).  The bound **holds** when that interval's upper end is
at least the bound (the campaigns do not refute it at 2.5%); ``met`` says whether the point
itself is.  A failure prints the model, N, the bound and the campaigns' figure.  ``seed
coverage``: for a law measured by simulation, the fraction of 20 other power-simulation seeds
whose lower bound at N is at most the campaigns' upper end (a 95% bound should hold for about
19 of 20); "exact" for an exact law, whose bound no seed moves.

Run ``python benchmarks/bench_power_coverage.py [CAMPAIGNS]`` for the table (default 1,000
campaigns a model and 20 power seeds: about a minute of CPU), or through pytest (``make
bench``: ``FELTLAB_COVERAGE_CAMPAIGNS``, default 1,000; under ``--benchmark-disable`` 100 a
model and 2 power seeds).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np
import pytest
from scipy import stats

from feltlab import native
from feltlab.rig.certify.power import (
    DEFAULT_ALTERNATIVES,
    alternative_law,
    alternative_power,
    estimate_power,
    plan,
)

ALPHA = 0.01
REQUIRED = 0.99
DECKS = 6
CAMPAIGNS = 1000
POWER_SEEDS = 20


def seed_coverage(
    model: str, n: int, loaded: np.ndarray, ceiling: float, seeds: int = POWER_SEEDS
) -> float | None:
    """The fraction of ``seeds`` power simulations (seeds 1, 2, ..., not the fixed one)
    whose battery lower bound at ``n`` shoes is at most ``ceiling`` (the campaigns' upper
    Clopper-Pearson end): the 95% bound's coverage over the simulation's seed.  None when
    the law is exact (the bound does not depend on a seed)."""
    law = alternative_law(model, loaded.size, loaded_ids=loaded)
    if law.interval(alternative_power(law, n, alpha=ALPHA).best.check).endswith("a point"):
        return None
    held = 0
    for seed in range(1, seeds + 1):
        law = alternative_law(model, loaded.size, seed=seed, loaded_ids=loaded)
        held += alternative_power(law, n, alpha=ALPHA).best.low <= ceiling
    return held / seeds


def coverage_rows(
    campaigns: int, seeds: int = POWER_SEEDS, models: tuple[str, ...] = DEFAULT_ALTERNATIVES
) -> list[dict[str, Any]]:
    """Per model: the planned shoes, the bound there, the power ``campaigns`` simulated
    campaigns reach and its Clopper-Pearson 95% interval, whether the bound holds, and the
    bound's coverage over ``seeds`` other power seeds (:func:`seed_coverage`)."""
    loaded = native.new_shoe(DECKS, ids=True).astype(np.int64)
    rows: list[dict[str, Any]] = []
    for model in models:
        table = plan([model], decks=DECKS, alpha=ALPHA, required=REQUIRED)
        (alt,) = table.alternatives
        n = alt.shoes_needed
        if n is None:
            rows.append({"model": model, "shoes": None, "holds": False})
            continue
        check = alt.caught_by or ""
        again = plan([model], decks=DECKS, alpha=ALPHA, required=REQUIRED, n_shoes=n)
        bound = {c.check: c for c in again.alternatives[0].checks}[check].low
        t0 = time.perf_counter()
        got = estimate_power(
            model, n, loaded.size, alpha=ALPHA, replicates=campaigns, seed=7, loaded_ids=loaded
        )
        hits = round(got["battery"] * campaigns)
        ci = stats.binomtest(hits, campaigns).proportion_ci(0.95, method="exact")
        rows.append(
            {
                "model": model,
                "shoes": n,
                "check": check,
                "bound": bound,
                "reached": hits / campaigns,
                "check_reached": got.get(check, 0.0),
                "ci95": (float(ci.low), float(ci.high)),
                "holds": float(ci.high) >= bound,
                "met": hits / campaigns >= bound,
                "seed_coverage": seed_coverage(model, n, loaded, float(ci.high), seeds),
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def report(rows: list[dict[str, Any]], campaigns: int) -> str:
    """The rows as a plain table."""
    out = [
        f"{campaigns} simulated campaigns a model at the planned size, {DECKS} decks, alpha "
        f"{ALPHA:g}, power {REQUIRED:g}",
        f"{'model':<24}{'shoes':>7}  {'check':<21}{'bound':>7}{'reached':>9}  "
        f"{'Clopper-Pearson 95%':<20}{'holds':>6}{'met':>5}  seed coverage",
    ]
    for r in rows:
        if r["shoes"] is None:
            out.append(f"{r['model']:<24}{'-':>7}  not caught within the planner's range")
            continue
        lo, hi = r["ci95"]
        cov = "exact" if r["seed_coverage"] is None else f"{r['seed_coverage']:.2f}"
        out.append(
            f"{r['model']:<24}{r['shoes']:>7,}  {r['check']:<21}{r['bound']:>7.4f}"
            f"{r['reached']:>9.4f}  [{lo:.4f}, {hi:.4f}]     {'yes' if r['holds'] else 'NO':>6}"
            f"{'yes' if r['met'] else 'no':>5}  {cov}"
        )
    held = sum(r["holds"] for r in rows)
    out.append(f"the bound holds for {held} of {len(rows)} models")
    return "\n".join(out)


def test_planned_power_bound_holds(benchmark: Any, request: pytest.FixtureRequest) -> None:
    """Every library model: the campaigns at the planned size do not refute the bound."""
    disabled = request.config.getoption("benchmark_disable", False)
    campaigns = 100 if disabled else int(os.environ.get("FELTLAB_COVERAGE_CAMPAIGNS", CAMPAIGNS))
    seeds = 2 if disabled else POWER_SEEDS
    rows = benchmark.pedantic(coverage_rows, args=(campaigns, seeds), rounds=1, iterations=1)
    benchmark.extra_info["coverage"] = rows
    print("\n" + report(rows, campaigns))
    assert all(r["holds"] for r in rows), report(rows, campaigns)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else CAMPAIGNS
    print(report(coverage_rows(n), n))
