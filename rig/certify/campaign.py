"""Certification campaigns: profile -> bus -> device client -> capture -> checks -> verdicts ->
report (docs/certification.md).

A campaign directory holds ``campaign.json`` (the profile, options and seed, written first),
one capture per collection part (``capture-001.blf``, ``capture-002.blf`` after a resume, ...),
and at the end ``record.json``, ``report.html``, ``junit.xml`` and ``manifest.json``.  Every
verdict is computed from the capture (:func:`analyze_campaign`), so ``feltlab analyze`` reaches
the same verdicts and statistics offline.

Library code: it logs and reports progress through a callback, never prints.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from feltlab.errors import FeltlabError
from feltlab.rig.certify.analyze import Analysis, guard
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.collect import (
    CampaignOptions,
    Collected,
    _collect_batch,
    _open,
    _wait_heartbeats,
    calibrate_after,
    campaign_fault_plan,
    fewer_gc_passes,
    freshness_store,
    watch_host,
)
from feltlab.rig.certify.decode import CaptureData, read_campaign_capture
from feltlab.rig.certify.faults import (
    FaultRunner,
    fault_results,
    fault_windows,
    read_trials,
    shoes_needed,
)
from feltlab.rig.certify.profile import (
    EXIT_CODES,
    REDACTED,
    CampaignError,
    Profile,
    Progress,
    _NoProgress,
    load_profile,
    profile_from_dict,
    quick_profile,
    redact_secrets,
)
from feltlab.rig.certify.record import (
    CampaignResult,
    _capture_paths,
    _collection,
    _count_samples,
    _missing_measurement,
    _new_out_dir,
    _plots,
    _read_state,
    _refuse_complete,
    _sha256,
    build_record,
    check_parts,
    clock_record,
    device_name,
    record_part,
    recover_captures,
    verdict_summary,
)
from feltlab.rig.certify.report import PlotWorker as PlotWorker  # the explorer replaces it
from feltlab.rig.certify.report import write_report
from feltlab.rig.certify.uncertainty import HostUncertainty, combine, read_calibrations
from feltlab.rig.errors import (
    LimitExceeded,
    RigError,
)
from feltlab.rig.kinds import FieldView
from feltlab.seeds import U64_MAX
from feltlab.seeds import part_seed as part_seed  # the device seed of a part, re-exported

log = logging.getLogger(__name__)

BUNDLED = FieldView("profile")
"""The default profile of each registered device kind: a live view of the registry
(:attr:`feltlab.rig.kinds.DeviceKind.profile`)."""


DRAIN_SECONDS = 0.5
"""How long (seconds) a collection part keeps the capture open after its last sample: twice
the N_Cr consecutive-frame timeout of the rig's ISO-TP links (0.25 s)."""


