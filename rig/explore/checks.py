"""The explorer's invariants (:mod:`feltlab.rig.explore.runner`): what one explored campaign did,
the checks on its live and offline records, and the calibration of a run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import can

from feltlab.rig.certify.record import verdict_summary
from feltlab.rig.devices.misbehaviour import GroundTruth
from feltlab.rig.explore.scenarios import ALPHA, CALIBRATION_P, KNOWN, STATISTICAL, Scenario
from feltlab.rig.kinds import get_kind
from feltlab.rig.kinds import names as kind_names


@dataclass
class Outcome:
    """What one explored campaign did and which invariants it broke."""

    scenario: Scenario
    verdict: str | None = None
    offline: str | None = None
    violations: list[tuple[str, str]] = field(default_factory=list)
    known: list[tuple[str, str, str]] = field(default_factory=list)
    fair_statistical_fail: bool = False
    short_of_power: bool = False  # INCONCLUSIVE: the sample could not catch an alternative
    fair: bool = False
    wall: float = 0.0
    sim_seconds: float = 0.0
    chaos_counts: dict[str, int] = field(default_factory=dict)
    directory: Path | None = None

    def fingerprint(self) -> tuple[Any, ...]:
        """What must be equal when the same campaign runs twice."""
        return (
            self.scenario.replay,
            self.verdict,
            self.offline,
            tuple(self.violations),
            round(self.sim_seconds, 9),
            tuple(sorted(self.chaos_counts.items())),
        )


def split_known(out: Outcome) -> None:
    """Move the violations of ``out`` that are known limits of its scenario's tags (``KNOWN``)
    to its known list, with why."""
    still = []
    tags = set(out.scenario.tags)
    for name, text in out.violations:
        why = next(
            (w for (t, n, sub), w in KNOWN.items() if t in tags and n == name and sub in text),
            None,
        )
        if why is None:
            still.append((name, text))
        else:
            out.known.append((name, text, why))
    out.violations = still


def _causes_text(rec: dict[str, Any]) -> str:
    bat = rec.get("battery") or {}
    parts = [f"battery.{c['name']}" for c in bat.get("checks", []) if c["verdict"] != "PASS"]
    if bat.get("integrity"):
        parts.append(f"integrity: {bat['integrity']}")
    parts += [m["name"] for m in rec["measurements"] if m["verdict"] != "PASS"]
    parts += [str(e) for e in rec.get("errors", [])]
    return " | ".join(parts)


PLAN_LEFT_TOO_LITTLE = "windows of injected faults"
"""The reason an INCONCLUSIVE measurement gives when the campaign's own fault plan left too
few clean samples to judge (:func:`feltlab.rig.certify.analyze._unmeasured`)."""


def _by_plan(m: dict[str, Any]) -> bool:
    """An INCONCLUSIVE measurement because the fault plan left too few clean samples."""
    reason = str((m.get("detail") or {}).get("reason", ""))
    return m["verdict"] == "INCONCLUSIVE" and PLAN_LEFT_TOO_LITTLE in reason


def _statistical_only(rec: dict[str, Any]) -> bool:
    """True when every non-PASS item of a FAIL record is a statistical check (and there is
    no error), apart from measurements INCONCLUSIVE by the fault plan (:func:`_by_plan`)."""
    if rec["verdict"] != "FAIL" or rec.get("errors"):
        return False
    bat = rec.get("battery") or {}
    if bat.get("integrity"):
        return False
    bad = [f"battery.{c['name']}" for c in bat.get("checks", []) if c["verdict"] != "PASS"]
    bad += [m["name"] for m in rec["measurements"] if m["verdict"] != "PASS" and not _by_plan(m)]
    return bool(bad) and all(b.startswith(STATISTICAL) for b in bad)


def _inconclusive_by_plan(rec: dict[str, Any]) -> bool:
    """True when the record is INCONCLUSIVE only because its fault plan left too few clean
    samples: every item that is not PASS is INCONCLUSIVE with that reason."""
    if rec["verdict"] != "INCONCLUSIVE" or rec.get("errors"):
        return False
    bat = rec.get("battery") or {}
    if any(c["verdict"] != "PASS" for c in bat.get("checks", [])) or bat.get("integrity"):
        return False
    odd = [m for m in rec["measurements"] if m["verdict"] != "PASS"]
    return bool(odd) and all(_by_plan(m) for m in odd)


def _inconclusive_by_power(rec: dict[str, Any]) -> bool:
    """True when the record is INCONCLUSIVE only because of its battery's power: a named
    alternative not caught with the required power, or a check the sample could not
    compute (the battery's notes say which); every other item PASSes (or is INCONCLUSIVE
    by the fault plan)."""
    if rec["verdict"] != "INCONCLUSIVE" or rec.get("errors"):
        return False
    bat = rec.get("battery") or {}
    if bat.get("verdict") != "INCONCLUSIVE" or not bat.get("notes") or bat.get("integrity"):
        return False
    odd = [c for c in bat.get("checks", []) if c["verdict"] != "PASS"]
    if any(c["verdict"] != "INCONCLUSIVE" or "not_computable" not in c["detail"] for c in odd):
        return False
    return all(m["verdict"] == "PASS" or _by_plan(m) for m in rec["measurements"])


def power_violations(rec: dict[str, Any]) -> list[str]:
    """The invariant "PASS implies every named alternative had the required power": for a
    PASS record, each alternative of its battery's power table whose power's lower 95%
    bound is under the required power, or that could not be computed, and each battery
    check that could not be computed; empty when it holds (or the record is not PASS)."""
    if rec.get("verdict") != "PASS":
        return []
    bat = rec.get("battery") or {}
    out = [
        f"battery.{c['name']} could not be computed"
        for c in bat.get("checks", [])
        if "not_computable" in (c.get("detail") or {})
    ]
    power = bat.get("power")
    if bat and power is None:
        return [*out, "the battery has no power table"]
    if power is None:
        return out
    need = float(power["required"])
    for a in power.get("alternatives", []):
        if not a["caught"] or a["ci95"][0] < need:
            out.append(f"{a['model']}: power {a['ci95'][0]:.3g} < {need:g} at {a['n_shoes']} shoes")
    out += [f"{m}: power not computed" for m in power.get("unavailable", {})]
    return out


def check_campaign(
    sc: Scenario,
    out: Outcome,
    rec: dict[str, Any],
    off: dict[str, Any] | None,
    truth: GroundTruth,
    directory: Path,
) -> None:
    """Check the invariants of one finished campaign (its live record ``rec``, the offline
    record ``off``, the device's ground ``truth``); adds to ``out.violations``."""

    def violate(name: str, text: str) -> None:
        out.violations.append((name, text))

    verdict = rec["verdict"]
    out.verdict = verdict
    out.fair = sc.expect == "PASS"
    causes = _causes_text(rec)
    out.short_of_power = _inconclusive_by_power(rec)
    by_plan = _inconclusive_by_plan(rec) or out.short_of_power
    for text in power_violations(rec):
        violate("power", f"PASS, yet {text}")
    if sc.expect == "PASS" and verdict != "PASS" and not by_plan:
        if _statistical_only(rec):
            out.fair_statistical_fail = True
        else:
            violate("verdict", f"a well-behaved device got {verdict}: {causes}")
    elif sc.expect == "NOT_PASS":
        if verdict == "PASS":
            violate("verdict", f"a defective or misbehaving device PASSed ({sc.describe()})")
        elif not any(c in causes for c in sc.causes):
            violate("cause", f"{verdict} without naming {' or '.join(sc.causes)}: {causes}")
    if verdict not in ("PASS", "FAIL", "ERROR") and not by_plan:
        violate("verdict", f"verdict {verdict} (the campaign was not interrupted)")
    # counted: collected + missing = planned, said by the collection measurement
    col = rec["collection"]
    unit = get_kind(sc.kind).unit
    meas = {m["name"]: m for m in rec["measurements"]}
    miss = meas.get(f"collection.{unit}_missing")
    if col["requested"] != sc.size:
        violate("counted", f"the record plans {col['requested']} {unit}, asked {sc.size}")
    if col["collected"] is not None:
        lost = sc.size - min(col["collected"], sc.size)
        if col["missing_count"] != lost:
            violate("counted", f"{lost} {unit} missing, the record counts {col['missing_count']}")
        if miss is None or miss["value"] != float(lost):
            violate("counted", f"collection.{unit}_missing does not say {lost}: {miss}")
        elif (miss["verdict"] == "PASS") != (lost == 0):
            violate("counted", f"collection.{unit}_missing is {miss['verdict']} with {lost} lost")
    elif miss is None or miss["verdict"] == "PASS":
        violate("counted", "nothing collected could be analysed, yet no missing count")
    # capture: every part opens with python-can's LogReader and holds the frames counted
    frames = 0
    for name in rec.get("captures", []):
        try:
            with can.LogReader(str(directory / name)) as reader:
                frames += sum(1 for _ in reader)
        except Exception as exc:
            violate("capture", f"can.LogReader cannot read {name}: {type(exc).__name__}: {exc}")
    counted = (rec.get("detail") or {}).get("frames")
    if counted is not None and counted != frames:
        violate("capture", f"LogReader reads {frames} frames, the record counts {counted}")
    # the kind's own invariants against the ground truth (a batch shuffler's: genuine shoes)
    get_kind(sc.kind).check_truth(rec, truth, directory, violate)
    # faults: every requested fault is in the fault table
    if sc.faults:
        got = {f["fault"] for f in rec.get("faults", [])}
        lost_faults = [f for f in sc.faults.split(",") if f not in got]
        if lost_faults and col.get("complete"):
            violate("faults", f"fault(s) {', '.join(lost_faults)} requested but not injected")
    # offline: the same checks from the capture
    if off is None:
        return
    out.offline = off["verdict"]
    a, b = verdict_summary(rec), verdict_summary(off)
    stopped = bool(col.get("missing_count")) or any(
        str(e).startswith("collection:") for e in rec.get("errors", [])
    )
    for key in a:
        if key == "verdict":
            if a[key] != b[key] and not (stopped and b[key] in ("ABORTED", "ERROR")):
                violate("offline", f"live {a[key]}, feltlab analyze {b[key]}")
        elif a[key] != b[key]:
            violate("offline", f"{key} differs: live {_short(a[key])}, offline {_short(b[key])}")


def _short(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) < 300 else text[:300] + "..."


def calibration(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    """Per kind: the fair campaigns that FAILed only statistical checks against alpha
    (one-sided binomial; a violation below :data:`CALIBRATION_P`)."""
    from scipy import stats  # start-up: scipy only when calibration is asked for

    out = []
    for kind in kind_names():
        fair = [o for o in outcomes if o.fair and o.scenario.kind == kind]
        k = sum(o.fair_statistical_fail for o in fair)
        if not fair:
            continue
        p = float(stats.binom.sf(k - 1, len(fair), ALPHA)) if k else 1.0
        line = (
            f"{kind}: {k} statistical FAIL(s) of {len(fair)} fair campaigns "
            f"(alpha {ALPHA}; P = {p:.3g})"
        )
        out.append(("violation" if p < CALIBRATION_P else "ok", line))
    return out
