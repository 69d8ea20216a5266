"""Work done ahead, in a forked helper process, while a campaign collects.

A campaign's collection is one simulated (or real) bus driven by one thread; its analysis
then needs matplotlib for the report's plots (a 0.2 s import) and the battery's power
against named alternatives (about 1.6 s of CPU for the bundled profile's six: simulated shoes
of each, then the analytic power, :mod:`feltlab.rig.certify.power`), neither of which depends
on what the device sends: the power table depends only on the profile, the sample size, alpha and
the seed.  An :class:`AheadWorker` forked before collection imports matplotlib and computes
those :class:`Job`\\ s on the machine's other core, so that they overlap collection instead of
following it; on a busy host it is one more process with its share of the cores.

A job is a pure function of its arguments (a frozen, hashable dataclass with ``compute()``):
the analysis asks for the result of exactly the job it would run
(:func:`computed_ahead`, under :func:`serving`), and computes it itself when the helper has
no such job (a campaign with missing shoes has another sample size), has died or was never
started.  The result is the same either way, so the record does not depend on the helper.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np

from feltlab.rig.bus.forked import Forked
from feltlab.rig.cli.render.plots import make_plots

log = logging.getLogger(__name__)


class Job(Protocol, Hashable):
    """A pure computation keyed by its arguments: equal jobs have equal results, whatever
    the number of threads ``workers`` it runs on (None: its own default)."""

    def compute(self, workers: int | None = None) -> Any: ...


_LOOKUP: ContextVar[Any] = ContextVar("feltlab_ahead_lookup", default=None)


def computed_ahead(job: Job) -> Any:
    """The result of ``job`` if the :class:`AheadWorker` being served (:func:`serving`)
    computed it, else None."""
    worker = _LOOKUP.get()
    return None if worker is None else worker.result(job)


@contextlib.contextmanager
def serving(worker: AheadWorker | None) -> Iterator[None]:
    """Within the block, :func:`computed_ahead` asks ``worker`` (None: nobody)."""
    token = _LOOKUP.set(worker)
    try:
        yield
    finally:
        _LOOKUP.reset(token)


def _serve(conn: Any, parents_end: Any, jobs: Sequence[Job]) -> None:
    """An :class:`AheadWorker`'s process: import matplotlib, compute ``jobs``, then answer
    the parent in the order asked: a job's result (None for a job not computed here), plots
    to start drawing (``early``), the one set of plots.  A thread reads the pipe all along,
    so that the parent's sends never wait on the jobs, and ends this process the moment the
    parent's end closes (however the parent ended: a kill -9 too), so that nothing it holds
    (a live view's port) outlives the parent.  It closes its copy of the parent's end first;
    Ctrl-C is the parent's to handle (SIGINT ignored here)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parents_end.close()
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()

    def receive() -> None:
        try:
            while True:
                msg = conn.recv()
                inbox.put(msg)
                if msg[0] == "plots":
                    return
        except BaseException:  # end of file: the parent is gone, and so is this process
            os._exit(0)

    threading.Thread(target=receive, name="feltlab-ahead-inbox", daemon=True).start()
    try:
        import matplotlib  # child process: the worker imports matplotlib ahead

        matplotlib.use("Agg")
        # the imports are work done ahead: what the report's figures draw with (report.py
        # makes Figures, not pyplot's: pyplot's own import is 40% of matplotlib's)
        import matplotlib.backends.backend_agg  # child process: the worker's job (above)
        import matplotlib.figure  # child process: the worker's job (above)

        done: dict[Any, Any] = {}
        for job in jobs:
            try:
                done[job] = job.compute(workers=1)  # one thread: the campaign has the other
            except Exception as exc:  # the parent computes it again and sees the error
                log.debug("job %r failed ahead: %s", job, exc)
        early: dict[str, _Drawing] = {}
        while True:
            kind, arg = inbox.get()
            if kind == "result":
                conn.send(done.get(arg))
            elif kind == "early":  # forked from this thread, the reader blocked in recv
                for name, part in _groups(arg):
                    if name not in early and any(v is not None for v in part.values()):
                        early[name] = _Drawing(part)
            else:
                conn.send(_plots_on_two_cores(arg, early))
                break
    except BaseException as exc:  # told to the parent (which then does it itself)
        with contextlib.suppress(BaseException):
            conn.send(RuntimeError(f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()
        os._exit(0)  # no atexit handler or buffer of the parent's runs twice


_BATTERY_PLOTS = ("position_counts", "rising", "eulerian")


class _Drawing:
    """:func:`feltlab.rig.cli.render.plots.make_plots` of some inputs, drawn in a forked
    process (this one goes on), or here when none can start; :meth:`result` waits."""

    def __init__(self, inputs: dict[str, Any]) -> None:
        self.inputs = inputs
        self._work = Forked(lambda: make_plots(**inputs), lambda: make_plots(**inputs))

    def result(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = self._work.result()
        return out


def _groups(inputs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The report's plots in their order, in two groups each drawn alone: the battery's
    two plots, then the latency histograms."""
    return [
        ("battery", {k: inputs.get(k) for k in _BATTERY_PLOTS}),
        ("latencies", {"latencies": inputs.get("latencies")}),
    ]


def _plots_on_two_cores(
    inputs: dict[str, Any], early: dict[str, _Drawing] | None = None
) -> list[tuple[str, str]]:
    """:func:`feltlab.rig.cli.render.plots.make_plots` of ``inputs``, each group of plots in a
    forked process (``early``: started as soon as the analysis had its inputs, used when
    they are these) but the last one missing, drawn here meanwhile: the same PNGs in the
    same order (each plot is drawn alone), in about half the time on two cores."""
    early = dict(early or {})
    groups = _groups(inputs)
    for name, part in groups:
        d = early.get(name)
        if d is not None and not _same(d.inputs, part):
            d.result()  # not these inputs: drawn again
            del early[name]
    missing = [name for name, _ in groups if name not in early]
    here = missing.pop() if missing else None
    for name, part in groups:
        if name in missing:
            early[name] = _Drawing(part)
    out: list[tuple[str, str]] = []
    for name, part in groups:
        out += make_plots(**part) if name == here else early[name].result()
    return out


def _same(a: Any, b: Any) -> bool:
    """Plot inputs equal (dicts of lists of floats, or arrays), for drawing them once."""
    try:
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:
        return False


def draw_ahead(**inputs: Any) -> None:
    """Plot inputs known early (the latency samples, before the battery runs; the battery's
    plots, before its checks): the helper being served (:func:`serving`) starts drawing
    them at once."""
    worker = _LOOKUP.get()
    if worker is not None:
        worker.draw_early(inputs)


class AheadWorker:
    """A forked helper process (POSIX ``fork``) that imports matplotlib and computes
    ``jobs`` while the campaign collects, then renders the report's plots.  :meth:`result`
    returns a job's result (None: not computed there); :meth:`plots` sends the inputs of
    :func:`feltlab.rig.cli.render.plots.make_plots` and returns the same PNGs.  Whatever goes
    wrong with the process (no ``fork``, it died, it took over ``timeout`` seconds), the
    caller does the work in this process instead, with the same result.

    ``ahead``: fork (True) or do everything in this process (False); default: fork unless
    this process has imported matplotlib already (the explorer and the tests, which run many
    campaigns, pay for the import once)."""

    def __init__(
        self, timeout: float = 120.0, *, ahead: bool | None = None, jobs: Sequence[Job] = ()
    ) -> None:
        self.timeout = timeout
        self._conn: Any = None
        self._proc: Any = None
        self._jobs = frozenset(jobs)
        if ahead is None:
            ahead = "matplotlib" not in sys.modules
        if not ahead:
            return
        try:
            ctx = multiprocessing.get_context("fork")
            self._conn, child = ctx.Pipe()
            self._proc = ctx.Process(
                target=_serve, args=(child, self._conn, tuple(jobs)), daemon=True
            )
            self._proc.start()
            child.close()
        except (ValueError, OSError) as exc:  # no fork here, or no process left to start
            log.info("no helper process (%s): everything in this process", exc)
            self.close()

    #: seconds a send to the helper may take (its reader thread takes each at once): past
    #: it the helper is taken for stuck, ended, and this process does the work
    SEND_TIMEOUT = 10.0

    def _send(self, msg: Any) -> bool:
        """Send ``msg`` within :attr:`SEND_TIMEOUT`; False (the helper ended) otherwise."""
        conn = self._conn
        if conn is None:
            return False
        sent: list[bool] = []

        def send() -> None:
            with contextlib.suppress(OSError, ValueError, EOFError):
                conn.send(msg)
                sent.append(True)

        t = threading.Thread(target=send, name="feltlab-ahead-send", daemon=True)
        t.start()
        t.join(self.SEND_TIMEOUT)
        if sent:
            return True
        log.info("helper process not taking what it is sent: this process does it")
        if self._proc is not None:
            self._proc.kill()  # the blocked send then fails (EPIPE) and its thread ends
        t.join(1.0)
        self.close()
        return False

    def _ask(self, kind: str, arg: Any) -> Any:
        if self._conn is None:
            return None
        try:
            if not self._send((kind, arg)):
                return None
            if self._conn.poll(self.timeout):
                got = self._conn.recv()
                if not isinstance(got, BaseException):
                    return got
                log.info("helper process failed (%s): this process does it", got)
            else:
                log.info("helper process silent for %.0f s: this process does it", self.timeout)
        except (OSError, EOFError, ValueError) as exc:
            log.info("helper process lost (%s): this process does it", exc)
        self.close()
        return None

    def result(self, job: Job) -> Any:
        """``job``'s result computed in the helper process, or None (not one of its jobs,
        or no helper)."""
        return self._ask("result", job) if job in self._jobs else None

    def draw_early(self, inputs: dict[str, Any]) -> None:
        """Start drawing the plots of ``inputs`` (some of :func:`make_plots`'s: the latency
        histograms, or the battery's two) in the helper; :meth:`plots` uses them when its
        inputs for them are these."""
        self._send(("early", inputs))

    def plots(self, **inputs: Any) -> list[tuple[str, str]]:
        """The report's plots (:func:`feltlab.rig.cli.render.plots.make_plots` of ``inputs``),
        drawn in the helper process when there is one; the helper ends after them."""
        got = self._ask("plots", inputs)
        self.close()
        if isinstance(got, list):
            return got

        return make_plots(**inputs)

    def close(self) -> None:
        """End the helper process (joined, killed after 1 s); safe to call twice."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            self._proc.join(1.0)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
            self._proc = None
