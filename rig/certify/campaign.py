"""Certification campaigns: profile -> bus -> device client -> capture -> checks -> verdicts ->
report (docs/certification.md).

A campaign directory holds ``campaign.json`` (the profile, options and seed, written first),
one capture per collection part (``capture-001.blf``, ``capture-002.blf`` after a resume, ...),
and at the end ``record.json``, ``report.html``, ``junit.xml`` and ``manifest.json``.  Every
verdict is computed from the capture (:func:`analyze_campaign`), so ``feltlab analyze`` reaches
the same verdicts and statistics offline.

A campaign runs in phases, each once and in this order, each taking the one :class:`Campaign`
the first returns (docs/design.md, "Rig: data flow and device kinds"): refuse bad options
(:func:`run_campaign`) or resume from the campaign's own record (:func:`resume_campaign`,
:func:`recorded_campaign`); prepare (``campaign.json``); collect a part (:func:`collect_part`,
the kind's ``collect``); then :func:`conclude`: analyse (the kind's ``analyze``), verdict,
outputs.

Library code: it logs and reports progress through a callback, never prints.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from feltlab.errors import FeltlabError
from feltlab.rig.bus.writer import journal_path
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
    FaultPlan,
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
    recorded_profile,
)
from feltlab.rig.certify.record import (
    CampaignResult,
    build_record,
    capture_paths,
    check_parts,
    clear_leftovers,
    collection_record,
    count_samples,
    missing_measurement,
    new_out_dir,
    read_state,
    record_part,
    recover_part,
    refuse_complete,
    refuse_links,
    report_plots,
    set_aside_part,
    taken_out_hint,
    unclosed_parts,
    write_state,
)
from feltlab.rig.certify.report import write_report
from feltlab.rig.certify.uncertainty import combine, read_calibrations
from feltlab.rig.devices.models import parse_model
from feltlab.rig.errors import (
    LimitExceeded,
    RigError,
)
from feltlab.rig.killpoints import reach
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
    want: int,
    *,
    seed: int,
    plan: FaultPlan | None,
    progress: Progress,
    stop: threading.Event,
    have: int = 0,
    live: Any = None,
) -> Collected:
    """Collect ``want`` more samples (shoes, deals or draws) into ``capture-<part>.blf``, the
    simulated device seeded from the campaign's ``seed``, the faults of ``plan`` injected.
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
        if result.closing is None and capture.exists():  # the part failed as it opened
            record_part(directory, part, capture)
            journal_path(capture).unlink(missing_ok=True)
        result.crashes = list(getattr(clock, "crashes", []))
        if result.crashes and result.error is None:
            result.error = f"the rig failed during collection: {result.crashes[0][1]}"
    if stop.is_set() and result.done < want:  # a Ctrl-C after the last sample aborts nothing
        result.aborted = True
    return result


@dataclass(frozen=True)
class Campaign:
    """A campaign past its first phase: its options (built once, by the caller or from the
    campaign's record: :func:`recorded_campaign`), its fault plan, and its state
    (``campaign.json``: the options with every default resolved, :attr:`size`, :attr:`alpha`
    and :attr:`seed` from the profile or drawn, which a resume reads back).  Every later phase
    takes this one object."""

    opts: CampaignOptions
    plan: FaultPlan | None
    state: dict[str, Any]
    resumed: bool = False

    @property
    def out(self) -> Path:
        return self.opts.out

    @property
    def profile(self) -> Profile:
        return self.opts.profile

    @property
    def size(self) -> int:
        return int(self.state["size"])

    @property
    def alpha(self) -> float:
        return float(self.state["alpha"])

    @property
    def seed(self) -> int:
        return int(self.state["seed"])


