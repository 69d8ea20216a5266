"""The jackpot prize panel's analysis (docs/certification.md, "Jackpot prize panels"): the prize
distribution, button-to-result latency, failure detection, authentication and the rule
16.12 Madness 21 fallback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from feltlab.rig.certify.analyze import Analysis, guard, heartbeat_check, plottable, timing_check
from feltlab.rig.certify.binding import freshness_starts
from feltlab.rig.certify.decode import CaptureData
from feltlab.rig.certify.uncertainty import HostUncertainty
from feltlab.rig.kinds.jackpot.checks import (
    authenticate,
    check_failure_detection,
    check_madness21,
    check_prizes,
)

if TYPE_CHECKING:
    from feltlab.rig.certify.profile import Profile, Progress


def analyze_jackpot(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    directory: Path | None,
    progress: Progress,
    host: HostUncertainty | None = None,
    seed: int = 0,
) -> Analysis:
    """Prize distribution, button-to-result latency, failure detection and the rule 16.12
    Madness 21 fallback of a jackpot panel campaign; each check keeps its own verdict (see
    :func:`analyze_batch`)."""
    a = Analysis(host=host)
    lim = prof.limits
    key = prof.key()
    if key is not None:
        starts = freshness_starts(directory)
        guard(a, "security.results_refused", "results", authenticate, a, data, prof, key, starts)
    progress.start("analysing: prize distribution", 1)
    guard(a, "prize_distribution.p_value", "", check_prizes, a, data, prof, alpha=alpha)
    progress.advance()
    guard(
        a,
        "button_to_result",
        "s",
        timing_check,
        a,
        data,
        "button_to_result",
        "button_to_result",
        lim,
        between_device_frames=True,  # JackpotButton to JackpotResult, both the panel's
    )
    guard(a, "round_trip", "s", timing_check, a, data, "round_trip", "round_trip.ping", lim)
    guard(a, "heartbeat", "s", heartbeat_check, a, data, prof)
    if data.timings.get("button_to_result"):
        a.plots.setdefault("latencies", {})["button to result"] = plottable(
            data.timings["button_to_result"]
        )
    if prof.campaign.get("inject_faults", True):
        guard(a, "failure_detection.max", "s", check_failure_detection, a, data, lim)
        guard(a, "madness21", "", check_madness21, a, directory)
    return a
