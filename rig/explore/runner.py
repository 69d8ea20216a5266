"""Deterministic simulation testing of the rig (issue 13 item 2; docs/certification.md,
"Deterministic simulation testing"), after FoundationDB's simulator and TigerBeetle's VOPR:
``feltlab certify explore --campaigns N --seed S`` runs N small random certification
campaigns in simulated time, each drawn from a generator seeded by (S, campaign index) with a
device behaviour whose ground truth is known, and checks invariants on every one.

What a campaign draws (:func:`draw_scenario`):

- the device kind: batch shuffler (4-6 decks), continuous shuffler, jackpot panel (with or
  without authenticated results);
- a behaviour family: ``fair`` (Fisher-Yates, timing well within the profile's limits);
  ``model`` (riffle:k=1..3, shelf:m=2..40, stuck, missing, duplicate, biased); ``faults``
  (a random subset of the fault plans of :mod:`feltlab.rig.certify.faults`, sometimes with
  fewer shoes than faults); ``timing`` (the shuffle duration, card latency, button latency
  or heartbeat period within, at, or beyond each declared limit); ``chaos`` (the simulated
  wire loses, duplicates, delays, reorders frames, sends frames with a wrong DLC and garbage
  on the device's ids: :class:`feltlab.rig.bus.chaos.WireChaos`); ``misbehave`` (absurd
  shuffle durations announced in the acknowledgement, a shoe re-sent with different content,
  repeated and late replies, spontaneous reboots, replayed jackpot results:
  :class:`feltlab.rig.devices.misbehaviour.MisbehaviourPlan`, a kind's own in its package).

Invariants (:func:`check_campaign`; each violation names one):

- ``verdict``: a well-behaved fair device PASSes (or is INCONCLUSIVE only because the
  campaign's own fault plan left too few clean samples to judge, each such measurement
  saying so); a defective or misbehaving one ends FAIL or ERROR (``cause``: naming it).
  A campaign is only asserted to detect a defect where the
  sample has the power (measured, docs/certification.md): integrity defects (missing,
  duplicate) always; riffle:k<=3 and shelf:m<=40 from 2 shoes; stuck from 60 shoes of 4
  decks; biased never at these sizes (a known false negative).
- statistical false FAILs of a fair device are **calibrated, not forbidden**: each campaign
  runs at the profile's alpha (0.01); a fair campaign that FAILs only statistical checks
  (battery p-values, the prize distribution) is counted, and at the end of the run the count
  per kind is compared with alpha by a one-sided binomial test (``calibration``: a
  violation when P(X >= count | n, alpha) < 1e-6).  Shoes are drawn from 5 up: at 2-3 shoes
  the battery is measurably liberal (1.4 % at alpha 1 %, the successions count).
- ``hang``: the campaign ends within a simulated-time bound (the SimClock's horizon: 120 s
  plus 30 s per sample) and a host guard (default 60 s of the process's CPU time, not wall
  time: a campaign starved by a busy host is not a hang).
- ``raised``: neither the campaign nor its offline analysis raises; a callback scheduled on
  the clock or a frame listener never fails with an exception outside feltlab's error
  classes (``crash``).
- ``counted``: no sample is lost without being counted (collected + missing = planned,
  and the ``collection.*_missing`` measurement says so).
- ``genuine``: every shoe the analysis used is one the device shuffled (by shoe number and
  content): nothing the wire or a replay made up is certified.
- ``faults``: every fault of the plan is in the record's fault table.
- ``capture``: every capture part opens and reads through with ``can.LogReader``, and holds
  the frames the record counts.
- ``offline``: ``feltlab analyze`` of the campaign directory (:func:`analyze_path`) reaches
  the same checks (:func:`verdict_summary`), and the same verdict unless the live collection
  stopped early (then the offline verdict is ABORTED).

A violation prints the seed and the command that replays that one campaign:
``feltlab certify explore --replay S:I``.  Violations of behaviours another open issue is
fixing are listed in :data:`KNOWN` and reported as known (they fail the run only with
``strict``).

Everything runs in one thread in simulated time: the outcome of a campaign is a pure
function of (S, I).  The report's plots are skipped (matplotlib, 0.6 s a campaign).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from feltlab.errors import FeltlabError
from feltlab.rig.bus.chaos import ChaosPlan, WireChaos
from feltlab.rig.certify import campaign as certify
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.power import DEFAULT_ALTERNATIVES
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.clock import SimClock, SimulationStall
from feltlab.rig.devices.misbehaviour import (
    GroundTruth,  # tests replace it
    MisbehaviourPlan,
)
from feltlab.rig.explore.checks import Outcome, calibration, check_campaign, split_known
from feltlab.rig.explore.scenarios import ALPHA, KEY_HEX, Scenario, draw_scenario
from feltlab.rig.kinds import get_kind
from feltlab.seeds import child_seed

log = logging.getLogger(__name__)

# ===================================================================== running one campaign


class ExploreClock(SimClock):
    """A :class:`SimClock` with the explorer's simulated horizon and a host guard (CPU
    seconds of this process: a busy host must not make a campaign look hung),
    which puts the scenario's :class:`WireChaos` on every wire it creates."""

    def __init__(
        self, *, horizon: float, wall_limit: float, chaos: ChaosPlan | None, chaos_seed: int
    ) -> None:
        super().__init__(horizon=horizon)
        self.wall_limit = wall_limit
        self.wall_start = time.process_time()
        self.stalled: str | None = None
        self.chaos_plan = chaos
        self.chaos_seed = chaos_seed
        self.wires: list[Any] = []

    def on_new_wire(self, wire: Any) -> None:
        self.wires.append(wire)
        if self.chaos_plan is not None and self.chaos_plan.active:
            wire.chaos = WireChaos(self.chaos_plan, self.chaos_seed + len(self.wires), self)

    def step(self) -> bool:
        if self.events_run % 512 == 0 and time.process_time() - self.wall_start > self.wall_limit:
            self.stalled = f"host guard: more than {self.wall_limit:.0f} CPU seconds"
            raise SimulationStall(self.stalled)
        try:
            return super().step()
        except SimulationStall as exc:
            self.stalled = self.stalled or str(exc)
            raise

    def _advance(self, when: float) -> None:
        try:
            super()._advance(when)
        except SimulationStall as exc:
            self.stalled = self.stalled or str(exc)
            raise