def run_campaign(
    opts: CampaignOptions,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    live: Any = None,
) -> CampaignResult:
    """Run a new campaign into ``opts.out``, phase by phase: refuse bad options (before any
    folder is made), prepare (``campaign.json``), collect a part, analyse from the capture,
    judge the verdict, write the outputs (record, report, JUnit, manifest).  Setting ``stop``
    (e.g. on Ctrl-C) ends collection cleanly; the partial record then has verdict ABORTED.
    Raises :class:`CampaignError` for bad options.  ``live``: an optional
    :class:`feltlab.rig.live.observer.CampaignObserver` told the campaign's state, progress,
    client and record (``feltlab certify --live``)."""
    return _run(_refuse(opts), progress, stop, live)


def resume_campaign(
    out: Path,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    live: Any = None,
) -> CampaignResult:
    """Continue the interrupted campaign in ``out`` with the options of its own record
    (``campaign.json``: profile, bus, model, size, alpha, seed, faults, clock), through the
    same phases as :func:`run_campaign`: a new collection part for the samples still missing,
    then the analysis of every part.  Raises :class:`CampaignError` for a folder that is no
    campaign's, holds foreign parts, or is complete."""
    return _run(_resume(Path(out)), progress, stop, live)


def _run(
    camp: Campaign, progress: Progress | None, stop: threading.Event | None, live: Any
) -> CampaignResult:
    """The phases after the first: prepare, collect, then analyse, verdict and outputs
    (:func:`conclude`); however it ends, the part's BLF is written and recorded and no
    helper process is left."""
    prog = progress or NoProgress()
    stop = stop or threading.Event()
    have = _prepare(camp, prog, live)
    collected = Collected()
    opts = camp.opts
    # forked before collection: matplotlib and the power runs overlap it (ahead.py)
    worker = AheadWorker(jobs=_jobs_ahead(camp), ahead=opts.ahead)
    try:
        collected = _collect(camp, have, prog, stop, live)
        if live is None:
            with fewer_gc_passes():
                return conclude(camp, collected, progress=prog, worker=worker)
        live.analysing()
        result = conclude(camp, collected, progress=live.progress(prog), worker=worker)
    finally:
        try:  # however the campaign ends: its BLF is written and recorded
            settle(collected, opts.out)
        except OSError as exc:  # told already, if the campaign got as far as its record
            log.error("%s", exc)
        worker.close()  # and no helper process is left
    live.finished(result.record, opts.out)
    return result


# -- phase 1: refuse (a new campaign) or resume -------------------------------------------------


def _refuse(opts: CampaignOptions) -> Campaign:
    """A new campaign's first phase: refuse bad options before its folder is made (a bad
    fault plan or key, a shuffle model that cannot shuffle the shoe, an unwritable or
    rolled-back freshness state, a seed, alpha or size out of range, a fault plan with too few
    shoes), then make the lab key and the folder.  Returns the campaign with its options
    resolved once.  Raises :class:`CampaignError`."""
    prof = opts.profile
    plan = campaign_fault_plan(prof, opts.faults)  # bad plans and keys: before mkdir
    _check_model(opts)  # so does a shuffle model that cannot shuffle this shoe
    check_freshness(prof)  # and an unwritable or rolled-back freshness state (a bad key)
    if opts.seed is not None and not 0 <= opts.seed <= U64_MAX:
        raise CampaignError(f"the seed must be in 0..{U64_MAX}, got {opts.seed}")
    alpha = float(opts.alpha if opts.alpha is not None else prof.campaign.get("alpha", 0.01))
    if not 0 < alpha < 1:
        raise CampaignError(f"alpha must be in (0, 1), got {alpha}")
    size = int(
        opts.size if opts.size is not None else prof.campaign.get(prof.device_kind.unit, 100)
    )
    if size < 2:
        raise CampaignError(f"the sample size must be at least 2, got {size}")
    if plan is not None and size < shoes_needed(len(plan.faults)):
        raise CampaignError(
            f"the fault plan injects {len(plan.faults)} faults, one per shoe with a clean shoe "
            f"before the first and after the last: it needs at least "
            f"{shoes_needed(len(plan.faults))} shoes; give --shoes "
            f"{shoes_needed(len(plan.faults))} or fewer faults"
        )
    bound = new_binding()  # the lab key made (or read) before the folder is
    new_out_dir(opts.out, taken_out_hint(opts.out, prof.device_kind.command))
    seed = opts.seed if opts.seed is not None else secrets.randbits(62)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    state = _state(opts, uuid.uuid4().hex, started, size=size, alpha=alpha, seed=seed)
    state["binding"] = bound  # the lab key its parts are bound with (binding.py)
    return Campaign(opts, plan, state)


