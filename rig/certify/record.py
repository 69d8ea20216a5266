"""The records of a certification campaign: the capture parts tied to ``campaign.json``
(:func:`record_part`, :func:`check_parts`, its checked reading, crash recovery), the
versioned JSON record (:func:`build_record`, :func:`clock_record`, :func:`device_name`,
the collection's own measurement) and :func:`verdict_summary`."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from feltlab import native
from feltlab.errors import FeltlabError
from feltlab.inputs import open_regular, read_text_regular
from feltlab.rig.atomic import write_atomic
from feltlab.rig.bus.capture import (
    closed_blf_frames,
    first_frame,
    journal_owner,
    read_journal,
    recover_capture,
    verify_journal,
)
from feltlab.rig.bus.writer import JOURNAL_SUFFIX, OPENING_SUFFIX, journal_path
from feltlab.rig.certify import binding
from feltlab.rig.certify.analyze import (
    Analysis,
)
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.collect import Collected
from feltlab.rig.certify.decode import CaptureData, read_campaign_capture
from feltlab.rig.certify.measures import Measurement
from feltlab.rig.certify.power import POWER_SEED
from feltlab.rig.certify.profile import EXIT_CODES, CampaignError, Profile
from feltlab.rig.certify.profile_check import MAX_PART_SAMPLES
from feltlab.rig.certify.report import RECORD_VERSION
from feltlab.rig.cli.render.plots import make_plots
from feltlab.rig.errors import RigError
from feltlab.rig.killpoints import reach
from feltlab.rig.kinds import UnknownDeviceKind, by_heartbeat, get_kind
from feltlab.seeds import SEED_DERIVATION_VERSION, U64_MAX, part_seed

log = logging.getLogger("feltlab.rig.certify")  # the campaign's logger, as before the split


@dataclass
class CampaignResult:
    """The outcome of a campaign: verdict, exit code, the record and where it was written."""

    verdict: Verdict
    record: dict[str, Any]
    directory: Path

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.verdict, 2)


def capture_paths(out: Path) -> list[Path]:
    """The capture parts (``capture-NNN.blf``) of ``out``, in part order."""
    return sorted(out.glob("capture-[0-9][0-9][0-9].blf"))


def write_state(directory: Path, state: dict[str, Any]) -> None:
    """Write the campaign's ``campaign.json`` whole (:func:`feltlab.rig.atomic.write_atomic`):
    a kill -9 while it is written leaves the state before or after, never a torn file that
    no resume could read."""
    write_atomic(directory / "campaign.json", json.dumps(state, indent=2))


LEFTOVERS = (
    f"capture-[0-9][0-9][0-9]{JOURNAL_SUFFIX}{OPENING_SUFFIX}",  # a journal before its header
    "capture-[0-9][0-9][0-9].blf.writing",  # a BLF being written at close
    "capture-[0-9][0-9][0-9].blf.recovering.blf",  # a BLF being rebuilt by a resume
    *(  # a file being written whole (rig/atomic.py's write_atomic)
        f".{name}-*"
        for name in (
            "campaign.json",
            "report.html",
            "junit.xml",
            "manifest.json",
            "record.json",
            "freshness-starts.json",  # the freshness each part began at (binding.py)
        )
    ),
)
"""What a kill -9 can leave half-made in a campaign folder besides its parts: none holds a
frame that is not in a journal or a closed part, and ``--resume`` removes them."""


def clear_leftovers(out: Path) -> list[str]:
    """Remove the half-made files of :data:`LEFTOVERS` from campaign folder ``out``; returns
    their names."""
    gone = []
    for pattern in LEFTOVERS:
        for p in sorted(out.glob(pattern)):
            p.unlink(missing_ok=True)
            gone.append(p.name)
    return gone


def unclosed_parts(out: Path) -> list[Path]:
    """The capture parts (``capture-NNN.blf``, existing or not) of ``out`` that never closed:
    those with a journal (``capture-NNN.journal.log``), in part order."""
    return [
        j.with_name(j.name[: -len(JOURNAL_SUFFIX)] + ".blf")
        for j in sorted(out.glob(f"capture-[0-9][0-9][0-9]{JOURNAL_SUFFIX}"))
    ]


def _part_number(capture: Path) -> int:
    return int(capture.name[len("capture-") : len("capture-") + 3])


def _has_frames(journal: Path) -> bool:
    """True when ``journal`` holds a complete line after its header (a frame: the header is
    some 70 bytes, a frame line under 100)."""
    with journal.open("rb") as f:
        head = f.read(4096).split(b"\0", 1)[0]
    return b"\n" in head.partition(b"\n")[2]


def recover_part(out: Path, capture: Path) -> str:
    """Take back part ``capture`` of campaign folder ``out``, which has a journal (checked by
    :func:`check_parts` first), so that a kill -9 at any step leaves a folder the next resume
    takes back the same way: when campaign.json lists the part with the SHA-256 of the BLF
    on disk, the part had closed (its journal only not yet removed): the journal is removed;
    when its journal holds no frame (killed as the part opened), both are removed and the
    part is collected as if never begun (the same part number, device seed and clock); else
    the part is named in ``recovered_parts``, its BLF rebuilt from the journal
    (:func:`feltlab.rig.bus.capture.recover_capture`, journal kept), recorded in
    campaign.json (``recovered``), then the journal removed.
    Returns ``"closed"``, ``"empty"`` or ``"recovered"``."""
    state = read_state(out)
    entry = next((e for e in state["parts"] if e.get("file") == capture.name), None)
    if entry is not None and capture.is_file() and entry["sha256"] == file_sha256(capture):
        journal_path(capture).unlink()
        return "closed"
    if entry is None and not _has_frames(journal_path(capture)):  # killed as it opened
        capture.unlink(missing_ok=True)  # first: a journal alone is taken back the same way
        journal_path(capture).unlink()
        return "empty"
    rebuilding = capture.name in state.get("recovered_parts", [])
    if entry is None and not rebuilding and capture.is_file():  # closed, not yet recorded?
        count = closed_blf_frames(capture)
        if count is not None and count == len(read_journal(journal_path(capture))):
            record_part(out, _part_number(capture), capture)
            journal_path(capture).unlink()
            return "closed"
    if not rebuilding:  # named first: a BLF rebuilt whole is then never taken as closed
        state["recovered_parts"] = [*state.get("recovered_parts", []), capture.name]
        write_state(out, state)
    n = recover_capture(capture, remove_journal=False)
    reach("recovered-blf")
    log.warning("%s: rebuilt from its journal (%s frames) after a crash", capture.name, n)
    record_part(out, _part_number(capture), capture, recovered=True)
    reach("recovered-recorded")
    journal_path(capture).unlink()
    return "recovered"


def set_aside_part(out: Path, capture: Path, why: str) -> str:
    """Set aside part ``capture`` of campaign folder ``out``, which never closed, so that the
    campaign collects it again from its start (the same part number, so the same device seed
    and clock): its journal is kept as ``capture-NNN.set-aside-K.journal.log`` (evidence;
    no capture glob reads it) and named in campaign.json's ``set_aside_parts`` with ``why``,
    its unfinished BLF removed.  In that order, so that a kill -9 at any step leaves a folder
    the next resume sets aside the same way.  Returns the journal's new name."""
    journal = journal_path(capture)
    stem = capture.name[: -len(".blf")]
    k = 1
    while (out / f"{stem}.set-aside-{k}{JOURNAL_SUFFIX}").exists():
        k += 1
    aside = out / f"{stem}.set-aside-{k}{JOURNAL_SUFFIX}"
    state = read_state(out)
    entry = {"part": _part_number(capture), "journal": aside.name, "why": why}
    earlier = [e for e in state.get("set_aside_parts", []) if e.get("journal") != aside.name]
    state["set_aside_parts"] = [*earlier, entry]
    write_state(out, state)
    capture.unlink(missing_ok=True)
    os.replace(journal, aside)
    reach("part-set-aside")
    return aside.name


