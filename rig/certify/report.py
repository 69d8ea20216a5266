"""A campaign's outputs: its versioned JSON record (``record.json``, the source of truth) and
the manifest with the SHA-256 of every artifact (the raw capture included).

The HTML report, its plots and the JUnit XML are views of the record, written beside it by
:func:`write_report` from :mod:`feltlab.rig.cli.render` (the rig's presentation), so a lab's
CI can ingest verdicts and an auditor can re-check every figure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from feltlab.rig.atomic import write_atomic
from feltlab.rig.certify.standards import STANDARDS
from feltlab.rig.cli.render.html import render_report
from feltlab.rig.cli.render.junit import junit_xml
from feltlab.rig.killpoints import reach
from feltlab.strictjson import dumps

RECORD_VERSION = "1.3"
"""1.1: INCONCLUSIVE verdicts, ``clock`` and ``host_uncertainty`` (issue 13); 1.2: the
battery's ``power`` table (per named alternative and check, with 95% intervals), its
``notes``, ``standard`` and each check's ``serves`` (issue 25)."""


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_report(
    out_dir: Path, record: dict[str, Any], plots: Sequence[tuple[str, str]] = ()
) -> dict[str, str]:
    """Write ``report.html``, ``junit.xml``, ``manifest.json`` and, last, ``record.json`` into
    ``out_dir``, each whole (:func:`feltlab.rig.atomic.write_atomic`); the manifest lists the
    SHA-256 of those and of every other file already in ``out_dir`` (the capture).  The
    record is the campaign's last file: a folder holding it is complete, and a kill -9 before
    it leaves a campaign that ``--resume`` concludes again (docs/station.md, "Crash
    windows").  Returns the manifest's {file name: sha256}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    record.setdefault("record_version", RECORD_VERSION)
    record_text = dumps(record).encode("utf-8")
    write_atomic(out_dir / "report.html", render_report(record, plots, list(STANDARDS.values())))
    write_atomic(out_dir / "junit.xml", junit_xml(record))
    manifest = {
        p.name: sha256_file(p)
        for p in sorted(out_dir.iterdir())
        if p.is_file() and p.name not in ("manifest.json", "record.json")
    }
    manifest["record.json"] = hashlib.sha256(record_text).hexdigest()
    manifest = dict(sorted(manifest.items()))
    write_atomic(
        out_dir / "manifest.json", json.dumps({"algorithm": "sha256", "files": manifest}, indent=2)
    )
    reach("outputs-written")
    write_atomic(out_dir / "record.json", record_text)
    return manifest
