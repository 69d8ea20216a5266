"""The continuous shuffler's analysis (docs/certification.md, "Continuous shufflers"): the
return-gap test against the declared slot model, the card latency."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from feltlab.rig.certify.analyze import Analysis, guard, heartbeat_check, plottable, timing_check
from feltlab.rig.certify.analyze_continuous import gap_test, observed_gaps
from feltlab.rig.certify.csm_model import profile_model
from feltlab.rig.certify.decode import CaptureData
from feltlab.rig.certify.measures import (
    within,
)
from feltlab.rig.certify.uncertainty import HostUncertainty

if TYPE_CHECKING:
    from feltlab.rig.certify.profile import Profile, Progress


def analyze_continuous(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    progress: Progress,
    host: HostUncertainty | None = None,
    directory: Path | None = None,
) -> Analysis:
    """Return-gap check (against the declared slot model) and timing of a continuous
    shuffler; each check keeps its own verdict (see :func:`analyze_batch`)."""
    a = Analysis(host=host)
    lim = prof.limits
    guard(a, "first_card", "s", timing_check, a, data, "first_card", "first_card", lim)
    guard(a, "per_card", "s", timing_check, a, data, "per_card", "per_card", lim)
    guard(a, "round_trip", "s", timing_check, a, data, "round_trip", "round_trip.ping", lim)
    guard(a, "heartbeat", "s", heartbeat_check, a, data, prof)
    if data.timings.get("per_card"):
        a.plots.setdefault("latencies", {})["per card"] = plottable(data.timings["per_card"])
    guard(
        a, "return_gap", "", _return_gap, a, data, prof, alpha=alpha, seed=seed, progress=progress
    )
    return a


def _return_gap(
    a: Analysis, data: CaptureData, prof: Profile, *, alpha: float, seed: int, progress: Progress
) -> None:
    gaps, problems = observed_gaps(data.card_events)
    a.measurements.append(
        within(
            "integrity.cards_not_held",
            float(len(problems)),
            "cards",
            None,
            0.0,
            first=problems[:5],
        )
    )
    deals = sum(1 for e in data.card_events if e[0] == "deal")
    loads = [e for e in data.card_events if e[0] == "load"]
    if not loads or gaps.size == 0:
        a.errors.append("no LOAD or no card returned and dealt again: nothing to test")
        return
    n_cards = len(loads[-1][2])

    declared = profile_model(prof.raw, prof.path or "profile")
    slots = declared.slots if declared.kind == "slots" else 1  # one slot: the ideal machine
    reps = int(prof.campaign.get("null_replicates", 199))
    progress.start("analysing: simulating the declared model", reps)
    test = gap_test(
        gaps,
        n_cards=n_cards,
        slots=slots,
        deals=deals,
        seed=seed,
        replicates=reps,
        progress=progress.advance,
        buffer=declared.buffer,
    )
    a.measurements.append(
        within(
            "return_gap.p_value",
            test.p_value,
            "",
            alpha,
            None,
            **test.to_dict(),
        )
    )
    a.measurements.append(
        within("return_gap.mean", test.mean_gap, "cards", expected=test.expected_mean_gap)
    )
