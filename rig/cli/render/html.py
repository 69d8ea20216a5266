"""A campaign's record as its HTML report (jinja2, ``templates/report.html.j2``): the
verdicts, the battery with its power, the plots, the standards the figures serve."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab import cache as feltlab_cache
from feltlab.rig.cli.render.text import fmt, shown_verdict
from feltlab.rig.profiles import shown_profile

if TYPE_CHECKING:
    import jinja2

TEMPLATE = Path(__file__).with_name("templates") / "report.html.j2"


TEMPLATE_CACHE_KIND = "jinja"
"""The folder, under :func:`feltlab.cache.cache_dir`, of the report template's compiled
bytecode (jinja2's ``FileSystemBytecodeCache``: keyed by the template's name and file,
checked against the SHA-1 of its source, jinja2's and Python's versions)."""


@cache
def report_template() -> jinja2.Template:
    """The report's template, compiled once per process (0.12 s: a sixth of a small campaign,
    which the explorer runs thousands of), and its bytecode kept on disk between processes
    (:data:`TEMPLATE_CACHE_KIND`): a campaign's command then loads it (about 0.05 s less of
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
    return report_template().render(
        record=record,
        plots=plots,
        fmt=fmt,
        power_columns=power_columns,
        shown=shown_verdict,
        shown_profile=shown_profile,
        standards=list(standards),
    )
