"""The rig's command-line rendering: a campaign's progress bar on stderr, its result as
terminal tables (verdicts, checks, the battery's power) or as JSON on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from feltlab.cli.options import is_terminal, make_console
from feltlab.rig.cli.render.text import rng_test_row, shown_verdict


class RichProgress:
    """A rich progress bar (stderr) for campaigns: one task per phase."""

    def __init__(self) -> None:
        from rich.console import Console  # start-up: rich only when a campaign shows progress
        from rich.progress import (  # start-up: rich only when a campaign shows progress
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
            disable=not is_terminal(sys.stderr),
        )
        self.task: Any = None

    def start(self, description: str, total: int | None) -> None:
        if self.task is not None:
            t = self.bar.tasks[-1]
            if t.total is not None:
                self.bar.update(self.task, completed=t.total)
            else:
                self.bar.update(self.task, total=t.completed or 1, completed=t.completed or 1)
        self.task = self.bar.add_task(description, total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None:
            self.bar.advance(self.task, n)

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.task is not None:
            self.start("done", 0)
        self.bar.stop()


def print_json(result: Any, *, written: bool = True) -> None:
    """The result as JSON on stdout: the verdict, the directory, and the record."""
    out = {
        "verdict": str(result.verdict),
        "exit_code": result.exit_code,
        "directory": str(result.directory) if written else None,
        "record": result.record,
    }
    from feltlab.strictjson import json_safe  # start-up: when the command runs

    click.echo(json.dumps(json_safe(out), indent=2, default=str, allow_nan=False))


def power_table(power: dict[str, Any], title: str | None = None) -> Any:
    """A rich table of a record's ``battery.power`` (:class:`feltlab.rig.certify.power.
    PowerTable`): per named alternative, the battery's power at the campaign's shoes with
    its 95% interval, the shoes needed and the check that catches it first."""
    from rich.table import Table  # start-up: rich only when a result is printed

    table = Table(
        title=title
        or f"power against named alternatives (required {power['required']:g} at "
        f"{power['level'].split(' (')[0]})"
    )
    for col in ("alternative", "shoes", "power [95% CI]", "caught", "shoes needed", "by"):
        table.add_column(col)
    for a in power.get("alternatives", []):
        lo, hi = a["ci95"]
        need = a["shoes_needed"]
        table.add_row(
            a["model"],
            f"{a['n_shoes']:,}",
            f"{a['power']:.3f} [{lo:.3f}, {hi:.3f}]",
            "yes" if a["caught"] else "NO",
            "-" if need is None else f"{need:,}",
            a["caught_by"] or "no check",
        )
    return table


def _print_rng_source(console: Any, src: dict[str, Any]) -> None:
    """The raw output's file, and the bus collection's record when it came over the bus."""
    if "path" not in src:  # a generator of the library (it printed "raw output None")
        console.print(f"bits from library generator {src.get('name')}: {src.get('title', '')}")
        return
    digest = src.get("sha256_of_bytes_read")
    line = f"raw output {src.get('path')} ({src.get('format')}, sha256 {digest})"
    got = src.get("collection")
    if got:
        bus = got["bus"]
        kind = f"CAN FD {bus['bitrate']}/{bus['data_bitrate']}" if bus["fd"] else "classic CAN"
        line += (
            f"; collected over {kind} bit/s in {bus['bus_seconds']:.3f} s of bus time, "
            f"{got['blocks']} blocks, {got['resends']} resent"
        )
    console.print(line, soft_wrap=True)


def print_result(result: Any, *, written: bool = True, as_json: bool = False) -> None:
    from rich.table import Table  # start-up: rich only when a result is printed

    if as_json:
        print_json(result, written=written)
        return
    rec = result.record
    console = make_console()
    table = Table(title=f"{rec['device']['name']}: {rec['verdict']}")
    for col in ("check", "value", "limits / p", "verdict"):
        table.add_column(col)
    bat = rec.get("battery") or {}
    for c in bat.get("checks", []):
        stat = c["statistic"]
        table.add_row(
            f"battery.{c['name']}",
            f"{c['statistic_name']} = {stat:.4g}" if stat is not None else "",
            f"p = {c['adjusted_p']:.3g} (Holm)" if c["adjusted_p"] is not None else "",
            c["verdict"],
        )
    add_predictability_row(table, rec)
    add_rng_rows(table, rec)
    for m in rec["measurements"]:
        value = m["value"]
        lo = "" if m["low"] is None else f"{m['low']:.4g}"
        hi = "" if m["high"] is None else f"{m['high']:.4g}"
        why = (m.get("detail") or {}).get("reason")
        shown = f"{value:.4g} {m['unit']}" if value is not None else ""
        if m["verdict"] in ("ERROR", "INCONCLUSIVE", "FAIL") and why:
            shown = f"{shown} ({why})" if shown else f"not measured: {why}"
        table.add_row(
            m["name"],
            shown,
            f"[{lo}, {hi}]" if lo or hi else "",
            shown_verdict(m),  # a figure with no limit is "not judged", as report and view say
        )
    clock = rec.get("clock") or {}
    console.print(table)
    hu = rec.get("host_uncertainty") or {}
    src = rec.get("source") or {}
    if rec.get("kind") == "rng":  # raw output: its source and, collected over the bus, its time
        _print_rng_source(console, src)
    elif src:
        names = ", ".join(n["name"] for n in rec.get("not_applicable", []))
        console.print(
            f"shoes from {src['path']} ({src['format']} of {src['cards']}, sha256 "
            f"{src['sha256']}): {src['shoes']} shoes of {src['decks']} decks; not applicable "
            f"(no device): {names}",
            soft_wrap=True,
        )
    elif clock.get("mode") == "sim":
        console.print(
            "[bold]simulated time[/bold]"
            + str(clock["description"]).removeprefix("simulated time")
            + "; the host's timing uncertainty is exactly 0",
            soft_wrap=True,
        )
    elif hu.get("source") == "measured":
        console.print(
            f"real time: host timing uncertainty {hu['seconds']:.3g} s (p99), "
            f"{hu['seconds_max']:.3g} s (max)"
            + (", the device's side on this host included" if hu.get("device_on_host") else "")
            + "; timing verdicts within it of a limit are INCONCLUSIVE"
        )
    elif hu:
        console.print(f"real time: host timing uncertainty {hu.get('source')}")
    got: dict[str, Any] = rec.get("collection") or {}
    if got.get("collected") is not None and not src:
        planned = got.get("requested")
        console.print(
            f"collected {got['collected']}"
            + (f" of {planned} planned" if planned is not None else "")
            + (
                f" (+{got['beyond_plan']} beyond the plan, drawn by the checks after collection)"
                if got.get("beyond_plan")
                else ""
            )
            + (f", {got['missing_count']} missing" if got.get("missing_count") else "")
        )
    print_rng_notes(console, rec.get("rng") or {})
    if bat.get("power"):
        console.print(power_table(bat["power"]))
    for note in bat.get("notes") or []:
        console.print(f"[yellow]not certified:[/yellow] {note}", soft_wrap=True)
    if bat.get("integrity"):
        console.print(f"[red]integrity:[/red] {bat['integrity']}")
    for e in rec.get("errors", []):
        console.print(f"[yellow]error:[/yellow] {e}")
    if written:
        console.print(
            f"verdict [bold]{rec['verdict']}[/bold]; report in {result.directory} "
            f"(record.json, report.html, junit.xml, manifest.json)"
        )
    else:
        console.print(
            f"verdict [bold]{rec['verdict']}[/bold]; no report written (give --out DIR, a "
            "new or empty directory, to write record.json, report.html, junit.xml, "
            "manifest.json)"
        )


def add_predictability_row(table: Any, rec: dict[str, Any]) -> None:
    """The predictability check's row (issue 40), when the campaign ran it."""
    pred = rec.get("predictability")
    if pred:
        table.add_row("predictability", pred["summary"].partition(": ")[2], "", pred["verdict"])


def add_rng_rows(table: Any, rec: dict[str, Any]) -> None:
    """A raw-output certificate's rows (record ``rng``): one per SP 800-22 test."""
    for t in (rec.get("rng") or {}).get("tests", []):
        row = rng_test_row(t)
        table.add_row(row["name"], row["value"] or "", row["limits"] or "", row["verdict"])


def print_rng_notes(console: Any, rng: dict[str, Any]) -> None:
    """The size, level and time of a raw-output certificate's battery and its notes."""
    if rng:
        std = rng.get("standard") or {}
        under = (
            f" under --standard {std['name']} ({std['title']}; requires "
            f"{len(std.get('required_checks') or [])} of the 15 tests)"
            if std.get("name")
            else ""
        )
        console.print(
            f"{rng['sequences']:,} sequence{'' if rng['sequences'] == 1 else 's'} of "
            f"{rng['n_bits']:,} bits, alpha {rng['alpha']:g} "
            f"(family-wise over {rng['columns_judged']} p-value columns){under}; the battery "
            f"ran in {rng['seconds']:.1f} s",
            soft_wrap=True,
        )
    for note in rng.get("notes") or []:
        console.print(f"[yellow]not certified:[/yellow] {note}", soft_wrap=True)