def software_versions() -> dict[str, Any]:
    """Versions of feltlab, Python and the libraries a verdict depends on."""
    out: dict[str, Any] = {"python": platform.python_version()}
    for dist in ("feltlab", "numpy", "scipy", "python-can", "cantools", "can-isotp"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover - always installed
            out[dist] = None
    try:
        out["core"] = native.core_info()
    except Exception:  # pragma: no cover - informational
        out["core"] = None
    return out


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of the regular file ``path`` (read in 1 MiB blocks, never whole);
    CampaignError for a missing file, a FIFO, device or folder
    (:func:`feltlab.inputs.open_regular`)."""
    h = hashlib.sha256()
    with open_regular(path, "file", CampaignError) as (f, _):  # a FIFO is seen, never waited on
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def first_stamp(capture: Path) -> float | None:
    """The epoch stamp (UTC, the campaign's clock) of the first frame of ``capture`` in file
    order: the part's time base, recorded when it closes (None for an empty capture)."""
    msg = first_frame(capture)  # a journal's head only, not its 122,000 lines
    return None if msg is None else float(msg.timestamp)


def part_entry(
    state: dict[str, Any], part: int, capture: Path, *, recovered: bool = False
) -> dict[str, Any]:
    """The ``parts`` entry of closed capture part ``part`` of the campaign of ``state``: its
    SHA-256 and, bound under the campaign's key (:mod:`feltlab.rig.certify.binding`), its
    ``tag``."""
    sha = file_sha256(capture)
    entry: dict[str, Any] = {
        "part": part,
        "file": capture.name,
        "campaign_id": state.get("campaign_id"),
        "device_seed": part_seed(int(state["seed"]), part) if "seed" in state else None,
        "sha256": sha,
        "first_stamp": first_stamp(capture),
        "recovered": recovered,
    }
    key = binding.campaign_key(state, strict=False) if "binding" in state else None
    if key is not None:
        entry["tag"] = binding.part_tag(key, part, sha)
    return entry


def record_part(directory: Path, part: int, capture: Path, *, recovered: bool = False) -> None:
    """Tie capture part ``part`` to its campaign: its SHA-256 (of the closed file), the
    campaign id and the device seed go into ``campaign.json``'s ``parts`` (written
    atomically, :func:`write_state`; a ``recovered`` part also named in ``recovered_parts``).
    ``--resume`` and ``analyze`` then refuse a capture that is not this one."""
    state = read_state(directory)
    parts = [p for p in state.get("parts", []) if p.get("part") != part]
    parts.append(part_entry(state, part, capture, recovered=recovered))
    state["parts"] = sorted(parts, key=lambda p: int(p["part"]))
    if recovered and capture.name not in state.get("recovered_parts", []):
        state["recovered_parts"] = [*state.get("recovered_parts", []), capture.name]
    write_state(directory, state)


def check_parts(
    directory: Path, state: dict[str, Any], captures: Sequence[Path], *, strict: bool = True
) -> None:
    """Raise :class:`CampaignError` for a capture part of ``directory`` that is not proved to
    be its campaign's: a closed part (a BLF without journal) must be in campaign.json's
    ``parts`` with this campaign's id, its SHA-256 and its ``tag`` under the campaign's key;
    a part that never closed, and every journal in ``directory``, must name this campaign and
    its part on its first line (:func:`feltlab.rig.bus.writer.journal_header`) and every line
    must verify its chained MAC (:func:`feltlab.rig.bus.capture.verify_journal`). A
    campaign.json without ``parts`` or ``binding`` proves nothing and is refused (removing
    them must not turn the check off). ``strict``: refuse on a host without the campaign's
    lab key (``--resume``); otherwise (``analyze``) the SHA-256s and headers only, logged
    (:func:`feltlab.rig.certify.binding.campaign_key`)."""
    cid = state.get("campaign_id")
    if not isinstance(state.get("parts"), list):
        raise CampaignError(
            f"{directory / 'campaign.json'} has no list of parts: its captures cannot be "
            f"proved campaign {cid}'s (was it edited?); analyse each capture-NNN.blf as a file"
        )
    key = binding.campaign_key(state, strict=strict)
    known = {p["file"]: p for p in state["parts"]}
    journals = set(directory.glob(f"capture-[0-9][0-9][0-9]{JOURNAL_SUFFIX}"))
    for cap in captures:
        j = journal_path(cap)
        if j.exists():
            journals.add(j)
            continue  # never closed: its journal speaks for it (below)
        entry = known.get(cap.name)
        if entry is None:
            raise CampaignError(
                f"{cap} was not collected by campaign {cid} (no such part in its "
                "campaign.json): remove it, or analyse it on its own as a file"
            )
        sha = file_sha256(cap)
        if entry.get("campaign_id") != cid or entry["sha256"] != sha:
            raise CampaignError(
                f"{cap} does not belong to campaign {cid}: its SHA-256 "
                "differs from the one recorded when the part closed (another campaign's "
                "capture, or a file changed since); restore the original part"
            )
        part = int(cap.name[len("capture-") : len("capture-") + 3])
        if key is not None and not hmac.compare_digest(
            str(entry.get("tag", "")), binding.part_tag(key, part, sha)
        ):
            raise CampaignError(
                f"{cap} is not bound to campaign {cid} as part {part}: its tag in "
                "campaign.json does not verify under the campaign's key (another campaign's "
                "part with its SHA-256 copied in, or campaign.json edited)"
            )
    for j in sorted(journals):
        part_no = str(int(j.name[len("capture-") : len("capture-") + 3]))
        owner = journal_owner(j)
        if owner is None or owner.get("campaign") != cid or owner.get("part") != part_no:
            named = (
                "names no campaign"
                if owner is None or "campaign" not in owner
                else f"names campaign {owner.get('campaign')} part {owner.get('part')}"
            )
            raise CampaignError(
                f"{j} {named}, not campaign {cid} part {part_no}: a part that never closed "
                "is accepted only with its own journal; move it out of the folder"
            )
        if key is not None:
            try:
                verify_journal(j, key)
            except RigError as exc:
                raise CampaignError(f"{exc}; move it out of the folder") from None


def refuse_links(directory: Path) -> None:
    """Raise :class:`CampaignError` if the campaign folder holds a symbolic link, or a file
    that is not regular (a FIFO, a device): ``--resume`` writes campaign.json, the capture,
    the record, the report and JUnit there, and a link planted in the folder would redirect
    a write to any file the user can write."""
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.is_symlink():
            raise CampaignError(
                f"{entry.path} is a link: feltlab writes nothing through a link in a campaign "
                "folder (it would write wherever the link points); remove it and resume"
            )
        if not entry.is_file(follow_symlinks=False) and not entry.is_dir(follow_symlinks=False):
            raise CampaignError(
                f"{entry.path} is not a regular file (a FIFO or device): remove it and resume"
            )


def _is_kind(name: str) -> bool:
    """``name`` is a usable device kind (only its plugin imported, if it is no built-in)."""
    try:
        get_kind(name)
    except UnknownDeviceKind:
        return False
    return True


def _is_int(v: Any, low: int, high: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


_STATE_FIELDS: dict[str, tuple[str, Any]] = {
    "campaign_id": ("a string", lambda v: isinstance(v, str)),
    "kind": ("a registered device kind", lambda v: isinstance(v, str) and _is_kind(v)),
    "profile": (
        "a table with the profile's data",
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("data"), dict)
            and isinstance(v.get("path"), str | None)
        ),
    ),
    "size": (f"an integer in 2..{MAX_PART_SAMPLES}", lambda v: _is_int(v, 2, MAX_PART_SAMPLES)),
    "alpha": (
        "a number in (0, 1)",
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1,
    ),
    "seed": (f"an integer in 0..{U64_MAX}", lambda v: _is_int(v, 0, U64_MAX)),
    "bus": ("a bus spec or null", lambda v: isinstance(v, str | None)),
    "model": ("a model name or null", lambda v: isinstance(v, str | None)),
    "started": ("a date string", lambda v: isinstance(v, str)),
    "parts": (
        "a list of parts (part, file, campaign_id, sha256)",
        lambda v: (
            isinstance(v, list)
            and all(
                isinstance(p, dict)
                and isinstance(p.get("file"), str)
                and isinstance(p.get("sha256"), str)
                for p in v
            )
        ),
    ),
}
_STATE_OPTIONAL: dict[str, tuple[str, Any]] = {
    "faults": ("a fault list or null", lambda v: isinstance(v, str | None)),
    "clock": ('"sim", "real" or null', lambda v: v in ("sim", "real", None)),
    "device_on_host": ("true or false", lambda v: isinstance(v, bool)),
    "recovered_parts": ("a list", lambda v: isinstance(v, list)),
    "set_aside_parts": (
        "a list of parts set aside (part, journal, why)",
        lambda v: isinstance(v, list) and all(isinstance(p, dict) for p in v),
    ),
}


MAX_STATE_BYTES = 16 << 20
"""A campaign.json is a few kB (its profile included): a larger one is refused."""


def read_state(directory: Path) -> dict[str, Any]:
    """The campaign's ``campaign.json``, checked field by field (type and range).  Raises
    :class:`CampaignError` naming the file and the first bad or missing field."""
    path = directory / "campaign.json"
    hint = (
        "give the --out directory of a campaign (its campaign.json is written by feltlab "
        "certify and must not be edited), or analyse one capture-NNN.blf as a file"
    )
    try:
        text = read_text_regular(path, "campaign.json", MAX_STATE_BYTES, error=CampaignError)
        if text is None:
            raise FileNotFoundError(f"no {path.name} in {directory}")
        state = json.loads(text)
    except (OSError, ValueError, RecursionError) as exc:
        raise CampaignError(
            f"cannot resume from or analyse {directory}: {path.name} is missing or unreadable "
            f"({exc}); {hint}"
        ) from None
    if not isinstance(state, dict):
        raise CampaignError(
            f"{path}: campaign.json must hold a JSON object, got {type(state).__name__}; {hint}"
        )
    for name, (want, ok) in _STATE_FIELDS.items():
        if name not in state:
            raise CampaignError(f"{path}: campaign.json has no {name!r} field; {hint}")
        if not ok(state[name]):
            raise CampaignError(
                f"{path}: campaign.json field {name!r} = {state[name]!r:.60} must be {want}; {hint}"
            )
    for name, (want, ok) in _STATE_OPTIONAL.items():
        if name in state and not ok(state[name]):
            raise CampaignError(
                f"{path}: campaign.json field {name!r} = {state[name]!r:.60} must be {want}; {hint}"
            )
    return state


def missing_measurement(
    kind: str, size: int, have: int | None, why: str, *, failed: Sequence[str] = ()
) -> Measurement:
    """``collection.<samples>_missing``: the planned samples (``campaign.json``) that are not
    in the capture.  FAIL when the device failed to deliver a sample it was asked for
    (``failed``) and it is not in the capture (one that came too late for the host but reached
    the capture is counted in ``late``; its lateness is judged by the timing checks); ERROR
    when collection stopped early for another reason (``why``:
    interrupted, the bus or device gone, nothing collected); PASS at 0."""
    unit = get_kind(kind).unit
    name = f"collection.{unit}_missing"
    if have is None:
        return Measurement(name, None, unit, None, 0.0, Verdict.ERROR, {"reason": why})
    lost = max(0, size - have)
    detail: dict[str, Any] = {"planned": size, "collected": have}
    if failed:
        detail["reasons"] = list(failed[:10])
    if failed and lost:
        return Measurement(name, float(lost), unit, None, 0.0, Verdict.FAIL, detail)
    if failed:  # the host gave up on them, but the device's (late) replies are in the capture
        detail["late"] = len(failed)
    if lost:
        detail["reason"] = why
        return Measurement(name, float(lost), unit, None, 0.0, Verdict.ERROR, detail)
    return Measurement(name, 0.0, unit, None, 0.0, Verdict.PASS, detail)


def collection_record(size: int, have: int | None, collected: Collected | None) -> dict[str, Any]:
    """The record's ``collection``: the planned size, the samples of the plan in the capture
    (every part; ``collected + missing_count == requested``), those beyond it
    (``beyond_plan``), whether this run was interrupted, and this run's own part."""
    planned = None if have is None else min(have, size)
    return {
        "requested": size,
        "collected": planned,
        # samples beyond the plan: a panel's draws by the failure-detection and Madness 21
        # fallback checks after collection (analysed with the others, counted apart)
        "beyond_plan": None if have is None or planned is None else have - planned,
        "missing_count": None if have is None else max(0, size - have),
        "complete": have is not None and have >= size,
        "aborted": collected.aborted if collected else False,
        "this_part": {"requested": collected.requested, "collected": collected.done}
        if collected
        else None,
        "missing": collected.missing[:50] if collected else [],
        "bus": collected.bus if collected else {},
        "stale_replies": collected.stale_replies if collected else 0,
        "limits_exceeded": [m for *_, m in collected.limits_exceeded] if collected else [],
        "rig_errors": [e for _, e in collected.crashes][:20] if collected else [],
    }


def device_name(prof: Profile, state: dict[str, Any], heartbeat_kind: int | None = None) -> str:
    """The device under test, for titles and records: the simulated device and its model,
    or the device that answered on the bus (its heartbeat's kind, its base id, the bus)."""
    simulated = state.get("bus") is None or state.get("model") is not None
    if simulated:
        model = state.get("model") or prof.simulation.get("model") or "fisher-yates"
        return prof.device_kind.simulated_name(prof, str(model))
    heard_kind = by_heartbeat(heartbeat_kind)  # what the device calls itself (``Kind``)
    label = heard_kind.label if heard_kind is not None else None
    who = (
        label
        if label
        else (f"device of kind {heartbeat_kind}" if heartbeat_kind is not None else "device")
    )
    heard = "" if heartbeat_kind is not None else " (no heartbeat heard)"
    return f"{who} at 0x{prof.base:03X} on {state.get('bus')}{heard}"


def report_plots(analysis: Analysis, worker: Any = None) -> list[tuple[str, str]]:
    """The report's plots; through ``worker`` (a :class:`feltlab.rig.certify.ahead.AheadWorker`
    started before the analysis) when given."""
    p = analysis.plots
    inputs = {
        "position_counts": p.get("position_counts"),
        "rising": p.get("rising"),
        "eulerian": p.get("eulerian"),
        "latencies": p.get("latencies"),
    }
    try:
        return worker.plots(**inputs) if worker is not None else make_plots(**inputs)
    except Exception as exc:  # a plot must never lose the record
        log.warning("plots failed: %s", exc)
        return []


def build_record(
    prof: Profile,
    state: dict[str, Any],
    analysis: Analysis,
    captures: Sequence[Path],
    verdict: Verdict,
    collected: Collected | None = None,
    *,
    collection: dict[str, Any] | None = None,
    heartbeat_kind: int | None = None,
) -> dict[str, Any]:
    """The versioned JSON record of a campaign (see docs/certification.md)."""
    seeding = prof.seeding
    model = (
        state.get("model")
        or prof.simulation.get("model")
        # a seeded device's shuffle is its seeding's (issue 40), not the default model's
        or (f"seeding {seeding}" if seeding else "fisher-yates")
    )
    simulated = state.get("bus") is None or state.get("model") is not None
    if heartbeat_kind is None and collected is not None:
        heartbeat_kind = collected.online.get("Kind")
    return {
        "record_version": RECORD_VERSION,
        "campaign_id": state.get("campaign_id"),
        "kind": prof.kind,
        "device": {
            "name": device_name(prof, state, heartbeat_kind),
            "profile_name": prof.name,
            "kind": prof.kind,
            "label": prof.device_kind.label,
            "base": f"0x{prof.base:03X}",
            "simulated": simulated,
            "model": model if simulated and prof.device_kind.models else None,
            "bus": state.get("bus") or "in-process virtual bus",
            "on_certifying_host": bool(state.get("device_on_host", simulated)),
            "heartbeat": collected.online if collected else {},
            "key_id": prof.key_id,
            "authenticate": prof.authenticate,
        },
        "profile": prof.to_dict(),
        "software": software_versions(),
        "seed": state.get("seed"),
        "seeds": {
            "derivation": SEED_DERIVATION_VERSION,
            "campaign": state.get("seed"),
            "device_parts": [part_seed(int(state["seed"]), i + 1) for i in range(len(captures))]
            if simulated
            else None,
            "null_simulations": state.get("seed"),
            "power_simulations": POWER_SEED,
        },
        "options": {
            "size": state.get("size"),
            "alpha": state.get("alpha"),
            "faults": state.get("faults"),
        },
        "recovered_parts": state.get("recovered_parts", []),
        **({"set_aside_parts": state["set_aside_parts"]} if state.get("set_aside_parts") else {}),
        "clock": clock_record(state),
        "started": state.get("started"),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "verdict": str(verdict),
        "capture": ", ".join(p.name for p in captures),
        "captures": [p.name for p in captures],
        "collection": collection
        if collection is not None
        else collection_record(int(state.get("size") or 0), None, collected),
        "battery": analysis.battery.to_dict() if analysis.battery else None,
        "predictability": analysis.predictability,
        "measurements": [m.to_dict() for m in analysis.measurements],
        "errors": analysis.errors,
        "detail": analysis.detail,
        "faults": analysis.faults,
        "security_faults": analysis.security_faults,
        "host_uncertainty": analysis.host.to_dict()
        if analysis.host is not None
        else {
            "source": "not measured",
            "reason": "no calibration recorded with the capture (host-uncertainty.jsonl): "
            "timing verdicts use the plain PASS/FAIL rule",
        },
    }


def clock_record(state: dict[str, Any]) -> dict[str, Any]:
    """What the record says of the campaign's time base (``state["clock"]``; campaigns
    from before the clock option ran in real time)."""
    mode = state.get("clock") or "real"
    if mode == "sim":
        text = (
            "simulated time: the device's timing model, the frames' bit times at the bus "
            "bitrate and the host's timeouts on one deterministic discrete-event clock; the "
            "timings are the simulated device's, independent of the host"
        )
    else:
        text = "real time: the host's monotonic clock and software timestamps"
    return {"mode": mode, "description": text}


def verdict_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The verdicts and statistics of a record, for comparing a live campaign with its
    offline re-analysis (times, software and the live collection's bookkeeping excluded:
    the shoes that never arrived are not in the capture)."""
    bat = record.get("battery") or {}
    return {
        "verdict": record["verdict"],
        "battery": [
            (c["name"], c["statistic"], c["p_value"], c["adjusted_p"], c["verdict"], c["power"])
            for c in bat.get("checks", [])
        ],
        "integrity": bat.get("integrity"),
        "predictability": (record.get("predictability") or {}).get("verdict"),
        "measurements": [
            (m["name"], m["value"], m["verdict"])
            for m in record["measurements"]
            if not m["name"].startswith("collection.")
        ],
    }


def taken_out_hint(out: Path, command: str) -> str:
    """What to do about a new campaign's --out that is not empty (``{out}`` left for
    :func:`new_out_dir`): a finished campaign is analysed again, never resumed (its
    ``--resume`` is refused), an unfinished one continued."""
    if (out / "record.json").exists():
        return "choose a new --out directory, or check that campaign again: feltlab analyze {out}"
    return (
        "choose a new --out directory, or continue it with "
        f"feltlab certify {command} --resume {{out}}"
    )


def new_out_dir(out: Path, hint: str) -> None:
    """Create ``out`` (or accept it empty).  Raises :class:`CampaignError` when it is a
    file, not empty, or cannot be created; ``hint`` (``{out}`` substituted) says what to do."""
    if out.exists() and not out.is_dir():
        raise CampaignError(f"{out} is a file, not a directory: give a new or empty directory")
    try:
        if out.exists() and any(out.iterdir()):
            raise CampaignError(f"{out} is not empty: " + hint.format(out=out))
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CampaignError(f"cannot create the directory {out}: {exc.strerror or exc}") from exc


def refuse_complete(out: Path, prof: Profile, size: int) -> None:
    """Refuse to resume a finished campaign (its record written, every sample collected):
    resuming would only rewrite its record.  Raises :class:`CampaignError`."""
    if not (out / "record.json").exists():
        return
    parts = capture_paths(out)
    have = _recorded_complete(out, parts, size)
    if have is None:  # the record does not say so: count the capture itself
        have = count_samples(read_campaign_capture(parts, prof.base), prof.kind) if parts else 0
    if have >= size:
        raise CampaignError(
            f"campaign complete ({have} of {size} {prof.device_kind.unit} collected); "
            f"use feltlab analyze {out} to check it again"
        )


def _recorded_complete(out: Path, parts: Sequence[Path], size: int) -> int | None:
    """The samples the finished record of ``out`` says it collected, when it says the
    campaign is complete over exactly these capture parts, all closed (so that
    :func:`check_parts` has proved each by its SHA-256); else None.  A record claiming too
    much can only refuse a resume (the refusal sends the user to ``analyze``, which reads
    everything), never accept one, so the record needs no proof here: a 2,000-shoe
    campaign was refused after 21 s of decoding its capture."""
    try:
        rec = json.loads(read_text_regular(out / "record.json", "record.json", 1 << 26) or "")
        collected = int(rec["collection"]["collected"])
        complete = rec["collection"]["complete"] is True
        named = [str(c) for c in rec["captures"]]
    except (ValueError, TypeError, KeyError, OSError, FeltlabError):
        return None
    closed = all(not journal_path(p).exists() for p in parts)
    if complete and closed and named == [p.name for p in parts] and collected >= size:
        return collected
    return None


def count_samples(data: CaptureData, kind: str) -> int:
    """The samples of device ``kind`` in a decoded capture (shoes, deals, draws, ...)."""
    return get_kind(kind).count(data)


def record_kind(record: Mapping[str, Any]) -> str | None:
    """The kind of a finished record: a campaign's own ``kind``; ``"security"`` for the
    security pack's record (``feltlab certify security``), ``"predict"`` for ``feltlab
    certify predict``'s; None when the record names none."""
    if record.get("kind") is not None:
        return str(record["kind"])
    if record.get("pack") is not None and "findings" in record:
        return "security"
    if record.get("check") == "predictability":
        return "predict"
    return None
