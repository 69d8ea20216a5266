"""Every check of a campaign from its captures (:func:`analyze_campaign`), and ``feltlab
analyze`` (:func:`analyze_path`): what a campaign's verdicts are computed from, on the rig
at the end of collection and offline from the campaign directory alike, so that both reach
the same verdicts and statistics (docs/certification.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from feltlab.errors import InputError
from feltlab.inputs import read_text_regular
from feltlab.rig.certify.analyze import Analysis, guard
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.decode import CaptureData, read_campaign_capture
from feltlab.rig.certify.faults import fault_results, fault_windows, read_trials
from feltlab.rig.certify.measures import within
from feltlab.rig.certify.profile import (
    CampaignError,
    NoProgress,
    Profile,
    Progress,
    load_profile,
    recorded_profile,
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
    read_state,
    record_kind,
    report_plots,
)
from feltlab.rig.certify.report import write_report
from feltlab.rig.certify.uncertainty import HostUncertainty, combine, read_calibrations
from feltlab.seeds import U64_MAX


def part_time_bases(directory: Path | None) -> dict[str, float]:
    """A campaign folder's recorded time base of each part (file stem -> the epoch stamp of
    its first frame; :func:`feltlab.rig.certify.decode.read_campaign_capture`); empty for
    none, or for parts recorded before time bases were."""
    if directory is None or not (directory / "campaign.json").is_file():
        return {}
    try:
        state = json.loads((directory / "campaign.json").read_text(encoding="utf-8"))
        parts = state.get("parts") or []
        return {
            Path(str(p["file"])).stem: float(p["first_stamp"])
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("first_stamp"), int | float)
        }
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):
        return {}


def analyze_campaign(
    captures: Sequence[Path],
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    directory: Path | None = None,
    progress: Progress | None = None,
    host: HostUncertainty | None = None,
    frames: Mapping[str, Sequence[Any]] | None = None,
) -> tuple[Analysis, CaptureData]:
    """Every check of a campaign from its captures (what ``feltlab analyze`` runs).

    ``host``: the host's timing uncertainty; default the worst calibration recorded in
    ``directory`` (``host-uncertainty.jsonl``, :mod:`feltlab.rig.certify.uncertainty`), none when
    there is none.  ``frames``: capture file name -> its frames as read back, for a capture
    written by this process (:meth:`feltlab.rig.bus.writer.CaptureWriter.frames_as_read`),
    used instead of parsing the file.  One check that cannot run is an ERROR measurement of
    its own; only an unreadable capture raises (RigError, OSError)."""
    prog = progress or NoProgress()
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
        frames=frames,
        time_bases=part_time_bases(directory),
        heartbeat_kind=getattr(prof.device_kind.client, "kind", None),
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
    a.measurements.append(  # a malformed frame is a protocol failure of the device
        within(
            "protocol.malformed_frames",
            float(len(data.frame_errors)),
            "frames",
            0,
            0,
            reason="every frame at the device's ids must decode (docs/protocol.md)",
            examples=data.frame_errors[:5],
        )
    )
    if trials:
        found = guard(a, "fault", "s", fault_results, trials, data.shoes, prof.limits)
        if found is not None:
            rows, ms = found
            a.faults = rows
            a.measurements.extend(ms)
        a.detail["samples_in_fault_windows"] = data.excluded_samples
    return a, data


def _no_capture(path: Path, state: Mapping[str, Any]) -> CampaignError:
    """The error for a ``path`` with no capture: a raw-output certificate's folder (its
    record.json of kind ``rng``, no campaign.json) is named as one, with the command that
    shows it."""
    record = None
    if path.is_dir() and not state:
        try:
            text = read_text_regular(path / "record.json", "record.json", 256 << 20)
            record = json.loads(text) if text is not None else None
        except (InputError, ValueError, RecursionError):
            record = None
    if isinstance(record, dict) and record.get("kind") == "rng":
        return CampaignError(
            f"{path} is a raw-output certificate (feltlab certify rng), not a campaign with a "
            f"capture: feltlab view {path} shows it; run certify rng again to recompute it"
        )
    kind = record_kind(record) if isinstance(record, dict) else None
    why = {
        "security": "its checks talk to the device and are not re-run from its capture",
        "predict": "it holds the seed search's findings, not a capture",
    }.get(kind or "")
    if why is not None:
        command = f"certify {kind}"
        return CampaignError(
            f"{path} is a feltlab {command} record, not a campaign ({why}): feltlab view "
            f"{path} shows it; run feltlab {command} again to recompute it"
        )
    return CampaignError(f"no capture-NNN.blf in {path}")


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
    prog = progress or NoProgress()
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
        state = read_state(directory)
    captures = capture_paths(path) if path.is_dir() else [path]
    if not captures:
        raise _no_capture(path, state)
    if profile_ref is not None:
        prof = load_profile(profile_ref)
        if state and state.get("kind") not in (None, prof.kind):
            raise CampaignError(
                f"profile {prof.path} is a {prof.kind} profile but {directory} holds a "
                f"{state['kind']} campaign: give a {state['kind']} profile, or none (the "
                "campaign's own)"
            )
    elif state:
        prof = recorded_profile(state, directory)
    else:
        prof = load_profile(None)  # a folder that names no kind: the default kind's
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
        check_parts(directory, state, captures, strict=False)
    analysis, data = analyze_campaign(
        captures, prof, alpha=use_alpha, seed=use_seed, directory=directory, progress=prog
    )
    have = count_samples(data, prof.kind)
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
        # the plan's samples and those beyond it, as the campaign itself records them (it
        # said "302 of 300" where certify said "300 of 300 (+2 beyond the plan)")
        collection.update(collection_record(size, have, None), aborted=incomplete)
        what = prof.device_kind.unit
        analysis.measurements.append(
            missing_measurement(
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
        new_out_dir(out, "choose a new --out directory")
        write_report(out, record, report_plots(analysis))
    return CampaignResult(verdict, record, out or directory)
