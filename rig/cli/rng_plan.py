"""``feltlab certify plan --generator``: per flawed generator of the library, the sequences
each SP 800-22 test needs to catch it (:func:`feltlab.rig.certify.rng_power.plan_generator`),
as a table or JSON."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from feltlab.errors import FeltlabError
from feltlab.rig.rng.sp800_22 import TEST_NAMES

SHORT = {
    "frequency": "freq",
    "block_frequency": "block",
    "cumulative_sums": "cusum",
    "runs": "runs",
    "longest_run": "long",
    "rank": "rank",
    "dft": "dft",
    "non_overlapping_template": "non-ovl",
    "overlapping_template": "ovl",
    "universal": "univ",
    "approximate_entropy": "apen",
    "random_excursions": "exc",
    "random_excursions_variant": "exc-var",
    "serial": "serial",
    "linear_complexity": "lin",
}
"""Each test's column heading in the plan's table."""


def generator_plan(
    names: tuple[str, ...],
    bits: int,
    simulated: int,
    alpha: float | None,
    standard: str | None,
    required: float | None,
    seed: int,
    as_json: bool,
) -> None:
    """Plan, print, exit 2 with one line on a bad name or option."""
    from feltlab.rig.certify.rng_power import MAX_SEQUENCES, plan_generator  # start-up
    from feltlab.rig.certify.standards import get_standard  # start-up: when the command runs
    from feltlab.rig.cli.render.terminal import RichProgress  # start-up: when the command runs
    from feltlab.rig.rng.generators import GENERATORS, parse_generator  # start-up

    try:
        wanted = list(GENERATORS) if "all" in names else list(dict.fromkeys(names))
        gens = [parse_generator(n) for n in wanted]
        if standard is not None:
            std_alpha = get_standard(standard, "rng").alpha
            if alpha is not None and abs(alpha - std_alpha) > 1e-12:
                raise ValueError(f"--alpha {alpha:g} and --standard {standard} disagree: give one")
            alpha = std_alpha
        level = 0.01 if alpha is None else alpha
        power = 0.99 if required is None else required
        t0 = time.perf_counter()
        plans = []
        with RichProgress() as bar:
            bar.start(f"plan: SP 800-22 on {len(gens)} generator(s), {bits:,} bits", len(gens))
            for g in gens:
                plans.append(
                    plan_generator(
                        g, bits, alpha=level, required=power, simulated=simulated, seed=seed
                    )
                )
                bar.advance()
        elapsed = time.perf_counter() - t0
    except (ValueError, FeltlabError) as exc:
        click.echo(f"error: {str(exc).splitlines()[0]}", err=True)
        sys.exit(2)
    rows = [p.to_dict() for p in plans]
    if as_json:
        out: dict[str, Any] = {
            "bits": bits,
            "alpha": level,
            "required": power,
            "simulated_sequences": simulated,
            "seed": seed,
            "max_sequences": MAX_SEQUENCES,
            "generators": rows,
        }
        click.echo(json.dumps(out, indent=2))
        return
    _print(rows, bits, level, power, simulated, elapsed)


def _print(
    rows: list[dict[str, Any]],
    bits: int,
    alpha: float,
    power: float,
    simulated: int,
    elapsed: float,
) -> None:
    from rich.table import Table  # start-up: rich only when a plan is printed

    from feltlab.cli.options import make_console  # start-up: when the command runs

    t = Table(
        title=f"sequences of {bits:,} bits needed: power {power:g} at the certificate's "
        f"family-wise alpha {alpha:g} ('-': not within 100,000, or not within 64 for a "
        f"generator simulated whole)"
    )
    t.add_column("generator", overflow="fold")
    t.add_column("battery", justify="right", no_wrap=True)
    t.add_column("caught first by", overflow="fold")
    for name in TEST_NAMES:
        t.add_column(SHORT[name], justify="right", no_wrap=True)
    for r in rows:
        need = r["sequences_needed"]
        t.add_row(
            r["generator"],
            "-" if need is None else f"{need:,}",
            r["caught_by"] or "no test",
            *["-" if r["tests"].get(n) is None else f"{r['tests'][n]:,}" for n in TEST_NAMES],
        )
    console = make_console()
    console.print(t)
    for r in rows:
        if r["sequences_needed"] is None:
            if r.get("fair"):  # the control: nothing to catch, and nothing caught
                console.print(f"{r['generator']}: fair, no test catches it, as it should")
                continue
            why = (
                (
                    "statistically good: its flaw is predictability, which no bitstream test "
                    "sees (issue 40)"
                )
                if not r["catchable_by_bitstream_tests"]
                else ("not caught at this size: more bits or a larger --simulated sample")
            )
            console.print(f"[yellow]{r['generator']}:[/yellow] no test catches it; {why}")
    console.print(
        f"method: each generator's law from {simulated} simulated sequences, then "
        f"analytic (dependent sequences: simulated whole); {elapsed:.1f} s"
    )
