"""``feltlab simulate``'s output: the trace file, the batch-path notes, the JSON or the
terminal tables (the plumbing of :mod:`feltlab.simulate` for :mod:`feltlab.cli`)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
from rich.table import Table

from feltlab.clitypes import make_console
from feltlab.seeds import SEED_DERIVATION_VERSION
from feltlab.simulate import SimulationResult


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
) -> None:
    """Write the trace (an ``.npz`` of ``net`` int32 cents and ``initial`` (n, 5) uint8 card
    codes) when asked for, and print the result as JSON or as tables, naming the wagers
    settled by the batch path (``batch_wagers``, with the reason).  ``skipped``: (wager,
    reason) of each installed wager not simulated, always listed; ``plays_out``: the wagers in
    play that made the dealer play out.  Raises click.BadParameter for an unwritable trace path."""
    skipped = list(skipped or [])
    if trace_path is not None and res.trace is not None:
        try:
            with open(trace_path, "wb") as f:
                np.savez(f, net=res.trace.net, initial=res.trace.initial)
        except OSError as exc:
            raise click.BadParameter(
                f"cannot write {trace_path}: {exc.strerror}; choose a writable path",
                param_hint="--trace",
            ) from None
    data = {
        "rules": preset,
        "rounds": res.rounds,
        "seed": seed,
        "seed_derivation": SEED_DERIVATION_VERSION,
        "simulator_version": res.simulator_version,
        "fresh_shoe": fresh_shoe,
        "house_edge": res.house_edge,
        "ci95": [res.house_edge - res.half_width, res.house_edge + res.half_width],
        "std_dev": res.std_dev,
        "rounds_per_second": res.rounds_per_second,
        "workers": workers,
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
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    out = make_console()
    out.print(
        f"{preset}: {res.rounds:,} rounds, seed {seed}"
        + (", fresh shoe every round" if fresh_shoe else ", cutting card")
        + f": house edge {100 * res.house_edge:.3f}% "
        f"(95% CI {100 * (res.house_edge - res.half_width):.3f}% .. "
        f"{100 * (res.house_edge + res.half_width):.3f}%), "
        f"sd {res.std_dev:.3f} per round, {res.rounds_per_second:,.0f} rounds/s "
        f"on {workers} worker(s)"
    )
    if not fresh_shoe and res.wagers:
        out.print(
            "side-bet returns below are dealt with a cutting card, so they include the "
            "cut-card effect; to compare with an exact PAR sheet (`feltlab math`), run with "
            "--fresh-shoe"
        )
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
            "" if panel else f"±{100 * w.half_width:.3f}%",
            f"{100 * w.hit_frequency:.3f}%",
        )
    out.print(t)
    for name, reason in skipped:
        out.print(f"not simulated: {name}: {reason}")
    for name in res.batch_wagers:  # the same counts; only slower
        why = res.batch_reasons.get(name, "it has no lookup table")
        out.print(
            f"classified in batches from per-round arrays, not in the simulator: {name} "
            f"(no lookup table: {why})"
        )
    if plays_out:
        out.print(
            f"{', '.join(plays_out)} in play: the dealer completes every hand (plays out), as "
            f"{'it requires' if len(plays_out) == 1 else 'they require'}"
        )
