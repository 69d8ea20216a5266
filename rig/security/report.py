"""The security pack's outputs (docs/security.md): ``record.json`` (every finding with its
check, CWE, Deck Mate 2 finding, evidence, figures and remedy), ``report.html`` (jinja2, as
every feltlab report) and ``junit.xml`` (one testcase per check: FAIL a failure, NOT_RUN
skipped with its reason); ``--standard`` adds each finding's regulation where one names it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any

from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, SECURITY_MINOR
from feltlab.rig.security.findings import DECK_MATE, Verdict
from feltlab.rig.security.pack import PackResult

RECORD_VERSION = 1
#: the regulations ``--standard`` knows, by key: (title, the text of the requirement)
STANDARDS: dict[str, tuple[str, str]] = {
    "comar": (
        "COMAR 36.05.02.17 (Maryland)",
        'an automated card shuffler "may not provide any information" (about the order of '
        "the cards it shuffles)",
    ),
}


def record_of(
    result: PackResult, *, standard: str | None = None, seconds: float | None = None
) -> dict[str, Any]:
    """The JSON record of a run.  Raises ValueError for an unknown ``standard``."""
    if standard is not None and standard not in STANDARDS:
        raise ValueError(f"unknown standard {standard!r}; choose from {', '.join(STANDARDS)}")
    findings = []
    for f in result.findings:
        j = f.to_json()
        if standard is not None:
            title = STANDARDS[standard][0]
            j["standard"] = [
                s for s in j["standards"] if s.startswith(title.split(" (")[0])
            ] or None
        findings.append(j)
    return {
        "record_version": RECORD_VERSION,
        "pack": "feltlab certify security",
        "protocol": f"{PROTOCOL_MAJOR}.{SECURITY_MINOR} (security extension)",
        "target": result.target,
        "verdict": result.verdict,
        "source": DECK_MATE,
        "standard": None
        if standard is None
        else {
            "key": standard,
            "title": STANDARDS[standard][0],
            "requirement": STANDARDS[standard][1],
        },
        "findings": findings,
        "figures": result.figures,
        "seconds": {**result.seconds, **({"total": seconds} if seconds is not None else {})},
    }


def junit_xml(record: dict[str, Any]) -> str:
    """JUnit XML: one testcase per check."""
    suite = ET.Element("testsuite", name="feltlab certify security")
    fails = skipped = 0
    for f in record["findings"]:
        tc = ET.SubElement(suite, "testcase", classname="feltlab.security", name=f["check"])
        message = f"{f['cwe']}; {f['evidence'][0] if f['evidence'] else ''}"
        if f["verdict"] == Verdict.FAIL:
            fails += 1
            el = ET.SubElement(tc, "failure", message=message)
            el.text = "\n".join(f["evidence"]) + f"\nremedy: {f['remedy']}"
        elif f["verdict"] == Verdict.NOT_RUN:
            skipped += 1
            ET.SubElement(tc, "skipped", message=f"NOT RUN: {message}")
    suite.set("tests", str(len(record["findings"])))
    suite.set("failures", str(fails))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def write_security_report(out_dir: Path, record: dict[str, Any]) -> list[Path]:
    """Write ``record.json``, ``report.html`` and ``junit.xml`` into ``out_dir``."""
    import jinja2  # start-up: the report alone needs it

    out_dir.mkdir(parents=True, exist_ok=True)
    text = resources.files("feltlab.rig.security").joinpath("templates/report.html.j2").read_text()
    html = jinja2.Environment(autoescape=True).from_string(text).render(record=record)
    paths = [out_dir / "record.json", out_dir / "report.html", out_dir / "junit.xml"]
    paths[0].write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    paths[1].write_text(html, encoding="utf-8")
    paths[2].write_text(junit_xml(record), encoding="utf-8")
    return paths


__all__ = ["RECORD_VERSION", "STANDARDS", "junit_xml", "record_of", "write_security_report"]
