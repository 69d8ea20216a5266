"""The analysis of a certification campaign: every check and measurement from its capture,
each with its own verdict (docs/certification.md, "Checks" and "Nothing is thrown away").

This module holds what every device kind's analysis shares: the :class:`Analysis` it fills,
:func:`guard` around each check, the timing and heartbeat checks, the battery's power table
(:func:`power_jobs`, also the shoe file's) and a standard's coverage.  Each kind's own
analysis (:meth:`feltlab.rig.kinds.base.DeviceKind.analyze`, in the kind's package) turns a
decoded capture (:class:`feltlab.rig.certify.decode.CaptureData`) and the device's profile
into an :class:`Analysis`; :func:`feltlab.rig.certify.offline.analyze_campaign` calls the one
of the device's kind.  A check that cannot run is an ERROR measurement of its own
(:func:`guard`), a bad timing sample is counted in its own measurement, and timing verdicts
within the host's measured uncertainty of their limits are INCONCLUSIVE
(:mod:`feltlab.rig.certify.uncertainty`).

Library code: it logs, never prints.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from feltlab.errors import FeltlabError
from feltlab.rig.certify import battery
from feltlab.rig.certify.battery import Verdict, combine_verdicts
from feltlab.rig.certify.decode import CaptureData, timestamp_resolution
from feltlab.rig.certify.measures import (
    Measurement,
    timing_measurements,
    within,
)
from feltlab.rig.certify.power import (
    DEFAULT_ALTERNATIVES,
    DEFAULT_REQUIRED,
    DEFAULT_SIMULATED_SHOES,
    POWER_SEED,
    PowerJob,
)
from feltlab.rig.certify.standards import get_standard
from feltlab.rig.certify.uncertainty import HostUncertainty
from feltlab.rig.clients import WAIT_CEILING
from feltlab.rig.protocol.codec import Kind

if TYPE_CHECKING:
    from feltlab.rig.certify.profile import Profile

log = logging.getLogger(__name__)


@dataclass
class Analysis:
    """The statistics and verdicts of a campaign (what the record stores).

    Every check and measurement keeps its own verdict; one that cannot be computed is an
    ERROR measurement of its own (:func:`_guard`), never the loss of the others.
    ``host`` is the host's measured timing uncertainty the timing verdicts used (None: not
    measured, the plain PASS/FAIL rule)."""

    battery: battery.BatteryResult | None = None
    measurements: list[Measurement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    plots: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    security_faults: list[dict[str, Any]] = field(default_factory=list)
    host: HostUncertainty | None = None
    #: the predictability check's record (:func:`feltlab.rig.security.predict.predictability`
    #: with its ``cwe`` and ``evidence``), when the profile declares its generator
    predictability: dict[str, Any] | None = None

    def verdict(self) -> Verdict:
        """FAIL if any result FAILs; else ERROR if any is an ERROR (or the campaign has
        errors, or nothing was judged); else INCONCLUSIVE if any is; else PASS
        (:func:`feltlab.rig.certify.battery.combine_verdicts`)."""
        vs = [m.verdict for m in self.measurements]
        if self.battery is not None:
            vs.append(self.battery.verdict)
        if self.predictability is not None:
            vs.append(Verdict(self.predictability["verdict"]))
        if self.errors:
            vs.append(Verdict.ERROR)
        return combine_verdicts(vs)

    def uncertainty(self, divide: int = 1) -> tuple[float | None, float | None]:
        """The host's uncertainty bounds (p99, max) in seconds for a timing sample whose
        durations are divided by ``divide`` (a per-card figure over a shoe's transfer);
        (None, None) when not measured."""
        if self.host is None:
            return None, None
        return self.host.seconds / divide, self.host.seconds_max / divide


def guard(a: Analysis, name: str, unit: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one check ``fn(*args, **kwargs)``; if it raises, record ``name`` as an ERROR
    measurement with the reason and return None, so that one check that cannot run never
    discards the others (issue 13, item 4)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # one check's failure is its own ERROR, never the campaign's
        # a traceback for a bug; a refusal with its own message (a FeltlabError) is enough
        log.warning(
            "check %s could not run: %s", name, exc, exc_info=not isinstance(exc, FeltlabError)
        )
        a.measurements.append(
            Measurement(
                name,
                None,
                unit,
                None,
                None,
                Verdict.ERROR,
                {"reason": f"{type(exc).__name__}: {exc}"},
            )
        )
        return None


def timing_check(
    a: Analysis,
    data: CaptureData,
    name: str,
    sample: str,
    limits: dict[str, float],
    divide: int = 1,
    *,
    between_device_frames: bool = False,
) -> None:
    """``{name}.p50/p95/p99/max`` of the capture's timing ``sample``; ``divide``: the
    samples are durations divided by that many cards (the host's uncertainty is too).
    A latency from a host frame to the device's reply can only be lengthened by the host's
    delays (one-sided uncertainty); one ``between_device_frames`` (two received frames)
    can be shortened as well (two-sided)."""
    samples = data.timings.get(sample, [])
    if not samples:
        if f"{name}_p99" in limits or f"{name}_max" in limits:
            a.measurements.append(_unmeasured(data, f"{name}.p99", sample))
        return
    u99, umax = a.uncertainty(divide)
    a.measurements.extend(
        timing_measurements(
            name,
            samples,
            limit_p99=limits.get(f"{name}_p99"),
            limit_max=limits.get(f"{name}_max"),
            resolution=timestamp_resolution(data.first_stamp),
            uncertainty=u99,
            uncertainty_max=umax,
            lengthened=not between_device_frames,
        )
    )


def _unmeasured(
    data: CaptureData, name: str, sample: str, *, need: str = "samples", have: int = 0
) -> Measurement:
    """A measurement with too few samples (``have``): INCONCLUSIVE when samples were left out
    because they fell in the windows of injected faults (the device was not at fault: the
    campaign's own plan left too little to measure, and more shoes would do), else ERROR."""
    left_out = data.excluded_by.get(sample, 0)
    if not left_out:
        return within(name, None, "s", reason=f"no {need}" if not have else f"{have} {need}")
    return Measurement(
        name,
        None,
        "s",
        verdict=Verdict.INCONCLUSIVE,
        detail={
            "reason": f"{left_out} {need} fell in the windows of injected faults and "
            f"{have} are left, too few to judge: collect more shoes (each fault takes its "
            "shoe and the next)",
            "samples_in_fault_windows": left_out,
        },
    )


def _announced(a: Analysis, data: CaptureData, prof: Profile) -> None:
    """What the device announced beyond its declared limits (issue 14: nothing a device
    sends bounds a wait): a heartbeat period over 1.5 times the declared one, a shuffle
    duration over ``shuffle_cycle_max``; each a FAIL with the figure, from the capture."""
    declared = prof.heartbeat_period
    over = [p for p in data.announced_periods_ms if p / 1000.0 > declared * 1.5]
    if over:
        tol = prof.limits.get("heartbeat_period_tolerance", 0.05)
        a.measurements.append(
            within(
                "heartbeat.announced_period",
                max(over) / 1000.0,
                "s",
                declared * (1 - tol),
                declared * (1 + tol),
                reason="the device's heartbeat announced a period beyond the declared one; "
                "supervision kept 1.5 times the declared period",
            )
        )
    cap = min(prof.limits.get("shuffle_cycle_max", WAIT_CEILING), WAIT_CEILING)
    if data.announced_shuffle_ms and max(data.announced_shuffle_ms) / 1000.0 > cap:
        worst = max(data.announced_shuffle_ms) / 1000.0
        a.measurements.append(
            within(
                "shuffle_cycle.announced",
                worst,
                "s",
                None,
                cap,
                reason=f"device announced a {worst:.3f} s shuffle, beyond the declared "
                f"shuffle_cycle_max of {cap:.3f} s: not waited for",
            )
        )


def heartbeat_check(a: Analysis, data: CaptureData, prof: Profile) -> None:
    _announced(a, data, prof)
    _other_heartbeats(a, data)
    gaps = np.asarray(data.heartbeat_gaps, dtype=np.float64)
    period = prof.heartbeat_period
    if gaps.size < 2:
        a.measurements.append(
            _unmeasured(
                data, "heartbeat.period", "heartbeat", need="heartbeat intervals", have=gaps.size
            )
        )
        return
    tol = prof.limits.get("heartbeat_period_tolerance", 0.05)
    res = timestamp_resolution(data.first_stamp)
    u99, umax = a.uncertainty()
    valid = gaps[np.isfinite(gaps) & (gaps >= 0)]
    mean = float(valid.mean()) if valid.size else None
    extra: dict[str, Any] = {"declared": period, "n": int(valid.size), "resolution_s": res}
    if valid.size < gaps.size:
        extra["bad_samples"] = int(gaps.size - valid.size)
    a.measurements.append(
        within(
            "heartbeat.period",
            mean,
            "s",
            period * (1 - tol),
            period * (1 + tol),
            uncertainty=None if u99 is None else u99 / max(1, int(valid.size)),
            **extra,
        )
    )
    jitter = np.abs(gaps - period)
    a.measurements.extend(
        timing_measurements(
            "heartbeat_jitter",
            jitter,
            limit_p99=prof.limits.get("heartbeat_jitter_p99"),
            limit_max=prof.limits.get("heartbeat_jitter_max"),
            resolution=res,
            uncertainty=u99,
            uncertainty_max=umax,
        )
    )
    a.plots.setdefault("latencies", {})["heartbeat interval"] = gaps.tolist()


def _other_heartbeats(a: Analysis, data: CaptureData) -> None:
    """``heartbeat.other_kind``: heartbeats on the device's id announcing another ``Kind``
    than the device's (:attr:`CaptureData.other_heartbeats`), each a frame of a second node
    on the device's id (ISO 11898-1: an identifier is one node's) that the device's
    supervision must not take for the device's: 0 passes."""
    count = sum(data.other_heartbeats.values())
    kinds = {
        (Kind(k).name if k in Kind._value2member_map_ else str(k)): n
        for k, n in sorted(data.other_heartbeats.items())
    }
    extra: dict[str, Any] = {"device_kind": data.own_heartbeat_kind}
    if kinds:
        extra["kinds"] = kinds
    a.measurements.append(within("heartbeat.other_kind", float(count), "heartbeats", 0, 0, **extra))


def power_jobs(
    prof: Profile,
    n_shoes: int,
    n_cards: int,
    *,
    alpha: float,
    loaded: npt.ArrayLike,
) -> list[PowerJob]:
    """The rows of a batch campaign's power table: one per model of the profile's
    ``[campaign] power_alternatives`` (default
    :data:`feltlab.rig.certify.power.DEFAULT_ALTERNATIVES`), its law measured from
    ``power_shoes`` (default 2,000) simulated shoes of ``n_cards`` cards from the ``loaded``
    order (physical ids), its power at ``n_shoes`` shoes, ``alpha`` and ``power_required``.
    The simulation's seed is :data:`~feltlab.rig.certify.power.POWER_SEED`, never the
    campaign's: the rows are ``feltlab certify plan``'s, whatever seed the campaign has."""
    alts = list(prof.campaign.get("power_alternatives", DEFAULT_ALTERNATIVES))
    shoes = int(prof.campaign.get("power_shoes", DEFAULT_SIMULATED_SHOES))
    required = float(prof.campaign.get("power_required", DEFAULT_REQUIRED))
    return [
        PowerJob.of(
            alt,
            n_cards,
            shoes=shoes,
            seed=POWER_SEED,
            n_shoes=n_shoes,
            alpha=alpha,
            required=required,
            loaded_ids=loaded,
        )
        for alt in alts
    ]


def with_limits(samples: list[float], limits: Mapping[str, float], name: str) -> dict[str, Any]:
    """A latency histogram's input with the limits it is judged against (``{name}_p99``,
    ``{name}_max`` of the profile, seconds), drawn on it by
    :func:`feltlab.rig.cli.render.plots.make_plots`."""
    drawn = {
        label: float(limits[key])
        for label, key in (("p99 limit", f"{name}_p99"), ("max limit", f"{name}_max"))
        if limits.get(key) is not None
    }
    return {"samples": samples, "limits": drawn}


def plottable(samples: Sequence[float]) -> list[float]:
    """The valid (finite, non-negative) durations of a sample, for a histogram."""
    return [float(x) for x in samples if math.isfinite(x) and x >= 0]


def against_standard(
    res: battery.BatteryResult, prof: Profile, alpha: float
) -> battery.BatteryResult:
    """``res`` with the coverage of the profile's ``[campaign] standard`` (``--standard``),
    when it names one: a PASS becomes INCONCLUSIVE when a check the standard requires did
    not run or could not be computed, or the campaign's alpha is above the standard's."""
    name = prof.campaign.get("standard")
    if not name:
        return res
    std = get_standard(str(name))
    cov = std.coverage([c.name for c in res.checks if c.computable and c.name != "integrity"])
    notes = list(res.notes)
    notes += [f"{std.name} requires {c}, which did not run" for c in cov["missing"]]
    if alpha > std.alpha + 1e-12:
        notes.append(f"alpha {alpha:g} is above {std.name}'s {std.alpha:g}")
    verdict = res.verdict
    if verdict is Verdict.PASS and len(notes) > len(res.notes):
        verdict = Verdict.INCONCLUSIVE
    return replace(res, standard=cov, notes=tuple(notes), verdict=verdict)


__all__ = [
    "Analysis",
    "against_standard",
    "guard",
    "heartbeat_check",
    "plottable",
    "power_jobs",
    "timing_check",
    "with_limits",
]
