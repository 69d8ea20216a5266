"""``feltlab simulate``: Monte Carlo of whole rounds in the C core on the command line, and the
side wagers a ``--side-bets`` choice puts in play."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from feltlab.cli.options import Refused, make_console, os_error_refused, rounds_option, seed_option
from feltlab.cli.rule_options import rule_options
from feltlab.errors import RulesError, SchedulerError
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules


def side_bet_specs(
    choice: str | None, registry: Any, rules: Rules
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """The wagers a ``--side-bets`` choice puts in play: ``None`` every installed wager the
    simulator can settle (:func:`feltlab.simulation.run.wager_specs`), ``"none"`` the main wager
    alone, else the comma-separated names (each with its first paytable): ``(specs,
    skipped)``, skipped naming each installed wager left out and why.  Raises
    click.BadParameter naming an unknown wager or one the simulator cannot settle."""
    from feltlab.cli.render.simulation import NOT_CHOSEN  # start-up: when the command runs
    from feltlab.simulation.run import wager_specs  # start-up: when the command runs

    specs, skipped = wager_specs(registry, rules)
    if choice is None:
        return specs, skipped
    names = [] if choice.strip() == "none" else [n.strip() for n in choice.split(",") if n.strip()]
    if choice.strip() != "none" and not names:
        raise click.BadParameter(
            "give wager names separated by commas, or none", param_hint="--side-bets"
        )
    why = dict(skipped)
    settled = {name for name, _ in specs}
    for name in names:
        if name in why:
            raise click.BadParameter(
                f"{name} cannot be simulated here: {why[name]}", param_hint="--side-bets"
            )
        if name not in settled:
            known = ", ".join(sorted(settled)) or "none installed"
            raise click.BadParameter(
                f"no installed side wager {name!r}; choose from {known}, or none",
                param_hint="--side-bets",
            )
    chosen = [(n, t) for n, t in specs if n in names]
    left = [(n, NOT_CHOSEN) for n, _ in specs if n not in names]
    return chosen, skipped + left


def check_simulable(rules: Rules, fresh_shoe: bool) -> None:
    """Refuse, before any work, a cutting card too near the back for the simulator (it needs
    :data:`feltlab.core_rules.MIN_BEHIND_CUT` cards behind it so that no round runs
    out of cards), naming the --penetration that fits.  Raises click.BadParameter."""
    from feltlab.core_rules import MIN_BEHIND_CUT, cut_position, deepest_penetration  # start-up

    try:
        cut_position(rules, fresh_shoe=fresh_shoe)
    except RulesError:
        raise click.BadParameter(
            f"the cutting card {rules.cut_card_from_back} cards from the back of "
            f"{rules.decks} deck{'s' if rules.decks > 1 else ''}: the simulator needs at least "
            f"{MIN_BEHIND_CUT} behind it so that no round runs out of cards; give --penetration "
            f"{deepest_penetration(rules.cards)} or less, or --fresh-shoe",
            param_hint="--penetration",
        ) from None


@click.command()
@rule_options()
@rounds_option(
    10_000_000,
    "Rounds to simulate (one box, one player).",
)
@seed_option(1, "Seed of the simulation, 0..2**64-1.")
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="Chunks simulated at once: in threads of this process when every side bet has a "
    "lookup table, else (a wager classified in numpy, or --trace) in local processes.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Dask scheduler address (tcp://host:8786), or 'local' for a LocalCluster.",
)
@click.option(
    "--fresh-shoe",
    is_flag=True,
    help="Deal every round from a freshly shuffled shoe (no cut-card effect).",
)
@click.option(
    "--chunk",
    "chunk_rounds",
    type=click.IntRange(1, 10**9),
    default=2_000_000,
    show_default=True,
    help="Rounds per chunk (part of what the seed determines).",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Also write every round's net result (cents) and initial cards to this .npz file "
    "(per-round arrays: slower, and 6 bytes per round in memory).",
)
@click.option(
    "--side-bets",
    "side_bets",
    default=None,
    metavar="NAME,...|none",
    help="The side wagers in play beside the main wager: comma-separated names, or none for "
    "the main wager alone. Default: every installed wager the simulator can settle.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def simulate(
    rules: Rules,
    rules_name: str,
    rounds: int,
    seed: int,
    workers: int,
    scheduler: str | None,
    fresh_shoe: bool,
    chunk_rounds: int,
    trace_path: Path | None,
    side_bets: str | None,
    as_json: bool,
) -> None:
    """Simulate rounds in the C core with basic strategy: the main wager's house edge with a
    95% confidence interval, each side wager's return (tallied in C through each wager's
    lookup table; play-decided wagers from the round records), and rounds/s."""
    from feltlab.simulation import run as sim  # start-up: when the command runs

    preset = rules_name
    check_simulable(rules, fresh_shoe)
    if trace_path is not None:
        parent = trace_path.resolve().parent
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise click.BadParameter(
                f"cannot write {trace_path}: {parent} is not a writable directory; choose a "
                "writable path",
                param_hint="--trace",
            )
    types = collect_wagers(get_plugin_manager())
    specs, skipped = side_bet_specs(side_bets, types, rules)
    console = make_console(stderr=True)
    with contextlib.ExitStack() as stack:
        progress: Callable[[int], None] | None = None
        if not as_json and console.is_terminal:  # the bar is drawn only on a terminal
            # function-level: rich's progress bar loads only when it is drawn
            from feltlab.cli.render.progress import rounds_progress  # start-up

            bar = stack.enter_context(rounds_progress(console))
            task = bar.add_task(f"simulating {preset}", total=rounds)

            def progress(n: int) -> None:
                bar.update(task, completed=n)

        try:
            res = sim.simulate(
                rules,
                rounds,
                seed=seed,
                workers=workers,
                scheduler=scheduler,
                chunk_rounds=chunk_rounds,
                wagers=specs,
                fresh_shoe=fresh_shoe,
                progress=progress,
                trace=trace_path is not None,
            )
        except RuntimeError as exc:
            raise Refused(str(exc)) from None
        except SchedulerError as exc:
            raise click.BadParameter(str(exc), param_hint="--scheduler") from None
        except ValueError as exc:
            raise Refused(str(exc)) from None
        except OSError as exc:
            raise os_error_refused(exc, scheduler) from None
    from feltlab.cli.render.simulation import report_simulation  # start-up: when the command runs

    report_simulation(
        res,
        preset,
        seed,
        fresh_shoe,
        workers,
        trace_path,
        as_json,
        skipped=skipped + sorted(res.tally.skipped.items()),
        plays_out=tuple(w.name for w in res.wagers if types[w.name].dealer_plays_out),
        chunk_rounds=chunk_rounds,
    )
