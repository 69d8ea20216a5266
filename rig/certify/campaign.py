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

import functools
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
from feltlab.rig.certify.ahead import AheadWorker, serving
from feltlab.rig.certify.analyze import Analysis
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.binding import new_binding
from feltlab.rig.certify.collect import (
    CampaignOptions,
    Collected,
    calibrate_after,
    campaign_fault_plan,
    check_freshness,
    fewer_gc_passes,
    open_part,
    wait_heartbeats,
    watch_host,
)
from feltlab.rig.certify.decode import CaptureData, read_campaign_capture
from feltlab.rig.certify.faults import (
    FaultRunner,
    read_trials,
    shoes_needed,
)
from feltlab.rig.certify.offline import analyze_campaign
from feltlab.rig.certify.profile import (
    CampaignError,
    NoProgress,
    Profile,
    Progress,
    profile_from_dict,
)
from feltlab.rig.certify.record import (
    CampaignResult,
    build_record,
    capture_paths,
    check_parts,
    collection_record,
    count_samples,
    missing_measurement,
    new_out_dir,
    part_entry,
    read_state,
    record_part,
    recover_captures,
    refuse_complete,
    refuse_links,
    report_plots,
    taken_out_hint,
)
from feltlab.rig.certify.report import write_report
from feltlab.rig.certify.uncertainty import combine, read_calibrations
from feltlab.rig.errors import (
    LimitExceeded,
    RigError,
)
from feltlab.seeds import (
    U64_MAX,
)

log = logging.getLogger(__name__)

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
        dev, client, _spec = open_part(opts, capture, part, seed, clock)
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
        wait_heartbeats(client, opts.profile.heartbeat_period, stop)
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
            keep = getattr(client, "freshness_keep", None)
            if keep is not None:
                try:
                    keep(client.freshness)
                except (RigError, OSError) as exc:
                    result.error = result.error or f"freshness not saved: {exc}"
            result.bus = client.node.stats()
            result.stale_replies = client.stale_replies
            writer = client.node.capture
            if writer is not None:
                writer.background = True  # the BLF written while the campaign is analysed
            client.close()  # closes the capture
            kept = writer.frames_as_read() if writer is not None else None
            if kept is not None:
                result.frames[capture.name] = kept
            if writer is not None:
                result.closing = (writer, part, capture)  # recorded once written: settle()
        if dev is not None:
            dev.stop()
        clock.close()
        if result.closing is None and capture.exists():
            record_part(directory, part, capture)
        result.crashes = list(getattr(clock, "crashes", []))
        if result.crashes and result.error is None:
            result.error = f"the rig failed during collection: {result.crashes[0][1]}"
    if stop.is_set() and result.done < want:  # a Ctrl-C after the last sample aborts nothing
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
    prog = progress or NoProgress()
    stop = stop or threading.Event()
    out = opts.out
    bound: dict[str, Any] | None = None  # a new campaign's binding (binding.py)
    if resume:
        state = read_state(out)
        refuse_links(out)  # a link planted in the folder: nothing written through it
        check_parts(out, state, capture_paths(out))  # foreign parts: refused before any work
        prof = profile_from_dict(state["profile"]["data"], state["profile"]["path"])
        refuse_complete(out, prof, int(state["size"]))
        check_freshness(prof)
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
        _check_model(opts)  # so does a shuffle model that cannot shuffle this shoe
        check_freshness(opts.profile)  # and an unwritable or rolled-back freshness state
        if opts.seed is not None and not 0 <= opts.seed <= U64_MAX:
            raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {opts.seed}")
        bound = new_binding()  # the lab key made (or read) before the folder is
        new_out_dir(out, taken_out_hint(out, opts.profile.device_kind.command))
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
        "campaign_id": uuid.uuid4().hex if not resume else read_state(out)["campaign_id"],
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
        "parts": [],  # each part proved this campaign's as it closes (record_part)
        # the lab key its parts are bound with (binding.py); a resume keeps the campaign's
        "binding": bound,
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
        old = read_state(out)
        state["started"] = old["started"]
        state["recovered_parts"] = old.get("recovered_parts", [])
        recovered = recover_captures(out)
        state["recovered_parts"] += recovered
        state["parts"] = old.get("parts", [])
        state["binding"] = old.get("binding")
        for name in recovered:  # a part rebuilt from its journal: recorded now
            p = int(name[len("capture-") : -len(".blf")])
            state["parts"] = [e for e in state["parts"] if e.get("part") != p]
            state["parts"].append(part_entry(state, p, out / name, recovered=True))
        check_parts(out, state, capture_paths(out))  # the recovered parts too
    (out / "campaign.json").write_text(json.dumps(state, indent=2))
    if live is not None:
        live.campaign_started(state, out)
    parts = capture_paths(out)
    have = 0
    if parts:
        prog.start("reading the capture collected so far", None)
        have = count_samples(read_campaign_capture(parts, prof.base), prof.kind)
        if live is not None:
            live.already_collected(have)
    part = len(parts) + 1
    collected = Collected()
    # forked before collection: matplotlib and the power runs overlap it (ahead.py)
    worker = AheadWorker(jobs=_jobs_ahead(prof, size, alpha, seed), ahead=opts.ahead)
    try:
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
        report = functools.partial(finish, out, prof, state, collected, worker=worker)
        if live is None:
            with fewer_gc_passes():
                return report(progress=prog, plots=opts.plots)
        live.analysing()
        result = report(progress=live.progress(prog), plots=opts.plots)
    finally:
        try:  # however the campaign ends: its BLF is written and recorded
            settle(collected, out)
        except OSError as exc:  # told already, if the campaign got as far as its record
            log.error("%s", exc)
        worker.close()  # and no helper process is left
    live.finished(result.record, out)
    return result


