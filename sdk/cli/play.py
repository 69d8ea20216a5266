"""``feltlab play``: rounds by basic strategy with side bets on every box, as a round log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from feltlab import native
from feltlab.cli.options import OutputFile, seed_option
from feltlab.cli.rule_options import rule_options
from feltlab.engine import Table as FeltTable
from feltlab.engine import play_round
from feltlab.errors import PluginError, RulesError
from feltlab.jackpot import FakeJackpotPanel
from feltlab.money import money
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.shoe import make_source
from feltlab.wagers import Placed

PLAY_SIDE_BETS = ("perfect_pairs", "super_sevens", "madness21")
"""The side wagers ``feltlab play`` bets by default."""


def _play_side_bets(choice: str | None, registry: Any, offered: set[str], decks: int) -> list[str]:
    """The side wagers of a ``play --side-bets`` choice (None: :data:`PLAY_SIDE_BETS`).
    Raises click.BadParameter naming an unknown wager, the main wager, one placed after the
    deal (insurance) or one these decks do not allow."""
    if choice is None:
        return list(PLAY_SIDE_BETS)
    if choice.strip() == "none":
        return []
    names = [n.strip() for n in choice.split(",") if n.strip()]
    if not names:
        raise click.BadParameter(
            "give wager names separated by commas, or none", param_hint="--side-bets"
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise click.BadParameter(
            f"{', '.join(twice)} named more than once; name each side wager once",
            param_hint="--side-bets",
        )
    for name in names:
        if name not in registry.names() or name == "main":
            known = ", ".join(n for n in registry.names() if n != "main")
            raise click.BadParameter(
                f"no installed side wager {name!r}; choose from {known}, or none",
                param_hint="--side-bets",
            )
        if registry.create(name).placed is not Placed.BEFORE_DEAL:
            raise click.BadParameter(
                f"{name} is placed after the deal, not with the main wager: leave it out",
                param_hint="--side-bets",
            )
        if name not in offered:
            raise click.BadParameter(
                f"{name} is not offered with {decks} deck{'' if decks == 1 else 's'} "
                "(its deck range); choose another "
                "wager or --decks",
                param_hint="--side-bets",
            )
    return names


@click.command()
@rule_options()
@click.option("--rounds", type=click.IntRange(1, 100_000), default=20, show_default=True)
@seed_option(1, "Seed of the ChaCha20 shoe and the fake jackpot panel, 0..2**64-1.")
@click.option("--boxes", type=click.IntRange(1, 7), default=3, show_default=True)
@click.option(
    "--events",
    "events_path",
    type=OutputFile(),
    default=None,
    help="Also write the JSON-lines event log to this file.",
)
@click.option(
    "--side-bets",
    "side_bets",
    default=None,
    metavar="NAME,...|none",
    help="The side wagers every box bets $5 on: comma-separated names, or none. Default: "
    "perfect_pairs, super_sevens (6-8 decks) and madness21.",
)
def play(
    rules: Rules,
    rules_name: str,
    rounds: int,
    seed: int,
    boxes: int,
    events_path: Path | None,
    side_bets: str | None,
) -> None:
    """Play rounds by basic strategy with side bets on every box and print the round log.

    The shoe is shuffled by ChaCha20 keyed by --seed, the Madness 21 panel is a seeded fake:
    the same seed prints the same log.  Every box bets $10 main and $5 on each side wager of
    --side-bets (default: Perfect Pairs, Super Sevens (6-8 decks only) and Madness 21).
    """
    from feltlab.cli.render.playlog import describe_event  # start-up: when the command runs
    from feltlab.math.strategy import BasicStrategy  # start-up: when the command runs

    pm = get_plugin_manager()
    registry = collect_wagers(pm)
    offered = [n for n in registry.names()]
    wagers = []
    for name in offered:
        w = registry.create(name)
        if w.min_decks <= rules.decks <= w.max_decks:
            wagers.append(w)
    names = {w.name for w in wagers}
    sides = _play_side_bets(side_bets, registry, names, rules.decks)
    try:
        table = FeltTable(
            rules,
            make_source(rules, native.ChaCha20(seed)),
            wagers,
            boxes=boxes,
            panel=FakeJackpotPanel(seed=seed),
            hook=pm.hook,
        )
    except RulesError as exc:
        raise click.UsageError(str(exc)) from None
    lines: list[str] = []
    table.log.subscribe(lambda e: lines.extend(describe_event(e)))
    policy = BasicStrategy(rules)
    click.echo(f"feltlab play: rules {rules_name}, {rounds} rounds, seed {seed}, {boxes} boxes")
    for _ in range(rounds):
        bets = []
        for b in range(boxes):
            player = f"P{b + 1}"
            bets.append((b, player, "main", 1000))
            for side in sides:
                if side in names and side not in table.withdrawn:
                    bets.append((b, player, side, 500))
        try:
            play_round(table, bets, policy)
        except PluginError as exc:  # a wager plugin broke the contract: say which, no traceback
            raise click.ClickException(str(exc)) from None
        for line in lines:
            click.echo(line)
        lines.clear()
    totals: dict[str, int] = {}
    for e in table.log:
        if e.kind == "wager_settled":
            p = str(e.data["player"])
            totals[p] = totals.get(p, 0) + int(e.data["net"])
    summary = ", ".join(f"{p} {money(v, signed=True)}" for p, v in sorted(totals.items()))
    click.echo(f"net after {rounds} rounds: {summary}")
    if events_path:
        with open(events_path, "w", encoding="utf-8") as fh:
            fh.write(table.log.to_jsonl())
