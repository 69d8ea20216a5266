"""``feltlab trial``: a field trial's (or a floor's daily) hold against a wager's exact PAR
sheet: bands, the periods outside them, the agreement test and what the trial could detect
(docs/trial.md)."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import click

from feltlab.cli.options import FiniteRange, OutputFolder, Refused, seed_option
from feltlab.cli.rule_options import rule_options
from feltlab.errors import FeltlabError
from feltlab.math.trial_data import (
    DROP_TO_HANDLE,
    TrialDataError,
    by_table,
    periods,
    read_trial,
    write_trial,
)
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS

if TYPE_CHECKING:
    from feltlab.math.field_trial import TrialAnalysis
    from feltlab.math.parsheet import ParSheet
    from feltlab.math.trial_data import TrialRow
    from feltlab.rules import Rules

EXIT_DISAGREES = 1
"""The exit status of a trial whose hold disagrees with the certified house edge (p < 0.05),
a verdict as certify's FAIL; 0 agrees, 2 a refusal of the input."""


def wager_sheet(
    wager: str, paytable: str | None, decks: int | None, rules: Rules, rules_name: str
) -> ParSheet:
    """The exact PAR sheet the trial is judged against: a card-decided wager's by
    enumeration at ``decks`` (default: the rules' deck count), a play-decided wager's exact
    sheet under ``rules`` (with ``decks``).  Raises :class:`Refused` for an unknown wager or
    paytable, a deck count outside the wager's range, or a wager with no exact sheet."""
    from feltlab.math import parsheet, play_decided  # start-up: when the command runs
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager  # start-up

    types = collect_wagers(get_plugin_manager())
    if wager not in types:
        raise Refused(f"no wager {wager!r}; give --wager one of {', '.join(types.names())}")
    cls = types[wager]
    try:
        instance = cls(paytable=paytable)
    except FeltlabError as exc:
        raise Refused(f"--paytable: {exc}") from None
    count = decks if decks is not None else rules.decks
    if cls.decided_by_panel:
        raise Refused(
            f"{cls.title} is paid in part by a jackpot panel: its hold depends on the panel's "
            "prizes, not on a fixed paytable; give a fixed-odds side wager"
        )
    if not (instance.card_roles or instance.round_fields):
        raise Refused(
            f"{cls.title} has no fixed-odds PAR sheet (its return depends on the players' "
            "decisions); give a side wager"
        )
    if not cls.min_decks <= count <= cls.max_decks:
        raise Refused(
            f"{cls.title} is dealt from {cls.min_decks} to {cls.max_decks} decks; give --decks "
            "in that range"
        )
    try:
        if instance.card_roles and not instance.round_fields:
            return parsheet.par_sheet(instance, count)
        reason = play_decided.exact_reason(instance)
        if reason is not None:
            raise Refused(f"{cls.title} has no exact PAR sheet ({reason}); a trial needs one")
        r = rules.replace(decks=count, cut_card_from_back=min(rules.cut_card_from_back, 26 * count))
        instance.check_rules(r)
        return play_decided.exact_par_sheet(instance, r, rules_name=rules_name)
    except FeltlabError as exc:
        raise Refused(str(exc)) from None


def _simulated(
    sheet: ParSheet, bets: int, offset: float, days: int, tables: int, seed: int
) -> list[TrialRow]:
    from feltlab.math.trial_simulation import simulate_trial  # start-up: when the command runs

    try:
        return simulate_trial(
            sheet,
            bets,
            days=days,
            tables=tables,
            edge_offset=Fraction(str(offset)),
            seed=seed,
        )
    except FeltlabError as exc:
        raise Refused(f"--edge-offset: {exc}") from None


def write_reports(analysis: TrialAnalysis, out: Path, rows: list[TrialRow] | None) -> list[Path]:
    """Write ``report.json``, ``report.md``, ``report.html`` and ``hold.png`` (and the
    simulated ``trial.csv``) into ``out``, then ``manifest.json`` with each file's SHA-256;
    returns the files written."""
    from feltlab.cli.render.trial import plot_hold, render_html, render_markdown  # start-up
    from feltlab.strictjson import dumps  # start-up: when the command runs

    files = []
    if rows is not None:
        write_trial(rows, out / "trial.csv")
        files.append(out / "trial.csv")
    plot_hold(analysis, out / "hold.png")
    (out / "report.json").write_text(dumps(analysis.to_dict()) + "\n", encoding="utf-8")
    (out / "report.md").write_text(render_markdown(analysis, "hold.png"), encoding="utf-8")
    (out / "report.html").write_text(render_html(analysis, "hold.png"), encoding="utf-8")
    files += [out / n for n in ("hold.png", "report.json", "report.md", "report.html")]
    manifest = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return [*files, out / "manifest.json"]


