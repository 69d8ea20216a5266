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

import contextlib
import importlib
from collections.abc import Callable, Iterator, Sequence
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
    from concurrent.futures import ThreadPoolExecutor  # start-up: only for several workers

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
    # the process pool (multiprocessing, about 20 ms of imports) loads only for a run in
    # processes, not for `feltlab simulate`'s common one-worker run
    from concurrent.futures import ProcessPoolExecutor  # start-up: see above

    with ProcessPoolExecutor(max_workers=workers) as pool:
        for t in pool.map(run_job, args):
            collect(t)


@contextlib.contextmanager
def dask_client(scheduler: str, workers: int) -> Iterator[Any]:
    """A Dask distributed client for ``scheduler`` (a scheduler's address, or ``"local"``
    for a LocalCluster of ``workers`` single-threaded processes), closed (with its cluster)
    on leaving.  Raises RuntimeError when Dask distributed is not installed (the ``dist``
    extra), :class:`~feltlab.errors.SchedulerError` for an address Dask cannot parse,
    OSError for a scheduler it cannot reach."""
    try:
        distributed: Any = importlib.import_module("dask.distributed")
    except ImportError as exc:
        raise RuntimeError(
            "--scheduler needs Dask distributed: pip install 'feltlab[dist]'"
        ) from exc
    cluster = None
    if scheduler == "local":
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
    try:
        client = distributed.Client(cluster if cluster is not None else scheduler)
    except ValueError as exc:  # an address Dask cannot parse
        if cluster is not None:
            cluster.close()
        raise SchedulerError(
            f"{scheduler!r} is not a Dask scheduler address ({exc}); write e.g. "
            "tcp://host:8786, or local"
        ) from exc
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_on_dask(
    args: Sequence[ChunkJob], scheduler: str, workers: int, collect: Callable[[Tally], None]
) -> None:
    """Run the chunks on Dask distributed (:func:`dask_client` for ``scheduler``, ``workers``
    and the errors raised); collected as they finish."""
    with dask_client(scheduler, workers) as client:
        as_completed = importlib.import_module("dask.distributed").as_completed
        futures = [client.submit(run_job, a, pure=False) for a in args]
        for fut in as_completed(futures):
            collect(fut.result())
