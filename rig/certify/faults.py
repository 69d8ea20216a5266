"""Fault campaigns: inject every fault a (simulated, test-mode) batch shuffler supports, and
the bus going away, during a certification campaign (docs/certification.md, "Fault campaign").

For each fault the campaign records when it was injected (host epoch time), when the client
reported it (the first supervision event of the expected kind: ``lost``, ``counter_gap``,
``reboot``, ``transfer_error``, ``payload_error``, ``fault``, ``bus_error``), whether the
campaign recovered (re-collected the shoe in flight) or stopped, and a digest of every shoe
collected before the fault.  The trials are appended to ``faults.jsonl`` in the campaign
directory as they end; the analysis (live and offline alike) re-reads the capture, checks that
every shoe collected before each fault is still there and identical, judges the detection
latency against the profile's ``<fault>_detection_max`` limit and leaves the fault windows out
of the timing and heartbeat measurements.

Library code: it logs, never prints.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from feltlab.inputs import read_text_regular
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.measures import Measurement, within
from feltlab.rig.errors import RigError
from feltlab.rig.protocol.codec import FaultCode

log = logging.getLogger(__name__)

#: the faults of a batch shuffler campaign, in the order they are injected, and the client
#: events that report each (the first of them after the injection is its detection).
FAULT_EVENTS: dict[str, tuple[str, ...]] = {
    "stop_heartbeats": ("lost",),
    "silence_mid_transfer": ("transfer_error",),
    "corrupt_frame": ("payload_error",),
    "jump_counter": ("counter_gap",),
    "reboot": ("reboot",),
    "jam": ("fault",),
    "bus_loss": ("bus_error", "lost"),
}
ALL_FAULTS = tuple(FAULT_EVENTS)
FAULTS_FILE = "faults.jsonl"


class FaultPlanError(RigError, ValueError):
    """A fault plan (``--faults`` or the profile's ``[faults]`` table) names an unknown
    fault or has a bad value; the message names it."""


@dataclass(frozen=True)
class FaultPlan:
    """Which faults to inject (in :data:`ALL_FAULTS` order), how long the heartbeats stay
    silent and the bus stays away (seconds), and how long to wait for the device to come
    back before the campaign stops with ERROR."""

    faults: tuple[str, ...]
    heartbeat_silence: float = 0.6
    bus_loss: float = 0.5
    recovery_timeout: float = 5.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_fault_names(value: Any, where: str = "--faults") -> tuple[str, ...]:
    """``"all"``, ``"reboot,jam"`` or a list of names -> fault names in injection order.
    Raises :class:`FaultPlanError` for an unknown name."""
    if isinstance(value, str):
        names = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, list | tuple):
        names = [str(v) for v in value]
    else:
        raise FaultPlanError(f"{where}: give 'all' or a list of faults, got {value!r}")
    if names == ["all"]:
        return ALL_FAULTS
    bad = [n for n in names if n not in FAULT_EVENTS]
    if bad or not names:
        raise FaultPlanError(
            f"{where}: unknown fault(s) {', '.join(bad) or '(none)'}; choose 'all' or "
            f"from {', '.join(ALL_FAULTS)}"
        )
    return tuple(n for n in ALL_FAULTS if n in names)


def fault_plan(table: Any, override: str | None = None) -> FaultPlan | None:
    """The plan of a profile's ``[faults]`` table (None if absent), with ``--faults``
    (``override``) replacing its ``inject`` list.  Raises :class:`FaultPlanError`."""
    if table is None and override is None:
        return None
    tab = dict(table or {})
    if override is not None:
        tab["inject"] = override
    if "inject" not in tab:
        return None
    names = parse_fault_names(tab.pop("inject"), "--faults" if override else "[faults] inject")
    kw: dict[str, float] = {}
    for key in ("heartbeat_silence", "bus_loss", "recovery_timeout"):
        if key in tab:
            v = tab.pop(key)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 60:
                raise FaultPlanError(f"[faults] {key} must be seconds in (0, 60], got {v!r}")
            kw[key] = float(v)
    if tab:
        raise FaultPlanError(
            f"[faults]: unknown key(s) {', '.join(sorted(tab))}; allowed: inject, "
            "heartbeat_silence, bus_loss, recovery_timeout"
        )
    return FaultPlan(names, **kw)


def shoes_needed(faults: int) -> int:
    """Shoes a fault campaign of ``faults`` faults needs: one per fault and a clean shoe
    before the first and after the last."""
    return faults + 2 if faults else 0


def shoe_digest(h: Any, codes: Any, decks: Any) -> None:
    """Add one shoe (its card codes and deck indexes, in order) to the running SHA-256."""
    h.update(bytes(codes) + b"|" + bytes(decks) + b";")


@dataclass
class FaultTrial:
    """One injected fault (times are host epoch seconds)."""

    fault: str
    sample: int
    injected_at: float
    shoes_before: int
    digest_before: str
    detected_at: float | None = None
    detected_by: str | None = None
    recovered_at: float | None = None
    ended_at: float | None = None
    outcome: str = "stopped"
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def latency(self) -> float | None:
        return None if self.detected_at is None else self.detected_at - self.injected_at


class FaultRunner:
    """Injects a plan's faults into a live batch shuffler campaign, spread evenly over the
    part's samples, and records each trial (see module doc).  ``done`` names faults already
    run in an earlier part of a resumed campaign (not injected again)."""

    def __init__(
        self,
        plan: FaultPlan,
        client: Any,
        want: int,
        directory: Path,
        *,
        have: int = 0,
        done: Iterable[str] = (),
        previous: Iterable[Any] = (),
    ) -> None:
        self.plan = plan
        self.client = client
        self.directory = directory
        self.have = have
        todo = [f for f in plan.faults if f not in set(done)]
        n = len(todo)
        need = shoes_needed(n)
        if n and want < need:
            raise FaultPlanError(
                f"the fault plan still has {n} fault(s) to inject, one per shoe with a clean "
                f"shoe before the first and after the last: that needs at least {need} shoes, "
                f"and {want} are left; give --shoes {have + need} or fewer faults"
            )
        # one fault per shoe, spread evenly over shoes 1 .. want-2: every fault is injected
        self.schedule = {1 + (k * (want - 2)) // max(n, 1): f for k, f in enumerate(todo)}
        assert len(self.schedule) == n, "fault positions must be distinct"
        self.pending: list[FaultTrial] = []
        self.trials: list[FaultTrial] = []
        self.digest = hashlib.sha256()
        # a resumed campaign: the shoes of the earlier parts come first in the digest
        for s in previous:
            shoe_digest(self.digest, s.shoe.codes, s.shoe.card_decks)
        self.collected = 0

    def shoe_collected(self, codes: Any, decks: Any) -> None:
        shoe_digest(self.digest, codes, decks)
        self.collected += 1

    def before_sample(self, i: int) -> None:
        fault = self.schedule.pop(i, None)
        if fault is not None:
            self.pending.append(self._inject(fault, i))

    def _inject(self, fault: str, i: int) -> FaultTrial:
        c = self.client
        shoes = self.have + self.collected
        digest = self.digest.hexdigest()
        log.info("fault campaign: injecting %s before sample %d", fault, i)
        if fault == "bus_loss":
            t = c.clock.wall()
            c.node.bus.unplug(self.plan.bus_loss)
            detail: dict[str, Any] = {"seconds": self.plan.bus_loss}
        else:
            value = int(self.plan.heartbeat_silence * 1000) if fault == "stop_heartbeats" else 0
            c.inject_fault(fault, value)
            t = c.clock.wall()
            detail = {"value": value}
        return FaultTrial(fault, i, t, shoes, digest, detail=detail)

    def _detection(self, trial: FaultTrial) -> Any:
        kinds = FAULT_EVENTS[trial.fault]
        for ev in list(self.client.events):
            if ev.kind not in kinds or ev.timestamp < trial.injected_at:
                continue
            if ev.kind == "fault" and ev.detail.get("code") != FaultCode.JAM:
                continue
            return ev
        return None

    def after_sample(self, *, stopped: bool = False, limits: dict[str, float]) -> None:
        """End the pending trials: wait (bounded) for their detection event and for the
        device to be back, then append them to ``faults.jsonl``."""
        for trial in self.pending:
            limit = limits.get(f"{trial.fault}_detection_max")
            horizon = (limit if limit is not None else 1.0) * 2 + 1.0
            if trial.fault in ("stop_heartbeats", "bus_loss"):
                horizon += self.plan.heartbeat_silence + self.plan.bus_loss
            clock = self.client.clock
            left = trial.injected_at + horizon - clock.wall()
            ev = clock.wait(functools.partial(self._detection, trial), left)
            if ev is not None:
                trial.detected_at, trial.detected_by = ev.timestamp, ev.kind
            clock.wait(lambda: not self.client.lost, self.plan.recovery_timeout)
            recovered = [
                e.timestamp
                for e in list(self.client.events)
                if e.kind == "recovered" and e.timestamp >= trial.injected_at
            ]
            trial.recovered_at = recovered[0] if recovered else None
            trial.outcome = "stopped" if stopped or self.client.lost else "recovered"
            trial.ended_at = self.client.clock.wall()
            self.trials.append(trial)
            with (self.directory / FAULTS_FILE).open("a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(trial)) + "\n")
                f.flush()
        self.pending = []


def read_trials(directory: Path | None) -> list[dict[str, Any]]:
    """The trials recorded in ``directory/faults.jsonl`` (a torn last line is skipped)."""
    if directory is None:
        return []
    text = read_text_regular(directory / FAULTS_FILE, "fault trials", 64 << 20, error=RigError)
    out: list[dict[str, Any]] = []
    for line in (text or "").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            log.warning("%s: a damaged line skipped", FAULTS_FILE)
    return out


#: faults that disturb the heartbeat itself (its gaps there are not judged)
HEARTBEAT_FAULTS = frozenset({"stop_heartbeats", "reboot", "bus_loss", "jump_counter"})


def fault_windows(
    trials: Sequence[dict[str, Any]], period: float, *, heartbeat: bool = False
) -> list[tuple[float, float]]:
    """The time spans the faults disturbed, from injection to the trial's end (its
    detection, recovery, and the sample in flight collected again), plus one heartbeat
    period for faults of the heartbeat: timing samples inside them are not judged.  With
    ``heartbeat``: only the faults that disturb the heartbeat (its intervals)."""
    out = []
    for t in trials:
        hb = t["fault"] in HEARTBEAT_FAULTS
        if heartbeat and not hb:
            continue
        ends = [t.get(k) for k in ("ended_at", "detected_at", "recovered_at")]
        end = max([e for e in ends if e is not None] or [t["injected_at"]])
        out.append((t["injected_at"] - 0.001, end + (period if hb else 0.0)))
    return out


def fault_results(
    trials: Sequence[dict[str, Any]],
    shoes: Sequence[Any],
    limits: dict[str, float],
) -> tuple[list[dict[str, Any]], list[Measurement]]:
    """The fault results table of the record and one measurement per fault (detection
    latency against ``<fault>_detection_max``; FAIL when undetected, late, or when a shoe
    collected before the fault is missing or changed in the capture)."""
    running = hashlib.sha256()
    prefix: list[str] = [running.hexdigest()]
    for s in shoes:
        shoe_digest(running, s.shoe.codes, s.shoe.card_decks)
        prefix.append(running.hexdigest())
    rows: list[dict[str, Any]] = []
    ms: list[Measurement] = []
    for t in trials:
        name = t["fault"]
        limit = limits.get(f"{name}_detection_max")
        n = int(t["shoes_before"])
        intact = n < len(prefix) and prefix[n] == t["digest_before"]
        latency = None if t.get("detected_at") is None else t["detected_at"] - t["injected_at"]
        m = within(
            f"fault.{name}.detection",
            latency,
            "s",
            None,
            limit,
            detected_by=t.get("detected_by"),
            outcome=t.get("outcome"),
            shoes_before=n,
            data_intact=intact,
        )
        verdict = m.verdict
        problems = []
        if latency is None:
            problems.append("not detected")
        if not intact:
            problems.append(f"the {n} shoes collected before it are not all intact in the capture")
        if problems and verdict is not Verdict.FAIL:
            verdict = Verdict.FAIL
            m = Measurement(m.name, m.value, m.unit, m.low, m.high, verdict, m.detail)
        ms.append(m)
        rows.append(
            {
                "fault": name,
                "injected_at": t["injected_at"],
                "detected_at": t.get("detected_at"),
                "detected_by": t.get("detected_by"),
                "latency": latency,
                "limit": limit,
                "outcome": t.get("outcome"),
                "recovered_at": t.get("recovered_at"),
                "shoes_before": n,
                "data_intact": intact,
                "verdict": str(verdict),
                "problems": problems,
            }
        )
    return rows, ms


__all__ = [
    "ALL_FAULTS",
    "FAULT_EVENTS",
    "HEARTBEAT_FAULTS",
    "FaultPlan",
    "FaultPlanError",
    "FaultRunner",
    "fault_plan",
    "fault_results",
    "fault_windows",
    "parse_fault_names",
    "read_trials",
]
