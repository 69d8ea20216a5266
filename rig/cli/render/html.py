"""A campaign's record as its HTML report (jinja2, ``templates/report.html.j2``): the
verdicts, the battery with its power, the plots, the standards the figures serve."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.rig.cli.render.text import fmt, shown_verdict
from feltlab.rig.profiles import shown_profile

if TYPE_CHECKING:
    import jinja2

TEMPLATE = Path(__file__).with_name("templates") / "report.html.j2"


@cache
def _report_template() -> jinja2.Template:
    """The report's template, compiled once per process (0.12 s: a sixth of a small campaign,
    which the explorer runs thousands of)."""
    import jinja2  # start-up: the report alone, never a campaign's collection

    env = jinja2.Environment(autoescape=True, undefined=jinja2.ChainableUndefined)
    return env.from_string(TEMPLATE.read_text())


def render_report(
    record: Mapping[str, Any], plots: Sequence[tuple[str, str]], standards: Sequence[Any]
) -> str:
    """``report.html`` of ``record`` (the versioned JSON record) with ``plots`` ((title,
    base64 PNG) each, :mod:`feltlab.rig.cli.render.plots`) and the ``standards`` its checks
    serve (:data:`feltlab.rig.certify.standards.STANDARDS`' values)."""
    power_columns: list[str] = []
    for c in (record.get("battery") or {}).get("checks", []):
        for k in c.get("power", {}):
            if k not in power_columns:
                power_columns.append(k)
    return _report_template().render(
        record=record,
        plots=plots,
        fmt=fmt,
        power_columns=power_columns,
        shown=shown_verdict,
        shown_profile=shown_profile,
        standards=list(standards),
    )
