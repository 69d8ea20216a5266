"""One chunk of a simulation (:mod:`feltlab.simulation.run` plans the chunks): the exact integer
:class:`Tally` of a chunk, the side bets settled through lookup tables in C or classified in
batches, the play-decided wagers from round records (:func:`run_chunk`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.math.parsheet import offered_mask
from feltlab.math.strategy_tables import strategy_tables
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.record import RECORD_BATCH
from feltlab.rules import (
    Rules,
)
from feltlab.seeds import chunk_generator
from feltlab.simulation import side_tables
from feltlab.simulation.side_tables import ROLE_COLUMNS
from feltlab.wagers import WagerType


@lru_cache(maxsize=64)
def installed_wager(name: str, paytable: str | None) -> WagerType:
    """An instance of the installed wager type ``name`` (the plugins are loaded once per
    process, not once per chunk)."""
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
    seconds: float = field(default=0.0, compare=False)
    """Time spent simulating (the simulator's calls and the batch classification), summed
    over chunks: what the simulation's own rounds/s divides by (set-up apart)."""
    trace: native.SimResult | None = field(default=None, compare=False, repr=False)

    def add(self, other: Tally) -> None:
        """Add another tally in place."""
        self.skipped.update(other.skipped)
        self.seconds += other.seconds
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
    out: dict[str, tuple[npt.NDArray[np.int64], int]] = {}
    for w in wagers:
        if w.round_fields:
            # start-up: play-decided wagers only; --side-bets none classifies no round
            from feltlab.math.play_decided import wager_outcomes  # start-up

            idx = wager_outcomes(w, records)
            out[w.name] = (np.bincount(idx, minlength=len(w.paytable.pays)), len(records))
    return out


def _chunk_rules(rules: Rules, fresh_shoe: bool, instances: Sequence[WagerType]) -> native.SimRules:
    """The C simulator's rules for a chunk: the dealer plays out when a wager requires it."""
    plays_out = any(w.dealer_plays_out for w in instances)
    return replace(
        simulator_rules(rules, strategy_tables(rules), fresh_shoe=fresh_shoe),
        dealer_plays_out=plays_out,
    )


def _simulate_with_records(
    rules: Rules,
    chunk: int,
    n_rounds: int,
    seed: int,
    instances: Sequence[WagerType],
    fresh_shoe: bool,
    trace: bool = False,
) -> Tally:
    """A chunk classified in batches from the simulator's per-round arrays and round records,
    in calls of :data:`RECORD_BATCH` rounds (the same rounds as the tally path), the dealer
    played out when a wager requires it; ``trace`` keeps the per-round arrays (``net``,
    ``initial``) in the tally."""
    rng = chunk_generator(seed, chunk)
    sr = _chunk_rules(rules, fresh_shoe, instances)
    tally = Tally()
    left = n_rounds
    kept: list[native.SimResult] = []
    t0 = time.perf_counter()
    while left:
        n = min(left, RECORD_BATCH)
        res = native.simulate_rounds(rng, sr, n, record=True)
        assert res.record is not None
        if trace:
            kept.append(res)
        net = res.net.astype(np.int64)
        part = Tally(rounds=n, net=int(net.sum()), net_sq=int((net * net).sum()))
        _settle_side_bets(part, res.initial, res.record, instances)
        tally.add(part)
        left -= n
    tally.seconds = time.perf_counter() - t0
    if trace and kept:
        tally.trace = native.SimResult(
            np.concatenate([r.net for r in kept]), np.concatenate([r.initial for r in kept])
        )
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


@dataclass(frozen=True)
class ChunkJob:
    """One chunk of a simulation, as a worker receives it (picklable, for processes and
    Dask): the arguments of :func:`run_chunk`.  ``wager_specs``: (wager name, paytable)
    pairs."""

    rules: Rules
    chunk: int
    n_rounds: int
    seed: int
    wager_specs: tuple[tuple[str, str | None], ...] = ()
    fresh_shoe: bool = False
    trace: bool = False


def run_job(job: ChunkJob) -> Tally:
    """:func:`run_chunk` of ``job``'s arguments (the one call every executor makes)."""
    return run_chunk(
        job.rules, job.chunk, job.n_rounds, job.seed, job.wager_specs, job.fresh_shoe, job.trace
    )


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

    Every wager, card-decided or decided by play, is tallied inside the C simulator through its
    lookup table (``feltlab.simulation.side_tables``; a play-decided wager's over the round
    record's fields), the dealer played out when a wager requires it.  A wager without a table
    (too large, or reading the record's card arrays) is classified in batches from the per-round
    arrays the simulator then also writes, in calls of :data:`RECORD_BATCH` rounds, while the
    tabled ones stay in C.  ``trace`` asks for the per-round arrays of every round (kept in the
    tally's ``trace``; with a play-decided wager, :func:`_simulate_with_records`), every wager
    classified in batches: the same counts.  A wager whose classifier fails is named in
    ``Tally.skipped`` with the reason."""
    instances = [installed_wager(name, table) for name, table in wager_specs]
    if trace:
        tally = _simulate_with_records(
            rules, chunk, n_rounds, seed, instances, fresh_shoe, trace=trace
        )
        tally.chunk = chunk
        return tally
    rng = chunk_generator(seed, chunk)
    srules = _chunk_rules(rules, fresh_shoe, instances)
    skipped: dict[str, str] = {}
    tabled: list[tuple[WagerType, native.SideTable]] = []
    rest: list[WagerType] = []  # no table: classified from per-round arrays
    for w in instances:
        try:
            t = side_tables.side_table(w)
        except Exception as exc:  # a plugin's classifier: report it, keep simulating
            skipped[w.name] = f"its classifier failed: {exc}"
            continue
        if t is None:
            rest.append(w)
        else:
            tabled.append((w, t))
    tables = tuple(t for _, t in tabled)
    tally = Tally(chunk=chunk, skipped=skipped)
    # calls of RECORD_BATCH rounds, each from freshly shuffled shoes, on every path (tables
    # only, tables and per-round arrays, trace): so a seed gives the same rounds on all of them
    step = RECORD_BATCH
    want_init = any(not w.round_fields for w in rest)
    want_rec = any(w.round_fields for w in rest)
    left = n_rounds
    t0 = time.perf_counter()
    while left:
        n = min(left, step)
        out = native.simulate_tally(rng, srules, n, tables, initial=want_init, record=want_rec)
        part = Tally(rounds=out.rounds, net=out.net, net_sq=out.net_sq)
        for (w, _), counts in zip(tabled, out.counts, strict=True):
            k = len(w.paytable.pays)
            part.wagers[w.name] = [int(c) for c in counts[:k]]
            part.offered[w.name] = int(counts[: native.NOT_OFFERED].sum())
        if rest:
            init = out.initial if out.initial is not None else np.empty((0, 5), np.uint8)
            _settle_side_bets(part, init, out.record, rest)
        tally.add(part)
        left -= n
    tally.seconds = time.perf_counter() - t0
    for w, _ in tabled:  # a wager on no round of an empty chunk still has its row
        tally.wagers.setdefault(w.name, [0] * len(w.paytable.pays))
        tally.offered.setdefault(w.name, 0)
    return tally


def prepare(rules: Rules, wager_specs: Sequence[tuple[str, str | None]], fresh_shoe: bool) -> None:
    """Build, in the calling thread, everything the chunks of a run read from a process-wide
    lazily filled cache, so that chunks run in threads (:func:`feltlab.simulation.executors.
    run_in_threads`) only read them and none is built twice at once: each wager instance
    (:func:`installed_wager`, which loads the plugins), its side table (memory and disk cache
    of :mod:`feltlab.simulation.side_tables`) and the strategy tables of the chunk's rules
    (:func:`feltlab.math.strategy_tables.strategy_tables`).  A classifier that fails to tabulate is
    left for each chunk to name in ``Tally.skipped``.  Raises what :func:`run_chunk` raises for
    bad rules (RulesError, ValueError)."""
    instances = [installed_wager(name, table) for name, table in wager_specs]
    for w in instances:
        try:
            side_tables.side_table(w)
        except Exception:  # a plugin's classifier: each chunk reports it in Tally.skipped
            continue
    _chunk_rules(rules, fresh_shoe, instances)


def batch_reasons(specs: Sequence[tuple[str, str | None]]) -> dict[str, str]:
    """{wager: why it has no side table} for the wagers of ``specs`` settled by the batch
    path (``feltlab.simulation.side_tables.untabulated_reason``)."""
    out: dict[str, str] = {}
    for name, table in specs:
        why = side_tables.untabulated_reason(installed_wager(name, table))
        if why is not None:
            out[name] = why
    return out


def batch_wagers(specs: Sequence[tuple[str, str | None]]) -> tuple[str, ...]:
    """The wagers of ``specs`` without a side table (settled by the batch path)."""
    return tuple(batch_reasons(specs))