def _check_model(opts: CampaignOptions) -> None:
    """Raise CampaignError when the simulated device's shuffle model (``--model`` or the
    profile's ``[simulation] model``) is unknown or cannot shuffle the profile's shoe."""
    prof = opts.profile
    if not (opts.simulated and prof.device_kind.models):
        return
    from feltlab.rig.devices.models import parse_model

    dev = prof.device_options(simulated=True)
    name = opts.model if opts.model is not None else dev.get("model", "fisher-yates")
    try:
        parse_model(name).check_fits(int(dev.get("decks", 6)) * 52)
    except ValueError as exc:
        raise CampaignError(f"{exc}") from None


def _jobs_ahead(prof: Profile, size: int, alpha: float, seed: int) -> Sequence[Any]:
    """The pure computations the analysis will run that the capture does not change (the
    kind's ``plan_ahead``), for the helper process to compute during collection."""
    plan_ahead = prof.device_kind.plan_ahead
    try:
        return plan_ahead(prof, size, alpha, seed) if plan_ahead is not None else ()
    except Exception as exc:  # only ever a head start: the analysis runs its jobs itself
        log.info("nothing computed ahead (%s)", exc)
        return ()


def settle(collected: Collected, directory: Path) -> bool:
    """Wait for the part's BLF written in the background (``collected.closing``), then
    record the part (:func:`record_part`).  Returns False when the file's frames are not the
    frames kept for the analysis (``collected.frames``, then dropped: the caller analyses the
    file); True otherwise, and when nothing was pending.  Raises the OSError that kept the
    BLF from being written (a full disk): the part is then not recorded, and its journal is
    kept for ``--resume``."""
    if collected.closing is None:
        return True
    writer, part, capture = collected.closing
    collected.closing = None
    writer.wait()
    if writer.failure is not None:
        collected.frames.pop(capture.name, None)
        raise writer.failure
    if capture.exists():
        record_part(directory, part, capture)
    frames = collected.frames.get(capture.name)
    if frames is None or writer.read_back_agrees(frames):
        return True
    log.warning("%s: its frames as kept differ from the file: analysed from the file", capture)
    del collected.frames[capture.name]
    return False


def finish(
    out: Path,
    prof: Profile,
    state: dict[str, Any],
    collected: Collected,
    *,
    progress: Progress,
    worker: AheadWorker | None = None,
    plots: bool = True,
) -> CampaignResult:
    """Analyse the campaign in ``out`` and write its report (``plots``: with its plots).  In
    real time the host's timing uncertainty is calibrated once more after collection
    (:func:`calibrate_after`).
    ``worker``: the helper process started before collection (default: one started now, for
    the plots), closed here."""
    errors: list[str] = []
    if collected.error:
        errors.append(f"collection: {collected.error}")
    calibrate_after(out, state)
    if worker is None:
        worker = AheadWorker()  # the plots' matplotlib import overlaps the analysis
    try:
        with serving(worker):
            return _finish(out, prof, state, collected, errors, worker, progress, plots)
    finally:
        worker.close()  # however the analysis ends: no helper process is left


def _finish(
    out: Path,
    prof: Profile,
    state: dict[str, Any],
    collected: Collected,
    errors: list[str],
    worker: AheadWorker,
    progress: Progress,
    plots: bool,
) -> CampaignResult:
    captures = capture_paths(out)

    def analyse() -> tuple[Analysis, CaptureData | None]:
        try:
            return analyze_campaign(
                captures,
                prof,
                alpha=state["alpha"],
                seed=state["seed"],
                directory=out,
                progress=progress,
                frames=collected.frames,
            )
        except (RigError, ValueError, OSError, EOFError) as exc:  # an unreadable capture
            failed = Analysis(errors=[f"analysis: {exc}"])
            failed.host = combine(read_calibrations(out))
            return failed, None

    analysis, data = analyse()
    # the BLF, written meanwhile, recorded before the record names its SHA-256 (an OSError,
    # a full disk, goes up: no record, the journal kept for --resume)
    if not settle(collected, out):  # its frames differ from those kept (then dropped)
        analysis, data = analyse()  # analysed from the file
    analysis.errors[:0] = errors
    size = int(state["size"])
    have = count_samples(data, prof.kind) if data is not None else None
    if have is None:
        why = "the capture could not be analysed"
    elif collected.aborted:
        why = "collection was interrupted"
    elif collected.error:
        why = f"collection stopped: {collected.error}"
    else:
        why = "fewer samples in the capture than planned"
    analysis.measurements.append(
        missing_measurement(
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
        collection=collection_record(size, have, collected),
        heartbeat_kind=data.heartbeat_kind if data is not None else None,
    )
    write_report(out, record, report_plots(analysis, worker) if plots else [])
    return CampaignResult(verdict, record, out)


__all__ = [
    "finish",
    "run_campaign",
]
