"""The batch shuffler's analysis (docs/certification.md, "Batch shufflers"): timings, the
integrity of every shoe, the randomness battery and its power against named alternatives."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from feltlab import native
from feltlab.rig.certify import battery
from feltlab.rig.certify.ahead import draw_ahead
from feltlab.rig.certify.analyze import (
    Analysis,
    against_standard,
    guard,
    heartbeat_check,
    plottable,
    power_jobs,
    timing_check,
    with_limits,
)
from feltlab.rig.certify.decode import CaptureData
from feltlab.rig.certify.measures import (
    within,
)
from feltlab.rig.certify.power import (
    DEFAULT_REQUIRED,
    DEFAULT_SIMULATED_SHOES,
    PowerJob,
    PowerTable,
    judge,
)
from feltlab.rig.certify.uncertainty import HostUncertainty
from feltlab.rig.protocol.codec import UNKNOWN_DECK

if TYPE_CHECKING:
    from feltlab.rig.certify.profile import Profile, Progress


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


def planned_power_jobs(prof: Profile, size: int, alpha: float, seed: int) -> list[PowerJob]:
    """The :func:`power_jobs` of a batch campaign that collects its ``size`` shoes of the
    order the rig loads (``native.new_shoe(decks, ids=True)``): what its analysis will run,
    known before collection, so that a helper process computes it meanwhile
    (:mod:`feltlab.rig.certify.ahead`; :meth:`feltlab.rig.kinds.base.DeviceKind.plan_ahead`).
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
    guard(a, "shuffle_cycle", "s", timing_check, a, data, "shuffle_cycle", "shuffle_cycle", lim)
    guard(a, "first_card", "s", timing_check, a, data, "first_card", "first_card", lim)
    guard(
        a,
        "per_card",
        "s",
        timing_check,
        a,
        data,
        "per_card",
        "per_card",
        lim,
        cards,
        between_device_frames=True,  # first to last SHOE frame
    )
    guard(a, "round_trip", "s", timing_check, a, data, "round_trip", "round_trip.ping", lim)
    guard(a, "heartbeat", "s", heartbeat_check, a, data, prof)
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
            a.plots.setdefault("latencies", {})[nm] = with_limits(
                plottable(data.timings[nm]), lim, nm.removesuffix(".ping")
            )
    draw_ahead(latencies=a.plots.get("latencies"))  # drawn while the battery runs
    guard(a, "battery", "", _battery, a, prof, sample, alpha=alpha, progress=progress)
    return a


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
    if "predictability" in prof.raw:
        progress.start("analysing: predictability (seed search)", 1)
        guard(a, "predictability", "", predictability_check, a, prof, perm)
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


def predictability_check(a: Analysis, prof: Profile, perm: np.ndarray) -> None:
    """The predictability check (issue 40, docs/security.md) of a campaign whose profile
    declares its generator in a ``[predictability]`` table, on the first collected shoe
    (``perm[0]``: the loaded positions it dealt, so that any LOAD order is the declared
    shuffle's factory order): ``a.predictability``.  Raises DeclarationError for a bad
    declaration (an ERROR measurement of its own through :func:`guard`)."""
    from feltlab.rig.security.predict import campaign_predictability

    codes = (perm[0] % 52).astype(np.uint8)
    a.predictability = campaign_predictability(
        prof.raw["predictability"], codes, where=f"profile {prof.path or prof.name}"
    )
