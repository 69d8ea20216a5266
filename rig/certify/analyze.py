"""The analysis of a certification campaign: every check and measurement from its capture,
each with its own verdict (docs/certification.md, "Checks" and "Nothing is thrown away").

:func:`analyze_batch`, :func:`analyze_continuous` and :func:`analyze_jackpot` turn a decoded
capture (:class:`feltlab.rig.certify.decode.CaptureData`) and the device's profile into an
:class:`Analysis`; :func:`feltlab.rig.certify.campaign.analyze_campaign` picks the one of
the device's kind.  A check that cannot run is an ERROR measurement of its own
(:func:`guard`), a bad timing sample is counted in its own measurement, and timing verdicts
within the host's measured uncertainty of their limits are INCONCLUSIVE
(:mod:`feltlab.rig.certify.uncertainty`).

Library code: it logs, never prints.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rig.certify import battery
from feltlab.rig.certify.ahead import draw_ahead
from feltlab.rig.certify.analyze_jackpot import (
    authenticate,
    check_failure_detection,
    check_madness21,
    check_prizes,
)
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
    PowerTable,
    judge,
)
from feltlab.rig.certify.uncertainty import HostUncertainty
from feltlab.rig.protocol.codec import UNKNOWN_DECK
from feltlab.rig.protocol.freshness import freshness_starts

if TYPE_CHECKING:
    from feltlab.rig.certify.profile import Profile, Progress

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

    def verdict(self) -> Verdict:
        """FAIL if any result FAILs; else ERROR if any is an ERROR (or the campaign has
        errors, or nothing was judged); else INCONCLUSIVE if any is; else PASS
        (:func:`feltlab.rig.certify.battery.combine_verdicts`)."""
        vs = [m.verdict for m in self.measurements]
        if self.battery is not None:
            vs.append(self.battery.verdict)
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
        log.warning("check %s could not run: %s", name, exc, exc_info=True)
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


def _timing(
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
    from feltlab.rig.clients import WAIT_CEILING

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


def _heartbeat(a: Analysis, data: CaptureData, prof: Profile) -> None:
    _announced(a, data, prof)
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


def _integrity(shoes: Sequence[Any], loaded: np.ndarray) -> tuple[str | None, list[np.ndarray]]:
    """Name the first shoe that is not a permutation of the loaded cards, by its device
    shoe number and the card; else None and the shoes' ids."""
    from feltlab.cards import card_str

    def name(ident: int) -> str:
        return f"card id {ident} ({card_str(ident % 52, symbols=False)} of deck {ident // 52})"

    want = Counter(loaded.tolist())
    want_sorted = np.sort(loaded.astype(np.int64))
    out: list[np.ndarray] = []
    for s in shoes:
        sh = s.shoe
        if (sh.card_decks == UNKNOWN_DECK).any():
            return (
                f"{s.label}: the device reports deck 0xFF (it cannot tell decks apart); "
                "permutation checks need card ids: set reports_decks",
                out,
            )
        ids = sh.card_decks.astype(np.int64) * 52 + sh.codes
        if not np.array_equal(np.sort(ids), want_sorted):  # not the same multiset of cards
            got = Counter(ids.tolist())
            parts = []
            dup = sorted(k for k, v in got.items() if v > want.get(k, 0) and k in want)
            miss = sorted(k for k, v in want.items() if got.get(k, 0) < v)
            extra = sorted(k for k in got if k not in want)
            if dup:
                parts.append("duplicated " + ", ".join(name(k) for k in dup[:5]))
            if miss:
                parts.append("missing " + ", ".join(name(k) for k in miss[:5]))
            if extra:
                parts.append("never loaded " + ", ".join(name(k) for k in extra[:5]))
            return (
                f"{s.label} ({len(ids)} cards, {len(loaded)} loaded) is not a permutation "
                "of the loaded cards: " + "; ".join(parts),
                out,
            )
        out.append(ids.astype(np.uint16))
    return None, out


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


