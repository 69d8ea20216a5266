"""The station's batch report, written when the station ends: every socket's verdict, power and
timing in one table (``batch-report.html``, jinja2 as the campaign's report), and JUnit XML
with one ``<testsuite>`` a socket (``batch-junit.xml``: each socket's own ``junit.xml`` suite,
named by its socket; a socket with no verdict is one suite of one error)."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path
from typing import Any

from feltlab.rig.station.config import Station
from feltlab.rig.station.record import StationRecord

TEMPLATE = Path(__file__).parent / "templates" / "batch-report.html.j2"


def _record(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _power(rec: dict[str, Any]) -> str:
    """The certificate's power in one cell: the named alternatives caught at the required
    power, of those named (a batch shuffler's battery), else "-"."""
    power = (rec.get("battery") or {}).get("power") or {}
    alts = power.get("alternatives") or []
    if not alts:
        return "-"
    caught = power.get("caught")
    got = sum(1 for a in alts if a.get("caught")) if isinstance(alts, list) else 0
    return f"{got} of {len(alts)} alternatives at {power.get('required')}" + (
        "" if caught else " (not all caught)"
    )


def record_seconds(rec: dict[str, Any]) -> float | None:
    """Wall-clock seconds from a campaign record's ``started`` to its ``finished`` (None when
    either is missing or unreadable)."""

    try:
        a = datetime.strptime(rec["started"], "%Y-%m-%dT%H:%M:%S%z")
        b = datetime.strptime(rec["finished"], "%Y-%m-%dT%H:%M:%S%z")
    except (KeyError, TypeError, ValueError):
        return None
    return (b - a).total_seconds()


def _wall(rec: dict[str, Any]) -> str:
    seconds = record_seconds(rec)
    return "-" if seconds is None else f"{seconds:.0f} s"


def rows(station: Station, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a socket, from its campaign's record and the station record."""
    out = []
    for s in station.sockets:
        rec = _record(station.folder(s.name))
        coll = rec.get("collection") or {}
        last_end = [
            e
            for e in events
            if e.get("socket") == s.name and e["event"] in ("socket-ended", "socket-stopped")
        ]
        verdict = rec.get("verdict") or ("error" if last_end else "not run")
        out.append(
            {
                "name": s.name,
                "device": s.device,
                "kind": s.kind,
                "unit": s.unit,
                "verdict": verdict,
                "collected": coll.get("collected", "-"),
                "requested": coll.get("requested", s.size or "-"),
                "power": _power(rec),
                "started": rec.get("started", "-"),
                "finished": rec.get("finished", "-"),
                "wall": _wall(rec),
                "runs": sum(
                    1
                    for e in events
                    if e.get("socket") == s.name and e["event"] == "socket-started"
                ),
                "campaign_id": rec.get("campaign_id", "-"),
                "report": f"sockets/{s.name}/report.html"
                if (station.folder(s.name) / "report.html").exists()
                else None,
            }
        )
    return out


def batch_junit(station: Station) -> str:
    """``<testsuites>`` with one suite a socket: its campaign's own JUnit suite renamed
    ``socket NAME: ...``, or a suite of one error when it has none."""
    root = ET.Element("testsuites", name=f"feltlab station {station.name}")
    for s in station.sockets:
        path = station.folder(s.name) / "junit.xml"
        suite: ET.Element | None = None
        try:
            suite = ET.fromstring(path.read_text(encoding="utf-8"))
        except (OSError, ET.ParseError):
            suite = None
        if suite is None or suite.tag != "testsuite":
            suite = ET.Element("testsuite", tests="1", failures="0", errors="1", skipped="0")
            tc = ET.SubElement(suite, "testcase", classname="feltlab.station", name="campaign")
            ET.SubElement(tc, "error", message="the socket's campaign wrote no verdict")
        suite.set("name", f"socket {s.name}: {suite.get('name', s.device)}")
        root.append(suite)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(x.get(key, "0")) for x in root)))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def write_batch_report(station: Station, exit_code: int, tally: dict[str, int]) -> Path:
    """Write ``batch-report.html`` and ``batch-junit.xml`` into the station folder; returns
    the HTML's path."""
    import jinja2  # start-up: jinja2 only when the report is written

    events = StationRecord(station.out).events()
    shown = [
        {
            "t": e.get("t"),
            "socket": e.get("socket"),
            "event": e.get("event"),
            "detail": json.dumps({k: v for k, v in e.items() if k not in ("t", "socket", "event")}),
        }
        for e in events
    ]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        station=station.name,
        file=str(station.path),
        written=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        exit_code=exit_code,
        tally=", ".join(f"{v} {k}" for k, v in sorted(tally.items())),
        rows=rows(station, events),
        events=shown,
    )
    path = station.out / "batch-report.html"
    path.write_text(html, encoding="utf-8")
    (station.out / "batch-junit.xml").write_text(batch_junit(station), encoding="utf-8")
    return path


__all__ = ["batch_junit", "record_seconds", "rows", "write_batch_report"]
