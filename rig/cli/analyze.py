"""``feltlab analyze CAPTURE``: every check of a campaign re-run offline from its capture."""

from __future__ import annotations

import contextlib
import struct
import sys
from pathlib import Path

import click

from feltlab.cli.options import FiniteRange, out_option, seed_option
from feltlab.rig.cli.options import profile_option
from feltlab.rig.cli.render.terminal import RichProgress, print_result
from feltlab.rig.errors import RigError
from feltlab.seeds import U64_MAX


@click.command("analyze")
@click.argument("capture", type=click.Path(exists=True))
@profile_option("Default: the campaign's (campaign.json).")
@out_option(
    "Write the report (record.json, report.html, junit.xml, manifest.json) into this "
    "new or empty directory (default: print the verdicts only, write nothing)."
)
@click.option(
    "--alpha",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Family-wise significance level, 0 < alpha < 1. Default: the campaign's "
    "(campaign.json), else 0.01.",
)
@seed_option(
    None,
    f"Seed of a continuous campaign's null simulations, 0..{U64_MAX} (default: the "
    "campaign's; a batch campaign's power has its own fixed seed).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict and record as JSON.")
def analyze(
    capture: str,
    profile: str | None,
    out: str | None,
    alpha: float | None,
    seed: int | None,
    as_json: bool,
) -> None:
    """Re-run every check of a campaign offline from its CAPTURE (a capture-NNN.blf or the
    campaign directory).  Shoes from a file: a shoe file (.csv, .jsonl, .npy) or the folder of
    a certify shuffler --from campaign.  Exit 0 pass, 1 fail, 2 error, 3 inconclusive."""
    from feltlab.rig.certify.from_file import analyze_file, is_file_source  # start-up
    from feltlab.rig.certify.offline import analyze_path  # start-up: when the command runs
    from feltlab.rig.certify.profile import load_profile  # start-up: when the command runs
    from feltlab.rig.certify.rawout import analyze_collection, is_raw_collection  # start-up
    from feltlab.rig.certify.record import new_out_dir  # start-up: when the command runs

    made = None
    try:
        if out is not None and not Path(out).exists():
            # made (or refused: a folder that cannot be created) before any work, not after
            # the whole analysis; removed again below if the analysis fails
            new_out_dir(Path(out), "choose a new --out directory")
            made = Path(out)
        with RichProgress() as bar:
            if is_raw_collection(Path(capture)):  # certify rng --device: from its capture
                result = analyze_collection(
                    Path(capture), out=Path(out) if out else None, alpha=alpha
                )
            elif is_file_source(Path(capture)):  # shoes from a file, or its campaign folder
                result = analyze_file(
                    Path(capture),
                    load_profile(profile, "batch") if profile is not None else None,
                    out=Path(out) if out else None,
                    alpha=alpha,
                    seed=seed,
                    progress=bar,
                )
            else:
                result = analyze_path(
                    Path(capture),
                    profile,
                    out=Path(out) if out else None,
                    alpha=alpha,
                    seed=seed,
                    progress=bar,
                )
    except (RigError, ValueError) as exc:
        if made is not None:
            with contextlib.suppress(OSError):
                made.rmdir()  # only if still empty
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (OSError, EOFError, struct.error) as exc:  # an unreadable capture
        if made is not None:
            with contextlib.suppress(OSError):
                made.rmdir()  # only if still empty
        click.echo(
            f"error: cannot read {capture} as a campaign capture ({exc!r}); give a campaign "
            "folder or its .blf/.asc/.log capture",
            err=True,
        )
        sys.exit(2)
    print_result(result, written=out is not None, as_json=as_json)
    sys.exit(result.exit_code)
