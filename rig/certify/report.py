"""Campaign reports: a versioned JSON record, an HTML report with plots, JUnit XML, and a
manifest with the SHA-256 of every artifact (the raw capture included).

The record is the source of truth; the HTML (jinja2 + matplotlib) and the JUnit XML are views
of it, so a lab's CI can ingest verdicts and an auditor can re-check every figure.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import math
import os
import stat
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from feltlab import cache as feltlab_cache
from feltlab.rig.atomic import write_atomic
from feltlab.rig.certify.measures import NOT_JUDGED, shown_verdict
from feltlab.rig.certify.standards import STANDARDS
from feltlab.rig.killpoints import reach
from feltlab.rig.profiles import shown_profile
from feltlab.strictjson import dumps

RECORD_VERSION = "1.3"
"""1.1: INCONCLUSIVE verdicts, ``clock`` and ``host_uncertainty`` (issue 13); 1.2: the
battery's ``power`` table (per named alternative and check, with 95% intervals), its
``notes``, ``standard`` and each check's ``serves`` (issue 25)."""

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import jinja2

TEMPLATE = Path(__file__).with_name("templates") / "report.html.j2"


def fmt(x: Any) -> str:
    """A number for a report cell: 4 significant figures, blank for missing."""
    if x is None:
        return ""
    if isinstance(x, float):
        if not math.isfinite(x):
            return ""
        return f"{x:.4g}"
    return str(x)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    # fixed margins (set by each plot): a "tight" bounding box draws every figure twice
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode()