def recorded_campaign(out: Path, state: dict[str, Any] | None = None) -> Campaign:
    """The campaign in ``out`` as its own record says (``state``, else its campaign.json read
    and checked by :func:`read_state`): its options built from the record's profile, bus,
    model, size, alpha, seed, faults, clock and device-on-host.  Raises
    :class:`CampaignError` for a bad record or fault plan."""
    state = read_state(out) if state is None else state
    prof = recorded_profile(state, out)
    opts = CampaignOptions(
        prof,
        out,
        bus=state["bus"],
        model=state["model"],
        size=int(state["size"]),
        alpha=float(state["alpha"]),
        seed=int(state["seed"]),
        faults=state.get("faults"),
        clock=state.get("clock"),
        device_on_host=bool(state.get("device_on_host", False)),
    )
    return Campaign(opts, campaign_fault_plan(prof, opts.faults), state)


def _resume(out: Path) -> Campaign:
    """A resumed campaign's first phase: its options from its own record
    (:func:`recorded_campaign`), refused when the folder holds a planted link or a foreign
    part, is complete, or its keyed device's freshness state is bad; the parts a crash left
    unclosed taken back (:func:`_take_back`).  Raises :class:`CampaignError`."""
    old = read_state(out)
    refuse_links(out)  # a link planted in the folder: nothing written through it
    check_parts(out, old, capture_paths(out))  # foreign parts: refused before any work
    recorded = recorded_campaign(out, old)
    refuse_complete(out, recorded.profile, recorded.size)
    check_freshness(recorded.profile)
    clear_leftovers(out)
    _take_back(out, recorded)
    old = read_state(out)
    state = _state(
        recorded.opts,
        old["campaign_id"],
        old["started"],
        size=recorded.size,
        alpha=recorded.alpha,
        seed=recorded.seed,
    )
    state["parts"] = old["parts"]
    state["binding"] = old.get("binding")  # a resume keeps the campaign's lab key
    state["recovered_parts"] = old.get("recovered_parts", [])
    if old.get("set_aside_parts"):
        state["set_aside_parts"] = old["set_aside_parts"]
    check_parts(out, state, capture_paths(out))  # the recovered parts too
    return Campaign(recorded.opts, recorded.plan, state, resumed=True)


def _take_back(out: Path, camp: Campaign) -> None:
    """Take back each part a crash left unclosed (a journal beside it), each step recorded in
    campaign.json before the next (docs/station.md, "Crash windows"): rebuilt from its journal
    and kept (:func:`recover_part`), unless the device kind's samples are not independent
    across a part (``DeviceKind.independent_samples`` False: a continuous shuffler's return
    gaps span its part, and a part cut short loses the gaps of every card returned in it) and
    the part does not complete the sample: it is then set aside and collected again from its
    start (:func:`set_aside_part`), nothing of it counted."""
    prof = camp.profile
    for capture in unclosed_parts(out):
        if not prof.device_kind.independent_samples:
            closed = [c for c in capture_paths(out) if c.name != capture.name]
            data = read_campaign_capture([*closed, capture], prof.base)
            have = count_samples(data, prof.kind)
            if have < camp.size:
                name = set_aside_part(
                    out,
                    capture,
                    f"never closed with {have} of {camp.size} {prof.device_kind.unit}: "
                    "collected again from its start",
                )
                log.warning("%s: set aside as %s, collected again", capture.name, name)
                continue
        recover_part(out, capture)


