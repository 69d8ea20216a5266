"""A simulated field trial, for tests and docs: each table's day drawn from a wager's exact
outcome distribution (its PAR sheet), optionally tilted to a true house edge off the
certified one by a stated offset (docs/trial.md).

A table's day of ``n`` bets is one multinomial draw of the outcomes' counts (numpy's
``Generator.multinomial``), the exact distribution of ``n`` independent bets, so a trial of
millions of bets takes milliseconds.  Every bet is of one size (``bet``), so the data meet
:mod:`feltlab.math.field_trial`'s model exactly.  The generator is numpy's PCG64 seeded with
``feltlab.seeds.derive_seed(seed, "field-trial")``: a seed gives the same trial on any host
(numpy's documented stream for a given seed and bit generator).

The tilt (``edge_offset``): the winning outcomes' probabilities are scaled by ``1 - t`` and
the mass taken is added to the losing outcomes in proportion to theirs (pushes untouched), the
paytable kept; ``t`` is solved exactly for the offset, so the true edge is the certified edge
plus ``edge_offset``.
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

import numpy as np

from feltlab.errors import FeltlabError
from feltlab.math.parsheet import ParSheet
from feltlab.math.trial_data import TrialRow
from feltlab.seeds import derive_seed

START = dt.date(2026, 1, 1)
"""The first day of a simulated trial."""


def tilted_probabilities(sheet: ParSheet, edge_offset: Fraction) -> list[Fraction]:
    """The outcome probabilities of ``sheet`` tilted (module docstring) so that the house
    edge is ``sheet.house_edge + edge_offset`` exactly.

    Raises :class:`FeltlabError` for a panel-paid outcome (no pays) or an offset the
    paytable cannot reach (a probability would leave 0..1)."""
    lines = sheet.lines
    if any(line.pays is None for line in lines):
        raise FeltlabError(f"{sheet.title}: a jackpot outcome has no fixed pays to simulate")
    pays = [Fraction(line.pays or 0) for line in lines]
    probs = [line.probability for line in lines]
    if edge_offset == 0:
        return probs
    p_win = sum((p for p, a in zip(probs, pays, strict=True) if a > 0), Fraction(0))
    p_loss = sum((p for p, a in zip(probs, pays, strict=True) if a < 0), Fraction(0))
    won = sum((p * a for p, a in zip(probs, pays, strict=True) if a > 0), Fraction(0))
    lost = sum((p * a for p, a in zip(probs, pays, strict=True) if a < 0), Fraction(0))
    if not p_win or not p_loss:
        raise FeltlabError(f"{sheet.title}: no winning or no losing outcome to tilt")
    t = edge_offset / (won - p_win * lost / p_loss)
    out = [
        p * (1 - t) if a > 0 else p * (1 + t * p_win / p_loss) if a < 0 else p
        for p, a in zip(probs, pays, strict=True)
    ]
    if not all(0 <= p <= 1 for p in out):
        raise FeltlabError(
            f"an edge offset of {float(edge_offset):+g} is beyond what {sheet.title}'s paytable "
            "can reach; give a smaller one"
        )
    return out


def simulate_trial(
    sheet: ParSheet,
    bets: int,
    *,
    days: int = 90,
    tables: int = 2,
    bet: int = 5,
    edge_offset: Fraction = Fraction(0),
    seed: int = 1,
) -> list[TrialRow]:
    """A trial of ``bets`` bets of ``bet`` currency units on ``sheet``'s wager, spread evenly
    over ``days`` days (from :data:`START`) and ``tables`` tables (the first rows take the
    remainder), at the true edge ``sheet.house_edge + edge_offset``.  Rows in date, then
    table order, tables named ``T1``, ``T2``...

    Raises :class:`FeltlabError` for an offset the paytable cannot reach, ValueError for
    ``bets``, ``days``, ``tables`` or ``bet`` below 1.
    """
    if min(bets, days, tables, bet) < 1:
        raise ValueError("bets, days, tables and the bet must each be at least 1")
    probs = np.array([float(p) for p in tilted_probabilities(sheet, edge_offset)])
    probs /= probs.sum()
    pays = np.array([float(line.pays or 0) for line in sheet.lines])
    rng = np.random.Generator(np.random.PCG64(derive_seed(seed, "field-trial")))
    cells = days * tables
    sizes = np.full(cells, bets // cells, dtype=np.int64)
    sizes[: bets % cells] += 1
    counts = rng.multinomial(sizes, probs)  # (cells, outcomes)
    player_net = counts @ pays  # units won by the players, per cell
    rows = []
    for i in range(cells):
        day, table = divmod(i, tables)
        n = int(sizes[i])
        rows.append(
            TrialRow(
                date=START + dt.timedelta(days=day),
                table=f"T{table + 1}",
                handle=float(n * bet),
                win=round(-float(player_net[i]) * bet, 2),
                bets=n,
                line=i + 2,
            )
        )
    return rows
