"""``feltlab certify predict``: can a seeded shuffler's shoe be predicted (issue 40 item 1,
docs/security.md)?  The declared seed space searched in the C core on every core from the
fewest cards of one shoe (a shoe file, or ``--simulate SEED``: the library's seeded shuffler),
the rest of the shoe predicted, or the space reported infeasible with the time a search
would take; or, with ``--outputs FILE``, MT19937's state recovered from 624 outputs and the
rest predicted (:mod:`feltlab.rig.security.predict`, :mod:`feltlab.rig.security.mt19937`).
Writes record.json, report.html and junit.xml (:mod:`feltlab.rig.security.predict_report`).
Exit 0 PASS (infeasible), 1 FAIL (predictable), 2 error, 3 INCONCLUSIVE."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from feltlab.cli.options import FiniteRange, SeedInt, json_option, out_option
from feltlab.errors import FeltlabError
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS

MIN_MAX_SEARCH = 60.0
"""The shortest ``--max-search`` (seconds): a space a search covers within a minute is
predictable by anyone, so a shorter bound would call it "infeasible" and PASS it (and the
rate is only measured after 0.3 s of searching)."""


def _shoe(
    file: str | None, row: int, simulate: int | None, decl: Any
) -> tuple[Any, dict[str, Any]]:
    """``(codes of one shoe, the record's source)`` from the file's row or the simulation."""
    from feltlab.rig.errors import DeclarationError  # start-up: when the command runs
    from feltlab.rig.security.shuffler import library_shoe  # start-up: when the command runs
    from feltlab.shoe_files import read_shoe_file  # start-up: when the command runs

    if simulate is not None:
        shoe = library_shoe(decl, simulate) % 52
        return shoe.astype("uint8"), {
            "simulated": True,
            "seed": simulate,
            "shuffler": f"the library's {decl.generator} shuffler seeded by {simulate}",
        }
    assert file is not None
    shoes = read_shoe_file(file, min_shoes=1)
    if row > shoes.shoes:
        raise DeclarationError(f"--shoe {row}: {file} holds {shoes.shoes} shoe(s)")
    source = {"simulated": False, "path": str(file), "sha256": shoes.sha256, "shoe": row}
    return shoes.codes[row - 1], source


def _outputs_record(outputs: str, fmt: str) -> dict[str, Any]:
    """The MT19937 state recovery record of the outputs file, with its verdict."""
    from feltlab.rig.security.mt19937 import N, read_words, state_recovery  # start-up

    words = read_words(outputs, fmt)
    if words.size < N:
        from feltlab.rig.errors import DeclarationError  # start-up: when the command runs

        raise DeclarationError(
            f"{outputs}: {words.size} outputs; MT19937's state needs {N} consecutive ones "
            f"(and more to check the prediction)"
        )
    rec = state_recovery(words)
    if rec["predicted"] and rec["correct"] == rec["predicted"]:
        verdict, summary = (
            "FAIL",
            (
                f"FAIL: predictable: MT19937's state recovered from {N} outputs; the next "
                f"{rec['predicted']} predicted, all right"
            ),
        )
    elif rec["predicted"]:
        verdict, summary = (
            "INCONCLUSIVE",
            (
                f"INCONCLUSIVE: the outputs after the first {N} are not MT19937's from the "
                f"recovered state (first wrong at output {rec['first_wrong']}): not MT19937, or "
                "not consecutive outputs"
            ),
        )
    else:
        verdict, summary = (
            "INCONCLUSIVE",
            (
                f"INCONCLUSIVE: a state recovered from {N} outputs, none left to check it; give "
                "more outputs"
            ),
        )
    code = {"FAIL": 1, "INCONCLUSIVE": 3}[verdict]
    source = {"path": outputs, "format": fmt}
    return dict(
        check="mt19937-state",
        source=source,
        recovery=rec,
        verdict=verdict,
        summary=summary,
        exit_code=code,
    )


def _write(record: dict[str, Any], out: str | None) -> Path:
    """record.json, report.html and junit.xml in ``out`` (new or empty) or a new campaign
    directory; returns the record's path."""
    from feltlab.rig.certify.record import new_out_dir  # start-up: when the command runs
    from feltlab.rig.cli.campaign_dir import new_campaign_dir  # start-up: when the command runs
    from feltlab.strictjson import json_safe  # start-up: when the command runs

    if out is not None:
        directory = Path(out)
        new_out_dir(directory, "choose a new --out directory")
    else:
        directory = new_campaign_dir("predict")
    from feltlab.rig.security.predict_report import (
        write_predict_report,  # start-up: when the command runs
    )

    path = directory / "record.json"
    path.write_text(json.dumps(json_safe(record), indent=2, allow_nan=False) + "\n")
    write_predict_report(directory, record)
    return path


@click.command("predict")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--shoe",
    "row",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="The shoe (row) of FILE to predict, 1-based.",
)
@click.option(
    "--simulate",
    type=SeedInt(),
    default=None,
    metavar="SEED",
    help="Predict a shoe of the library's seeded shuffler (the declared generator "
    "and shuffle seeded by SEED) instead of a FILE.",
)
@click.option(
    "--outputs",
    type=click.Path(dir_okay=False),
    default=None,
    help="Recover MT19937's state from this file's first 624 32-bit outputs and "
    "check the prediction of the rest (--format).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["u32le", "u32be", "text"]),
    default="text",
    show_default=True,
    help="--outputs: how the file holds words.",
)
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="A profile whose [predictability] table declares the shuffler "
    "(docs/security.md); the options below override it.",
)
@click.option(
    "--generator",
    default=None,
    help="glibc-rand, msvc-rand, java-random, mt19937, xorshift128+, chacha20.",
)
@click.option(
    "--seed-bits", type=click.IntRange(1, 256), default=None, help="The seed's width in bits."
)
@click.option(
    "--seed-source",
    default=None,
    help="timer-ms, timer-us, clock, counter or entropy (default timer-ms).",
)
@click.option(
    "--seed-range",
    default=None,
    metavar="LO:HI",
    help="Only these seeds (inclusive), e.g. a day of a wall clock.",
)
@click.option("--direction", default=None, help="Fisher-Yates: down (default) or up.")
@click.option("--scaling", default=None, help="modulo (default), multiply-shift or rejection.")
@click.option(
    "--decks",
    type=click.IntRange(ANY_MIN_DECKS, MAX_DECKS),
    default=None,
    help="Decks (default 6).",
)
@click.option(
    "--cards",
    "order",
    type=click.Choice(["settled", "dealt"]),
    default="settled",
    show_default=True,
    help="Identify the seed from the cards the shuffle settles "
    "first, or from the first dealt (a player's view).",
)
@click.option(
    "--max-search",
    type=FiniteRange(MIN_MAX_SEARCH),
    default=3600.0,
    show_default=True,
    metavar="SECONDS",
    help="The feasibility bound: a longer search at the measured rate is not run (at least "
    f"{MIN_MAX_SEARCH:g} s).",
)
@click.option(
    "--workers", type=click.IntRange(1, 256), default=None, help="Threads (default: every core)."
)
@out_option(
    "record.json, report.html and junit.xml go here (new or empty; default "
    "feltlab-campaigns/predict-...)."
)
@json_option("the record")
def predict_command(
    file: str | None,
    row: int,
    simulate: int | None,
    outputs: str | None,
    fmt: str,
    profile: str | None,
    generator: str | None,
    seed_bits: int | None,
    seed_source: str | None,
    seed_range: str | None,
    direction: str | None,
    scaling: str | None,
    decks: int | None,
    order: str,
    max_search: float,
    workers: int | None,
    out: str | None,
    as_json: bool,
) -> None:
    """Can the shoe be predicted: search a seeded shuffler's declared seed space (exit 0
    infeasible, 1 predictable, 2 error, 3 inconclusive)."""
    if sum(x is not None for x in (file, simulate, outputs)) != 1:
        raise click.UsageError("give a shoe FILE, --simulate SEED or --outputs FILE (one of them)")
    try:
        if outputs is not None:
            record = _outputs_record(outputs, fmt)
        else:
            from feltlab.rig.security.predict import predictability  # start-up
            from feltlab.rig.security.shuffler import load_declaration  # start-up

            decl = load_declaration(
                profile,
                {
                    "generator": generator,
                    "seed_bits": seed_bits,
                    "seed_source": seed_source,
                    "seed_range": seed_range,
                    "direction": direction,
                    "scaling": scaling,
                    "decks": decks,
                },
            )
            codes, source = _shoe(file, row, simulate, decl)
            record = predictability(
                decl, codes, order=order, workers=workers, max_seconds=max_search
            )
            record = {"check": record.pop("check"), "source": source, **record}
        path = _write(record, out)
    except (FeltlabError, ValueError) as exc:
        click.echo(f"error: {str(exc).splitlines()[0]}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(
            f"error: cannot write {exc.filename}: {exc.strerror or exc}; give a writable --out",
            err=True,
        )
        sys.exit(2)
    if as_json:
        from feltlab.strictjson import json_safe  # start-up: when the command runs

        click.echo(json.dumps(json_safe(record), indent=2, allow_nan=False))
    else:
        click.echo(record["summary"])
        click.echo(f"record: {path}")
    sys.exit(record["exit_code"])
