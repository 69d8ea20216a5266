"""``feltlab certify csm-audit``: can this continuous shuffler be beaten?  The command, its
terminal table, its JSON and its report folder (the figures: :mod:`.csm_audit`; the model
from a profile, options or a capture: :mod:`.csm_model`, :mod:`.csm_capture`)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from feltlab.cli.options import (
    OutputFolder,
    Refused,
    json_option,
    make_console,
    rounds_option,
    seed_option,
)
from feltlab.cli.render.text import estimate_dollars, estimate_percent, percent
from feltlab.cli.rule_options import rule_options
from feltlab.errors import FeltlabError
from feltlab.native import CsmModel
from feltlab.rig.certify.csm_audit import (
    DEFAULT_ROUNDS,
    AuditError,
    ByCount,
    CsmAudit,
    audit,
    plot_expectation,
)
from feltlab.rig.errors import RigError
from feltlab.rig.profiles import PROFILE_DIR, resolve_profile
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS, Rules


def summary_rows(a: CsmAudit) -> list[list[str]]:
    """One row per wager and window: expectation, slope, trigger, positive-round fraction,
    edge betting only then, $ per 100 rounds at the maximum, the 1-8 spread's edge."""
    rows = []
    for r in a.results:
        d = r.to_dict()
        spread = d["spread_1_8"]
        rows.append(
            [
                r.wager,
                str(r.window),
                estimate_percent(d["expectation"]),
                percent(d["slope_per_count"], signed=True),
                "-"
                if d["trigger_count"] is None
                else f"{d['trigger_side']} {d['trigger_count']:+g}",
                percent(d["positive_round_fraction"], 2),
                estimate_percent(d["edge_per_unit"]),
                estimate_dollars(d["cents_per_100_rounds_at_max"]),
                estimate_percent(spread["edge_per_unit_bet"]) if spread else "-",
            ]
        )
    return rows


COLUMNS = (
    "wager",
    "window",
    "expectation",
    "slope / count",
    "trigger",
    "positive rounds",
    "edge betting then",
    "$ / 100 rounds at max",
    "1-8 spread edge",
)


def _model_from_options(
    profile: str | None, capture: Path | None, overrides: dict[str, Any], seed: int
) -> tuple[CsmModel, int | None, str, dict[str, Any] | None]:
    """``(model, decks, source, capture figures)`` from a profile, a capture or the bundled
    continuous profile, with the command's overrides."""
    from feltlab.rig.certify.csm_capture import measure_model, read_gaps  # start-up
    from feltlab.rig.certify.csm_model import profile_model  # start-up: when the command runs
    from feltlab.rig.certify.profile import load_profile  # start-up: when the command runs

    cap = None
    if capture is not None:
        captured = read_gaps(capture)
        measured = measure_model(captured, seed=seed)
        prof = captured.profile
        model = measured.model
        cap = dict(measured.to_dict(), verdict=measured.verdict(prof.name))
        source = f"capture {capture} ({prof.name})"
    else:
        prof = load_profile(profile or "continuous", "continuous")
        if prof.kind != "continuous":
            raise AuditError(
                f"profile {prof.path} is a {prof.kind} profile: give a continuous shuffler's "
                "profile (its [model] table)"
            )
        model = profile_model(prof.raw, prof.path or "profile")
        ref = profile or "continuous"
        bundled = resolve_profile(ref) == PROFILE_DIR / f"{ref}.toml"
        source = f"{ref} (bundled)" if bundled else f"profile {prof.path} ({prof.name})"
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        try:
            model = replace(model, **given)
        except ValueError as exc:
            raise AuditError(str(exc)) from None
        source += " with " + ", ".join(f"{k}={v}" for k, v in given.items())
    decks = prof.device.get("decks")
    return model, decks if isinstance(decks, int) else None, source, cap


def write_report(a: CsmAudit, out: Path) -> list[Path]:
    """The report folder: ``csm-audit.json``, ``expectation.png`` (expectation against count)
    and ``report.md`` (the verdict, the table, the plot)."""
    out.mkdir(parents=True, exist_ok=True)
    data = a.to_dict()
    js = out / "csm-audit.json"
    js.write_text(json.dumps(data, indent=2) + "\n")
    png = plot_expectation(a, out / "expectation.png")
    lines = [
        "# Continuous shuffler exploitability audit",
        "",
        f"**{a.verdict()}**",
        "",
        f"Machine: {a.model.describe()} ({a.source}); rules {a.rules_name}, {a.decks} decks; "
        f"count {a.count_name}; seed {a.seed}; {a.rounds_simulated:,} rounds in "
        f"{a.seconds:.1f} s.",
        "",
    ]
    if a.capture:
        lines += [f"Capture: {a.capture['verdict']}", ""]
    lines += [f"Not in the audit: {name}: {why}" for name, why in a.skipped.items()]
    lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in summary_rows(a)]
    lines += ["", "![expectation against count](expectation.png)", ""]
    md = out / "report.md"
    md.write_text("\n".join(lines))
    return [js, png, md]


