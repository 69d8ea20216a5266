"""``feltlab certify explore``: deterministic simulation testing of the rig
(:mod:`feltlab.rig.explore.runner`; docs/certification.md, "Deterministic simulation testing")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from feltlab.cli.options import FiniteRange, seed_option
from feltlab.seeds import U64_MAX


def _line(o: object) -> str:
    from feltlab.rig.explore.checks import Outcome  # start-up: when the command runs

    assert isinstance(o, Outcome)
    sc = o.scenario
    return (
        f"campaign {sc.replay}: {sc.describe()}: verdict {o.verdict}, offline {o.offline}, "
        f"{o.wall:.2f} s"
    )


@click.command("explore")
@click.option(
    "--campaigns",
    type=click.IntRange(1, 10_000_000),
    default=100,
    show_default=True,
    help="Random campaigns to run.",
)
@seed_option(
    1,
    "Run seed, 0..2**64-1 (decimal or 0x hex): campaign I of seed S is a pure function of (S, I).",
)
@click.option(
    "--first",
    type=click.IntRange(0, U64_MAX),
    default=0,
    show_default=True,
    help="Index of the first campaign (to split a long run).",
)
@click.option(
    "--shoes-max",
    type=click.IntRange(5, 2000),
    default=64,
    show_default=True,
    help="Largest batch shuffler campaign, in shoes.",
)
@click.option(
    "--out",
    default=None,
    type=click.Path(file_okay=False),
    help="Keep the campaign directories of violations here (default: a temporary "
    "directory, removed; --replay keeps its campaign here).",
)
@click.option(
    "--replay",
    default=None,
    metavar="S:I",
    help="Run only campaign I of seed S, verbosely (the command a violation prints).",
)
@click.option(
    "--wall-guard",
    type=FiniteRange(1, 3600),
    default=60.0,
    show_default=True,
    help="CPU seconds of this process after which one campaign counts as hung.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Run the campaigns on Dask distributed: a scheduler's address (tcp://host:8786), or "
    "'local' for a LocalCluster of --workers processes; the same outcomes as one process.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=2,
    show_default=True,
    help="With --scheduler local: the LocalCluster's worker processes.",
)
@click.option("--strict", is_flag=True, help="Known violations (open issues) fail the run too.")
@click.option("--verbose", "-v", is_flag=True, help="One line per campaign.")
@click.option("--json", "as_json", is_flag=True, help="Every outcome as a JSON line on stdout.")
@click.option("--jsonl", "json_out", metavar="FILE", help="Write every outcome to this JSONL file.")
def explore_command(
    campaigns: int,
    seed: int,
    first: int,
    shoes_max: int,
    out: str | None,
    replay: str | None,
    wall_guard: float,
    scheduler: str | None,
    workers: int,
    strict: bool,
    verbose: bool,
    as_json: bool,
    json_out: str | None,
) -> None:
    """Run random certification campaigns in simulated time (fair, biased and faulty
    devices; injected faults; a chaotic wire; misbehaving devices) and check the rig's
    invariants on each.  Exit 0 with no violation, 1 with any."""
    from feltlab.rig.explore import runner as ex  # start-up: when the command runs
    from feltlab.rig.explore.checks import Outcome  # start-up: when the command runs

    if replay is not None:
        try:
            s, i = ex.parse_replay(replay)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--replay") from exc
        seed, first, campaigns, verbose = s, i, 1, True
    if first + campaigns - 1 > 2**64 - 1:
        raise click.BadParameter(
            f"campaign indexes run {first}..{first + campaigns - 1}, past 2**64 - 1: lower "
            "--first or --campaigns",
            param_hint="--first",
        )
    root = Path(out) if out else None
    sink: Any = open(json_out, "w", encoding="utf-8") if json_out else None  # noqa: SIM115
    sink, done = sink or (sys.stdout if as_json else None), [0]  # --json: the text to stderr

    def on_outcome(o: Outcome) -> None:
        done[0] += 1
        if verbose:
            click.echo(_line(o), err=as_json)
        for name, text in o.violations:
            click.echo(
                f"VIOLATION [{name}] campaign {o.scenario.replay} (seed {o.scenario.seed}, "
                f"index {o.scenario.index}; {o.scenario.describe()}): {text}\n"
                f"  replay: {o.scenario.command}"
                + (f"\n  campaign kept in {o.directory}" if o.directory else ""),
                err=True,
            )
        if verbose:
            for name, text, why in o.known:
                click.echo(f"  known [{name}] ({why}): {text}", err=as_json)
        if sink is not None:
            row = {
                "scenario": o.scenario.to_dict(),
                "verdict": o.verdict,
                "offline": o.offline,
                "violations": o.violations,
                "known": o.known,
                "wall_s": o.wall,
                "sim_s": o.sim_seconds,
                "chaos": o.chaos_counts,
            }
            sink.write(json.dumps(row, default=str) + "\n")
            sink.flush()
        if not verbose and done[0] % 100 == 0:
            click.echo(f"{done[0]} campaigns...", err=True)

    try:
        summary = ex.explore(
            campaigns,
            seed,
            shoes_max=shoes_max,
            out=root if root is not None or replay is None else Path("feltlab-explore"),
            wall_limit=wall_guard,
            first=first,
            on_outcome=on_outcome,
            keep=replay is not None,
            scheduler=None if replay is not None else scheduler,
            workers=workers,
        )
    except (ValueError, RuntimeError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    finally:
        if sink is not None and sink is not sys.stdout:
            sink.close()
    if replay is not None:
        o = summary.outcomes[0]
        click.echo(json.dumps(o.scenario.to_dict(), indent=2, default=str), err=as_json)
        if o.directory is not None:
            click.echo(f"campaign directory: {o.directory}", err=as_json)
    sys.exit(_summarise(summary, seed, first, strict, as_json))


def _summarise(summary: Any, seed: int, first: int, strict: bool, as_json: bool) -> int:
    """Print the run's summary (to stderr with --json); returns the exit code: 1 with any
    violation (or known one, ``strict``), else 0."""
    bad = summary.violations
    known = [o for o in summary.outcomes if o.known]
    cal_bad = [line for status, line in summary.calibration if status == "violation"]
    verdicts: dict[str, int] = {}
    for o in summary.outcomes:
        verdicts[str(o.verdict)] = verdicts.get(str(o.verdict), 0) + 1
    click.echo(
        f"explored {len(summary.outcomes)} campaigns (seed {seed}, from {first}) in "
        f"{summary.wall:.1f} s: {summary.rate:.2f} campaigns/s; verdicts "
        + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())),
        err=as_json,
    )
    for status, line in summary.calibration:
        click.echo(f"calibration ({status}): {line}", err=as_json)
    by_known: dict[str, int] = {}
    for o in known:
        for name, _text, why in o.known:
            by_known[f"[{name}] {why}"] = by_known.get(f"[{name}] {why}", 0) + 1
    for k, v in sorted(by_known.items()):
        click.echo(f"known: {v} x {k}", err=as_json)
    click.echo(
        f"{len(bad)} campaign(s) with violations, {len(known)} with known ones"
        + (", calibration violated" if cal_bad else ""),
        err=as_json,
    )
    return 1 if bad or cal_bad or (strict and known) else 0
