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
  (a random subset of the fault plans of :mod:`feltlab.rig.certify_faults`, sometimes with
  fewer shoes than faults); ``timing`` (the shuffle duration, card latency, button latency
  or heartbeat period within, at, or beyond each declared limit); ``chaos`` (the simulated
  wire loses, duplicates, delays, reorders frames, sends frames with a wrong DLC and garbage
  on the device's ids: :class:`feltlab.rig.simchaos.WireChaos`); ``misbehave`` (absurd
  shuffle durations announced in the acknowledgement, a shoe re-sent with different content,
  repeated and late replies, spontaneous reboots, replayed jackpot results:
  :func:`feltlab.rig.simchaos.misbehaving_device`).

Invariants (:func:`check_campaign`; each violation names one):

- ``verdict``: a well-behaved fair device PASSes; a defective or misbehaving one ends FAIL or
  ERROR (``cause``: naming it).  A campaign is only asserted to detect a defect where the
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
import hashlib
import json
import logging
import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import can

from feltlab.errors import FeltlabError
from feltlab.rig import certify, devices
from feltlab.rig.certify import CampaignOptions, Profile, quick_profile, verdict_summary
from feltlab.rig.certify_faults import ALL_FAULTS
from feltlab.rig.clock import SimClock, SimulationStall
from feltlab.rig.simchaos import ChaosPlan, Misbehaviour, WireChaos, misbehaving_device
from feltlab.rig.simchaos import GroundTruth as GroundTruth  # re-exported: tests replace it

log = logging.getLogger(__name__)

ALPHA = 0.01
"""The significance level of every explored campaign (the profiles' default)."""

CALIBRATION_P = 1e-6
"""A run's fair statistical FAIL count is a violation when its one-sided binomial p-value
against ``ALPHA`` is below this."""

STATISTICAL = ("battery.", "prize_distribution.p_value", "return_gap.p_value")
"""Checks whose FAIL a fair device reaches with probability alpha (calibrated)."""

STUCK_MIN_SHOES = 60
"""Shoes of 4 decks from which a stuck card is asserted detected (worst adjusted p of 200
simulated campaigns at 60 shoes: 4e-11)."""

FAULT_SHOES = (30, 40, 12)
"""A fault campaign (not drawn short) has ``randint(a, b) + c * faults`` shoes: enough to
measure the heartbeat and the timings outside the fault windows."""

KEY_HEX = "5f0e1d2c3b4a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
"""The explorer's (public, test-only) panel key for authenticated jackpot campaigns."""

KNOWN: dict[tuple[str, str, str], str] = {
    ("faults_short", "verdict", "ERROR"): "lead (certify collection) / issue 13 item 4: a "
    "short fault campaign cannot measure heartbeat or timing outside the fault windows "
    "(_wait_heartbeats counts the heartbeats inside them); ERROR, to be INCONCLUSIVE",
    ("faults_short", "verdict", "heartbeat.period"): "issue 13 item 5: heartbeat.period "
    "judged on 2-3 intervals carries the bus's queueing delay (a shoe transfer holds a "
    "heartbeat back by up to ~20 ms): a fair device FAILs; the figure's uncertainty must "
    "make it INCONCLUSIVE",
}
"""(behaviour tag, invariant, a substring of the violation) -> the open issue item (or the
report to the lead) that fixes it: such violations are reported as known (see the module
doc) and fail the run only with ``strict``."""


# ===================================================================== scenarios


