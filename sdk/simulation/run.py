"""Monte Carlo of whole rounds in the C round simulator, in chunks that scale out.

The C simulator (native/src/sim.c) plays one box under any :class:`feltlab.Rules` with a
table-driven strategy, dealing from a real shoe with a cutting card (or a fresh shoe every
round), and tallies each round's main-wager net result in cents and every side wager's
outcome inside the C loop, through each wager's lookup table
(:mod:`feltlab.simulation.side_tables`: the classifier compiled over the round's inputs), so
any plugin's return is estimated without a Python call per round.

Strategy: :func:`feltlab.math.strategy_tables.strategy_tables` turns feltlab's basic strategy
(:mod:`feltlab.math.strategy`: a composition-approximated expected-value calculation) into
tables by player total and dealer up card, evaluated on a representative two-card hand of
each total.  :class:`feltlab.math.strategy_tables.TablePolicy` plays the same tables in the
Python round engine, which is what makes the differential test between the two exact.

Scale: work is cut into chunks of ``chunk_rounds`` rounds; chunk i draws from the seed's
generator jumped i + 1 times (xoshiro256** jump: 2^128 outputs apart) and starts from a fresh
shoe, and chunk results are exact integer sums, so a seed gives the identical result on 1
worker, N threads, N local processes or a Dask cluster (:mod:`feltlab.simulation.executors`;
:func:`executor_for` says which runs a simulation's chunks).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from feltlab import intervals, native
from feltlab.core_rules import DEFAULT_STAKE
from feltlab.host import usable_cores
from feltlab.rules import (
    Rules,
)
from feltlab.seeds import SEED_DERIVATION_VERSION
from feltlab.simulation.chunk import (
    ChunkJob,
    Tally,
    batch_reasons,
    installed_wager,
    prepare,
)
from feltlab.simulation.executors import (
    run_in_process,
    run_in_processes,
    run_in_threads,
    run_on_dask,
)
from feltlab.simulation.side_tables import ROLE_COLUMNS


class Executor(StrEnum):
    """Where a simulation's chunks run (:func:`executor_for`, ``SimulationResult.executor``):
    one after the other in the calling thread, in threads of this process, in local
    processes, on Dask distributed.  A ``str``: it compares and writes to JSON as its
    value."""

    SERIAL = "serial"
    THREADS = "threads"
    PROCESSES = "processes"
    DASK = "dask"


@dataclass(frozen=True)
class WagerEstimate:
    """A side wager's simulated return per unit (and 95% half-width, NaN when it was offered
    on fewer than 2 rounds: one round has no interval), hit frequency and the rounds on which
    it was offered.  The return is NaN for a wager whose wins are paid by a
    jackpot panel (Madness 21): its prize distribution is the panel's, not the cards'."""

    name: str
    paytable: str
    rounds: int
    return_: float
    half_width: float
    hit_frequency: float


@dataclass(frozen=True)
class SimulationResult:
    """House edge of the main wager (per unit of the initial stake) with its 95% confidence
    interval, per-wager returns, rounds simulated and rounds per second (wall clock).
    ``seed_derivation`` is the :data:`feltlab.seeds.SEED_DERIVATION_VERSION` that turned
    ``seed`` into the chunks' generators and ``simulator_version`` the C simulator's
    (``feltlab.native.SIM_VERSION``) that dealt them: both say what reproduces the seed.
    ``batch_wagers``: wagers without a side table (too large, or reading the round record's
    card arrays), settled by the batch path; ``batch_reasons`` says why for each.  ``trace``:
    the per-round arrays in chunk order (``net``, ``initial``) when asked for."""

    rules: Rules
    rounds: int
    seed: int
    house_edge: float
    half_width: float
    std_dev: float
    wagers: tuple[WagerEstimate, ...]
    seconds: float
    workers: int
    tally: Tally
    seed_derivation: int = SEED_DERIVATION_VERSION
    simulator_version: int = native.SIM_VERSION
    batch_wagers: tuple[str, ...] = ()
    batch_reasons: dict[str, str] = field(default_factory=dict, compare=False)
    trace: native.SimResult | None = field(default=None, compare=False, repr=False)
    sim_seconds: float = field(default=0.0, compare=False)
    """Seconds the chunks spent simulating, summed over them (``Tally.seconds``)."""
    parallel: int = 1
    """Chunks run at once: the workers, or fewer when there are fewer chunks."""
    executor: Executor = field(default=Executor.SERIAL, compare=False)
    """Where the chunks ran (:func:`executor_for`)."""
    scheduler: str | None = field(default=None, compare=False)
    """The Dask scheduler's address, or ``"local"``, when the chunks ran on Dask."""

    @property
    def ran_on(self) -> str:
        """Where the chunks ran, in words: ``"1 thread"``, ``"2 threads"``, ``"2 processes"``,
        ``"a Dask LocalCluster of 2 processes"`` or ``"the Dask scheduler ADDRESS"``."""
        if self.executor == Executor.DASK:
            if self.scheduler == "local":
                return f"a Dask LocalCluster of {_count(self.workers, 'process', 'processes')}"
            return f"the Dask scheduler {self.scheduler}"
        if self.executor == Executor.PROCESSES:
            return _count(self.parallel, "process", "processes")
        return _count(self.parallel, "thread", "threads")

    @property
    def rounds_per_second(self) -> float:
        """Rounds simulated per wall-clock second (set-up included)."""
        return self.rounds / self.seconds if self.seconds > 0 else math.inf

    @property
    def overlap(self) -> int:
        """Chunks that could truly run at once: :attr:`parallel`, at most this machine's
        usable cores for threads and processes here (4 threads on 2 cores overlap by 2)."""
        if self.executor == Executor.DASK:
            return self.parallel
        return max(1, min(self.parallel, usable_cores()))

    @property
    def simulation_rounds_per_second(self) -> float:
        """The simulation's own rounds per second: rounds over the chunks' time in the
        simulator (tables, strategy, plugins and worker start-up excluded), times the
        chunks that overlapped (:attr:`overlap`)."""
        if self.sim_seconds <= 0:
            return math.inf
        return self.rounds * self.overlap / self.sim_seconds

    @property
    def setup_seconds(self) -> float:
        """Wall-clock seconds not spent simulating: plugins, tables, strategy, workers."""
        return max(self.seconds - self.sim_seconds / self.overlap, 0.0)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def executor_for(
    workers: int,
    scheduler: str | None,
    wagers: Sequence[tuple[str, str | None]],
    trace: bool,
) -> Executor:
    """Where :func:`simulate` runs the chunks: ``"dask"`` with a
    scheduler; ``"serial"`` for one worker; ``"threads"`` when every wager of ``wagers``
    (name, paytable) is settled in C through its side table and ``trace`` is False (the chunks'
    work is C calls that release the GIL); else ``"processes"`` (a wager classified in numpy
    from per-round arrays, :func:`feltlab.simulation.chunk.batch_reasons`, or the trace, holds
    the GIL for its work).  Raises what :func:`feltlab.simulation.chunk.installed_wager` raises
    for an unknown wager."""
    if scheduler:
        return Executor.DASK
    if workers <= 1:
        return Executor.SERIAL
    if trace or batch_reasons(wagers):
        return Executor.PROCESSES
    return Executor.THREADS


