"""Where a simulation's chunks run: one function per backend, each calling ``collect`` with
every chunk's :class:`~feltlab.simulation.chunk.Tally` as it finishes.

Threads or processes: a chunk whose every wager is settled in C spends its time in
``native.simulate_tally`` calls, which release the GIL (cffi's API mode wraps each C call in
``Py_BEGIN_ALLOW_THREADS``), so threads of this process run such chunks side by side without
a worker process to start; a chunk that classifies a wager in Python/numpy holds the GIL for
that work, so it runs in processes (:func:`feltlab.simulation.run.executor_for` chooses).

A chunk is a :class:`~feltlab.simulation.chunk.ChunkJob` (the arguments of
:func:`feltlab.simulation.chunk.run_chunk`), run by :func:`~feltlab.simulation.chunk.run_job`.
The chunks' results are
exact integer sums, so the backend (and the order the chunks finish in) never changes a
seed's result.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from feltlab.errors import SchedulerError
from feltlab.simulation.chunk import ChunkJob, Tally, run_job


def run_in_process(args: Sequence[ChunkJob], collect: Callable[[Tally], None]) -> None:
    """Run the chunks one after the other in this process."""
    for a in args:
        collect(run_job(a))


def run_in_threads(
    args: Sequence[ChunkJob], workers: int, collect: Callable[[Tally], None]
) -> None:
    """Run the chunks in ``workers`` threads of this process, collected in chunk order (on
    the calling thread).  Only for chunks whose work is C calls that release the GIL (no wager
    classified in Python, no trace), after :func:`feltlab.simulation.chunk.prepare` has built
    what the chunks share in the calling thread.  On an exception (a KeyboardInterrupt
    included) the chunks not yet started are cancelled and the running ones finish."""
    # function-level: concurrent.futures' pools load only for a run with several workers
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="feltlab-chunk")
    try:
        for t in pool.map(run_job, args):
            collect(t)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_in_processes(
    args: Sequence[ChunkJob], workers: int, collect: Callable[[Tally], None]
) -> None:
    """Run the chunks in ``workers`` local processes (``concurrent.futures``), collected in
    chunk order."""
    # function-level: the process pool (multiprocessing, about 20 ms of imports) loads only
    # for a run in processes, not for `feltlab simulate`'s common one-worker run
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        for t in pool.map(run_job, args):
            collect(t)


def run_on_dask(
    args: Sequence[ChunkJob], scheduler: str, workers: int, collect: Callable[[Tally], None]
) -> None:
    """Run the chunks on Dask distributed: ``scheduler`` is a scheduler's address, or
    ``"local"`` for a LocalCluster of ``workers`` single-threaded processes; collected as they
    finish.  Raises RuntimeError when Dask distributed is not installed (the ``dist`` extra),
    :class:`~feltlab.errors.SchedulerError` for an address Dask cannot parse, OSError for a
    scheduler it cannot reach."""
    try:
        distributed: Any = importlib.import_module("dask.distributed")
    except ImportError as exc:
        raise RuntimeError(
            "--scheduler needs Dask distributed: pip install 'feltlab[dist]'"
        ) from exc
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    as_completed = distributed.as_completed

    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
    try:
        client = Client(cluster if cluster is not None else scheduler)
    except ValueError as exc:  # an address Dask cannot parse
        raise SchedulerError(
            f"{scheduler!r} is not a Dask scheduler address ({exc}); write e.g. "
            "tcp://host:8786, or local"
        ) from exc
    try:
        futures = [client.submit(run_job, a, pure=False) for a in args]
        for fut in as_completed(futures):
            collect(fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
