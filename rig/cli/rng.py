"""``feltlab certify rng``: certify a generator's raw output, read from a file or drawn from a
generator of the library, with NIST SP 800-22's battery (docs/rng.md); the record, report,
JUnit and manifest of a campaign (:mod:`feltlab.rig.certify.rng_certificate`)."""

from __future__ import annotations

import contextlib
import secrets
import sys
from pathlib import Path
from typing import Any

import click

from feltlab.cli.options import FiniteRange, json_option, out_option, seed_option
from feltlab.errors import FeltlabError
from feltlab.seeds import U64_MAX

FORMAT_HELP = (
    "How the file holds the bits: bytes (raw bytes, most significant bit first), u32le, "
    "u32be, u64le, u64be (32- or 64-bit words, little- or big-endian; each word's bits most "
    "significant first), text (decimal integers separated by spaces or newlines, with --range)."
)


def _bitstream(
    path: str | None,
    fmt: str,
    value_range: str | None,
    sequences: int | None,
    bits: int | None,
    generator: str | None,
    seed: int,
) -> tuple[Any, int, dict[str, Any], dict[str, Any]]:
    """``(sequences array, n_bits, device, source)`` from the file or the library generator."""
    from feltlab.rig.errors import SourceError  # start-up: when the command runs
    from feltlab.rig.rng.generators import parse_generator  # start-up: when the command runs
    from feltlab.rig.rng.sources import DEFAULT_BITS, MAX_BYTES, read_bitstream  # start-up

    if generator is not None:
        g = parse_generator(generator)
        n = bits or DEFAULT_BITS
        m = sequences or 100
        if m * -(-n // 8) > MAX_BYTES:  # the file's bound: numpy's MemoryError otherwise
            raise SourceError(
                f"{m:,} sequences of {n:,} bits are {m * -(-n // 8):,} bytes, over the "
                f"{MAX_BYTES:,} a run draws; give fewer --sequences or --bits"
            )
        data = g.sequences(m, n, seed)
        device = {
            "name": f"library generator {g.name} (seed {seed})",
            "kind": "rng",
            "simulated": True,
            "model": g.name,
        }
        return data, n, device, dict(g.describe(), sequences=m, bits=n)
    assert path is not None
    bs = read_bitstream(path, fmt, sequences=sequences, bits=bits, value_range=value_range)
    device = {
        "name": f"raw output {Path(path).name} ({fmt})",
        "kind": "rng",
        "simulated": False,
        "model": None,
    }
    return bs.sequences, bs.n_bits, device, bs.source


def _collected(
    directory: Path, sequences: int, bits: int, profile: str | None, seed: int | None
) -> tuple[Any, int, dict[str, Any], dict[str, Any]]:
    """``(sequences array, n_bits, device, source)`` collected over the simulated bus from
    the batch shuffler's raw output into ``directory`` (the source names the collection's
    record, its bus time included)."""
    from feltlab.rig.certify.profile import load_profile  # start-up: when the command runs
    from feltlab.rig.certify.rawout import RAW_FILE, bus_rates, collect_simulated  # start-up
    from feltlab.rig.rng.sources import read_bitstream  # start-up: when the command runs

    declared = load_profile(profile, "batch").device if profile else {"fd": True}
    bitrate, data_bitrate = bus_rates(declared)
    words = -(-sequences * bits // 32)
    record = collect_simulated(
        directory, words, seed=seed or 0, bitrate=bitrate, data_bitrate=data_bitrate
    )
    bs = read_bitstream(directory / RAW_FILE, "bytes", sequences=sequences, bits=bits)
    device = {
        "name": f"simulated batch shuffler, raw output over the bus (seed {seed})",
        "kind": "rng",
        "simulated": True,
        "model": record["generator"],
    }
    return bs.sequences, bs.n_bits, device, dict(bs.source, collection=record)


def _dieharder_section(tests: str | None, psamples: int, path: Path | None) -> dict[str, Any]:
    """The record's ``dieharder`` section: ``tests`` (comma-separated -d numbers) run on the
    raw file ``path`` (module :mod:`feltlab.rig.certify.dieharder`); empty without
    ``tests``.  Raises RigError without dieharder or a file (``--generator``), ValueError for
    a malformed list."""
    if not tests:
        return {}
    from feltlab.rig.certify.dieharder import DieharderError, find_dieharder, run_file  # start-up

    try:
        numbers = [int(t) for t in tests.split(",") if t.strip()]
    except ValueError:
        raise ValueError(
            f"--dieharder {tests!r}: give dieharder's -d numbers, e.g. 0,100"
        ) from None
    if path is None:
        raise DieharderError(
            "--dieharder reads a raw file: give a FILE or --device, not --generator"
        )
    if find_dieharder() is None:
        raise DieharderError("--dieharder: dieharder is not installed (apt-get install dieharder)")
    results = run_file(path, numbers, psamples=psamples)
    return {"dieharder": {"psamples": psamples, "tests": [r.to_record() for r in results]}}


def _check_sources(
    file: str | None,
    generator: str | None,
    device: str | None,
    sequences: int | None,
    bits: int | None,
    standard: str | None,
    alpha: float | None,
    seed: int | None,
) -> None:
    """The options that contradict each other, refused in one line (click's exit 2)."""
    if sum(x is not None for x in (file, generator, device)) != 1:
        raise click.UsageError(
            "give a FILE of raw output or --generator NAME or --device KIND (one of them)"
        )
    if device is not None and (sequences is None or bits is None):
        raise click.UsageError("--device collects --sequences x --bits bits: give both")
    if standard is not None and alpha is not None:
        raise click.UsageError("give --standard (which sets alpha) or --alpha, not both")
    if file is not None and seed is not None:
        raise click.UsageError("--seed is for --generator; a file's bits are what they are")


@click.command("rng")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["bytes", "u32le", "u32be", "u64le", "u64be", "text"]),
    default="bytes",
    show_default=True,
    help=FORMAT_HELP,
)
@click.option(
    "--range",
    "value_range",
    metavar="LO:HI",
    default=None,
    help="--format text: the integers' range, a power of two of values "
    "(e.g. 0:4294967295); its bits are tested. Refused if not a power of two.",
)
@click.option(
    "--sequences",
    type=click.IntRange(1, 10**7),
    default=None,
    help="Sequences m (default: as many as the file holds; 100 for --generator).",
)
@click.option(
    "--bits",
    type=click.IntRange(1, 10**9),
    default=None,
    help="Bits n a sequence (default 1,000,000, SP 800-22's; or the whole file if it holds fewer).",
)
@click.option(
    "--alpha",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Each p-value's level and the certificate's family-wise "
    "level (default 0.01, SP 800-22's and 99%).",
)
@click.option(
    "--standard",
    default=None,
    help="25cfr547 (99%), pa810a (95%), comar (95%) or "
    "gli (99%): sets alpha and the tests required (docs/rng.md, Standards).",
)
@click.option(
    "--generator",
    default=None,
    help="Test a generator of the library instead of a "
    "FILE (docs/rng.md): chacha20, glibc-rand-low, java-random, xorshift128+-low, "
    "stuck-bit:bit=N, modulo:r=R, reused-key:every=K, ...",
)
@click.option(
    "--device",
    type=click.Choice(["batch"]),
    default=None,
    help="Collect the raw output over the bus instead of a FILE: the simulated batch "
    "shuffler's own ChaCha20 words (READ_RAW, protocol 2.2), in simulated time, into --out "
    "(capture.blf, raw.bin, raw.json: the bus time); needs --sequences and --bits "
    "(docs/rng.md, Raw output over the bus).",
)
@click.option(
    "--profile",
    "device_profile",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="--device: a profile whose [device] declares the bus: bitrate, fd = true and "
    "data_bitrate (default CAN FD 500 kbit/s / 2 Mbit/s; fd = false: classic CAN).",
)
@click.option(
    "--dieharder",
    "dieharder_tests",
    default=None,
    metavar="N,N,...",
    help="Also run these dieharder tests (its -d numbers, e.g. 0,100,101) on the raw file, "
    "where dieharder is installed: each test's bytes worked out first, one that would "
    "rewind the file INVALID; results in the record's dieharder section, beside the "
    "SP 800-22 verdict (docs/rng.md, dieharder).",
)
@click.option(
    "--dieharder-psamples",
    type=click.IntRange(1, 10_000),
    default=100,
    show_default=True,
    help="--dieharder: p-samples a test (its -p).",
)
@seed_option(None, f"--generator's seed, 0..{U64_MAX} (default: fresh, recorded).")
@out_option("The certificate's directory (new or empty; default feltlab-campaigns/rng-...).")
@json_option("the verdict and record")
def rng_command(
    file: str | None,
    fmt: str,
    value_range: str | None,
    sequences: int | None,
    bits: int | None,
    alpha: float | None,
    standard: str | None,
    generator: str | None,
    device: str | None,
    device_profile: str | None,
    dieharder_tests: str | None,
    dieharder_psamples: int,
    seed: int | None,
    out: str | None,
    as_json: bool,
) -> None:
    """Certify a generator's raw output with NIST SP 800-22: m sequences of n bits from FILE
    (or --generator), the two second-level verdicts, record, report, JUnit and manifest
    (exit 0 pass, 1 fail, 2 error, 3 inconclusive: a required test without enough data)."""
    from feltlab.rig.certify.record import new_out_dir  # start-up: when the command runs
    from feltlab.rig.certify.rng_certificate import certify_sequences  # start-up
    from feltlab.rig.cli.campaign_dir import new_campaign_dir  # start-up: when the command runs
    from feltlab.rig.cli.render.terminal import (  # start-up: when the command runs
        RichProgress,
        print_result,
    )

    _check_sources(file, generator, device, sequences, bits, standard, alpha, seed)
    seed = secrets.randbits(64) if seed is None and file is None else seed
    directory: Path | None = None
    made = False
    try:
        if standard is not None:
            from feltlab.rig.certify.standards import get_standard  # start-up

            get_standard(standard, "rng")  # an unknown standard stops before any work
        if out is not None:  # a --out that is not new or empty stops before any reading
            directory = Path(out)
            new_out_dir(directory, "choose a new --out directory")
        if out is None and device is not None:
            directory = new_campaign_dir("rng")
            made = True
        if device is not None:
            assert directory is not None and sequences is not None and bits is not None
            data, n, tested, source = _collected(directory, sequences, bits, device_profile, seed)
        else:
            data, n, tested, source = _bitstream(
                file, fmt, value_range, sequences, bits, generator, seed or 0
            )
        if out is None and directory is None:
            directory = new_campaign_dir("rng")
            made = True
        raw_path = Path(file) if file is not None else None
        if device is not None and directory is not None:
            raw_path = directory / "raw.bin"
        with RichProgress() as bar:
            bar.start(f"SP 800-22 on {data.shape[0]:,} x {n:,} bits", data.shape[0])
            done = [0]

            def tick(k: int, m: int) -> None:
                bar.advance(k - done[0])
                done[0] = k

            result = certify_sequences(
                data,
                n,
                tested,
                source,
                alpha=alpha,
                standard=standard,
                seed=seed,
                out=directory,
                progress=tick,
                capture="capture.blf" if device is not None else None,
                extra=_dieharder_section(
                    dieharder_tests,
                    dieharder_psamples,
                    raw_path,
                ),
            )
    except (FeltlabError, ValueError) as exc:
        if made and directory is not None:
            with contextlib.suppress(OSError):
                directory.rmdir()
        click.echo(f"error: {str(exc).splitlines()[0]}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(
            f"error: cannot write {exc.filename or directory}: {exc.strerror or exc}; "
            "give a writable --out",
            err=True,
        )
        sys.exit(2)
    print_result(result, as_json=as_json)
    sys.exit(result.exit_code)
