"""``feltlab submit``: a wager's math certificate, confirmed by simulation, as the documents a
vendor files (docs/submission.md).  The figures come from :mod:`feltlab.submission`."""

from __future__ import annotations

import time
from pathlib import Path

import click

from feltlab.cli.options import OutputFolder, Refused, os_error_refused, rounds_option, seed_option
from feltlab.errors import FeltlabError, SchedulerError
from feltlab.host import usable_cores
from feltlab.submission.jurisdictions import jurisdiction as form_of


class Stopped(click.ClickException):
    """The submission is stopped by a verdict: a cell whose simulation disagrees with its
    exact figure (exit 1, a verdict's code; refusals of the input are 2)."""

    exit_code = 1


def _default_workers() -> int:
    return usable_cores()


@click.command("submit")
@click.argument("wager")
@click.option(
    "--out",
    "out_dir",
    type=OutputFolder(),
    required=True,
    help="A new or empty folder for the documents.",
)
@click.option(
    "--jurisdiction",
    type=click.Choice(["nv", "md", "pa", "nz"]),
    default=None,
    help="The regulator's form: what its rule asks comes first (nv Reg. 14.230, md COMAR "
    "36.05.03.20, pa 58 Pa. Code, nz the Gazette rules); nz deals 4 to 8 decks (rule 3.3(a)).",
)
@click.option(
    "--paytable",
    "paytables",
    multiple=True,
    help="A paytable to certify (repeatable); default: every paytable the wager declares.",
)
@rounds_option(
    10_000_000,
    "Rounds of each confirming simulation (issue 43 asks 10^9: about 200 s a "
    "simulation a core here; docs/submission.md).",
)
@click.option(
    "--protect-rounds",
    type=click.IntRange(1, 10**12),
    default=2_000_000,
    show_default=True,
    help="Rounds a count of each cell's game protection report.",
)
@click.option(
    "--count",
    "counts",
    multiple=True,
    metavar="NAME",
    help="Counts of the countability summary (as feltlab protect --count; repeatable). "
    "Default: hilo; eor, the wager's own, costs about a minute a deck count and paytable "
    "for a four-card wager.",
)
@seed_option(1, "Seed of every simulation of the submission, 0..2**64-1.")
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="Threads of the confirming simulations (default: the usable cores); the figures "
    "do not depend on it.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Run the confirming simulations on Dask: a scheduler address (tcp://host:8786), "
    "or 'local' for a LocalCluster of --workers processes.",
)
def submit_cmd(
    wager: str,
    out_dir: Path,
    jurisdiction: str | None,
    paytables: tuple[str, ...],
    rounds: int,
    protect_rounds: int,
    counts: tuple[str, ...],
    seed: int,
    workers: int | None,
    scheduler: str | None,
) -> None:
    """Write WAGER's math certificate, confirmed by simulation, as the documents a vendor
    files.

    For every paytable it declares (or --paytable), at 1, 2, 4, 6 and 8 decks, a shoe and a
    continuous shuffler, S17 and H17 where play decides it (the grid the rules and the wager
    allow, each restriction stated): each cell's exact house edge, outcomes, true and payout
    odds, hit frequency, standard deviation, element of risk and countability, each exact
    cell confirmed by a simulation within 3 standard errors (a disagreement stops the
    submission, naming the cell); as certificate.html (print-ready, a page a paytable),
    certificate.md, certificate.json and manifest.json (SHA-256 of each, versions, commit,
    seeds).  The same command writes the same bytes."""
    from feltlab.cli.render.submission import render_documents  # start-up
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager  # start-up
    from feltlab.submission.certificate import DEFAULT_COUNTS, build_certificate  # start-up
    from feltlab.submission.confirmation import Disagreement  # start-up: when the command runs
    from feltlab.submission.documents import FILES, certificate_dict, write_documents  # start-up

    t0 = time.perf_counter()
    types = collect_wagers(get_plugin_manager())
    if wager not in types:
        raise click.BadParameter(
            f"no wager {wager!r}; installed: {', '.join(types.names())}", param_hint="WAGER"
        )
    if any(not p.strip() for p in paytables):
        raise click.BadParameter(
            "a paytable name is empty: name one the wager declares, or omit --paytable",
            param_hint="--paytable",
        )

    def say(msg: str) -> None:
        click.echo(msg, err=True)

    try:
        cert = build_certificate(
            types[wager],
            form_of(jurisdiction),
            paytables,
            rounds=rounds,
            seed=seed,
            protect_rounds=protect_rounds,
            counts=counts or DEFAULT_COUNTS,
            workers=workers or _default_workers(),
            scheduler=scheduler,
            progress=say,
        )
    except Disagreement as exc:
        raise Stopped(str(exc)) from None
    except SchedulerError as exc:  # before FeltlabError: it names the option
        raise click.BadParameter(str(exc), param_hint="--scheduler") from None
    except (FeltlabError, RuntimeError) as exc:
        raise Refused(str(exc)) from None
    except OSError as exc:
        raise os_error_refused(exc, scheduler) from None
    data = certificate_dict(cert)
    try:
        digests = write_documents(cert, data, render_documents(data), out_dir)
    except OSError as exc:
        raise Refused(f"cannot write into {out_dir}: {exc.strerror or exc}") from None
    for r in cert.cells:
        c = r.confirmation
        z = "not confirmed (simulated sheet)" if c is None else f"z {c.z:+.2f}"
        say(
            f"  {r.cell.label}: house edge {100 * float(r.sheet.house_edge):.4f}% ({r.method}), {z}"
        )
    for name in (*FILES, "manifest.json"):
        click.echo(
            f"wrote {out_dir / name}" + (f"  sha256 {digests[name]}" if name in digests else "")
        )
    say(f"{len(cert.cells)} cells in {time.perf_counter() - t0:.1f} s")