def planned_power_jobs(prof: Profile, size: int, alpha: float, seed: int) -> list[PowerJob]:
    """The :func:`power_jobs` of a batch campaign that collects its ``size`` shoes of the
    order the rig loads (``native.new_shoe(decks, ids=True)``): what its analysis will run,
    known before collection, so that a helper process computes it meanwhile
    (:mod:`feltlab.rig.certify.ahead`; :attr:`feltlab.rig.kinds.DeviceKind.plan_ahead`).
    ``seed``, the campaign's, is the plan-ahead interface's: the power does not use it."""
    del seed  # the power's simulations have their own fixed seed (power.POWER_SEED)
    decks = int(prof.device.get("decks", 6))
    loaded = native.new_shoe(decks, ids=True).astype(np.int64)
    return power_jobs(prof, size, loaded.size, alpha=alpha, loaded=loaded)


def analyze_batch(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    progress: Progress,
    shoes: Sequence[Any] | None = None,
    host: HostUncertainty | None = None,
    directory: Path | None = None,
) -> Analysis:
    """The randomness battery and timing checks of a batch shuffler campaign.

    ``shoes`` (default: the capture's) are :class:`feltlab.rig.certify.decode.ShoeRead`;
    ``host``: the host's timing uncertainty (INCONCLUSIVE timing verdicts near a limit);
    ``seed``: the campaign's, which a batch analysis does not use (its power has its own,
    :data:`~feltlab.rig.certify.power.POWER_SEED`).  Each timing check and the battery keep
    their own verdicts: one that cannot run is an ERROR of its own."""
    a = Analysis(host=host)
    sample = list(data.shoes if shoes is None else shoes)
    a.detail["payload_errors"] = data.payload_errors
    lim = prof.limits
    cards = int(sample[0].shoe.codes.size) if sample and sample[0].shoe.codes.size else 1
    guard(a, "shuffle_cycle", "s", _timing, a, data, "shuffle_cycle", "shuffle_cycle", lim)
    guard(a, "first_card", "s", _timing, a, data, "first_card", "first_card", lim)
    guard(
        a,
        "per_card",
        "s",
        _timing,
        a,
        data,
        "per_card",
        "per_card",
        lim,
        cards,
        between_device_frames=True,  # first to last SHOE frame
    )
    guard(a, "round_trip", "s", _timing, a, data, "round_trip", "round_trip.ping", lim)
    guard(a, "heartbeat", "s", _heartbeat, a, data, prof)
    a.measurements.append(
        within(
            "integrity.repeated_shoes_differing",
            float(len(data.repeat_mismatches)),
            "shoes",
            0,
            0,
            reason="a shoe number sent again must carry the same cards, card for card",
            examples=data.repeat_mismatches[:5],
        )
    )
    for nm in ("shuffle_cycle", "first_card", "round_trip.ping"):
        if data.timings.get(nm):
            a.plots.setdefault("latencies", {})[nm] = _with_limits(
                _plottable(data.timings[nm]), lim, nm.removesuffix(".ping")
            )
    draw_ahead(latencies=a.plots.get("latencies"))  # drawn while the battery runs
    guard(a, "battery", "", _battery, a, prof, sample, alpha=alpha, progress=progress)
    return a


def _with_limits(samples: list[float], limits: Mapping[str, float], name: str) -> dict[str, Any]:
    """A latency histogram's input with the limits it is judged against (``{name}_p99``,
    ``{name}_max`` of the profile, seconds), drawn on it by
    :func:`feltlab.rig.certify.report.make_plots`."""
    drawn = {
        label: float(limits[key])
        for label, key in (("p99 limit", f"{name}_p99"), ("max limit", f"{name}_max"))
        if limits.get(key) is not None
    }
    return {"samples": samples, "limits": drawn}


def _plottable(samples: Sequence[float]) -> list[float]:
    """The valid (finite, non-negative) durations of a sample, for a histogram."""
    return [float(x) for x in samples if math.isfinite(x) and x >= 0]