@dataclass(frozen=True)
class Scenario:
    """One explored campaign: what it draws and what must hold (see the module doc).

    ``expect``: ``PASS``, ``NOT_PASS`` (FAIL or ERROR, naming one of ``causes``: substrings
    of the failing checks' names, the integrity finding or the errors) or ``ANY``.
    ``tags``: the behaviour's labels (matched against :data:`KNOWN`).
    """

    seed: int
    index: int
    kind: str
    family: str
    size: int
    campaign_seed: int
    expect: str
    causes: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    device: dict[str, Any] = field(default_factory=dict)
    simulation: dict[str, Any] = field(default_factory=dict)
    campaign: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    faults: str | None = None
    chaos: ChaosPlan | None = None
    chaos_seed: int = 0
    misbehaviour: Misbehaviour | None = None
    authenticate: bool = False
    shoes_max: int = 64

    @property
    def replay(self) -> str:
        return f"{self.seed}:{self.index}"

    @property
    def command(self) -> str:
        """The command that replays this campaign alone."""
        cap = f" --shoes-max {self.shoes_max}" if self.shoes_max != 64 else ""
        return f"feltlab certify explore --replay {self.replay}{cap}"

    def describe(self) -> str:
        bits = [self.kind, self.family, f"size {self.size}"]
        if self.model:
            bits.append(f"model {self.model}")
        if self.faults:
            bits.append(f"faults {self.faults}")
        if self.simulation:
            bits.append(", ".join(f"{k}={v:g}" for k, v in sorted(self.simulation.items())))
        if self.chaos is not None:
            c = self.chaos
            bits.append(
                f"chaos drop={c.drop:g} dup={c.duplicate:g} delay={c.delay:g} "
                f"reorder={c.reorder:g} dlc={c.bad_dlc:g} garbage={c.garbage:g}"
            )
        if self.misbehaviour is not None:
            bits.append(f"misbehaviour {self.misbehaviour.name}@{self.misbehaviour.at}")
        if self.authenticate:
            bits.append("authenticated")
        return "; ".join(bits)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["chaos"] = self.chaos.to_dict() if self.chaos else None
        d["replay"] = self.command
        return d