def collect_part(
    opts: CampaignOptions,
    directory: Path,
    part: int,
    seed: int,
    want: int,
    *,
    progress: Progress,
    stop: threading.Event,
    have: int = 0,
    live: Any = None,
) -> Collected:
    """Collect ``want`` more samples (shoes, deals or draws) into ``capture-<part>.blf``.
    Stops cleanly (capture flushed) when ``stop`` is set; device errors end the part with
    ``error`` set.  ``live``: an optional :class:`feltlab.rig.live.observer.CampaignObserver`."""
    capture = directory / f"capture-{part:03d}.blf"
    result = Collected(requested=want)
    dev = client = None
    runner: FaultRunner | None = None
    clock = opts.new_clock(part)
    try:
        dev, client, _spec = _open(opts, capture, part, seed, clock)
        if live is not None:
            live.attach(client, dev, clock)
            progress = live.progress(progress)
        hb = client.wait_online(float(opts.profile.campaign.get("online_timeout", 3.0)))
        result.online = {k: int(v) for k, v in hb.signals.items()}
        kind = opts.profile.device_kind
        plan = campaign_fault_plan(opts.profile, opts.faults)
        if plan is not None:
            done = [t["fault"] for t in read_trials(directory)]
            earlier = [directory / f"capture-{p:03d}.blf" for p in range(1, part)]
            previous = read_campaign_capture(earlier, opts.profile.base).shoes if have else []
            runner = FaultRunner(
                plan, client, want, directory, have=have, done=done, previous=previous
            )
        kind.collect(
            opts,
            client,
            want,
            result,
            progress,
            stop,
            faults=runner,
            directory=directory,
            part=part,
        )
        _wait_heartbeats(client, opts.profile.heartbeat_period, stop)
        if not stop.is_set():
            # the capture stays open a moment longer than ISO-TP's N_Cr: a transfer or reply
            # the device sends after the last sample (a shoe re-sent with other cards) is
            # recorded and judged, never lost by closing too early
            client.clock.sleep(DRAIN_SECONDS)
    except KeyboardInterrupt:
        result.aborted = True
    except LimitExceeded as exc:  # the device went beyond its declared limits: a FAIL
        result.limits_exceeded.append((exc.what, exc.value, exc.limit, str(exc)))
        log.error("collection stopped: %s", exc)
    except FeltlabError as exc:  # a rig error, or the SDK's (a withdrawn Madness 21 wager)
        result.error = str(exc)
        log.error("collection stopped: %s", exc)
    finally:
        if runner is not None and runner.pending:
            runner.after_sample(stopped=True, limits=opts.profile.limits)
        if live is not None and client is not None:
            live.detach(result.done, result.missing)
        if client is not None:
            key = getattr(client, "_key", None)
            if key is not None and client.freshness:
                freshness_store(opts.profile).remember(key, client.freshness)
            result.bus = client.node.stats()
            result.stale_replies = client.stale_replies
            client.close()  # flushes the capture
        if dev is not None:
            dev.stop()
        clock.close()
        if capture.exists():
            record_part(directory, part, capture)
        result.crashes = list(getattr(clock, "crashes", []))
        if result.crashes and result.error is None:
            result.error = f"the rig failed during collection: {result.crashes[0][1]}"
    if stop.is_set():
        result.aborted = True
    return result