def _state(
    opts: CampaignOptions, campaign_id: str, started: str, *, size: int, alpha: float, seed: int
) -> dict[str, Any]:
    """The campaign's state as ``campaign.json`` records it: the options with the sample
    ``size``, ``alpha`` and ``seed`` resolved, from which a resume builds its options again
    (:func:`recorded_campaign`)."""
    return {
        "campaign_id": campaign_id,
        "kind": opts.profile.kind,
        "profile": opts.profile.to_dict(),
        "bus": opts.bus,
        "model": opts.model,
        "size": size,
        "alpha": alpha,
        "seed": seed,
        "faults": opts.faults,
        "clock": opts.clock_mode,
        "device_on_host": opts.device_shares_host,
        "started": started,
        "parts": [],  # each part proved this campaign's as it closes (record_part)
        "binding": None,
    }


# -- phase 2: prepare ----------------------------------------------------------------------------


def _prepare(camp: Campaign, prog: Progress, live: Any) -> int:
    """Write ``campaign.json`` and count the samples the capture holds already (a resume's
    earlier parts); returns that count."""
    out, prof = camp.out, camp.profile
    write_state(out, camp.state)
    reach("state-written")
    if live is not None:
        live.campaign_started(camp.state, out)
    parts = capture_paths(out)
    if not parts:
        return 0
    prog.start("reading the capture collected so far", None)
    have = count_samples(read_campaign_capture(parts, prof.base), prof.kind)
    if live is not None:
        live.already_collected(have)
    return have


# -- phase 3: collect a part ---------------------------------------------------------------------


def _collect(
    camp: Campaign, have: int, prog: Progress, stop: threading.Event, live: Any
) -> Collected:
    """Collect the samples still missing into a new part (none when the capture has them
    all).  A resume whose last part holds every sample but never closed (killed after its
    last sample: rebuilt from its journal) collects a closing part of no sample: what a part
    does after its last one (the heartbeats that measure ``heartbeat.period``, the drain, a
    jackpot panel's Madness 21 rounds and faults) is then in the capture, as in a campaign
    never killed."""
    closing = have >= camp.size and camp.resumed and _last_part_unclosed(camp.state)
    if have >= camp.size and not closing:
        if camp.resumed:
            log.info("nothing left to collect: %d of %d", have, camp.size)
        return Collected()
    part = len(capture_paths(camp.out)) + 1
    with watch_host(camp.out, camp.state), fewer_gc_passes():
        return collect_part(
            camp.opts,
            camp.out,
            part,
            max(camp.size - have, 0),
            seed=camp.seed,
            plan=None if closing else camp.plan,
            progress=prog,
            stop=stop,
            have=have,
            live=live,
        )


def _last_part_unclosed(state: dict[str, Any]) -> bool:
    """The campaign's last part was rebuilt from its journal (it never closed)."""
    parts = state.get("parts") or []
    return bool(parts) and parts[-1].get("recovered") is True


def _check_model(opts: CampaignOptions) -> None:
    """Raise CampaignError when the simulated device's shuffle model (``--model`` or the
    profile's ``[simulation] model``) is unknown or cannot shuffle the profile's shoe."""
    prof = opts.profile
    if not (opts.simulated and prof.device_kind.models):
        return

    dev = prof.device_options(simulated=True)
    name = opts.model if opts.model is not None else dev.get("model", "fisher-yates")
    try:
        parse_model(name).check_fits(int(dev.get("decks", 6)) * 52)
    except ValueError as exc:
        raise CampaignError(f"{exc}") from None


def _jobs_ahead(camp: Campaign) -> Sequence[Any]:
    """The pure computations the analysis will run that the capture does not change (the
    kind's ``plan_ahead``), for the helper process to compute during collection."""
    opts = camp.opts
    plan_ahead = opts.profile.device_kind.plan_ahead
    if plan_ahead is None:
        return ()
    try:
        return plan_ahead(opts.profile, camp.size, camp.alpha, camp.seed)
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
    if capture.exists():  # recorded before its journal is removed: a kill -9 between the
        reach("blf-written")  # two leaves the journal, which --resume takes back
        record_part(directory, part, capture)
        reach("part-recorded")
        writer.remove_journal()
    frames = collected.frames.get(capture.name)
    if frames is None or writer.read_back_agrees(frames):
        return True
    log.warning("%s: its frames as kept differ from the file: analysed from the file", capture)
    del collected.frames[capture.name]
    return False