def campaign_rng(seed: int, index: int, stream: str = "") -> random.Random:
    """The generator of campaign ``index`` of run ``seed`` (SHA-256 of both: campaigns are
    independent and each is replayable alone); ``stream`` names an independent one."""
    salt = f":{stream}" if stream else ""
    digest = hashlib.sha256(f"feltlab-explore:{seed}:{index}{salt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "little"))


def _limits(kind: str) -> dict[str, float]:
    return certify.load_profile(None, kind).limits


def draw_scenario(seed: int, index: int, *, shoes_max: int = 64) -> Scenario:
    """The scenario of campaign ``index`` of run ``seed`` (see the module doc).
    ``shoes_max`` (>= 5) caps a batch campaign's shoes."""
    r = campaign_rng(seed, index)
    kind = r.choices(("batch", "continuous", "jackpot"), (0.6, 0.15, 0.25))[0]
    cseed = r.getrandbits(62)
    base = {
        "seed": seed,
        "index": index,
        "kind": kind,
        "campaign_seed": cseed,
        "shoes_max": shoes_max,
    }
    small = min(shoes_max, 12)
    if kind == "batch":
        return _draw_batch(r, base, shoes_max, small)
    if kind == "continuous":
        return _draw_continuous(r, base)
    return _draw_jackpot(r, base)


def _chaos(r: random.Random, ids: tuple[int, ...]) -> tuple[ChaosPlan, int]:
    which = r.sample(
        ("drop", "duplicate", "delay", "reorder", "bad_dlc", "garbage"), r.randint(1, 3)
    )
    rates: dict[str, Any] = {w: r.choice((0.002, 0.01, 0.03, 0.06)) for w in which}
    plan = replace(
        ChaosPlan(
            delay_max=r.choice((0.002, 0.02, 0.2, 1.0)),
            start=r.choice((0.0, 0.3)),
            garbage_ids=ids,
        ),
        **rates,
    )
    return plan, r.getrandbits(62)


def _batch_ids(base: int = 0x100) -> tuple[int, ...]:
    return tuple(range(base, base + 8)) + tuple(range(base + 0x10, base + 0x16))


def _draw_batch(r: random.Random, base: dict[str, Any], shoes_max: int, small: int) -> Scenario:
    family = r.choices(
        ("fair", "model", "faults", "timing", "chaos", "misbehave"),
        (0.15, 0.2, 0.15, 0.15, 0.2, 0.15),
    )[0]
    decks = r.choice((4, 4, 4, 5, 6))
    size = r.randint(5, small)
    lim = _limits("batch")
    common: dict[str, Any] = {"family": family, "device": {"decks": decks}}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS", model="fisher-yates")
    if family == "model":
        model = r.choice(
            (
                f"riffle:k={r.randint(1, 3)}",
                f"shelf:m={r.randint(2, 40)}",
                f"stuck:pos={r.randrange(52 * decks)}",
                f"missing:pos={r.randrange(52 * decks)}",
                f"duplicate:pos={r.randrange(52 * decks)}",
                "biased",
            )
        )
        kind = model.split(":")[0]
        causes: tuple[str, ...]
        if kind == "stuck" and shoes_max >= STUCK_MIN_SHOES and r.random() < 0.5:
            size = r.randint(STUCK_MIN_SHOES, shoes_max)
        if kind in ("missing", "duplicate"):
            expect, causes = "NOT_PASS", ("integrity",)
        elif kind in ("riffle", "shelf") or (
            kind == "stuck" and size >= STUCK_MIN_SHOES and decks == 4
        ):
            expect, causes = "NOT_PASS", ("battery.",)
        else:  # biased, or stuck in a sample without the power: a known false negative
            expect, causes = "ANY", ()
        return Scenario(
            **base, **common, size=size, expect=expect, causes=causes, model=model, tags=(kind,)
        )
    if family == "faults":
        faults = tuple(f for f in ALL_FAULTS if r.random() < 0.4) or (r.choice(ALL_FAULTS),)
        tags: tuple[str, ...] = ("faults",)
        u = r.random()
        if u < 0.1:  # fewer shoes than faults: every fault must still be injected
            size = max(2, len(faults) - 1) if len(faults) > 2 else 2
            tags = ("faults", "faults_fewer_shoes")
        elif u < 0.3:  # short: little left outside the fault windows to measure
            size = max(size, len(faults) + 3)
            tags = ("faults", "faults_short")
        else:
            size = r.randint(FAULT_SHOES[0], FAULT_SHOES[1]) + FAULT_SHOES[2] * len(faults)
        return Scenario(
            **base,
            **common,
            size=size,
            expect="PASS" if "faults_fewer_shoes" not in tags else "ANY",
            model="fisher-yates",
            faults=",".join(faults),
            tags=tags,
        )
    if family == "timing":
        what = r.choice(("shuffle_duration", "heartbeat_period"))
        case = r.choice(("within", "at", "beyond_p99", "beyond_max"))
        sim: dict[str, Any] = {}
        if what == "shuffle_duration":
            p99, mx = lim["shuffle_cycle_p99"], lim["shuffle_cycle_max"]
            value = {
                "within": r.uniform(0.0, 0.4 * p99),
                "at": p99 * r.uniform(0.97, 1.0),
                "beyond_p99": r.uniform(1.3 * p99, 0.9 * mx),
                "beyond_max": r.uniform(1.2 * mx, 2.0 * mx),
            }[case]
            sim["shuffle_duration"] = round(value, 4)
            causes = ("shuffle_cycle",)
        else:
            tol = lim["heartbeat_period_tolerance"]
            sign = r.choice((-1, 1))
            dev = {
                "within": r.uniform(0.0, 0.3 * tol),
                "at": tol * r.uniform(0.95, 1.0),
                "beyond_p99": r.uniform(2 * tol, 4 * tol),
                "beyond_max": r.uniform(2 * tol, 4 * tol),
            }[case]
            sim["heartbeat_period"] = round(0.1 * (1 + sign * dev), 4)
            causes = ("heartbeat",)
        expect = {"within": "PASS", "at": "ANY"}.get(case, "NOT_PASS")
        return Scenario(
            **base,
            **common,
            size=size,
            expect=expect,
            causes=causes if expect == "NOT_PASS" else (),
            model="fisher-yates",
            simulation=sim,
            tags=(f"timing_{what}_{case}",),
        )
    if family == "chaos":
        plan, cs = _chaos(r, _batch_ids())
        return Scenario(
            **base,
            **common,
            size=size,
            expect="ANY",
            model="fisher-yates",
            chaos=plan,
            chaos_seed=cs,
            tags=("chaos",),
        )
    name = r.choice(
        (
            "absurd_duration_lie",
            "absurd_duration_stall",
            "resend_shoe_changed",
            "repeat_replies",
            "late_reply",
            "spontaneous_reboot",
        )
    )
    at = r.randint(1, size)
    delay = round(r.uniform(0.55, 1.5), 3) if name == "late_reply" else 0.0
    x = campaign_rng(base["seed"], base["index"], "reply_latency")
    if x.random() < 1 / 7:  # a stream of its own: the other draws stay as they were
        r, name = x, "reply_latency"  # the command round trip within, at, beyond its limits
        p99, mx = lim["round_trip_p99"], lim["round_trip_max"]
        case = r.choice(("within", "at", "beyond_p99", "beyond_max"))
        delay = round(
            {
                "within": r.uniform(0.0, 0.4 * p99),
                "at": p99 * r.uniform(0.9, 0.97),
                "beyond_p99": r.uniform(1.3 * p99, 0.9 * mx),
                "beyond_max": r.uniform(1.1 * mx, 1.5 * mx),
            }[case],
            4,
        )
        expect = {"within": "PASS", "at": "ANY"}.get(case, "NOT_PASS")
        return Scenario(
            **base,
            **common,
            size=size,
            expect=expect,
            causes=("round_trip", "first_card") if expect == "NOT_PASS" else (),
            model="fisher-yates",
            misbehaviour=Misbehaviour(name, 1, delay),
            tags=(f"timing_round_trip_{case}",),
        )
    expect, causes = {
        "absurd_duration_lie": ("NOT_PASS", ("shuffle",)),
        "absurd_duration_stall": ("NOT_PASS", ("shuffle",)),
        "resend_shoe_changed": ("NOT_PASS", ("shoe",)),
        "repeat_replies": ("PASS", ()),  # genuine data: a repeat must be harmless
    }.get(name, ("ANY", ()))
    return Scenario(
        **base,
        **common,
        size=size,
        expect=expect,
        causes=causes,
        model="fisher-yates",
        misbehaviour=Misbehaviour(name, at, delay),
        tags=(name,),
    )


def _draw_continuous(r: random.Random, base: dict[str, Any]) -> Scenario:
    family = r.choices(("fair", "timing", "chaos", "misbehave"), (0.35, 0.3, 0.25, 0.1))[0]
    size = r.randint(40, 80)  # enough deals for returned cards to be dealt again
    dev = {"decks": r.choice((1, 2)), "slots": r.choice((8, 38))}
    common: dict[str, Any] = {"family": family, "device": dev, "campaign": {"null_replicates": 19}}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS")
    if family == "timing":
        lim = _limits("continuous")
        case = r.choice(("within", "at", "beyond_p99", "beyond_max"))
        p99, mx = lim["per_card_p99"], lim["per_card_max"]
        value = {
            "within": r.uniform(0.0, 0.4 * p99),
            "at": p99 * r.uniform(0.9, 0.97),
            "beyond_p99": r.uniform(1.3 * p99, 0.9 * mx),
            "beyond_max": r.uniform(1.1 * mx, 1.6 * mx),
        }[case]
        expect = {"within": "PASS", "at": "ANY"}.get(case, "NOT_PASS")
        return Scenario(
            **base,
            **common,
            size=size,
            expect=expect,
            causes=("first_card", "per_card") if expect == "NOT_PASS" else (),
            simulation={"card_latency": round(value, 4)},
            tags=(f"timing_card_latency_{case}",),
        )
    if family == "chaos":
        plan, cs = _chaos(r, _batch_ids(0x200))
        return Scenario(
            **base, **common, size=size, expect="ANY", chaos=plan, chaos_seed=cs, tags=("chaos",)
        )
    return Scenario(
        **base,
        **common,
        size=size,
        expect="ANY",
        misbehaviour=Misbehaviour("spontaneous_reboot", r.randint(1, size)),
        tags=("spontaneous_reboot",),
    )


def _draw_jackpot(r: random.Random, base: dict[str, Any]) -> Scenario:
    family = r.choices(("fair", "timing", "chaos", "misbehave"), (0.35, 0.25, 0.25, 0.15))[0]
    size = r.randint(20, 60)
    auth = r.random() < 0.5
    common: dict[str, Any] = {"family": family, "authenticate": auth}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS")
    if family == "timing":
        lim = _limits("jackpot")
        case = r.choice(("within", "at", "beyond_p99", "beyond_max"))
        p99, mx = lim["button_to_result_p99"], lim["button_to_result_max"]
        value = {
            "within": r.uniform(0.0, 0.4 * p99),
            "at": p99 * r.uniform(0.9, 0.97),
            "beyond_p99": r.uniform(1.3 * p99, 0.9 * mx),
            "beyond_max": r.uniform(1.1 * mx, 1.6 * mx),
        }[case]
        expect = {"within": "PASS", "at": "ANY"}.get(case, "NOT_PASS")
        return Scenario(
            **base,
            **common,
            size=size,
            expect=expect,
            causes=("button_to_result", "result") if expect == "NOT_PASS" else (),
            simulation={"button_latency": round(value, 4)},
            tags=(f"timing_button_latency_{case}",),
        )
    if family == "chaos":
        plan, cs = _chaos(r, _batch_ids(0x300))
        return Scenario(
            **base, **common, size=size, expect="ANY", chaos=plan, chaos_seed=cs, tags=("chaos",)
        )
    name = r.choice(("replay_result", "spontaneous_reboot", "repeat_replies"))
    if name == "replay_result":
        common["authenticate"] = True
    causes: tuple[str, ...]
    expect, causes = {
        "replay_result": ("NOT_PASS", ("security", "replay")),
        "repeat_replies": ("PASS", ()),  # genuine results: a repeat must be harmless
    }.get(name, ("ANY", ()))
    return Scenario(
        **base,
        **common,
        size=size,
        expect=expect,
        causes=causes,
        misbehaviour=Misbehaviour(name, r.randint(3, size)),
        tags=(name,),
    )


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


def _original_from_string() -> Any:
    import jinja2

    return jinja2.Environment.from_string


_ORIGINAL_FROM_STRING = _original_from_string()


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


@contextlib.contextmanager
def _patched(kind: str, device_cls: type[Any]) -> Iterator[None]:
    """The campaign's device class in ``devices.DEVICE_KINDS`` and no report plots, for
    the duration of one campaign (the explorer is single-threaded)."""
    import jinja2

    saved_cls = devices.DEVICE_KINDS[kind]
    saved_plots = certify._plots
    saved_compile = jinja2.Environment.from_string
    devices.DEVICE_KINDS[kind] = device_cls
    certify._plots = lambda analysis: []
    jinja2.Environment.from_string = _cached_template  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        devices.DEVICE_KINDS[kind] = saved_cls
        certify._plots = saved_plots
        jinja2.Environment.from_string = saved_compile  # type: ignore[method-assign]


_TEMPLATES: dict[tuple[str, bool, type], Any] = {}


def _cached_template(env: Any, source: str, *args: Any, **kw: Any) -> Any:
    """``jinja2.Environment.from_string`` compiled once per source and settings: the report
    compiles its template for every campaign (0.12 s, a sixth of a small campaign)."""
    if args or kw:
        return _ORIGINAL_FROM_STRING(env, source, *args, **kw)
    key = (source, bool(env.autoescape), env.undefined)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = _ORIGINAL_FROM_STRING(env, source)
    return _TEMPLATES[key]


def scenario_profile(sc: Scenario, key_file: Path | None) -> Profile:
    """The quick bundled profile of the scenario's kind with its overrides."""
    dev = dict(sc.device)
    if sc.authenticate:
        assert key_file is not None
        dev.update(key_file=str(key_file), key_id="explore", authenticate=True)
    camp = dict(sc.campaign)
    null = camp.pop("null_replicates", None)
    prof = quick_profile(sc.kind, power_replicates=2, null_replicates=null, **dev)
    sim = dict(prof.simulation, **sc.simulation)
    if sc.model is not None:
        sim["model"] = sc.model
    camp = dict(prof.campaign, alpha=ALPHA, **camp)
    raw = dict(prof.raw, simulation=sim, campaign=camp)
    return replace(prof, simulation=sim, campaign=camp, raw=raw)


@dataclass
class Outcome:
    """What one explored campaign did and which invariants it broke."""

    scenario: Scenario
    verdict: str | None = None
    offline: str | None = None
    violations: list[tuple[str, str]] = field(default_factory=list)
    known: list[tuple[str, str, str]] = field(default_factory=list)
    fair_statistical_fail: bool = False
    fair: bool = False
    wall: float = 0.0
    sim_seconds: float = 0.0
    chaos_counts: dict[str, int] = field(default_factory=dict)
    directory: Path | None = None

    def fingerprint(self) -> tuple[Any, ...]:
        """What must be equal when the same campaign runs twice."""
        return (
            self.scenario.replay,
            self.verdict,
            self.offline,
            tuple(self.violations),
            round(self.sim_seconds, 9),
            tuple(sorted(self.chaos_counts.items())),
        )


def _feltlab_error_names() -> set[str]:
    out: set[str] = set()
    todo: list[type] = [FeltlabError]
    while todo:
        c = todo.pop()
        out.add(c.__name__)
        todo.extend(c.__subclasses__())
    return out


def run_scenario(
    sc: Scenario, root: Path, *, wall_limit: float = 60.0, keep: bool = False
) -> Outcome:
    """Run the campaign of ``sc`` in a new directory under ``root`` and check every
    invariant (see the module doc).  Never raises for what the campaign does: an exception
    is a ``raised`` violation.  The directory is removed unless ``keep`` (or a violation)."""
    out = Outcome(sc)
    directory = root / f"c{sc.index:06d}"
    n = 1
    while directory.exists():  # a campaign replayed again keeps the earlier directory
        n += 1
        directory = root / f"c{sc.index:06d}-{n}"
    key_file = (root / "explore-panel.key").resolve()  # a profile resolves relative paths
    if sc.authenticate and not key_file.exists():
        key_file.write_text(KEY_HEX + "\n")
    truth = GroundTruth()
    dev_cls = misbehaving_device(sc.kind, truth, sc.misbehaviour)
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
    # each campaign is its own lab: its panel's freshness state lives in its directory, so a
    # campaign never depends on the ones before it (nor touches the user's state file)
    camp = {**prof.campaign, "freshness_state": str((directory / "freshness.json").resolve())}
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
        make_clock=make_clock,
    )

    def violate(name: str, text: str) -> None:
        out.violations.append((name, text))

    with _quiet_feltlab(tap), _patched(sc.kind, dev_cls):
        refused = "faults_fewer_shoes" in sc.tags
        try:
            result = certify.run_campaign(opts)
        except certify.CampaignError as exc:
            # issue 14 item 6: a plan with too few shoes is refused up front, saying how many
            if not (refused and "needs at least" in str(exc)):
                violate("raised", f"run_campaign raised CampaignError: {exc}")
            refused = False
        except Exception as exc:  # every exception is a finding
            violate("raised", f"run_campaign raised {type(exc).__name__}: {exc}")
        if refused:
            violate("faults", "a fault plan with fewer shoes than it needs was not refused")
        if result is not None:
            try:
                offline = certify.analyze_path(directory, None, out=None)
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
    _split_known(out)
    if keep or out.violations:
        out.directory = directory
    else:
        shutil.rmtree(directory, ignore_errors=True)
    return out


