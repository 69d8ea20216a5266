"""``feltlab certify plan``: the shoes a certificate needs to catch each named flawed machine
(:func:`feltlab.rig.certify.power.plan`), per check and for the battery, before any campaign."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from feltlab.cli.options import FiniteRange, make_console
from feltlab.errors import FeltlabError
from feltlab.rig.certify.battery import CHECK_NAMES
from feltlab.rig.certify.power import (
    DEFAULT_ALTERNATIVES,
    DEFAULT_REQUIRED,
    MAX_SHOES,
    POWER_SEED,
    PowerTable,
    plan,
)
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.certify.standards import get_standard
from feltlab.rig.devices.models import parse_model
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS


def _alternatives(
    profile: str | None, given: tuple[str, ...], decks: int | None
) -> tuple[list[str], dict[str, Any]]:
    prof = load_profile(profile, "batch")
    if prof.kind != "batch":
        raise click.UsageError(f"profile {prof.path} is a {prof.kind} profile, not a batch's")

    alts = list(given) or list(prof.campaign.get("power_alternatives", DEFAULT_ALTERNATIVES))
    alts = list(dict.fromkeys(alts))  # each alternative once, in the order given

    n_cards = 52 * (decks or int(prof.device.get("decks", 6)))
    for alt in alts:  # an unknown or out-of-range name is the user's error: one line, exit 2
        parse_model(alt).check_fits(n_cards)  # (stuck:pos=415 of 312 cards: an empty table)
    return alts, dict(prof.campaign, decks=int(prof.device.get("decks", 6)))


def table_rows(table: PowerTable) -> list[dict[str, Any]]:
    """Per alternative: the shoes each check needs and the battery's (the fewest), and the
    check that catches it first (None: none within :data:`MAX_SHOES`)."""
    return [
        {
            "model": a.model,
            "battery_shoes_needed": a.shoes_needed,
            "caught_by": a.caught_by,
            "power_at_campaign_size": a.best.power,
            "ci95": [a.best.low, a.best.high],
            "checks": {c.check: c.shoes_needed for c in a.checks},
        }
        for a in table.alternatives
    ]


@click.command("plan")
@click.option("--profile", default=None, help="Batch profile (default: the bundled one).")
@click.option(
    "--alternative",
    "-a",
    "alternatives",
    multiple=True,
    help="A shuffle model to catch (repeat the option); default: the profile's "
    "[campaign] power_alternatives.",
)
@click.option(
    "--alpha",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Family-wise level (Holm); default: the profile's, or the --standard's.",
)
@click.option(
    "--power",
    "required",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=None,
    help=f"Required power; default: the profile's power_required, else {DEFAULT_REQUIRED}.",
)
@click.option(
    "--decks",
    type=click.IntRange(ANY_MIN_DECKS, MAX_DECKS),
    default=None,
    help="Decks per shoe, 1-8.",
)
@click.option("--standard", default=None, help="25cfr547, comar or pa810a: sets alpha.")
@click.option(
    "--shoes",
    type=click.IntRange(2, MAX_SHOES),
    default=None,
    help="The campaign size the power column is for (default: the profile's).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**64 - 1),
    default=POWER_SEED,
    show_default=True,
    help="Seed of the simulated shoes; the default is the fixed seed every campaign's power "
    "uses, so that the plan's figures are the campaign's (another seed shows the simulation's "
    "spread for the alternatives whose law is not exact).",
)
@click.option(
    "--generator",
    "-g",
    "generators",
    multiple=True,
    help="A flawed generator of the library to catch with SP 800-22 (repeat; 'all': the "
    "whole library, docs/rng.md): plans the raw-output certificate instead of the shoes.",
)
@click.option(
    "--bits",
    type=click.IntRange(100, 10**8),
    default=1_000_000,
    show_default=True,
    help="--generator: bits a sequence.",
)
@click.option(
    "--simulated",
    type=click.IntRange(10, 10_000),
    default=50,
    show_default=True,
    help="--generator: sequences simulated for each generator's law.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
def plan_command(
    profile: str | None,
    alternatives: tuple[str, ...],
    alpha: float | None,
    required: float | None,
    decks: int | None,
    standard: str | None,
    shoes: int | None,
    seed: int,
    generators: tuple[str, ...],
    bits: int,
    simulated: int,
    as_json: bool,
) -> None:
    """Per named alternative, the shoes each check of the battery needs to catch it with the
    required power at alpha (after Holm, at the Bonferroni level alpha/m), the battery's
    figure (the fewest) and the check that catches it first.  With --generator: per flawed
    generator, the sequences of --bits each SP 800-22 test needs to catch it."""
    if generators:
        if alternatives or decks is not None or shoes is not None or profile is not None:
            raise click.UsageError(
                "--generator plans the raw-output certificate: drop --alternative, --decks, "
                "--shoes and --profile (the shuffler's)"
            )
        from feltlab.rig.cli.rng_plan import generator_plan  # start-up: when the command runs

        generator_plan(generators, bits, simulated, alpha, standard, required, seed, as_json)
        return

    try:
        alts, camp = _alternatives(profile, alternatives, decks)
        if standard is not None:
            std_alpha = get_standard(standard).alpha
            if alpha is not None and abs(alpha - std_alpha) > 1e-12:
                raise ValueError(
                    f"--alpha {alpha:g} and --standard {standard} (alpha "
                    f"{std_alpha:g}) disagree: give one"
                )
            alpha = std_alpha
        t0 = time.perf_counter()
        table = plan(
            alts,
            decks=decks or int(camp["decks"]),
            alpha=alpha if alpha is not None else float(camp.get("alpha", 0.01)),
            required=required or float(camp.get("power_required", DEFAULT_REQUIRED)),
            shoes=int(camp.get("power_shoes", 2000)),
            seed=seed,
            n_shoes=shoes or int(camp.get("shoes", 2000)),
        )
        elapsed = time.perf_counter() - t0
    except (ValueError, FeltlabError) as exc:  # a bad profile, model or option: one line
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if as_json:
        out = {
            "decks": decks or int(camp["decks"]),
            "campaign_shoes": shoes or int(camp.get("shoes", 2000)),
            "alpha": table.alpha,
            "required": table.required,
            "family": table.family,
            "simulated_shoes": table.simulated_shoes,
            "standard": standard,
            "alternatives": table_rows(table),
            "unavailable": table.unavailable,
        }
        click.echo(json.dumps(out, indent=2))
        return
    _print_plan(table, decks or int(camp["decks"]), elapsed, standard)


SHORT = {
    "position_uniformity": "pos",
    "rising_sequences": "rise",
    "rising_sequence_distribution": "rise-dist",
    "turning_points": "turn",
    "valleys": "valleys",
    "successions": "succ",
    "adjacent_rank_pairs": "pairs",
    "next_card_guessing": "guess",
    "successive_shoes": "succ-shoes",
    "repeated_shoes": "repeats",
}
"""Each check's column heading in the plan's table (as docs/certification.md's tables)."""


def _print_plan(table: PowerTable, decks: int, elapsed: float, standard: str | None) -> None:
    from rich.table import Table  # start-up: rich only when a plan is printed

    names = [
        c for c in CHECK_NAMES if any(c in {x.check for x in a.checks} for a in table.alternatives)
    ]
    under = "" if standard is None else f" under --standard {standard}"
    t = Table(
        title=f"shoes needed{under}, {decks} deck(s): power {table.required:g} at alpha "
        f"{table.alpha:g} / {table.family} checks ({table.simulated_shoes} simulated shoes "
        "per alternative; '-': not within 10,000,000)"
    )
    t.add_column("alternative", overflow="fold")
    t.add_column("battery", justify="right", no_wrap=True)
    t.add_column("caught first by", overflow="fold")
    # the power at the campaign's size (--shoes), as --help and the JSON give it
    at = table.alternatives[0].n_shoes if table.alternatives else None
    t.add_column(f"power at {at:,}" if at else "power", justify="right", no_wrap=True)
    for n in names:  # numbers whole, never cut to "5,0…": a narrow terminal folds the headers
        t.add_column(SHORT.get(n, n), justify="right", no_wrap=True)
    for row in table_rows(table):
        need = row["battery_shoes_needed"]
        t.add_row(
            row["model"],
            "-" if need is None else f"{need:,}",
            row["caught_by"] or "no check",
            f"{row['power_at_campaign_size']:.3f}",
            *["-" if row["checks"].get(n) is None else f"{row['checks'][n]:,}" for n in names],
        )
    console = make_console()
    console.print(t)
    for model, why in table.unavailable.items():
        console.print(f"[yellow]{model}:[/yellow] {why}")
    console.print(f"computed in {elapsed:.2f} s")
