"""A campaign's record as JUnit XML, for a lab's CI."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from feltlab.rig.cli.render.text import NOT_JUDGED, fmt, shown_verdict


def junit_xml(record: Mapping[str, Any]) -> str:
    """JUnit XML of a record: one testcase per battery check and per measurement (FAIL a
    failure, ERROR an error, INCONCLUSIVE skipped with its reason, and each of the record's
    ``not_applicable`` checks skipped with its reason)."""
    suite = ET.Element("testsuite", name=f"feltlab certify {record['device']['name']}")
    cases = 0
    failures = 0
    errors = 0

    def case(name: str, verdict: str, message: str) -> None:
        nonlocal cases, failures, errors
        tc = ET.SubElement(suite, "testcase", classname="feltlab.certify", name=name)
        cases += 1
        if verdict == "FAIL":
            failures += 1
            ET.SubElement(tc, "failure", message=message)
        elif verdict == "ERROR":
            errors += 1
            ET.SubElement(tc, "error", message=message)
        elif verdict == "INCONCLUSIVE":
            ET.SubElement(tc, "skipped", message=f"INCONCLUSIVE: {message}")
        elif verdict == NOT_JUDGED:  # reported without a limit: no pass to claim
            ET.SubElement(tc, "skipped", message=f"not judged (no limit): {message}")

    battery = record.get("battery")
    if battery:
        for c in battery["checks"]:
            case(
                f"battery.{c['name']}",
                c["verdict"],
                f"{c['statistic_name']}={fmt(c['statistic'])} p={fmt(c['p_value'])} "
                f"adjusted={fmt(c['adjusted_p'])}",
            )
    pred = record.get("predictability")
    if pred:
        case("predictability", pred["verdict"], f"{'; '.join(pred['cwe'])}: {pred['summary']}")
    for t in (record.get("rng") or {}).get("tests", []):
        bad = ", ".join(f"{label} {which}".strip() for label, which in t["failing"][:10])
        case(
            f"rng.{t['name']}",
            "INCONCLUSIVE" if t["verdict"] == "NOT RUN" else t["verdict"],
            f"NOT RUN: {t['not_run']}"
            if t["verdict"] == "NOT RUN"
            else f"failing: {bad}"
            if bad
            else f"min proportion {fmt(t['min_proportion'])}, "
            f"min uniformity P {fmt(t['min_uniformity_p'])}",
        )
    for m in record.get("measurements", []):
        why = (m.get("detail") or {}).get("reason")
        case(
            m["name"],
            shown_verdict(m),
            f"{fmt(m['value'])} {m['unit']}, limits [{fmt(m['low'])}, {fmt(m['high'])}]"
            + (f": {why}" if why else ""),
        )
    for na in record.get("not_applicable", []):  # shoes from a file: no device to time
        tc = ET.SubElement(suite, "testcase", classname="feltlab.certify", name=na["name"])
        ET.SubElement(tc, "skipped", message=f"not applicable: {na['reason']}")
        cases += 1
    for e in record.get("errors", []):
        case("campaign", "ERROR", str(e))
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(sum(1 for tc in suite if tc.find("skipped") is not None)))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)
