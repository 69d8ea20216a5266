"""``feltlab simulate``'s output: the trace file, the batch-path notes, the JSON or the
terminal tables of a :class:`feltlab.simulation.run.SimulationResult`."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from feltlab.cli.options import make_console
from feltlab.core_rules import DEFAULT_STAKE
from feltlab.seeds import SEED_DERIVATION_VERSION
from feltlab.simulation.check import Z_WARNING, ExactCheck, exact_check
from feltlab.simulation.run import Executor, SimulationResult
from feltlab.strictjson import json_safe

NOT_CHOSEN = "not chosen (--side-bets)"
"""The reason given for an installed side wager left out of play by ``--side-bets``."""


def _json_data(
    res: SimulationResult,
    preset: str,
    seed: int,
    fresh_shoe: bool,
    workers: int,
    skipped: list[tuple[str, str]],
    plays_out: tuple[str, ...],
    check: ExactCheck | None,
) -> dict[str, Any]:
    return {
        "rules": preset,
        "rounds": res.rounds,
        "seed": seed,
        "seed_derivation": SEED_DERIVATION_VERSION,
        "simulator_version": res.simulator_version,
        "fresh_shoe": fresh_shoe,
        "house_edge": res.house_edge,
        "ci95": [res.house_edge - res.half_width, res.house_edge + res.half_width],
        "std_dev": res.std_dev,
        "rounds_per_second": res.simulation_rounds_per_second,
        "wall_rounds_per_second": res.rounds_per_second,
        "wall_seconds": res.seconds,
        "setup_seconds": res.setup_seconds,
        "workers": workers,
        "executor": res.executor,
        "ran_on": res.ran_on,
        "exact": None
        if check is None
        else {
            "house_edge": check.exact_edge,
            "difference": check.difference,
            "ci95_half_width": check.half_width,
            "z": check.z,
            "meaning": "simulator error" if check.fresh_shoe else "cut-card effect",
            "approximate": check.approximate,
            "alarming": check.alarming,
        },
        "wagers": [
            {
                "wager": w.name,
                "paytable": w.paytable,
                "rounds": w.rounds,
                "return": None if w.return_ != w.return_ else w.return_,
                "ci95_half_width": None if w.half_width != w.half_width else w.half_width,
                "hit_frequency": w.hit_frequency,
            }
            for w in res.wagers
        ],
        "skipped": [{"wager": name, "reason": reason} for name, reason in skipped],
        "batch_wagers": [
            {"wager": name, "reason": res.batch_reasons.get(name, "no lookup table")}
            for name in res.batch_wagers
        ],
        "dealer_plays_out": bool(plays_out),
        "dealer_plays_out_for": list(plays_out),
    }


def _checked(res: SimulationResult, fresh_shoe: bool) -> tuple[ExactCheck | None, str | None]:
    """The exact check of ``res`` (:func:`feltlab.simulation.check.exact_check`), or why
    there is none."""
    try:
        return exact_check(res, fresh_shoe), None
    except ValueError as exc:  # rules the analyzer refuses
        return None, str(exc)


def _pm(half_width: float, z: float, label: str = "") -> str:
    """``± H% (z = Z)``, or what is missing when one round gave no interval."""
    if not math.isfinite(half_width):
        return "(no interval or z: 2 rounds or more)"
    return f"± {half_width:.4f}% ({label}z = {z:+.2f})"


def _print_exact(
    out: Any, res: SimulationResult, check: ExactCheck | None, why: str | None
) -> None:
    if check is None:
        out.print(f"no exact figure to check against: {why}")
        return
    pp = 100.0
    approx = " (approximate: some no-hole-card split terms left out)" if check.approximate else ""
    if check.fresh_shoe:
        out.print(
            f"exact (analyzer, same rules and strategy tables, fresh shoe): house edge "
            f"{pp * check.exact_edge:.4f}%{approx}; simulated - exact = "
            f"{pp * check.difference:+.4f}% {_pm(pp * check.half_width, check.z)}"
        )
    else:
        out.print(
            f"fresh-shoe exact figure {pp * check.exact_edge:.4f}%{approx} beside this shoe's "
            f"{pp * res.house_edge:.4f}%: cut-card effect {pp * check.difference:+.4f}% "
            f"{_pm(pp * check.half_width, check.z, '95%; ')}"
        )
    if check.alarming:
        out.print(
            f"[bold red]WARNING: the fresh-shoe simulation is {check.z:+.1f} standard errors "
            f"from the exact figure (|z| > {Z_WARNING:g}): the simulator or the analyzer is "
            "wrong for these rules; please report it with the command line[/bold red]"
        )


def _print_wagers(out: Any, res: SimulationResult, fresh_shoe: bool) -> None:
    if not fresh_shoe and res.wagers:
        out.print(
            "side-bet returns below are dealt with a cutting card, so they include the "
            "cut-card effect; to compare with an exact PAR sheet (`feltlab math`), run with "
            "--fresh-shoe"
        )
    if not res.wagers:  # --side-bets none: the main wager alone, no empty table
        return
    from rich.table import Table  # start-up: the table only when a side wager is in play

    t = Table(title="side wagers (return per unit wagered)")
    for col in ("wager", "paytable", "rounds offered", "return", "95% CI", "hit frequency"):
        t.add_column(col)
    for w in res.wagers:
        panel = w.return_ != w.return_  # NaN: paid by the jackpot panel
        t.add_row(
            w.name,
            w.paytable,
            f"{w.rounds:,}",
            "panel prize" if panel else f"{100 * w.return_:+.3f}%",
            ""
            if panel
            else "none (< 2 rounds)"
            if w.half_width != w.half_width  # NaN: fewer than 2 rounds, no interval
            else f"±{100 * w.half_width:.3f}%",
            f"{100 * w.hit_frequency:.3f}%",
        )
    out.print(t)


def report_simulation(
    res: SimulationResult,
    preset: str,
    seed: int,
    fresh_shoe: bool,
    workers: int,
    trace_path: Path | None,
    as_json: bool,
    *,
    skipped: list[tuple[str, str]] | None = None,
    plays_out: tuple[str, ...] = (),
    chunk_rounds: int | None = None,
) -> None:
    """Write the trace (an ``.npz`` of ``net`` int32 cents, ``initial`` (n, 5) uint8 card
    codes and ``stake``, the cents each round's wager was) when asked for, and print the
    result as JSON or as tables, naming the wagers settled by the batch path
    (``batch_wagers``, with the reason).  Beside the simulated
    house edge it prints the analyzer's exact fresh-shoe figure for the same rules and
    strategy tables and the difference with its interval and z (the simulator's error for a
    fresh shoe, loudly flagged past |z| > 4; the cut-card effect for a shoe game:
    :class:`feltlab.simulation.check.ExactCheck`).  The rounds/s printed is the simulation's own
    (the chunks' time in the simulator), the set-up printed apart.  ``skipped``: (wager,
    reason) of each installed wager not simulated, always listed; ``plays_out``: the wagers
    in play that made the dealer play out; ``chunk_rounds``: the chunk size asked for, to
    say how to spread the rounds when ``workers`` exceeds the chunks.  Raises
    click.BadParameter for an unwritable trace path."""
    skipped = list(skipped or [])
    if trace_path is not None and res.trace is not None:
        try:
            with open(trace_path, "wb") as f:
                np.savez(f, net=res.trace.net, initial=res.trace.initial, stake=DEFAULT_STAKE)
        except OSError as exc:
            raise click.BadParameter(
                f"cannot write {trace_path}: {exc.strerror}; choose a writable path",
                param_hint="--trace",
            ) from None
    started = time.perf_counter()
    check, why = _checked(res, fresh_shoe)
    exact_seconds = time.perf_counter() - started
    if as_json:
        data = _json_data(res, preset, seed, fresh_shoe, workers, skipped, plays_out, check)
        data["exact_seconds"] = exact_seconds
        click.echo(json.dumps(json_safe(data), indent=2, allow_nan=False))
        if check is not None and check.alarming:
            make_console(stderr=True).print(f"[bold red]WARNING: z = {check.z:+.1f}[/bold red]")
        return
    out = make_console()
    out.print(
        f"{preset}: {res.rounds:,} round{'' if res.rounds == 1 else 's'}, seed {seed}"
        + (", fresh shoe every round" if fresh_shoe else ", cutting card")
        + f": house edge {100 * res.house_edge:.3f}% "
        + (
            f"(95% CI {100 * (res.house_edge - res.half_width):.3f}% .. "
            f"{100 * (res.house_edge + res.half_width):.3f}%), "
            if math.isfinite(res.half_width)
            else "(no 95% CI: it needs 2 rounds or more), "
        )
        + f"sd {res.std_dev:.3f} per round; {res.simulation_rounds_per_second:,.0f} rounds/s "
        f"simulating on {res.ran_on} ({res.seconds - res.setup_seconds:.2f} s; set-up "
        f"{res.setup_seconds:.2f} s and the analyzer's exact figure {exact_seconds:.2f} s "
        "besides)"
    )
    if trace_path is not None and res.trace is not None:
        out.print(
            f"trace written to {trace_path}: each round's net (int32 cents of a "
            f"{DEFAULT_STAKE:,}-cent wager, the file's stake) and initial cards (P1, P2, D1, "
            "P3, D2 codes)"
        )
    if chunk_rounds and res.executor != Executor.DASK and workers > res.parallel:
        chunks = -(-res.rounds // chunk_rounds)
        out.print(
            f"--workers {workers}, but {res.rounds:,} rounds are {chunks} "
            f"{'chunk' if chunks == 1 else 'chunks'} of --chunk {chunk_rounds}, so "
            f"{res.parallel} ran at once: --chunk {-(-res.rounds // workers)} spreads them "
            "over every worker (the chunks are part of what the seed determines)"
        )
    _print_exact(out, res, check, why)
    _print_wagers(out, res, fresh_shoe)
    not_chosen = [name for name, reason in skipped if reason == NOT_CHOSEN]
    if not_chosen:
        out.print(f"not in play (--side-bets): {', '.join(not_chosen)}")
    for name, reason in skipped:
        if reason != NOT_CHOSEN:
            out.print(f"not simulated: {name}: {reason}")
    for name in res.batch_wagers:  # the same counts; only slower
        reason = res.batch_reasons.get(name, "it has no lookup table")
        out.print(
            f"classified in batches from per-round arrays, not in the simulator: {name} "
            f"(no lookup table: {reason})"
        )
    if plays_out:
        out.print(
            f"{', '.join(plays_out)} in play: the dealer completes every hand (plays out), as "
            f"{'it requires' if len(plays_out) == 1 else 'they require'}; the dealer's extra "
            "cards change the rounds dealt, so the main wager's figure differs (within its "
            "interval) from a run without them"
        )
