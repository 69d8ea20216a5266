"""``feltlab shuffle``: shuffle a batch of shoes in the C core, print a few and the
throughput."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click
import numpy as np

from feltlab import native
from feltlab.cards import card_str
from feltlab.cli.options import OutputFile, json_option, make_console, seed_option
from feltlab.shoe_files import CARD_FORMS, FORMATS, ShoeFileError, write_shoe_file

SHUFFLE_CHUNK = 16_384
"""Shoes ``feltlab shuffle`` shuffles per call of the C core (10 MB for 6-deck shoes)."""


@click.command()
@click.option("--decks", type=click.IntRange(1, native.MAX_DECKS), default=6, show_default=True)
@click.option(
    "--shoes",
    type=click.IntRange(1, 10**9),
    default=200_000,
    show_default=True,
    help="Shoes to shuffle for the throughput figure.",
)
@click.option(
    "--rng",
    "rng_name",
    type=click.Choice(["xoshiro256**", "chacha20"]),
    default="xoshiro256**",
    show_default=True,
)
@seed_option(1, "Seed of the RNG, 0..2**64-1.")
@click.option(
    "--show",
    type=click.IntRange(0, 100),
    default=3,
    show_default=True,
    help="Shoes to print (their first 13 cards).",
)
@click.option(
    "--out",
    type=OutputFile(tuple(FORMATS)),
    default=None,
    help="Also write every shoe to this shoe file, one a row, by its suffix: .csv, .jsonl "
    "or .npy (a (shoes, cards) array), the cards as --cards says; what `feltlab certify "
    "shuffler --from FILE` reads (docs/certification.md, Shoes from a file).",
)
@click.option(
    "--cards",
    type=click.Choice(CARD_FORMS),
    default="ids",
    show_default=True,
    help="How --out writes a card: its id deck * 52 + code (the deck known, as a device "
    "reporting decks gives it), its code 0..51, or its text AS, 10D (a card reader's: no "
    "deck; CSV and JSON lines only).",
)
@json_option("the shoes shown and the throughput")
def shuffle(
    decks: int,
    shoes: int,
    rng_name: str,
    seed: int,
    show: int,
    out: Path | None,
    cards: str,
    as_json: bool,
) -> None:
    """Shuffle a batch of shoes in the C core: print a few and the throughput.  The shoes
    are shuffled in chunks of SHUFFLE_CHUNK (memory bounded whatever --shoes: a million
    6-deck shoes at once took 1.57 GB, except for an .npy --out, which holds them all), each
    checked to be a permutation."""
    rng = native.make_rng(rng_name, seed)
    dt = 0.0
    sorted_ok = True
    first: np.ndarray | None = None
    ident = np.arange(decks * 52)

    def batches() -> Iterator[np.ndarray]:
        nonlocal dt, sorted_ok, first
        for start in range(0, shoes, SHUFFLE_CHUNK):
            t0 = time.perf_counter()
            batch = native.shuffle_batch(rng, min(SHUFFLE_CHUNK, shoes - start), decks, ids=True)
            dt += time.perf_counter() - t0
            sorted_ok = sorted_ok and bool((np.sort(batch, axis=1) == ident).all())
            if first is None:
                first = batch[: min(show, shoes)].copy()
            yield batch

    if out is not None:
        try:
            write_shoe_file(out, batches(), decks=decks, cards=cards)
        except ShoeFileError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except OSError as exc:
            click.echo(f"error: cannot write {out}: {exc.strerror or exc}", err=True)
            sys.exit(2)
    else:
        for _ in batches():
            pass
    assert first is not None
    batch = first
    console = make_console()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "decks": decks,
                    "shoes": shoes,
                    "rng": rng.name,
                    "seed": seed,
                    "seconds": dt,
                    "shoes_per_second": shoes / dt,
                    "ns_per_card": dt / (shoes * decks * 52) * 1e9,
                    "all_permutations": sorted_ok,
                    "out": None if out is None else str(out),
                    "shown": [
                        [card_str(int(c)) for c in batch[i, :13]] for i in range(min(show, shoes))
                    ],
                },
                indent=2,
            )
        )
        if not sorted_ok:
            sys.exit(1)
        return
    for i in range(min(show, shoes)):
        head = " ".join(card_str(int(c)) for c in batch[i, :13])
        console.print(f"shoe {i}: {head} ...")
    console.print(
        f"{shoes:,} {decks}-deck shoes with {rng.name} (seed {seed}) in {dt:.3f} s: "
        f"{shoes / dt:,.0f} shoes/s, {dt / (shoes * decks * 52) * 1e9:.2f} ns/card; "
        f"every shoe a permutation of the {decks * 52} cards: {sorted_ok}"
    )
    if out is not None:
        console.print(f"wrote {shoes:,} shoes to {out}")
    if not sorted_ok:
        sys.exit(1)