def _estimates(tally: Tally, specs: Sequence[tuple[str, str | None]]) -> tuple[WagerEstimate, ...]:
    out = []
    for name, table in specs:
        if name not in tally.wagers or name in tally.skipped:
            continue
        w = installed_wager(name, table)
        counts = np.array(tally.wagers[name], dtype=np.float64)
        n = tally.offered[name]
        pays = np.array([float(p) if p is not None else 0.0 for p in w.paytable.pays])
        paying = np.array([p is None or p > 0 for p in w.paytable.pays])
        if n == 0:
            continue
        if any(p is None for p in w.paytable.pays):  # a jackpot prize: the panel pays it
            mean = var = math.nan
        else:
            mean = float((counts * pays).sum() / n)
            var = float((counts * pays * pays).sum() / n - mean * mean)
        out.append(
            WagerEstimate(
                name,
                w.paytable.name,
                n,
                mean,
                intervals.half_width(var, n) if n >= 2 else math.nan,  # one round: none
                float(counts[paying].sum() / n),
            )
        )
    return tuple(out)


def wager_specs(
    registry: Any, rules: Rules
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """The installed wagers the simulator can settle under ``rules`` as ``(name, None)``
    specs (each with its first paytable), and every other one with the reason:
    ``(specs, skipped)``.  ``registry``: :func:`feltlab.plugin_manager.collect_wagers`'s."""
    specs: list[tuple[str, str | None]] = []
    skipped: list[tuple[str, str]] = []
    for name in registry.names():
        w = registry[name]
        if name == "main":
            continue
        if not w.min_decks <= rules.decks <= w.max_decks:
            skipped.append(
                (
                    name,
                    f"played with {w.min_decks} to {w.max_decks} decks, the rules have "
                    f"{rules.decks}",
                )
            )
        elif w.round_fields:
            specs.append((name, None))
        elif not w.card_roles:
            skipped.append((name, "no classifier: neither card_roles nor round_fields"))
        elif any(r not in ROLE_COLUMNS for r in w.card_roles):
            skipped.append(
                (name, f"reads card roles the simulator does not record: {w.card_roles}")
            )
        else:
            specs.append((name, None))
    return specs, skipped


def simulate(
    rules: Rules,
    rounds: int,
    *,
    seed: int = 1,
    workers: int = 1,
    scheduler: str | None = None,
    chunk_rounds: int = 2_000_000,
    wagers: Sequence[tuple[str, str | None]] = (),
    fresh_shoe: bool = False,
    progress: Callable[[int], None] | None = None,
    trace: bool = False,
) -> SimulationResult:
    """Simulate ``rounds`` rounds under ``rules`` with basic strategy.

    ``workers`` > 1 runs chunks ``workers`` at a time in threads of this process when every
    wager is settled in C and ``trace`` is False, else in ``workers`` local processes
    (:func:`executor_for`; ``SimulationResult.executor`` says which); ``scheduler`` (a Dask
    scheduler address, or ``"local"`` for a LocalCluster of ``workers`` processes) runs them
    on Dask distributed (the ``dist`` extra).  ``wagers``: side bets to settle, as (name,
    paytable or None).  ``progress`` is called (on the calling thread) with the rounds
    finished so far.  ``trace`` keeps every round's net result and initial cards
    (``SimulationResult.trace``).  The result depends only on ``rules``, ``rounds``, ``seed``,
    ``chunk_rounds`` and ``fresh_shoe``, never on the partitioning or the executor.  Raises
    ValueError for a non-positive count.
    """
    if rounds < 1 or chunk_rounds < 1 or workers < 1:
        raise ValueError("rounds, chunk_rounds and workers must be positive")
    sizes = [chunk_rounds] * (rounds // chunk_rounds)
    if rounds % chunk_rounds:
        sizes.append(rounds % chunk_rounds)
    args = [
        ChunkJob(rules, i, n, seed, tuple(wagers), fresh_shoe, trace) for i, n in enumerate(sizes)
    ]
    total = Tally()
    traces: dict[int, native.SimResult] = {}
    done = 0
    t0 = time.perf_counter()

    def collect(t: Tally) -> None:
        nonlocal done
        total.add(t)
        if t.trace is not None:
            traces[t.chunk] = t.trace
        done += t.rounds
        if progress:
            progress(done)

    executor = executor_for(workers, scheduler, wagers, trace)
    if executor == Executor.DASK:
        run_on_dask(args, str(scheduler), workers, collect)
    elif executor == Executor.THREADS:
        prepare(rules, wagers, fresh_shoe)  # the shared caches built here, not in the threads
        run_in_threads(args, min(workers, len(args)), collect)
    elif executor == Executor.PROCESSES:
        run_in_processes(args, workers, collect)
    else:
        run_in_process(args, collect)
    seconds = time.perf_counter() - t0
    n = total.rounds
    mean = total.net / n / DEFAULT_STAKE
    var = total.net_sq / n / DEFAULT_STAKE**2 - mean * mean
    sd = math.sqrt(max(var, 0.0))
    reasons = batch_reasons(wagers)
    return SimulationResult(
        rules=rules,
        rounds=n,
        seed=seed,
        house_edge=-mean,
        # one round has no variance to estimate (it printed a 0-wide interval and z = -inf)
        half_width=intervals.half_width(var, n) if n >= 2 else math.nan,
        std_dev=sd,
        wagers=_estimates(total, wagers),
        seconds=seconds,
        workers=workers,
        tally=total,
        batch_wagers=tuple(reasons),
        batch_reasons=reasons,
        trace=_joined(traces) if trace else None,
        sim_seconds=total.seconds,
        parallel=min(workers, len(sizes)) if executor != Executor.SERIAL else 1,
        executor=executor,
        scheduler=scheduler if executor == Executor.DASK else None,
    )


def _joined(traces: dict[int, native.SimResult]) -> native.SimResult:
    parts = [traces[k] for k in sorted(traces)]
    return native.SimResult(
        np.concatenate([p.net for p in parts]), np.concatenate([p.initial for p in parts])
    )
