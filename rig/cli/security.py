"""``feltlab certify security``: the security conformance pack (docs/security.md) against a
simulated device (the hardened reference device by default, or a flawed one) or a device on
``--bus`` described by a security profile; writes record.json, report.html, junit.xml and the
bus's capture.blf (every frame, the lab's own included)."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import click

from feltlab.cli.options import out_option
from feltlab.errors import FeltlabError
from feltlab.rig.cli.options import bus_option

EXIT = {"PASS": 0, "FAIL": 1, "INCOMPLETE": 3}


@click.command("security")
@click.option(
    "--device",
    "device",
    default="hardened",
    show_default=True,
    help="The simulated device: hardened, unsigned-update, rollback, any-device, shared-key, "
    "truncated-mac, unauthenticated, replayable, leaking, debug-port, timer-seeded, mt19937.",
)
@bus_option(default_help="Certify the device on this bus instead (needs --profile).")
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="The [security] table of a device on --bus: device_id, key or key_file, packages "
    "(and its [predictability] table: the generator and seeding it declares).",
)
@click.option(
    "--shuffles",
    type=click.IntRange(10, 100_000),
    default=300,
    show_default=True,
    help="Shuffles observed by the leakage checks.",
)
@click.option(
    "--standard",
    type=click.Choice(["comar"]),
    default=None,
    help="Map each finding to a regulation's requirement (comar: COMAR 36.05.02.17).",
)
@out_option("Write record.json, report.html, junit.xml and capture.blf into DIR.")
def security_command(
    device: str,
    bus: str | None,
    profile: str | None,
    shuffles: int,
    standard: str | None,
    out: str | None,
) -> None:
    """Run the security pack (firmware update, keys, command authentication, undeclared
    services, a predictable seed, deck-order leakage) against a device: exit 0 pass, 1 fail,
    2 error, 3 a check not run."""
    from feltlab.rig.security.pack import run_pack  # start-up: when the command runs
    from feltlab.rig.security.report import record_of, write_security_report  # start-up
    from feltlab.rig.security.targets import (  # start-up: when the command runs
        flaws_of,
        seeding_of,
        simulated_target,
        target_from_profile,
    )

    if bus is not None and profile is None:
        raise click.UsageError("--bus needs --profile (the device's [security] table)")
    if profile is not None and bus is None:
        raise click.UsageError("--profile describes a device on --bus: give --bus too")
    logging.getLogger("isotp").setLevel(logging.ERROR)  # a shared LOAD id's idle stack
    capture = None
    if out is not None:  # a new or empty folder: a finished campaign's files were overwritten
        from feltlab.rig.certify.record import new_out_dir  # start-up: when the command runs

        try:
            new_out_dir(Path(out), "choose a new --out directory")
        except FeltlabError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        capture = Path(out) / "capture.blf"
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        if bus is not None:
            assert profile is not None
            target = target_from_profile(profile, str(bus))
            result = run_pack(target, shuffles=shuffles, capture=capture)
        else:
            with simulated_target(flaws_of(device), seeding=seeding_of(device)) as target:
                result = run_pack(target, shuffles=shuffles, capture=capture)
    except FeltlabError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    seconds = time.perf_counter() - t0
    record = record_of(result, standard=standard, seconds=seconds)
    record["seconds"]["cpu"] = time.process_time() - cpu0
    for f in record["findings"]:
        click.echo(f"{f['verdict']:8} {f['check']:24} {f['cwe']}")
    click.echo(f"{record['verdict']}: {record['target']} ({seconds:.1f} s)")
    if out is not None:
        for p in write_security_report(Path(out), record):
            click.echo(f"wrote {p}")
    sys.exit(EXIT[record["verdict"]])