def _bucket_table(r: ByCount) -> Table:
    t = Table(title=f"{r.wager}: expectation by count (window {r.window})")
    for c in ("count", "rounds", "of rounds", "expectation (95%)"):
        t.add_column(c, justify="right")
    for row in r.to_dict()["by_count"]:
        t.add_row(
            f"{row['count']:+g}",
            f"{row['rounds']:,}",
            percent(row["fraction"], 2),
            estimate_percent(row["expectation"]),
        )
    return t


@click.command("csm-audit")
@click.option(
    "--profile",
    default=None,
    help="A continuous shuffler's profile (default: the bundled continuous).",
)
@click.option(
    "--capture",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A finished continuous campaign: audit the buffer and machine its return gaps measure.",
)
@click.option(
    "--machine", type=click.Choice(["ideal", "slots"]), default=None, help="Override the machine."
)
@click.option("--slots", type=click.IntRange(1, 255), default=None, help="Override the slots.")
@click.option(
    "--buffer", type=click.IntRange(0, 416), default=None, help="Override the buffer (cards)."
)
@click.option(
    "--policy",
    type=click.Choice(["round", "batch"]),
    default=None,
    help="Override the return policy.",
)
@click.option(
    "--batch", type=click.IntRange(1, 64), default=None, help="Rounds a batch (--policy batch)."
)
@click.option(
    "--decks",
    type=click.IntRange(ANY_MIN_DECKS, MAX_DECKS),
    default=None,
    help="Decks (default: the profile's).",
)
@rule_options(decks=False, penetration=False)
@click.option(
    "--wager",
    "wagers",
    multiple=True,
    default=("main",),
    show_default=True,
    help="A wager in play (repeat; 'all': every installed wager with a lookup table).",
)
@click.option(
    "--count",
    default="hilo",
    show_default=True,
    help="A count of feltlab.math.counts: a built-in one (hilo, ko, zen, halves, ...), eor "
    "(each wager's best linear count from its effects of removal) or tags:A,2,...,K.",
)
@click.option(
    "--window",
    type=click.IntRange(1, 416),
    default=16,
    show_default=True,
    help="Window W: the last W cards seen (also W/2, W/4 ... down to 4).",
)
@rounds_option(
    DEFAULT_ROUNDS,
    "Rounds simulated a window.",
    least=1_000,
)
@click.option(
    "--out",
    type=OutputFolder(),
    default=None,
    help="Write the report (JSON, plot, Markdown) to this new folder.",
)
@click.option("--detail", is_flag=True, help="Also print each wager's expectation by count.")
@seed_option(default=0)
@json_option("the audit")
def csm_audit_command(
    profile: str | None,
    capture: Path | None,
    machine: str | None,
    slots: int | None,
    buffer: int | None,
    policy: str | None,
    batch: int | None,
    decks: int | None,
    rules: Rules,
    rules_name: str,
    wagers: tuple[str, ...],
    count: str,
    window: int,
    rounds: int,
    out: Path | None,
    detail: bool,
    seed: int,
    as_json: bool,
) -> None:
    """Can a continuous shuffler be beaten?  Deals rounds off its model (a profile's [model],
    the options, or what a capture measures) and finds the count at which each wager turns
    positive: the positive-round fraction and the edge of betting only then
    (docs/csm-audit.md).  Exit 0: no exploitable count at this sample; 1: exploitable;
    2: an error in the input (an option, the profile or the capture)."""
    try:
        model, prof_decks, source, cap = _model_from_options(
            profile,
            capture,
            {"kind": machine, "slots": slots, "buffer": buffer, "policy": policy, "batch": batch},
            seed,
        )
        use = decks or prof_decks or rules.decks
        if use != rules.decks:
            rules = rules.replace(decks=use)
        a = audit(
            model,
            rules,
            wagers=wagers,
            count=count,
            window=window,
            rounds=rounds,
            seed=seed,
            rules_name=rules_name,
            source=source,
        )
    except (FeltlabError, RigError, ValueError) as exc:  # a bad option, profile or capture
        raise Refused(str(exc).splitlines()[0]) from None
    a.capture = cap
    written = write_report(a, out) if out is not None else []
    if as_json:
        click.echo(json.dumps(a.to_dict(), indent=2, allow_nan=False))
    else:
        con = make_console()
        if cap:
            con.print(cap["verdict"])
        con.print(
            f"{a.model.describe()} ({source}); {rules_name}, {rules.decks} decks; "
            f"{a.count_name}; seed {seed}"
        )
        t = Table()
        for c in COLUMNS:
            t.add_column(c, justify="right" if c not in ("wager",) else "left")
        for row in summary_rows(a):
            t.add_row(*row)
        con.print(t)
        if detail:
            for r in a.results:
                con.print(_bucket_table(r))
        rate = a.rounds_simulated / a.seconds if a.seconds else math.nan
        con.print(f"{a.rounds_simulated:,} rounds in {a.seconds:.1f} s ({rate:,.0f} rounds/s)")
        for name, why in a.skipped.items():
            con.print(f"not in the audit: {name}: {why}")
        for p in written:
            con.print(f"wrote {p}")
        con.print(a.verdict())
    raise SystemExit(1 if a.best() is not None else 0)