@dataclass(frozen=True)
class _ExploreOptions(CampaignOptions):
    """Campaign options whose clock is the explorer's."""

    make_clock: Callable[[], SimClock] | None = field(default=None, compare=False)

    def new_clock(self, part: int = 1) -> Any:
        assert self.make_clock is not None
        return self.make_clock()


class _LogTap(logging.Handler):
    """Keeps the feltlab log records that carry an exception (a swallowed crash)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.crashes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if not isinstance(exc, FeltlabError):
                self.crashes.append(f"{type(exc).__name__}: {exc} ({record.getMessage()})")


@contextlib.contextmanager
def _quiet_feltlab(tap: _LogTap) -> Iterator[None]:
    """Route feltlab's logs to ``tap`` only while a campaign runs (nothing on the console)."""
    loggers = [logging.getLogger(n) for n in ("feltlab", "isotp", "can")]
    saved = [(lg, lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    for lg in loggers:
        lg.handlers = [tap] if lg.name == "feltlab" else []
        lg.propagate = False
        lg.setLevel(logging.ERROR if lg.name == "feltlab" else logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level, propagate, handlers in saved:
            lg.setLevel(level)
            lg.propagate = propagate
            lg.handlers = handlers


def drawn_alternatives(sc: Scenario, k: int = 2) -> list[str]:
    """The ``k`` named alternatives (of :data:`feltlab.rig.certify.power.DEFAULT_ALTERNATIVES`,
    the library's default set) a scenario's campaign must catch, drawn from its seed and
    index, so that the explorer checks "PASS implies every named alternative had the
    required power" across the library."""

    rnd = random.Random(child_seed(sc.seed, "explore-alternatives", sc.index))
    return sorted(rnd.sample(list(DEFAULT_ALTERNATIVES), k))


def device_plan(sc: Scenario, truth: GroundTruth) -> MisbehaviourPlan:
    """The misbehaviour plan the scenario's simulated device consults, recording into
    ``truth``: its kind's (:meth:`feltlab.rig.kinds.base.DeviceKind.misbehaviour`), else the
    plan of the misbehaviours every kind has."""
    plan = get_kind(sc.kind).misbehaviour(sc.misbehaviour, truth)
    return plan if plan is not None else MisbehaviourPlan(sc.misbehaviour, truth)


def scenario_profile(sc: Scenario, key_file: Path | None) -> Profile:
    """The quick bundled profile of the scenario's kind with its overrides."""
    dev = dict(sc.device)
    if sc.authenticate:
        assert key_file is not None
        dev.update(key_file=str(key_file), key_id="explore", authenticate=True)
    camp = dict(sc.campaign)
    null = camp.pop("null_replicates", None)
    prof = quick_profile(sc.kind, null_replicates=null, **dev)
    sim = dict(prof.simulation, **sc.simulation)
    if sc.model is not None:
        sim["model"] = sc.model
    camp = dict(get_kind(sc.kind).explore_campaign(sc), **camp)
    camp = dict(prof.campaign, alpha=ALPHA, **camp)
    raw = dict(prof.raw, simulation=sim, campaign=camp)
    return replace(prof, simulation=sim, campaign=camp, raw=raw)


def _feltlab_error_names() -> set[str]:
    out: set[str] = set()
    todo: list[type] = [FeltlabError]
    while todo:
        c = todo.pop()
        out.add(c.__name__)
        todo.extend(c.__subclasses__())
    return out


def _campaign_directory(root: Path, index: int) -> Path:
    """A new directory for campaign ``index`` under ``root``: a campaign replayed again keeps
    the earlier one's directory."""
    directory, n = root / f"c{index:06d}", 1
    while directory.exists():
        n += 1
        directory = root / f"c{index:06d}-{n}"
    return directory


def run_scenario(
    sc: Scenario, root: Path, *, wall_limit: float = 60.0, keep: bool = False
) -> Outcome:
    """Run the campaign of ``sc`` in a new directory under ``root`` and check every
    invariant (see the module doc).  Never raises for what the campaign does: an exception
    is a ``raised`` violation.  The directory is removed unless ``keep`` (or a violation)."""
    out = Outcome(sc)
    directory = _campaign_directory(root, sc.index)
    # each campaign is its own lab (its --out empty): freshness state and the panel's key
    # (with its freshness sidecar, docs/protocol.md) beside its directory
    lab = directory.with_name(directory.name + ".lab")
    key_file = (lab / "explore-panel.key").resolve()  # a profile resolves relative paths
    if sc.authenticate and not key_file.exists():
        lab.mkdir(parents=True, exist_ok=True)
        key_file.write_text(KEY_HEX + "\n")
    truth = GroundTruth()
    plan = device_plan(sc, truth)
    clocks: list[ExploreClock] = []
    horizon = 120.0 + 30.0 * sc.size

    def make_clock() -> SimClock:
        c = ExploreClock(
            horizon=horizon, wall_limit=wall_limit, chaos=sc.chaos, chaos_seed=sc.chaos_seed
        )
        clocks.append(c)
        return c

    tap = _LogTap()
    t0 = time.perf_counter()
    result = offline = None
    prof = scenario_profile(sc, key_file)
    camp = {**prof.campaign, "freshness_state": str((lab / "freshness.json").resolve())}
    prof = replace(prof, campaign=camp, raw=dict(prof.raw, campaign=camp))
    opts = _ExploreOptions(
        prof,
        directory,
        None,
        None,
        sc.size,
        ALPHA,
        sc.campaign_seed,
        sc.faults,
        "sim",
        device_plan=plan,
        plots=False,
        ahead=False,
        make_clock=make_clock,
    )

    def violate(name: str, text: str) -> None:
        out.violations.append((name, text))

    with _quiet_feltlab(tap):
        refused = "faults_fewer_shoes" in sc.tags
        try:
            result = certify.run_campaign(opts)
        except CampaignError as exc:
            # issue 14 item 6: a plan with too few shoes is refused up front, saying how many
            if not (refused and "needs at least" in str(exc)):
                violate("raised", f"run_campaign raised CampaignError: {exc}")
            else:  # the rig refused the plan before any work, as it must: say so
                out.verdict = out.offline = "REFUSED"
            refused = False
        except Exception as exc:  # every exception is a finding
            violate("raised", f"run_campaign raised {type(exc).__name__}: {exc}")
        if refused:
            violate("faults", "a fault plan with fewer shoes than it needs was not refused")
        if result is not None:
            try:
                offline = analyze_path(directory, None, out=None)
            except Exception as exc:
                violate("raised", f"analyze_path raised {type(exc).__name__}: {exc}")
    out.wall = time.perf_counter() - t0
    for c in clocks:
        out.sim_seconds += c.now()
        for w in c.wires:
            if w.chaos is not None:
                for k, v in w.chaos.counts.items():
                    out.chaos_counts[k] = out.chaos_counts.get(k, 0) + v
    if result is not None:
        check_campaign(
            sc, out, result.record, offline.record if offline else None, truth, directory
        )
    stalled = [c.stalled for c in clocks if c.stalled]
    if stalled:
        violate("hang", stalled[0])
    names = _feltlab_error_names()
    for c in clocks:
        for t, text in c.crashes:
            if text.split(":", 1)[0] not in names:
                violate("crash", f"a callback scheduled at t={t:.6f} s raised {text}")
    for text in tap.crashes:
        violate("crash", f"a listener or handler swallowed {text}")
    split_known(out)
    if keep or out.violations:
        out.directory = directory
    else:
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(lab, ignore_errors=True)
    return out


# ===================================================================== a run


@dataclass
class RunSummary:
    """A run of the explorer: outcomes, counts and speed."""

    seed: int
    outcomes: list[Outcome] = field(default_factory=list)
    wall: float = 0.0
    calibration: list[tuple[str, str]] = field(default_factory=list)

    @property
    def violations(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.violations]

    @property
    def rate(self) -> float:
        return len(self.outcomes) / self.wall if self.wall > 0 else math.nan


def run_index(seed: int, index: int, shoes_max: int, wall_limit: float) -> Outcome:
    """Campaign ``index`` of run ``seed`` in a temporary directory of its own, removed (one
    task of a run on Dask: its outcome is a pure function of ``(seed, index)``)."""
    tmp = Path(tempfile.mkdtemp(prefix="feltlab-explore-"))
    try:
        sc = draw_scenario(seed, index, shoes_max=shoes_max)
        o = run_scenario(sc, tmp, wall_limit=wall_limit)
        o.directory = None
        return o
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def explore_on_dask(
    summary: RunSummary,
    indexes: range,
    *,
    scheduler: str,
    workers: int,
    shoes_max: int,
    wall_limit: float,
    on_outcome: Callable[[Outcome], None] | None,
) -> None:
    """The campaigns ``indexes`` of ``summary.seed`` as tasks on Dask distributed
    (``scheduler``: a scheduler's address, or ``"local"`` for a LocalCluster of ``workers``
    single-threaded processes, as ``feltlab simulate --scheduler``); ``on_outcome`` as each
    finishes, the summary's outcomes in index order (the same as one process's).  Raises
    RuntimeError without Dask distributed (the ``dist`` extra)."""

    try:
        dd: Any = importlib.import_module("dask.distributed")
    except ImportError as exc:
        raise RuntimeError(
            "--scheduler needs Dask distributed: pip install 'feltlab[dist]'"
        ) from exc
    cluster = None
    if scheduler == "local":
        cluster = dd.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
    client = dd.Client(cluster if cluster is not None else scheduler)
    try:
        futures = [
            client.submit(run_index, summary.seed, i, shoes_max, wall_limit, pure=False)
            for i in indexes
        ]
        for fut in dd.as_completed(futures):
            o = fut.result()
            summary.outcomes.append(o)
            if on_outcome is not None:
                on_outcome(o)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    summary.outcomes.sort(key=lambda o: o.scenario.index)


def explore(
    campaigns: int,
    seed: int,
    *,
    shoes_max: int = 64,
    out: Path | None = None,
    wall_limit: float = 60.0,
    first: int = 0,
    on_outcome: Callable[[Outcome], None] | None = None,
    keep: bool = False,
    scheduler: str | None = None,
    workers: int = 2,
) -> RunSummary:
    """Run campaigns ``first .. first + campaigns - 1`` of run ``seed``; campaign
    directories go under ``out`` (default: a temporary directory, removed), kept only for
    campaigns that broke an invariant (every one with ``keep``).  With ``scheduler`` the
    campaigns run on Dask (:func:`explore_on_dask`; no directory is kept: replay a violation
    with ``--replay``).  Raises ValueError for a bad count or cap."""
    if campaigns < 1:
        raise ValueError(f"--campaigns must be at least 1, got {campaigns}")
    if shoes_max < 5:
        raise ValueError(f"--shoes-max must be at least 5, got {shoes_max}")
    summary = RunSummary(seed)
    if scheduler is not None:
        t0 = time.perf_counter()
        try:
            explore_on_dask(
                summary,
                range(first, first + campaigns),
                scheduler=scheduler,
                workers=workers,
                shoes_max=shoes_max,
                wall_limit=wall_limit,
                on_outcome=on_outcome,
            )
        finally:
            summary.wall = time.perf_counter() - t0
        summary.calibration = calibration(summary.outcomes)
        return summary
    tmp = None
    if out is None:
        tmp = Path(tempfile.mkdtemp(prefix="feltlab-explore-"))
        root = tmp
    else:
        root = out
        root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        for i in range(first, first + campaigns):
            sc = draw_scenario(seed, i, shoes_max=shoes_max)
            o = run_scenario(sc, root, wall_limit=wall_limit, keep=keep)
            if tmp is not None:
                o.directory = None  # the temporary root goes at the end of the run
            summary.outcomes.append(o)
            if on_outcome is not None:
                on_outcome(o)
    finally:
        summary.wall = time.perf_counter() - t0
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    summary.calibration = calibration(summary.outcomes)
    return summary


def parse_replay(text: str) -> tuple[int, int]:
    """``S:I`` -> (seed, index).  Raises ValueError naming the form."""
    s, sep, i = text.partition(":")
    try:
        if not sep:
            raise ValueError
        seed, index = int(s), int(i)
    except ValueError:
        raise ValueError(f"--replay takes SEED:INDEX (e.g. 1:42), got {text!r}") from None
    top = 2**64 - 1
    if not (0 <= seed <= top and 0 <= index <= top):
        raise ValueError(f"--replay takes non-negative SEED:INDEX, each 0..{top}, got {text!r}")
    return seed, index


__all__ = ["RunSummary", "explore", "explore_on_dask", "parse_replay", "run_index", "run_scenario"]
