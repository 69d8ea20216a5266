"""The security pack's runner: every check against one :class:`Target`, in an order that
keeps them apart (the update checks, the key checks, the command checks, the leakage
collection and test, the probes), the time each took, and the pack's verdict: FAIL if any
check fails, PASS if every check ran and passed, else INCOMPLETE."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from feltlab.rig.protocol.codec import Channel, Frame, Opcode, State
from feltlab.rig.security.commands import command_checks
from feltlab.rig.security.findings import Finding, Verdict, finding
from feltlab.rig.security.host import LabHost
from feltlab.rig.security.leakage import ALPHA, PERMUTATIONS, LeakResult, leak_test, power
from feltlab.rig.security.probe import probe_check
from feltlab.rig.security.seed_check import seed_check
from feltlab.rig.security.targets import Target
from feltlab.rig.security.update import shared_key_check, truncated_check, update_checks

#: shuffles observed by the leakage checks (a run's default)
SHUFFLES = 300
#: the stated leak whose power is reported: a feature carrying the first card's rank in
#: this fraction of the shuffles
POWER_LEAK_FRACTION = 0.25
#: features whose information would be a timing side channel
TIMING_FEATURES = ("shuffle duration (ms)", "Ack[SHUFFLE].Value")


@dataclass
class PackResult:
    """A run: its findings, the verdict, the target's description, figures and timings."""

    findings: list[Finding]
    target: str
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        verdicts = {f.verdict for f in self.findings}
        if Verdict.FAIL in verdicts:
            return "FAIL"
        return "PASS" if verdicts == {Verdict.PASS} else "INCOMPLETE"


def _features(
    host: LabHost, frames: list[Frame], extra: list[tuple[int, bytes]]
) -> dict[str, float]:
    """One shuffle's features: each decoded signal's last value (Acks by the opcode they
    answer), undecoded frames' bytes, and the shuffle's duration."""
    out: dict[str, float] = {}
    ack_t = ready_t = None
    for f in frames:
        if f.name == "Ack":
            op = f.signals["Opcode"]
            label = Opcode(op).name if op in Opcode._value2member_map_ else f"0x{op:02X}"
            key = f"Ack[{label}]"
            if op == Opcode.SHUFFLE and ack_t is None:
                ack_t = f.timestamp
        else:
            key = f.name
        if f.name == "Status" and f.signals["State"] == State.READY and ready_t is None:
            ready_t = f.timestamp
        for s, v in f.signals.items():
            out[f"{key}.{s}"] = float(v)
    for aid, data in extra:
        for i, b in enumerate(data):
            out[f"0x{aid:X}[{i}]"] = float(b)
    if ack_t is not None and ready_t is not None:
        out["shuffle duration (ms)"] = round((ready_t - ack_t) * 1000, 3)
    return out