def run_campaign(
    opts: CampaignOptions,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    resume: bool = False,
    live: Any = None,
) -> CampaignResult:
    """Run (or, with ``resume``, continue) a campaign into ``opts.out``: collect, analyse
    from the capture, write the report.  Setting ``stop`` (e.g. on Ctrl-C) ends collection
    cleanly; the partial record then has verdict ABORTED.  Raises :class:`CampaignError` for
    bad options.  ``live``: an optional :class:`feltlab.rig.live.observer.CampaignObserver` told the
    campaign's state, progress, client and record (``feltlab certify --live``)."""
    prog = progress or _NoProgress()
    stop = stop or threading.Event()
    out = opts.out
    if resume:
        state = _read_state(out)
        from feltlab.rig.bus.capture import journal_path

        closed = [c for c in _capture_paths(out) if not journal_path(c).exists()]
        check_parts(out, state, closed)  # a foreign capture is refused before any work
        prof = profile_from_dict(state["profile"]["data"], state["profile"]["path"])
        _refuse_complete(out, prof, int(state["size"]))
        opts = CampaignOptions(
            prof,
            out,
            state["bus"],
            state["model"],
            state["size"],
            state["alpha"],
            state["seed"],
            state.get("faults"),
            state.get("clock"),
            bool(state.get("device_on_host", False)),
        )
    else:
        campaign_fault_plan(opts.profile, opts.faults)  # bad plans and keys: before mkdir
        if opts.profile.device_kind.keyed:
            opts.profile.key()
        if opts.seed is not None and not 0 <= opts.seed <= U64_MAX:
            raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {opts.seed}")
        cmd = opts.profile.device_kind.command
        _new_out_dir(
            out,
            "choose a new --out directory, or continue it with "
            f"feltlab certify {cmd} --resume {{out}}",
        )
    prof = opts.profile
    seed = opts.seed if opts.seed is not None else secrets.randbits(62)
    alpha = float(opts.alpha if opts.alpha is not None else prof.campaign.get("alpha", 0.01))
    if not 0 < alpha < 1:
        raise CampaignError(f"alpha must be in (0, 1), got {alpha}")
    unit = prof.device_kind.unit
    size = int(opts.size if opts.size is not None else prof.campaign.get(unit, 100))
    if size < 2:
        raise CampaignError(f"the sample size must be at least 2, got {size}")
    state = {
        "campaign_id": uuid.uuid4().hex if not resume else _read_state(out)["campaign_id"],
        "kind": prof.kind,
        "profile": prof.to_dict(),
        "bus": opts.bus,
        "model": opts.model,
        "size": size,
        "alpha": alpha,
        "seed": seed,
        "faults": opts.faults,
        "clock": opts.clock_mode,
        "device_on_host": opts.device_shares_host,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    plan = campaign_fault_plan(prof, opts.faults)  # a bad plan stops here, before collection
    if plan is not None and not resume and size < shoes_needed(len(plan.faults)):
        raise CampaignError(
            f"the fault plan injects {len(plan.faults)} faults, one per shoe with a clean shoe "
            f"before the first and after the last: it needs at least "
            f"{shoes_needed(len(plan.faults))} shoes; give --shoes "
            f"{shoes_needed(len(plan.faults))} or fewer faults"
        )
    if prof.device_kind.keyed:
        prof.key()  # so does a missing or bad key
    recovered: list[str] = []
    if resume:
        old = _read_state(out)
        state["started"] = old["started"]
        state["recovered_parts"] = old.get("recovered_parts", [])
        recovered = recover_captures(out)
        state["recovered_parts"] += recovered
        state["parts"] = old.get("parts", [])
        for name in recovered:  # a part rebuilt from its journal: recorded now
            p = int(name[len("capture-") : -len(".blf")])
            state["parts"] = [e for e in state["parts"] if e.get("part") != p]
            state["parts"].append(
                {
                    "part": p,
                    "file": name,
                    "campaign_id": state["campaign_id"],
                    "device_seed": part_seed(int(state["seed"]), p),
                    "sha256": _sha256(out / name),
                    "recovered": True,
                }
            )
        if "parts" in old or recovered:
            check_parts(out, state, _capture_paths(out))  # the recovered parts too
    (out / "campaign.json").write_text(json.dumps(state, indent=2))
    if live is not None:
        live.campaign_started(state, out)
    parts = _capture_paths(out)
    have = 0
    if parts:
        prog.start("reading the capture collected so far", None)
        have = _count_samples(read_campaign_capture(parts, prof.base), prof.kind)
        if live is not None:
            live.already_collected(have)
    part = len(parts) + 1
    collected = Collected()
    if have < size:
        with watch_host(out, state), fewer_gc_passes():
            collected = collect_part(
                replace(opts, seed=seed),
                out,
                part,
                seed,
                size - have,
                progress=prog,
                stop=stop,
                have=have,
                live=live,
            )
    elif resume:
        log.info("nothing left to collect: %d of %d", have, size)
    if live is None:
        with fewer_gc_passes():
            return finish(out, prof, state, collected, progress=prog)
    live.analysing()
    result = finish(out, prof, state, collected, progress=live.progress(prog))
    live.finished(result.record, out)
    return result


def analyze_campaign(
    captures: Sequence[Path],
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    directory: Path | None = None,
    progress: Progress | None = None,
    host: HostUncertainty | None = None,
) -> tuple[Analysis, CaptureData]:
    """Every check of a campaign from its captures (what ``feltlab analyze`` runs).

    ``host``: the host's timing uncertainty; default the worst calibration recorded in
    ``directory`` (``host-uncertainty.jsonl``, :mod:`feltlab.rig.certify.uncertainty`), none when
    there is none.  One check that cannot run is an ERROR measurement of its own; only an
    unreadable capture raises (RigError, OSError)."""
    prog = progress or _NoProgress()
    prog.start("decoding the capture", None)
    if host is None:
        host = combine(read_calibrations(directory))
    trials = read_trials(directory)
    data = read_campaign_capture(
        captures,
        prof.base,
        progress=prog.advance,
        exclude=fault_windows(trials, prof.heartbeat_period),
        exclude_heartbeats=fault_windows(trials, prof.heartbeat_period, heartbeat=True),
    )
    if data.frames == 0:
        a = Analysis(errors=["the capture holds no frame"], host=host)
        return a, data
    if data.heartbeat_kind is None:
        a = Analysis(
            errors=[f"no heartbeat from a device at 0x{prof.base:03X} in the capture"], host=host
        )
        return a, data
    a = prof.device_kind.analyze(
        data, prof, alpha=alpha, seed=seed, directory=directory, progress=prog, host=host
    )
    a.detail["frames"] = data.frames
    a.detail["parts"] = data.parts
    if trials:
        found = guard(a, "fault", "s", fault_results, trials, data.shoes, prof.limits)
        if found is not None:
            rows, ms = found
            a.faults = rows
            a.measurements.extend(ms)
        a.detail["samples_in_fault_windows"] = data.excluded_samples
    return a, data


def finish(
    out: Path,
    prof: Profile,
    state: dict[str, Any],
    collected: Collected,
    *,
    progress: Progress,
) -> CampaignResult:
    """Analyse the campaign in ``out`` and write its report.  In real time the host's
    timing uncertainty is calibrated once more after collection (:func:`calibrate_after`)."""
    errors: list[str] = []
    if collected.error:
        errors.append(f"collection: {collected.error}")
    calibrate_after(out, state)
    worker = PlotWorker()  # the plots' matplotlib import overlaps the analysis
    try:
        return _finish(out, prof, state, collected, errors, worker, progress)
    finally:
        worker.close()  # however the analysis ends: no plotting process is left


def _finish(
    out: Path,
    prof: Profile,
    state: dict[str, Any],
    collected: Collected,
    errors: list[str],
    worker: PlotWorker,
    progress: Progress,
) -> CampaignResult:
    captures = _capture_paths(out)
    try:
        analysis, data = analyze_campaign(
            captures,
            prof,
            alpha=state["alpha"],
            seed=state["seed"],
            directory=out,
            progress=progress,
        )
    except (RigError, ValueError, OSError, EOFError) as exc:  # an unreadable capture
        analysis, data = Analysis(errors=[f"analysis: {exc}"]), None
        analysis.host = combine(read_calibrations(out))
    analysis.errors[:0] = errors
    size = int(state["size"])
    have = _count_samples(data, prof.kind) if data is not None else None
    if have is None:
        why = "the capture could not be analysed"
    elif collected.aborted:
        why = "collection was interrupted"
    elif collected.error:
        why = f"collection stopped: {collected.error}"
    else:
        why = "fewer samples in the capture than planned"
    analysis.measurements.append(
        _missing_measurement(
            prof.kind,
            size,
            have,
            why,
            failed=[f"{i}: {r}" for i, r in collected.missing],
        )
    )
    # the announced limits the device went beyond are judged from the capture
    # (certify.analyze._announced), so that analyze reaches the same verdict offline
    verdict = Verdict.ABORTED if collected.aborted else analysis.verdict()
    record = build_record(
        prof,
        state,
        analysis,
        captures,
        verdict,
        collected,
        collection=_collection(size, have, collected),
        heartbeat_kind=data.heartbeat_kind if data is not None else None,
    )
    plots = _plots(analysis, worker)
    write_report(out, record, plots)
    return CampaignResult(verdict, record, out)


def analyze_path(
    path: Path,
    profile_ref: str | None,
    *,
    out: Path | None,
    alpha: float | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> CampaignResult:
    """``feltlab analyze``: re-run every check from a capture file or campaign directory.
    The profile, alpha and seed come from the campaign's ``campaign.json`` when present,
    else from the options (default: the bundled batch profile, alpha 0.01, seed 0).  The
    report goes to ``out`` when given."""
    prog = progress or _NoProgress()
    if seed is not None and not 0 <= seed <= U64_MAX:
        raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {seed}")
    if out is not None and (
        (out.exists() and not out.is_dir()) or (out.is_dir() and any(out.iterdir()))
    ):
        raise CampaignError(
            f"{out} is not a new or empty directory: analyze never overwrites a report or a "
            "campaign's record; choose a new --out directory"
        )
    directory = path if path.is_dir() else path.parent
    state: dict[str, Any] = {}
    if (directory / "campaign.json").exists():
        state = _read_state(directory)
    captures = _capture_paths(path) if path.is_dir() else [path]
    if not captures:
        raise CampaignError(f"no capture-NNN.blf in {path}")
    if profile_ref is not None:
        prof = load_profile(profile_ref)
        if state and state.get("kind") not in (None, prof.kind):
            raise CampaignError(
                f"profile {prof.path} is a {prof.kind} profile but {directory} holds a "
                f"{state['kind']} campaign: give a {state['kind']} profile, or none (the "
                "campaign's own)"
            )
    elif state:
        prof = profile_from_dict(state["profile"]["data"], state["profile"]["path"])
    else:
        prof = load_profile(None, "batch")
    use_alpha = float(alpha if alpha is not None else state.get("alpha", 0.01))
    use_seed = int(seed if seed is not None else state.get("seed", 0))
    st = {
        "campaign_id": state.get("campaign_id"),
        "bus": state.get("bus"),
        "model": state.get("model"),
        "size": state.get("size"),
        "alpha": use_alpha,
        "seed": use_seed,
        "clock": state.get("clock"),
        "started": state.get("started"),
    }
    if path.is_dir() and state:
        check_parts(directory, state, captures)
    analysis, data = analyze_campaign(
        captures, prof, alpha=use_alpha, seed=use_seed, directory=directory, progress=prog
    )
    have = _count_samples(data, prof.kind)
    planned = state.get("size") if path.is_dir() else None
    collection: dict[str, Any] = {
        "requested": planned,
        "collected": have,
        "missing_count": None,
        "complete": None,
        "aborted": False,
        "this_part": None,
        "missing": [],
    }
    incomplete = False
    if planned is not None:
        size = int(planned)
        incomplete = have < size
        collection.update(
            missing_count=max(0, size - have), complete=not incomplete, aborted=incomplete
        )
        what = prof.device_kind.unit
        analysis.measurements.append(
            _missing_measurement(
                prof.kind,
                size,
                have,
                f"collection incomplete: {have} of {size} {what} in the capture",
            )
        )
        if incomplete:
            analysis.errors.append(
                f"collection incomplete: {have} of the {size} {what} planned "
                f"(campaign.json) are in the capture; continue it with feltlab certify "
                f"{prof.device_kind.command} --resume {directory}"
            )
    verdict = Verdict.ABORTED if incomplete else analysis.verdict()
    record = build_record(
        prof,
        st,
        analysis,
        captures,
        verdict,
        collection=collection,
        heartbeat_kind=data.heartbeat_kind,
    )
    record["analyzed_offline"] = True
    if out is not None:
        _new_out_dir(out, "choose a new --out directory")
        write_report(out, record, _plots(analysis))
    return CampaignResult(verdict, record, out or directory)


__all__ = [
    "BUNDLED",
    "EXIT_CODES",
    "REDACTED",
    "Analysis",
    "CampaignError",
    "CampaignOptions",
    "CampaignResult",
    "Collected",
    "Profile",
    "Progress",
    "_NoProgress",
    "_collect_batch",
    "_count_samples",
    "_missing_measurement",
    "_plots",
    "analyze_campaign",
    "analyze_path",
    "clock_record",
    "device_name",
    "finish",
    "load_profile",
    "profile_from_dict",
    "quick_profile",
    "record_part",
    "redact_secrets",
    "run_campaign",
    "verdict_summary",
]