def _battery(
    a: Analysis,
    prof: Profile,
    sample: list[Any],
    *,
    alpha: float,
    progress: Progress,
) -> None:
    """Integrity, the randomness battery and its power of a batch campaign's shoes (the
    power from its own fixed seed, :data:`~feltlab.rig.certify.power.POWER_SEED`)."""
    if len(sample) < 2:
        a.errors.append(f"{len(sample)} shoe(s) collected: the battery needs at least 2")
        return
    ld = sample[0].load
    if ld is None or any(
        s.load is None
        or not np.array_equal(s.load.codes, ld.codes)
        or not np.array_equal(s.load.card_decks, ld.card_decks)
        for s in sample
    ):  # each part LOADs the same order: compare them by content
        a.errors.append("the shoes were not all shuffled from one known LOAD order")
        return
    loaded = ld.card_decks.astype(np.int64) * 52 + ld.codes
    progress.start("analysing: integrity", len(sample))
    problem, ids = _integrity(sample, loaded)
    progress.advance(len(sample))
    if problem is not None:
        a.battery = battery.integrity_failure(problem, alpha, len(sample), len(loaded))
        return
    out_ids = np.stack(ids)
    perm = battery.input_positions(out_ids, loaded.astype(np.uint16))
    codes = np.ascontiguousarray((out_ids % 52).astype(np.uint8))
    stats = native.battery_pass(perm)
    a.plots["position_counts"] = stats.position_counts
    a.plots["rising"] = stats.rising
    a.plots["eulerian"] = battery.eulerian_pmf(perm.shape[1])
    draw_ahead(**{k: a.plots[k] for k in ("position_counts", "rising", "eulerian")})
    progress.start("analysing: battery", 1)
    res = battery.run_battery(perm, alpha=alpha, codes=codes, loaded_ids=loaded)
    a.battery = res  # kept even if a power estimate below cannot run
    progress.advance()
    jobs = power_jobs(prof, perm.shape[0], perm.shape[1], alpha=alpha, loaded=loaded)
    progress.start("analysing: power against named alternatives", len(jobs))
    found, unavailable = [], {}
    for job in jobs:
        row = guard(a, f"power.{job.model}", "", job.run)
        if row is None:
            unavailable[job.model] = "its simulation failed (see the measurement's reason)"
        else:
            found.append(row)
        progress.advance()
    table = PowerTable(
        alpha,
        float(prof.campaign.get("power_required", DEFAULT_REQUIRED)),
        battery.family_size(),
        jobs[0].shoes if jobs else DEFAULT_SIMULATED_SHOES,
        tuple(found),
        unavailable,
    )
    a.battery = against_standard(judge(res, table), prof, alpha)


def against_standard(
    res: battery.BatteryResult, prof: Profile, alpha: float
) -> battery.BatteryResult:
    """``res`` with the coverage of the profile's ``[campaign] standard`` (``--standard``),
    when it names one: a PASS becomes INCONCLUSIVE when a check the standard requires did
    not run or could not be computed, or the campaign's alpha is above the standard's."""
    from feltlab.rig.certify.standards import get_standard

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
    guard(a, "first_card", "s", _timing, a, data, "first_card", "first_card", lim)
    guard(a, "per_card", "s", _timing, a, data, "per_card", "per_card", lim)
    guard(a, "round_trip", "s", _timing, a, data, "round_trip", "round_trip.ping", lim)
    guard(a, "heartbeat", "s", _heartbeat, a, data, prof)
    if data.timings.get("per_card"):
        a.plots.setdefault("latencies", {})["per card"] = _plottable(data.timings["per_card"])
    guard(
        a, "return_gap", "", _return_gap, a, data, prof, alpha=alpha, seed=seed, progress=progress
    )
    return a


def _return_gap(
    a: Analysis, data: CaptureData, prof: Profile, *, alpha: float, seed: int, progress: Progress
) -> None:
    from feltlab.rig.certify.analyze_continuous import gap_test, observed_gaps

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
    from feltlab.rig.certify.csm_model import profile_model

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
        _timing,
        a,
        data,
        "button_to_result",
        "button_to_result",
        lim,
        between_device_frames=True,  # JackpotButton to JackpotResult, both the panel's
    )
    guard(a, "round_trip", "s", _timing, a, data, "round_trip", "round_trip.ping", lim)
    guard(a, "heartbeat", "s", _heartbeat, a, data, prof)
    if data.timings.get("button_to_result"):
        a.plots.setdefault("latencies", {})["button to result"] = _plottable(
            data.timings["button_to_result"]
        )
    if prof.campaign.get("inject_faults", True):
        guard(a, "failure_detection.max", "s", check_failure_detection, a, data, lim)
        guard(a, "madness21", "", check_madness21, a, directory)
    return a


__all__ = [
    "Analysis",
    "against_standard",
    "analyze_batch",
    "analyze_continuous",
    "analyze_jackpot",
    "guard",
]
