"""The live view of a finished campaign (:mod:`feltlab.rig.live.observer`): a snapshot rebuilt from
its directory (record and capture), for ``feltlab live DIR``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from feltlab.inputs import read_text_regular
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.profile import profile_from_dict
from feltlab.rig.certify.record import clock_record, count_samples, record_kind
from feltlab.rig.errors import RigError
from feltlab.rig.kinds import DEFAULT_KIND, UnknownDeviceKind, get_kind
from feltlab.rig.live.state import (
    apply_record,
    empty_snapshot,
    histogram,
    seed_text,
    unit_of,
)
from feltlab.strictjson import json_safe


def snapshot_from_directory(directory: Path) -> dict[str, Any]:
    """The snapshot of a finished or interrupted campaign in ``directory``: its record
    (``record.json``) when there is one, else ``campaign.json``; the device's counters and
    the latency histograms from its capture (every ``capture-NNN.blf``).

    Raises :class:`feltlab.rig.errors.RigError` when ``directory`` holds no campaign.
    """

    state_path = directory / "campaign.json"
    record_path = directory / "record.json"
    if not directory.is_dir():
        raise RigError(f"{directory} is not a directory: give a campaign's --out directory")
    if not state_path.exists() and not record_path.exists():
        raise RigError(
            f"{directory} holds no campaign (no campaign.json or record.json): give a "
            "campaign's --out directory"
        )
    parsed: dict[str, Any] = {}
    for path, limit in ((state_path, 16 << 20), (record_path, 256 << 20)):
        try:
            text = read_text_regular(path, path.name, limit, error=RigError)
            parsed[path.name] = json.loads(text) if text is not None else None
        except (OSError, ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise RigError(f"{path} is not readable JSON ({why})") from exc
    state = parsed["campaign.json"] if parsed["campaign.json"] is not None else {}
    record = parsed["record.json"]
    if not isinstance(state, dict) or not isinstance(record, dict | None):
        raise RigError(f"{directory}: campaign.json and record.json must hold JSON objects")
    snap = empty_snapshot()
    kind = str(state.get("kind") or record_kind(record or {}) or DEFAULT_KIND)
    prof_data = (state.get("profile") or {}).get("data") or (record or {}).get("profile", {}).get(
        "data"
    )
    clock = clock_record(state) if state else (record or {}).get("clock") or {}
    snap["campaign"] = {
        "id": state.get("campaign_id"),
        "kind": kind,
        "device": (prof_data or {}).get("name") or kind,
        "profile": (state.get("profile") or {}).get("path"),
        "seed": seed_text(state.get("seed")),
        "size": state.get("size"),
        "unit": unit_of(kind),
        "clock": clock.get("mode"),
        "clock_description": clock.get("description"),
        "directory": str(directory),
        "bus": state.get("bus") or "in-process virtual bus",
    }
    snap["progress"]["total"] = state.get("size")
    # read from the folder: no elapsed time was measured here (it showed "0 µs elapsed")
    snap["progress"]["wall_elapsed_s"] = snap["progress"]["clock_elapsed_s"] = None
    captures = sorted(directory.glob("capture-[0-9][0-9][0-9].blf"))
    unreadable = False
    if captures and prof_data:
        try:
            prof = profile_from_dict(prof_data, (state.get("profile") or {}).get("path"))
            data = read_campaign_capture(captures, prof.base)
            _apply_capture(snap, data, kind)
        except (RigError, ValueError, OSError, EOFError) as exc:
            snap["errors"].append(f"capture: {exc}")
            unreadable = True
    if record is not None:
        apply_record(snap, record, directory)
    elif unreadable:  # what was collected is unknown: never "0 of 2000"
        snap["state"] = "failed"
        snap["phase"] = "interrupted: no record was written, and its capture cannot be read"
        snap["samples"]["collected"] = snap["samples"]["missing"] = None
        snap["progress"]["done"] = snap["progress"]["fraction"] = None
        snap["errors"].append(
            "no record, and the capture cannot be read (above): how many "
            f"{unit_of(kind)} were collected is unknown; restore the capture, or analyse "
            "each readable capture-NNN.blf as a file with feltlab analyze"
        )
    else:
        have = snap["samples"]["collected"]
        size = state.get("size")
        snap["state"] = "interrupted"
        snap["phase"] = "interrupted: no record was written"
        snap["samples"]["missing"] = None if size is None else max(0, int(size) - have)
        try:
            command = get_kind(str(kind)).command
        except UnknownDeviceKind:
            command = "shuffler"
        snap["errors"].append(
            f"no record: the campaign was interrupted with {have} of {size} "
            f"{unit_of(kind)} in the capture; continue it with feltlab "
            f"certify {command} --resume {directory}"
        )
    return json_safe(snap)  # type: ignore[no-any-return]


def _apply_capture(snap: dict[str, Any], data: Any, kind: str) -> None:
    """The device's counters and the latency histograms of a capture (CaptureData)."""
    have = count_samples(data, kind)
    snap["samples"]["collected"] = have
    snap["progress"]["done"] = have
    total = snap["progress"].get("total")
    snap["progress"]["fraction"] = min(1.0, have / total) if total else 0.0
    gaps = list(data.heartbeat_gaps)
    lat = {name: histogram(v) for name, v in sorted(data.timings.items()) if v}
    if gaps:
        lat["heartbeat_interval"] = histogram(gaps)
    snap["latencies"] = lat
    active = [dict(f) for f in data.faults if f.get("Active")]
    snap["device"] = {
        "online": data.heartbeat_kind is not None,
        "lost": None,
        "heartbeats": len(gaps) + (1 if data.heartbeat_kind is not None else 0),
        "heartbeats_missed": None,
        "reboots": None,
        "faults": len(active),
        "faults_active": [],
        "malformed": len(data.payload_errors),
        "stale_replies": int(data.stale_replies),
        "transfer_errors": None,
        "retransmissions": None,
        "last_heartbeat": None,
    }
    snap["bus"] = {
        "frames_sent": None,
        "frames_received": None,
        "frames_in_capture": int(data.frames),
        "frames_lost": None,
        "bitrate": None,
        "bits": None,
        "load": None,
    }
