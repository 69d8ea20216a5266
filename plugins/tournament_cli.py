"""``feltlab tournament run``: a whole Division XI tournament of bots from a definition file
(the command the plugin :mod:`feltlab.plugins.tournament` adds, imported when it runs)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import click

from feltlab.cli.options import OutputFile, Refused, seed_option
from feltlab.errors import FeltlabError
from feltlab.money import money
from feltlab.plugin_manager import get_plugin_manager
from feltlab.tournament import (
    TournamentDefinition,
    TournamentResult,
    collect_strategies,
    load_field,
    run_tournament,
)

MAX_DEFINITION_BYTES = 1 << 20
"""The largest tournament definition read (bytes)."""


@click.group("tournament")
def tournament() -> None:
    """Tournament Blackjack (Division XI): run a tournament of bots from a definition file."""


@tournament.command("run")
@click.argument("definition", type=click.Path(dir_okay=False, path_type=Path))
@seed_option(1, "Tournament seed, 0..2**64-1: the same seed gives the same tournament.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (--format json).")
@click.option(
    "--events",
    "events_path",
    type=OutputFile(),
    default=None,
    help="Write the whole event log (every decision and card) as JSON lines to this file.",
)
def run_command(
    definition: Path, seed: int, fmt: str, events_path: Path | None, as_json: bool = False
) -> None:
    """Run the tournament DEFINITION (TOML) with its [field] of bots and print each session's
    standings, the play-offs and the prize list.  The same --seed gives the same tournament."""
    try:
        if definition.exists() and not definition.is_file():
            raise Refused(
                f"cannot read {definition}: it is not a regular file; give a definition TOML file"
            )
        with definition.open("rb") as fh:  # bounded: /dev/zero or a huge file is refused
            raw = fh.read(MAX_DEFINITION_BYTES + 1)
        if len(raw) > MAX_DEFINITION_BYTES:
            raise Refused(
                f"cannot read {definition}: it is larger than {MAX_DEFINITION_BYTES} bytes; "
                "give a definition TOML file"
            )
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise Refused(f"cannot read {definition}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise Refused(
            f"{definition} is not UTF-8 text (byte {exc.start}): save it as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise Refused(f"{definition} is not valid TOML: {exc}") from None
    try:
        d = TournamentDefinition.from_dict(data)
        registry = collect_strategies(get_plugin_manager())
        field = load_field(data, registry)
        result = run_tournament(d, field, seed=seed, strategies=registry)
    except FeltlabError as exc:
        raise Refused(f"{definition}: {exc}") from None
    if events_path is not None:
        try:
            events_path.write_text(result.log.to_jsonl(), encoding="utf-8")
        except OSError as exc:
            raise Refused(
                f"cannot write the events to {events_path}: {exc.strerror or exc}; give a "
                "writable --events file"
            ) from None
    if fmt == "json" or as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        for line in format_result(result):
            click.echo(line)


def format_result(result: TournamentResult) -> list[str]:
    """The tournament as lines of text: entry, each table's standings and play-offs, prizes."""
    d = result.definition
    e = result.entry
    refused = result.log.of("application_refused")
    out = [
        f"{d.name} (seed {result.seed}): {len(e.entrants)} applicants, "
        f"{len(e.players) if not result.cancelled else 0} players",
    ]
    if refused:
        out.append(
            f"{len(refused)} application(s) refused (rule 3.2(e)): "
            f"{refused[0].data.get('reason', '')}"
        )
    if e.refunds:
        out.append(
            "refunds: "
            + ", ".join(f"{n} {money(c, grouping=True)}" for n, c in sorted(e.refunds.items()))
        )
    if result.cancelled:
        out.append("CANCELLED for lack of participation (rule 3.3(d)); every fee refunded (3.5(b))")
        return out
    pool, fees = money(e.prize_pool, grouping=True), money(e.fees_kept, grouping=True)
    added = money(d.additions_value, grouping=True)
    out.append(f"prize pool {pool} = fees {fees} + operator additions {added} (rule 3.4)")
    for t in result.tables:
        s = t.session
        out.append("")
        out.append(
            f"{t.stage} - table {t.table}: {len(t.seats)} players, {s.length.describe()}; "
            f"ended by {s.reason.value} after {len(s.rounds)} rounds"
        )
        out.append(f"  {'pos':>4} {'player':<10} {'box':>3} {'chips':>7}  status")
        pos = 1
        for g in t.standing.groups:
            for p in g:
                status = []
                if p in s.eliminated:
                    status.append(f"eliminated round {s.eliminated[p]} (4.9)")
                if p in t.advanced:
                    status.append("advances (6.4)")
                tie = "=" if len(g) > 1 else " "
                out.append(
                    f"  {pos:>3}{tie} {p:<10} {t.seats[p] + 1:>3} {s.chips[p]:>7}  "
                    + ", ".join(status)
                )
            pos += len(g)
        for p, why in t.standing.disqualified.items():
            out.append(f"     - {p:<10} {t.seats[p] + 1:>3} {'-':>7}  disqualified: {why}")
        for pr in t.playoffs:
            r = pr.result
            chips = ", ".join(f"{p} {r.chips.get(p, '-')}" for p in pr.players)
            out.append(
                f"  play-off {pr.label}: {', '.join(pr.players)} -> {chips} "
                f"({r.reason.value}, {len(r.rounds)} rounds)"
            )
    out.append("")
    out.append("prize list (rules 6.5-6.8)")
    for a in result.awards:
        shared = (
            f"  shares places {', '.join(map(str, a.places))} with {', '.join(a.shared_with)}"
            if a.shared_with
            else ""
        )
        amount = money(a.amount, grouping=True)
        out.append(f"  {a.place:>3}. {a.player:<10} {amount:>12}{shared}")
    paid = money(result.paid_out, grouping=True)
    out.append(f"  paid out {paid} of the pool {money(e.prize_pool, grouping=True)}")
    return out