def _split_known(out: Outcome) -> None:
    still = []
    tags = set(out.scenario.tags)
    for name, text in out.violations:
        why = next(
            (w for (t, n, sub), w in KNOWN.items() if t in tags and n == name and sub in text),
            None,
        )
        if why is None:
            still.append((name, text))
        else:
            out.known.append((name, text, why))
    out.violations = still


def _causes_text(rec: dict[str, Any]) -> str:
    bat = rec.get("battery") or {}
    parts = [f"battery.{c['name']}" for c in bat.get("checks", []) if c["verdict"] != "PASS"]
    if bat.get("integrity"):
        parts.append(f"integrity: {bat['integrity']}")
    parts += [m["name"] for m in rec["measurements"] if m["verdict"] != "PASS"]
    parts += [str(e) for e in rec.get("errors", [])]
    return " | ".join(parts)


def _statistical_only(rec: dict[str, Any]) -> bool:
    """True when every non-PASS item of a FAIL record is a statistical check (and there is
    no error)."""
    if rec["verdict"] != "FAIL" or rec.get("errors"):
        return False
    bat = rec.get("battery") or {}
    if bat.get("integrity"):
        return False
    bad = [f"battery.{c['name']}" for c in bat.get("checks", []) if c["verdict"] != "PASS"]
    bad += [m["name"] for m in rec["measurements"] if m["verdict"] != "PASS"]
    return bool(bad) and all(b.startswith(STATISTICAL) for b in bad)