# -- phases 4 to 6: analyse, verdict, outputs ---------------------------------------------------


def conclude(
    camp: Campaign,
    collected: Collected,
    *,
    progress: Progress,
    worker: AheadWorker | None = None,
) -> CampaignResult:
    """Phases 4 to 6 of ``camp`` after ``collected``: analyse the campaign from its capture,
    judge its verdict, write its outputs.  In real time the host's timing uncertainty is
    calibrated once more after collection (:func:`calibrate_after`).  ``worker``: the helper
    process started before collection (its power table, the plots; default: one started
    now, for the plots), closed here."""
    calibrate_after(camp.out, camp.state)
    if worker is None:
        worker = AheadWorker()  # the plots' matplotlib import overlaps the analysis
    captures = capture_paths(camp.out)
    try:
        with serving(worker):
            analysis, data = _analyse(camp, captures, collected, progress)
            have = count_samples(data, camp.profile.kind) if data is not None else None
            verdict = _verdict(camp, collected, analysis, have)
            return _outputs(camp, captures, collected, analysis, data, have, verdict, worker)
    finally:
        worker.close()  # however the analysis ends: no helper process is left


def _analyse(
    camp: Campaign, captures: Sequence[Path], collected: Collected, progress: Progress
) -> tuple[Analysis, CaptureData | None]:
    """Phase 4: every check from the capture (:func:`analyze_campaign`), from the frames the
    part kept when they agree with the BLF written meanwhile, else from the file."""

    def analyse() -> tuple[Analysis, CaptureData | None]:
        try:
            return analyze_campaign(
                captures,
                camp.profile,
                alpha=camp.alpha,
                seed=camp.seed,
                directory=camp.out,
                progress=progress,
                frames=collected.frames,
            )
        except (RigError, ValueError, OSError, EOFError) as exc:  # an unreadable capture
            failed = Analysis(errors=[f"analysis: {exc}"])
            failed.host = combine(read_calibrations(camp.out))
            return failed, None

    analysis, data = analyse()
    # the BLF, written meanwhile, recorded before the record names its SHA-256 (an OSError,
    # a full disk, goes up: no record, the journal kept for --resume)
    if not settle(collected, camp.out):  # its frames differ from those kept (then dropped)
        analysis, data = analyse()  # analysed from the file
    if collected.error:
        analysis.errors.insert(0, f"collection: {collected.error}")
    return analysis, data


def _verdict(camp: Campaign, collected: Collected, analysis: Analysis, have: int | None) -> Verdict:
    """Phase 5: the samples missing measured (why they are missing), then the verdict:
    ABORTED when collection was interrupted, else the analysis' (the announced limits the
    device went beyond are judged from the capture, certify.analyze._announced, so that
    analyze reaches the same verdict offline)."""
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
            camp.profile.kind,
            camp.size,
            have,
            why,
            failed=[f"{i}: {r}" for i, r in collected.missing],
        )
    )
    return Verdict.ABORTED if collected.aborted else analysis.verdict()


def _outputs(
    camp: Campaign,
    captures: Sequence[Path],
    collected: Collected,
    analysis: Analysis,
    data: CaptureData | None,
    have: int | None,
    verdict: Verdict,
    worker: AheadWorker,
) -> CampaignResult:
    """Phase 6: the record, then the report, JUnit and manifest (with the plots unless the
    options say none)."""
    record = build_record(
        camp.profile,
        camp.state,
        analysis,
        captures,
        verdict,
        collected,
        collection=collection_record(camp.size, have, collected),
        heartbeat_kind=data.heartbeat_kind if data is not None else None,
    )
    write_report(camp.out, record, report_plots(analysis, worker) if camp.opts.plots else [])
    return CampaignResult(verdict, record, camp.out)


__all__ = [
    "Campaign",
    "conclude",
    "recorded_campaign",
    "resume_campaign",
    "run_campaign",
]
