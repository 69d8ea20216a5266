"""``feltlab certify predict``'s outputs beside its ``record.json``, like every campaign's
(docs/security.md): ``report.html`` (jinja2) and ``junit.xml`` (one testcase, the check:
``predictability`` for a seed search, ``mt19937-state`` for a state recovery; FAIL a failure
with the evidence, INCONCLUSIVE skipped with its reason), each naming the check's CWEs
(:data:`feltlab.rig.security.predict.CWES`)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any

from feltlab.rig.security.predict import CWE_338, FAIL, INCONCLUSIVE, evidence, weaknesses


def predict_evidence(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(CWEs, evidence lines)`` of a ``certify predict`` record: a seed search's
    (:func:`feltlab.rig.security.predict.evidence`) or an MT19937 state recovery's."""
    if record["check"] != "mt19937-state":
        return weaknesses(record), evidence(record)
    rec = record["recovery"]
    lines = [
        record["summary"],
        f"{rec['outputs']} outputs read ({record['source']['format']}); the state from the "
        f"first {rec['used']}, the next {rec['predicted']} predicted, {rec['correct']} right",
    ]
    if rec["first_wrong"] is not None:
        lines.append(f"first wrong prediction: output {rec['first_wrong']}")
    return [CWE_338], lines


def predict_junit(record: dict[str, Any]) -> str:
    """JUnit XML of a ``certify predict`` record: one testcase named by its check."""
    cwes, lines = predict_evidence(record)
    suite = ET.Element("testsuite", name="feltlab certify predict", tests="1", errors="0")
    tc = ET.SubElement(suite, "testcase", classname="feltlab.predict", name=record["check"])
    message = f"{'; '.join(cwes)}: {record['summary']}"
    if record["verdict"] == FAIL:
        ET.SubElement(tc, "failure", message=message).text = "\n".join(lines)
    elif record["verdict"] == INCONCLUSIVE:
        ET.SubElement(tc, "skipped", message=f"INCONCLUSIVE: {message}")
    suite.set("failures", "1" if record["verdict"] == FAIL else "0")
    suite.set("skipped", "1" if record["verdict"] == INCONCLUSIVE else "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def write_predict_report(directory: Path, record: dict[str, Any]) -> list[Path]:
    """Write ``report.html`` and ``junit.xml`` of ``record`` into ``directory`` (which
    holds its ``record.json``); returns their paths."""
    import jinja2  # start-up: the report alone needs it

    cwes, lines = predict_evidence(record)
    text = resources.files("feltlab.rig.security").joinpath("templates/predict.html.j2").read_text()
    html = (
        jinja2.Environment(autoescape=True)
        .from_string(text)
        .render(record=record, cwes=cwes, evidence=lines)
    )
    paths = [directory / "report.html", directory / "junit.xml"]
    paths[0].write_text(html, encoding="utf-8")
    paths[1].write_text(predict_junit(record), encoding="utf-8")
    return paths


__all__ = ["predict_evidence", "predict_junit", "write_predict_report"]