def check_campaign(
    sc: Scenario,
    out: Outcome,
    rec: dict[str, Any],
    off: dict[str, Any] | None,
    truth: GroundTruth,
    directory: Path,
) -> None:
    """Check the invariants of one finished campaign (its live record ``rec``, the offline
    record ``off``, the device's ground ``truth``); adds to ``out.violations``."""

    def violate(name: str, text: str) -> None:
        out.violations.append((name, text))

    verdict = rec["verdict"]
    out.verdict = verdict
    out.fair = sc.expect == "PASS"
    causes = _causes_text(rec)
    if sc.expect == "PASS" and verdict != "PASS":
        if _statistical_only(rec):
            out.fair_statistical_fail = True
        else:
            violate("verdict", f"a well-behaved device got {verdict}: {causes}")
    elif sc.expect == "NOT_PASS":
        if verdict == "PASS":
            violate("verdict", f"a defective or misbehaving device PASSed ({sc.describe()})")
        elif not any(c in causes for c in sc.causes):
            violate("cause", f"{verdict} without naming {' or '.join(sc.causes)}: {causes}")
    if verdict not in ("PASS", "FAIL", "ERROR"):
        violate("verdict", f"verdict {verdict} (the campaign was not interrupted)")
    # counted: collected + missing = planned, said by the collection measurement
    col = rec["collection"]
    unit = certify.SIZE_KEY[sc.kind]
    meas = {m["name"]: m for m in rec["measurements"]}
    miss = meas.get(f"collection.{unit}_missing")
    if col["requested"] != sc.size:
        violate("counted", f"the record plans {col['requested']} {unit}, asked {sc.size}")
    if col["collected"] is not None:
        lost = sc.size - min(col["collected"], sc.size)
        if col["missing_count"] != lost:
            violate("counted", f"{lost} {unit} missing, the record counts {col['missing_count']}")
        if miss is None or miss["value"] != float(lost):
            violate("counted", f"collection.{unit}_missing does not say {lost}: {miss}")
        elif (miss["verdict"] == "PASS") != (lost == 0):
            violate("counted", f"collection.{unit}_missing is {miss['verdict']} with {lost} lost")
    elif miss is None or miss["verdict"] == "PASS":
        violate("counted", "nothing collected could be analysed, yet no missing count")
    # capture: every part opens with python-can's LogReader and holds the frames counted
    frames = 0
    for name in rec.get("captures", []):
        try:
            with can.LogReader(str(directory / name)) as reader:
                frames += sum(1 for _ in reader)
        except Exception as exc:
            violate("capture", f"can.LogReader cannot read {name}: {type(exc).__name__}: {exc}")
    counted = (rec.get("detail") or {}).get("frames")
    if counted is not None and counted != frames:
        violate("capture", f"LogReader reads {frames} frames, the record counts {counted}")
    # genuine: the shoes analysed are the device's
    if sc.kind == "batch":
        _check_genuine(rec, truth, directory, violate)
    # faults: every requested fault is in the fault table
    if sc.faults:
        got = {f["fault"] for f in rec.get("faults", [])}
        lost_faults = [f for f in sc.faults.split(",") if f not in got]
        if lost_faults and col.get("complete"):
            violate("faults", f"fault(s) {', '.join(lost_faults)} requested but not injected")
    # offline: the same checks from the capture
    if off is None:
        return
    out.offline = off["verdict"]
    a, b = verdict_summary(rec), verdict_summary(off)
    stopped = bool(col.get("missing_count")) or any(
        str(e).startswith("collection:") for e in rec.get("errors", [])
    )
    for key in a:
        if key == "verdict":
            if a[key] != b[key] and not (stopped and b[key] in ("ABORTED", "ERROR")):
                violate("offline", f"live {a[key]}, feltlab analyze {b[key]}")
        elif a[key] != b[key]:
            violate("offline", f"{key} differs: live {_short(a[key])}, offline {_short(b[key])}")