@click.command("trial")
@click.argument("data", required=False, type=click.Path(dir_okay=False))
@click.option("--wager", required=True, help="The wager the trial bet on (e.g. perfect_pairs).")
@click.option("--paytable", default=None, help="Its paytable; default: the wager's first.")
@rule_options(decks=False)
@click.option(
    "--decks",
    type=click.IntRange(ANY_MIN_DECKS, MAX_DECKS),
    default=None,
    help="The deck count the trial dealt; default: the rules' (6 under nz).",
)
@click.option(
    "--drop-to-handle",
    type=FiniteRange(*DROP_TO_HANDLE),
    default=None,
    metavar="R",
    help="For a file giving drop instead of handle: the declared ratio drop / handle "
    f"(handle = drop / R), {DROP_TO_HANDLE[0]:g} to {DROP_TO_HANDLE[1]:g}.",
)
@click.option(
    "--period",
    type=click.Choice(["day", "week", "month"]),
    default="day",
    show_default=True,
    help="The period each band is drawn for: a date, an ISO week or a calendar month.",
)
@click.option(
    "--detect",
    type=FiniteRange(0, 1, min_open=True),
    default=None,
    metavar="DELTA",
    help="A house-edge error to confirm (a fraction: 0.01 is one point): the bets it needs at "
    "80% power, two-sided 95%, and this trial's power against it.",
)
@click.option(
    "--out",
    type=OutputFolder(),
    default=None,
    help="Write report.html, report.md, report.json, hold.png and manifest.json here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--simulate",
    type=click.IntRange(1, 10**10),
    default=None,
    metavar="BETS",
    help="No DATA: simulate a trial of BETS bets from the wager's exact outcome distribution "
    "(written to --out as trial.csv).",
)
@click.option(
    "--edge-offset",
    type=FiniteRange(-1, 1),
    default=0.0,
    show_default=True,
    help="--simulate: the true house edge less the certified one (0.03: three points higher).",
)
@click.option("--days", type=click.IntRange(1, 3660), default=90, show_default=True,
              help="--simulate: the trial's days (at most ten years).")  # fmt: skip
@click.option("--tables", type=click.IntRange(1, 100), default=2, show_default=True,
              help="--simulate: its tables.")  # fmt: skip
@seed_option(1, "--simulate: the seed, 0..2**64-1.")
def trial(
    data: str | None,
    wager: str,
    paytable: str | None,
    rules: Rules,
    rules_name: str,
    decks: int | None,
    drop_to_handle: float | None,
    period: str,
    detect: float | None,
    out: Path | None,
    as_json: bool,
    simulate: int | None,
    edge_offset: float,
    days: int,
    tables: int,
    seed: int,
) -> None:
    """A field trial (or a floor's daily data) against the wager's exact PAR sheet: the
    cumulative and per-period hold with 95% bands, the periods outside them (COMAR
    36.05.03.25), the p-value that the trial agrees with the certified house edge, and what it
    could detect at 80% power.  DATA is a CSV of date, table, handle (or drop with
    --drop-to-handle), win, bets.  Exit 0 agrees, 1 disagrees, 2 refused (docs/trial.md)."""
    from feltlab.math.field_trial import analyze  # start-up: when the command runs

    if (data is None) == (simulate is None):
        raise Refused("give the trial's CSV file, or --simulate BETS (not both)")
    ctx = click.get_current_context()
    for name in ("edge_offset", "days", "tables", "seed") if simulate is None else ():
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
            flag = "--" + name.replace("_", "-")
            raise Refused(f"{flag} applies to --simulate only; drop it for a trial's data")
    if drop_to_handle is not None and simulate is not None:
        raise Refused("--drop-to-handle applies to a file of drop; drop it with --simulate")
    sheet = wager_sheet(wager, paytable, decks, rules, rules_name)
    pays = [float(line.pays) for line in sheet.lines if line.pays is not None]
    simulated: list[TrialRow] | None = None
    if simulate is not None:
        simulated = trial_rows = _simulated(sheet, simulate, edge_offset, days, tables, seed)
    else:
        assert data is not None
        try:
            trial_rows = read_trial(data, drop_to_handle=drop_to_handle, max_pays=max(pays))
        except TrialDataError as exc:
            raise Refused(str(exc)) from None
    try:
        analysis = analyze(
            sheet, periods(trial_rows, period), tables=by_table(trial_rows), detect=detect
        )
    except (FeltlabError, ValueError) as exc:
        raise Refused(str(exc)) from None
    written: list[Path] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        written = write_reports(analysis, out, simulated)
    if as_json:
        from feltlab.strictjson import dumps  # start-up: when the command runs

        click.echo(dumps(analysis.to_dict()))
    else:
        from feltlab.cli.render.trial import summary_lines  # start-up: when the command runs

        click.echo("\n".join(summary_lines(analysis)))
    if written:
        click.echo(f"wrote {out}/: {', '.join(p.name for p in written)}", err=True)
    if not analysis.agrees:
        ctx.exit(EXIT_DISAGREES)
