"""One chunk of a simulation (the chunk half of :mod:`feltlab.simulate`): the exact integer
:class:`Tally` of a chunk, the side bets settled through lookup tables in C or classified in
batches, the play-decided wagers from round records (:func:`run_chunk`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.rules import (
    Rules,
)
from feltlab.seeds import chunk_generator
from feltlab.simstrategy import ROLE_COLUMNS, sim_rules
from feltlab.wagers import WagerType


@lru_cache(maxsize=64)
def _wager(name: str, paytable: str | None) -> WagerType:
    """An instance of the installed wager type ``name`` (the plugins are loaded once per
    process, not once per chunk)."""
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager

    return collect_wagers(get_plugin_manager())[name](paytable=paytable)


# ---------------------------------------------------------------- chunked simulation


@dataclass
class Tally:
    """Exact integer sums over rounds: ``rounds``, ``net`` and ``net_sq`` (cents, cents^2) of
    the main wager, and per side wager its outcome counts and the rounds it was on offer."""

    rounds: int = 0
    net: int = 0
    net_sq: int = 0
    wagers: dict[str, list[int]] = field(default_factory=dict)
    offered: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Wagers that could not be settled in this chunk, with the reason."""
    chunk: int = field(default=-1, compare=False)
    trace: native.SimResult | None = field(default=None, compare=False, repr=False)

    def add(self, other: Tally) -> None:
        """Add another tally in place."""
        self.skipped.update(other.skipped)
        self.rounds += other.rounds
        self.net += other.net
        self.net_sq += other.net_sq
        for k, v in other.wagers.items():
            mine = self.wagers.setdefault(k, [0] * len(v))
            for i, x in enumerate(v):
                mine[i] += x
        for k, n in other.offered.items():
            self.offered[k] = self.offered.get(k, 0) + n


def classify_side_bets(
    initial: npt.NDArray[np.uint8], wagers: Iterable[WagerType]
) -> dict[str, tuple[npt.NDArray[np.int64], int]]:
    """Outcome counts of each card-decided wager over the simulator's ``initial`` cards
    ``(n, 5)``: {name: (counts per paytable outcome, rounds on offer)}."""
    from feltlab.parsheet import offered_mask

    out: dict[str, tuple[npt.NDArray[np.int64], int]] = {}
    for w in wagers:
        if w.round_fields or not w.card_roles or any(r not in ROLE_COLUMNS for r in w.card_roles):
            continue
        cols = np.ascontiguousarray(initial[:, [ROLE_COLUMNS[r] for r in w.card_roles]])
        ok = (cols != native.NO_CARD).all(axis=1)
        ok &= offered_mask(w, cols)
        sel = np.ascontiguousarray(cols[ok])
        idx = np.asarray(w.classify(sel)).astype(np.int64)
        counts = np.bincount(idx, minlength=len(w.paytable.pays)).astype(np.int64)
        out[w.name] = (counts, int(ok.sum()))
    return out


def classify_round_bets(
    records: npt.NDArray[np.void], wagers: Iterable[WagerType]
) -> dict[str, tuple[npt.NDArray[np.int64], int]]:
    """Outcome counts of each play-decided wager (``round_fields``) over the simulator's round
    records ``(n,)`` :data:`feltlab.record.RECORD_DTYPE`: {name: (counts, rounds)}."""
    from feltlab.playmath import _outcomes

    out: dict[str, tuple[npt.NDArray[np.int64], int]] = {}
    for w in wagers:
        if w.round_fields:
            idx = _outcomes(w, records)
            out[w.name] = (np.bincount(idx, minlength=len(w.paytable.pays)), len(records))
    return out


RECORD_BATCH = 200_000
"""Rounds per simulator call when round records are kept (151 bytes a round); each call
starts from a freshly shuffled shoe."""


def _simulate_with_records(
    rules: Rules, chunk: int, n_rounds: int, seed: int, instances: Sequence[WagerType],
    fresh_shoe: bool,
) -> Tally:  # fmt: skip
    """A chunk with play-decided wagers: the simulator keeps round records, in batches of
    :data:`RECORD_BATCH` rounds, and plays the dealer out when one of them requires it."""
    from dataclasses import replace

    rng = chunk_generator(seed, chunk)
    plays_out = any(w.dealer_plays_out for w in instances)
    sr = replace(sim_rules(rules, fresh_shoe=fresh_shoe), dealer_plays_out=plays_out)
    tally = Tally()
    left = n_rounds
    while left:
        n = min(left, RECORD_BATCH)
        res = native.simulate_rounds(rng, sr, n, record=True)
        assert res.record is not None
        net = res.net.astype(np.int64)
        part = Tally(rounds=n, net=int(net.sum()), net_sq=int((net * net).sum()))
        _settle_side_bets(part, res.initial, res.record, instances)
        tally.add(part)
        left -= n
    return tally