def _short(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) < 300 else text[:300] + "..."


def _check_genuine(
    rec: dict[str, Any], truth: GroundTruth, directory: Path, violate: Callable[[str, str], None]
) -> None:
    from feltlab.rig.certify_capture import read_campaign_capture

    if not rec.get("captures") or not truth.shoes:
        return
    try:
        data = read_campaign_capture(
            [directory / n for n in rec["captures"]], int(rec["profile"]["data"]["device"]["base"])
        )
    except Exception as exc:  # the analysis reads it too: reported there
        violate("capture", f"the capture cannot be decoded: {type(exc).__name__}: {exc}")
        return
    for s in data.shoes:
        real = truth.shoes.get(s.number)
        got = (bytes(s.shoe.codes), bytes(s.shoe.card_decks))
        if real is None:
            violate("genuine", f"{s.label} was never shuffled by the device")
            return
        if real != got:
            violate("genuine", f"{s.label} in the capture differs from the shoe the device made")
            return


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


def calibration(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    """Per kind: the fair campaigns that FAILed only statistical checks against alpha
    (one-sided binomial; a violation below :data:`CALIBRATION_P`)."""
    from scipy import stats

    out = []
    for kind in ("batch", "continuous", "jackpot"):
        fair = [o for o in outcomes if o.fair and o.scenario.kind == kind]
        k = sum(o.fair_statistical_fail for o in fair)
        if not fair:
            continue
        p = float(stats.binom.sf(k - 1, len(fair), ALPHA)) if k else 1.0
        line = (
            f"{kind}: {k} statistical FAIL(s) of {len(fair)} fair campaigns "
            f"(alpha {ALPHA}; P = {p:.3g})"
        )
        out.append(("violation" if p < CALIBRATION_P else "ok", line))
    return out


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
) -> RunSummary:
    """Run campaigns ``first .. first + campaigns - 1`` of run ``seed``; campaign
    directories go under ``out`` (default: a temporary directory, removed), kept only for
    campaigns that broke an invariant (every one with ``keep``).  Raises ValueError for a
    bad count or cap."""
    if campaigns < 1:
        raise ValueError(f"--campaigns must be at least 1, got {campaigns}")
    if shoes_max < 5:
        raise ValueError(f"--shoes-max must be at least 5, got {shoes_max}")
    summary = RunSummary(seed)
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
    if seed < 0 or index < 0:
        raise ValueError(f"--replay takes non-negative SEED:INDEX, got {text!r}")
    return seed, index


__all__ = [
    "ALPHA",
    "KNOWN",
    "Outcome",
    "RunSummary",
    "Scenario",
    "calibration",
    "check_campaign",
    "draw_scenario",
    "explore",
    "parse_replay",
    "run_scenario",
]