def collect_shuffles(host: LabHost, n: int) -> tuple[list[dict[str, float]], np.ndarray]:
    """``n`` shuffles read through the declared shoe report: each shuffle's features (all
    the lab received but the SHOE channel) and the shoes' first three ranks (n x 3)."""
    t = host.target
    skip = {t.base + Channel.SHOE, t.base + Channel.SHOE + 1}
    if t.second_base is not None:
        skip |= {t.second_base + i for i in range(0x10)}
    rows, ranks = [], []
    for _ in range(n):
        mark = len(host.frames)
        host.client.shuffle()
        shoe = host.client.read_shoe()
        seen = [s for s in host.frames[mark:] if s.arbitration_id not in skip]
        decoded = host.decoded(seen)
        extra = [(s.arbitration_id, s.data) for s in seen if not host.decoded([s])]
        rows.append(_features(host, decoded, extra))
        ranks.append([int(c) // 4 for c in shoe.codes[:3]])
    return rows, np.asarray(ranks)


def leakage_checks(
    host: LabHost, n: int, *, power_replicates: int = 40
) -> tuple[list[Finding], dict[str, Any]]:
    """leak.bus and leak.timing from ``n`` shuffles: one maxT family over every feature and
    the first three ranks; the timing features judge leak.timing, the others leak.bus."""
    rows, ranks = collect_shuffles(host, n)
    names = sorted({k for r in rows for k in r})
    feats = {k: np.array([r.get(k, -1.0) for r in rows]) for k in names}
    targets = {f"rank of card {j + 1}": ranks[:, j] for j in range(3)}
    res: LeakResult = leak_test(feats, targets)
    live = len(names) - len(res.constant)
    pw = power(n, max(live, 1), POWER_LEAK_FRACTION, replicates=power_replicates)
    stated = (
        f"pass mark: every feature's family-adjusted p >= {ALPHA} (maxT, {PERMUTATIONS} "
        f"permutations, {live} varying features x 3 ranks, {n} shuffles); power "
        f"{pw:.2f} (simulated, {power_replicates} runs) against a feature carrying the first "
        f"card's rank in {POWER_LEAK_FRACTION:.0%} of shuffles"
    )

    def verdict(name: str, pick: Callable[[str], bool]) -> Finding:
        mine = [p for p in res.pairs if pick(p.feature)]
        leaks = [p for p in mine if p.p_adjusted < ALPHA]
        lines = [stated]
        for p in leaks or mine[:3]:
            lines.append(
                f"{'LEAK ' if p in leaks else ''}{p.feature} vs {p.target}: MI {p.mi_bits:.3f} "
                f"bits (bias-corrected {p.mi_corrected:.3f}, 95% interval {p.interval[0]:.3f}-"
                f"{p.interval[1]:.3f}), adjusted p {p.p_adjusted:.4f}"
            )
        return finding(
            name,
            bool(leaks),
            lines,
            features=len(mine),
            leaks=[p.feature for p in leaks],
            power=pw,
        )

    timing = verdict("leak.timing", lambda f: f in TIMING_FEATURES)
    bus = verdict("leak.bus", lambda f: f not in TIMING_FEATURES)
    figures = {
        "shuffles": n,
        "features": len(names),
        "constant_features": res.constant,
        "alpha": ALPHA,
        "permutations": PERMUTATIONS,
        "power": pw,
        "power_leak_fraction": POWER_LEAK_FRACTION,
        "pairs": [
            {
                "feature": p.feature,
                "target": p.target,
                "levels": p.levels,
                "mi_bits": p.mi_bits,
                "mi_corrected": p.mi_corrected,
                "interval": list(p.interval),
                "p_adjusted": p.p_adjusted,
            }
            for p in res.pairs[:20]
        ],
    }
    return [bus, timing], figures


STEPS = ("update", "keys", "commands", "probes", "seed", "leakage")
"""The pack's steps, in the order they run."""


def run_pack(
    target: Target,
    *,
    shuffles: int = SHUFFLES,
    steps: Collection[str] = STEPS,
    capture: Path | None = None,
) -> PackResult:
    """Every check of the pack against ``target`` (or those of ``steps``, a subset of
    :data:`STEPS`), the bus recorded in ``capture`` (a .blf) when given.  Raises ValueError
    for an unknown step."""
    unknown = set(steps) - set(STEPS)
    if unknown:
        raise ValueError(f"unknown step(s) {sorted(unknown)}; choose from {', '.join(STEPS)}")
    host = LabHost(target, capture=capture)
    out = PackResult([], target.description)
    start = host.clock.now()
    try:
        host.client.wait_online(3.0)
        plan: list[tuple[str, Callable[[], list[Finding]]]] = [
            ("update", lambda: update_checks(host)),
            ("keys", lambda: [truncated_check(host), shared_key_check(host)]),
            ("commands", lambda: command_checks(host)),
            ("probes", lambda: [probe_check(host)]),
            ("seed", lambda: [seed_check(host)]),
        ]
        for name, step in plan:
            if name in steps:
                t0 = time.perf_counter()
                out.findings.extend(step())
                out.seconds[name] = time.perf_counter() - t0
        if "leakage" in steps:
            t0 = time.perf_counter()
            leak, figures = leakage_checks(host, shuffles)
            out.findings.extend(leak)
            out.figures["leakage"] = figures
            out.seconds["leakage"] = time.perf_counter() - t0
        out.figures["bus_seconds"] = host.clock.now() - start
        out.figures["frames_received"] = len(host.frames)
    finally:
        host.close()
    order = {n: i for i, n in enumerate(_ORDER)}
    out.findings.sort(key=lambda f: order.get(f.check.name, 99))
    return out


_ORDER = (
    "update.tampered",
    "update.rollback",
    "update.other-device",
    "mac.truncated",
    "key.shared",
    "command.unauthenticated",
    "command.forged",
    "command.replayed",
    "command.reordered",
    "leak.bus",
    "leak.timing",
    "probe.undeclared",
    "seed.predictable",
)

__all__ = ["SHUFFLES", "STEPS", "PackResult", "collect_shuffles", "leakage_checks", "run_pack"]