def _settle_side_bets(
    tally: Tally,
    initial: npt.NDArray[np.uint8],
    record: npt.NDArray[np.void] | None,
    instances: Sequence[WagerType],
) -> None:
    """Count every wager's outcomes into ``tally``; a wager whose classifier fails is
    recorded in ``tally.skipped`` with the reason instead of stopping the run."""
    for w in instances:
        try:
            if w.round_fields:
                if record is None:
                    continue
                got = classify_round_bets(record, [w])
            else:
                got = classify_side_bets(initial, [w])
        except Exception as exc:  # a plugin's classifier: report it, keep simulating
            tally.skipped[w.name] = f"its classifier failed: {exc}"
            continue
        for name, (counts, offered) in got.items():
            mine = tally.wagers.setdefault(name, [0] * len(counts))
            for i, c in enumerate(counts):
                mine[i] += int(c)
            tally.offered[name] = tally.offered.get(name, 0) + offered


def run_chunk(
    rules: Rules,
    chunk: int,
    n_rounds: int,
    seed: int,
    wager_specs: Sequence[tuple[str, str | None]] = (),
    fresh_shoe: bool = False,
    trace: bool = False,
) -> Tally:
    """Simulate chunk ``chunk`` (``n_rounds`` rounds) of seed ``seed``: a pure function of its
    arguments, so any worker may run it.  ``wager_specs``: (wager name, paytable) pairs.

    With a play-decided wager among them the simulator keeps round records and plays the
    dealer out when one requires it (:func:`_simulate_with_records`; its wagers are classified
    in batches).  Otherwise every wager is tallied inside the C simulator through its lookup
    table (``feltlab.sidetables``) unless ``trace`` asks for the per-round arrays (kept in the
    tally's ``trace``) or a wager is too large to tabulate: then the simulator writes the
    per-round arrays and every wager is classified in batches (the same counts).  A wager
    whose classifier fails is named in ``Tally.skipped`` with the reason."""
    from feltlab import sidetables

    instances = [_wager(name, table) for name, table in wager_specs]
    if any(w.round_fields for w in instances):
        tally = _simulate_with_records(rules, chunk, n_rounds, seed, instances, fresh_shoe)
        tally.chunk = chunk
        return tally
    rng = chunk_generator(seed, chunk)
    srules = sim_rules(rules, fresh_shoe=fresh_shoe)
    skipped: dict[str, str] = {}
    tables: list[native.SideTable | None] = []
    if not trace:
        kept = []
        for w in instances:
            try:
                tables.append(sidetables.side_table(w))
            except Exception as exc:  # a plugin's classifier: report it, keep simulating
                skipped[w.name] = f"its classifier failed: {exc}"
                continue
            kept.append(w)
        instances = kept
    if trace or any(t is None for t in tables):
        res = native.simulate_rounds(rng, srules, n_rounds)
        net = res.net.astype(np.int64)
        tally = Tally(rounds=n_rounds, net=int(net.sum()), net_sq=int((net * net).sum()))
        _settle_side_bets(tally, res.initial, None, instances)
        tally.skipped.update(skipped)
        tally.chunk = chunk
        tally.trace = res if trace else None
        return tally
    out = native.simulate_tally(rng, srules, n_rounds, tuple(t for t in tables if t is not None))
    tally = Tally(rounds=out.rounds, net=out.net, net_sq=out.net_sq, chunk=chunk, skipped=skipped)
    for w, counts in zip(instances, out.counts, strict=True):
        k = len(w.paytable.pays)
        tally.wagers[w.name] = [int(c) for c in counts[:k]]
        tally.offered[w.name] = int(counts[: native.NOT_OFFERED].sum())
    return tally


def batch_wagers(specs: Sequence[tuple[str, str | None]]) -> tuple[str, ...]:
    """The wagers of ``specs`` too large to tabulate (settled by the batch path)."""
    from feltlab import sidetables

    return tuple(name for name, table in specs if sidetables.too_large(_wager(name, table)))