def make_plots(
    *,
    position_counts: np.ndarray | None = None,
    rising: np.ndarray | None = None,
    eulerian: np.ndarray | None = None,
    latencies: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Base64 PNG plots for the HTML report: the position heat map, the rising-sequence
    histogram over the Eulerian curve, and one latency histogram per named sample (seconds)."""
    # imported here: matplotlib is the report's alone (the helper process of a campaign has
    # imported it ahead, ahead.py).  Figures, not pyplot: no global figure manager to close,
    # no GUI backend machinery (pyplot's import is 40% of matplotlib's); savefig draws with Agg
    from matplotlib.figure import Figure  # start-up: matplotlib only when the report is drawn

    def subplots(size: tuple[float, float]) -> tuple[Any, Any]:
        fig = Figure(figsize=size)
        return fig, fig.subplots()

    plots: list[tuple[str, str]] = []
    if position_counts is not None:
        fig, ax = subplots((6, 5))
        n_shoes = position_counts.sum(axis=1).max()
        expected = n_shoes / position_counts.shape[0]
        im = ax.imshow(
            position_counts / expected,
            cmap="coolwarm",
            vmin=0,
            vmax=2,
            aspect="auto",
            interpolation="nearest",
        )
        ax.set_xlabel("output position")
        ax.set_ylabel("input position")
        fig.colorbar(im, ax=ax, label="observed / expected")
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.1, top=0.97)
        plots.append(("Card by position (observed / expected)", _png(fig)))
    if rising is not None and eulerian is not None:
        fig, ax = subplots((6, 3.5))
        n = eulerian.size
        r = np.arange(1, n + 1)
        counts = np.bincount(rising.astype(np.int64), minlength=n + 1)[1:]
        lo = max(1, int(rising.min()) - 5)
        hi = min(n, int(rising.max()) + 5)
        sl = slice(lo - 1, hi)
        ax.bar(r[sl], counts[sl], color="#7aa6d6", label="observed shoes")
        ax.plot(r[sl], eulerian[sl] * rising.size, "k-", label="Eulerian (uniform shuffle)")
        ax.set_xlabel("rising sequences")
        ax.set_ylabel("shoes")
        ax.legend()
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.15, top=0.96)
        plots.append(("Rising sequences", _png(fig)))
    for name, given in (latencies or {}).items():
        # samples (s), or {"samples", "limits": {label: s}}: the limits judged are drawn too
        limits = given.get("limits") or {} if isinstance(given, Mapping) else {}
        a = np.asarray(given["samples"] if isinstance(given, Mapping) else given, np.float64)
        if a.size == 0:
            continue
        fig, ax = subplots((6, 3))
        ax.hist(a * 1e3, bins=min(50, max(5, a.size // 5)), color="#8fbf8f")
        for (label, limit), style in zip(limits.items(), ("--", ":"), strict=False):
            ax.axvline(float(limit) * 1e3, color="#c0392b", linestyle=style, label=label)
        if limits:
            ax.legend(fontsize="small")
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("count")
        fig.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.95)
        plots.append((f"Latency: {name}", _png(fig)))
    return plots


def make_rng_plots(
    columns: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]], alpha: float
) -> list[tuple[str, str]]:
    """Base64 PNG plots of a raw-output certificate (record ``rng``): the proportion of
    passing sequences of every p-value column against SP 800-22's band (4.2.1), and each
    test's p-values in ten bins against the uniform (4.2.2)."""
    import matplotlib  # start-up: matplotlib only when the report is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # start-up: matplotlib only when the report is drawn

    plots: list[tuple[str, str]] = []
    judged = [c for c in columns if c["sequences"]]
    if judged:
        fig, ax = plt.subplots(figsize=(9, 3.8))
        names = list(dict.fromkeys(c["test"] for c in judged))
        jitter = np.random.default_rng(0)  # spreads a test's columns sideways, nothing else
        for i, name in enumerate(names):
            cs = [c for c in judged if c["test"] == name]
            lo = min(c["band"][0] for c in cs)
            hi = max(c["band"][1] for c in cs)
            ax.fill_between([i - 0.4, i + 0.4], lo, hi, color="#e3e3e3", linewidth=0)
            x = i + (jitter.uniform(-0.3, 0.3, len(cs)) if len(cs) > 1 else np.zeros(1))
            prop = np.array([c["proportion"] for c in cs])
            ok = np.array([c["proportion_ok"] for c in cs])
            ax.plot(x[ok], prop[ok], "o", ms=3, color="#2a7d2a")
            ax.plot(x[~ok], prop[~ok], "o", ms=4, color="#b22222")
        ax.axhline(1 - alpha, color="k", linewidth=0.6)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
        lowest = min(min(c["proportion"], c["band"][0]) for c in judged)
        ax.set_ylim(max(0.0, lowest - 0.01), 1.002)
        ax.set_ylabel("proportion passing")
        ax.set_title("grey: the band p̂ ± 3 sqrt(p̂(1 - p̂)/m); red: a column outside it", fontsize=8)
        fig.subplots_adjust(left=0.08, right=0.99, bottom=0.36, top=0.93)
        plots.append(("Proportion of passing sequences (SP 800-22 4.2.1)", _png(fig)))
    ran = [t["name"] for t in tests if any(c["test"] == t["name"] for c in judged)]
    if ran:
        cols = 5
        rows = -(-len(ran) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(10, 1.9 * rows), squeeze=False)
        for ax, name in zip(axes.ravel(), ran, strict=False):
            h = np.sum([c["histogram"] for c in judged if c["test"] == name], axis=0)
            ax.bar(
                np.arange(10) / 10 + 0.05,
                h / max(h.sum(), 1),
                width=0.1,
                color="#7aa6d6",
                edgecolor="white",
            )
            ax.axhline(0.1, color="k", linewidth=0.6)
            ax.set_title(name, fontsize=8)
            ax.set_xticks([0, 0.5, 1])
            ax.tick_params(labelsize=6)
        for ax in axes.ravel()[len(ran) :]:
            ax.axis("off")
        fig.subplots_adjust(left=0.05, right=0.99, bottom=0.08, top=0.92, hspace=0.7)
        plots.append(("P-values of each test (ten bins; uniform: 0.1 each)", _png(fig)))
    return plots


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


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


TEMPLATE_CACHE_KIND = "jinja"
"""The folder, under :func:`feltlab.cache.cache_dir`, of the report template's compiled
bytecode (jinja2's ``FileSystemBytecodeCache``: keyed by the template's name and file,
checked against the SHA-1 of its source, jinja2's and Python's versions)."""


@cache
def report_template() -> jinja2.Template:
    """The report's template, compiled once per process (0.12 s: a sixth of a small campaign,
    which the explorer runs thousands of), and its bytecode kept on disk between processes
    (:data:`TEMPLATE_CACHE_KIND`): a campaign's command then loads it (about 0.1 s less of
    the demo's CPU).  A cache that cannot be made, read or written is skipped."""
    import jinja2  # start-up: the report alone, never a campaign's collection
    import jinja2.bccache  # start-up: with jinja2, the report alone

    class SkippingCache(jinja2.bccache.FileSystemBytecodeCache):
        """jinja2's file cache, which raises when its folder cannot be written: skipped."""

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                return

    folder = feltlab_cache.cache_dir() / TEMPLATE_CACHE_KIND
    bytecode: jinja2.BytecodeCache | None = None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.lstat()
        # bytecode is code: read only from a folder that this user alone can write (as
        # jinja2's own default folder is checked), never from a shared or planted one
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
            bytecode = SkippingCache(str(folder))
    except OSError:
        bytecode = None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        autoescape=True,
        undefined=jinja2.ChainableUndefined,
        bytecode_cache=bytecode,
    )
    return env.get_template(TEMPLATE.name)


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
    power_columns: list[str] = []
    for c in (record.get("battery") or {}).get("checks", []):
        for k in c.get("power", {}):
            if k not in power_columns:
                power_columns.append(k)
    html = report_template().render(
        record=record,
        plots=plots,
        fmt=fmt,
        power_columns=power_columns,
        shown=shown_verdict,
        shown_profile=shown_profile,
        standards=list(STANDARDS.values()),
    )
    write_atomic(out_dir / "report.html", html)
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
