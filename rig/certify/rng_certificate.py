"""The generator's raw-output certificate (``feltlab certify rng``): NIST SP 800-22's battery
over m sequences (:func:`feltlab.rig.rng.sp800_22.run_battery`), judged, and written as a
campaign is: ``record.json``, ``report.html`` (the p-value histograms, the proportion chart),
``junit.xml`` and ``manifest.json`` through :func:`feltlab.rig.certify.report.write_report`.

The verdict (docs/rng.md, "The verdict"):

- FAIL when the battery fails at the family-wise level ``alpha``
  (:meth:`~feltlab.rig.rng.sp800_22.BatteryResult.family_verdict`: Bonferroni over every
  p-value column's two second-level checks, the proportion of passing sequences and the
  uniformity of the p-values), naming the tests and columns that failed;
- INCONCLUSIVE when nothing failed but a required test did not run (too few bits: NOT RUN
  with the bits it needs; the required tests are the ``--standard``'s, else all fifteen), a
  required test's every sequence was skipped (random excursions: too few cycles), or the
  uniformity of the p-values could not be judged (fewer than 55 sequences, SP 800-22 4.2.2);
- PASS otherwise.

``alpha`` is both SP 800-22's level for each p-value (a sequence passes a test at
p >= alpha) and the certificate's family-wise level: a fair generator is refused with
probability at most alpha, the confidence a standard names (99%: alpha 0.01).  SP 800-22's
own per-column rule (inside the band p_hat -+ 3 sqrt(p_hat (1 - p_hat) / m) and P_T >=
0.0001) is recorded beside each column (``sp800_22_rule_ok``), for a lab that reports it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.record import CampaignResult, software_versions
from feltlab.rig.certify.report import RECORD_VERSION, write_report
from feltlab.rig.certify.standards import Standard, get_standard
from feltlab.rig.cli.render.plots import make_rng_plots
from feltlab.rig.rng.sp800_22 import (
    TEST_NAMES,
    UNIFORMITY_MIN_SEQUENCES,
    BatteryResult,
    Params,
    SecondLevel,
    run_battery,
)
from feltlab.seeds import SEED_DERIVATION_VERSION

log = logging.getLogger(__name__)

DEFAULT_ALPHA = 0.01
"""SP 800-22's level (section 4.2) and 25 CFR 547.14's 99%."""

NOT_RUN = "NOT RUN"


def _column(c: SecondLevel) -> dict[str, Any]:
    return {
        "test": c.test,
        "label": c.label,
        "sequences": c.sequences,
        "passed": c.passed,
        "proportion": c.proportion,
        "band": list(c.band),
        "proportion_ok": c.proportion_ok,
        "proportion_p": c.proportion_p,
        "uniformity_p": c.uniformity_p,
        "uniformity_ok": c.uniformity_ok,
        "sp800_22_rule_ok": c.ok,
        "histogram": [int(x) for x in c.histogram],
    }


def judge(
    result: BatteryResult, alpha: float, required: tuple[str, ...]
) -> tuple[Verdict, dict[str, Any]]:
    """The certificate's verdict of a battery ``result`` and the record's ``rng`` section
    (see the module docstring)."""
    columns = result.second_level()
    fam = result.family_verdict(alpha)
    failing: dict[str, list[list[str]]] = {}
    for test, label, which in fam.failing:
        failing.setdefault(test, []).append([label, which])
    tests = []
    notes = []
    for t in result.tests:
        cols = [c for c in columns if c.test == t.name]
        judged = [c for c in cols if c.sequences > 0]
        if not t.ran or not judged:
            why = t.not_run or "no sequence had enough cycles of its random walk (SP 800-22 2.14.7)"
            verdict = NOT_RUN
        else:
            why = None
            verdict = str(Verdict.FAIL if t.name in failing else Verdict.PASS)
        uni = [c.uniformity_p for c in judged if not np.isnan(c.uniformity_p)]
        tests.append(
            {
                "name": t.name,
                "verdict": verdict,
                "p_values_per_sequence": len(t.labels),
                "not_run": why,
                "bits_needed": t.bits_needed,
                "sequences_run": int(np.count_nonzero(t.sequence_ran)) if t.ran else 0,
                "failing": failing.get(t.name, []),
                "sp800_22_rule_ok": all(c.ok for c in judged) if judged else None,
                "min_proportion": min((c.proportion for c in judged), default=None),
                "min_uniformity_p": min(uni) if uni else None,
            }
        )
        if verdict == NOT_RUN and t.name in required:
            notes.append(f"required test {t.name} NOT RUN: {why}")
    missing = [name for name in required if name not in result.names()]
    notes += [f"required test {name} was not in the battery" for name in missing]
    if result.n_sequences < UNIFORMITY_MIN_SEQUENCES:
        notes.append(
            f"{result.n_sequences} sequence(s): the uniformity of the p-values needs at least "
            f"{UNIFORMITY_MIN_SEQUENCES} (SP 800-22 4.2.2), so only the proportions were judged"
        )
    if not fam.passed:
        verdict_all = Verdict.FAIL
    elif notes:
        verdict_all = Verdict.INCONCLUSIVE
    else:
        verdict_all = Verdict.PASS
    section = {
        "battery": "NIST SP 800-22 rev 1a",
        "n_bits": result.n_bits,
        "sequences": result.n_sequences,
        "alpha": alpha,
        "family_alpha": fam.family_alpha,
        "columns_judged": fam.columns,
        "threshold": fam.threshold,
        "params": {k: v for k, v in asdict(result.params).items() if k != "tests"},
        "required_tests": list(required),
        "failing": [list(f) for f in fam.failing],
        "failing_tests": sorted(failing, key=TEST_NAMES.index),
        "tests": tests,
        "columns": [_column(c) for c in columns],
        "notes": notes,
    }
    return verdict_all, section


def certify_sequences(
    sequences: npt.NDArray[np.uint8],
    n_bits: int,
    device: dict[str, Any],
    source: dict[str, Any],
    *,
    alpha: float | None = None,
    standard: str | None = None,
    seed: int | None = None,
    out: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    params: Params | None = None,
    capture: str | None = None,
    extra: dict[str, Any] | None = None,
) -> CampaignResult:
    """Run and judge the battery on ``sequences`` (``np.uint8`` ``(m, ceil(n / 8))``, MSB
    first) and write the certificate into ``out`` (when given).  ``device`` names what was
    tested (the record's ``device``), ``source`` where the bits came from.  ``standard``
    (:data:`feltlab.rig.certify.standards.RNG_STANDARDS`) sets alpha and the required tests;
    with ``alpha`` too, ValueError.  ``capture``: the capture file the bits were collected
    in (``certify rng --device``); ``extra``: further sections of the record (``dieharder``)."""
    std: Standard | None = None
    if standard is not None:
        std = get_standard(standard, "rng")
        if alpha is not None and abs(alpha - std.alpha) > 1e-12:
            raise ValueError(
                f"--alpha {alpha:g} and --standard {standard} (alpha {std.alpha:g}) "
                "disagree: give one"
            )
        alpha = std.alpha
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    required = std.checks if std is not None else (params or Params()).tests
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    t0 = time.perf_counter()
    result = run_battery(sequences, n_bits, params, alpha, progress=progress)
    seconds = time.perf_counter() - t0
    verdict, section = judge(result, alpha, required)
    section["seconds"] = seconds
    if std is not None:
        section["standard"] = std.coverage(
            [t["name"] for t in section["tests"] if t["verdict"] != NOT_RUN]
        )
    record: dict[str, Any] = {
        "record_version": RECORD_VERSION,
        "campaign_id": uuid.uuid4().hex,
        "kind": "rng",
        "device": device,
        "source": source,
        "software": software_versions(),
        "seed": seed,
        "seeds": {"derivation": SEED_DERIVATION_VERSION, "campaign": seed},
        "options": {
            "sequences": result.n_sequences,
            "bits": n_bits,
            "alpha": alpha,
            "standard": standard,
        },
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "verdict": str(verdict),
        "capture": capture,
        "captures": [capture] if capture else [],
        "battery": None,
        "rng": section,
        "measurements": [],
        "errors": [],
    }
    record.update(extra or {})
    directory = out if out is not None else Path()
    if out is not None:
        try:
            plots = make_rng_plots(section["columns"], section["tests"], alpha)
        except Exception as exc:  # a plot must never lose the record
            log.warning("plots failed: %s", exc)
            plots = []
        write_report(out, record, plots)
    return CampaignResult(verdict, record, directory)


__all__ = ["DEFAULT_ALPHA", "NOT_RUN", "certify_sequences", "judge"]
