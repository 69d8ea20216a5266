"""The explorer's constants and scenario drawing (:mod:`feltlab.rig.explore.runner`): what each
campaign runs, drawn from a generator seeded by (seed, campaign index)."""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from feltlab.rig.bus.chaos import ChaosPlan
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.devices.misbehaviour import Misbehaviour
from feltlab.rig.kinds import kinds

ALPHA = 0.01
"""The significance level of every explored campaign (the profiles' default)."""

CALIBRATION_P = 1e-6
"""A run's fair statistical FAIL count is a violation when its one-sided binomial p-value
against ``ALPHA`` is below this."""

STATISTICAL = ("battery.", "prize_distribution.p_value", "return_gap.p_value")
"""Checks whose FAIL a fair device reaches with probability alpha (calibrated)."""


KEY_HEX = "5f0e1d2c3b4a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
"""The explorer's (public, test-only) panel key for authenticated jackpot campaigns."""

KNOWN: dict[tuple[str, str, str], str] = {}
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


def kind_limits(kind: str) -> dict[str, float]:
    return load_profile(None, kind).limits


def draw_scenario(seed: int, index: int, *, shoes_max: int = 64) -> Scenario:
    """The scenario of campaign ``index`` of run ``seed`` (see the module doc).
    ``shoes_max`` (>= 5) caps a batch campaign's shoes."""
    r = campaign_rng(seed, index)
    explored = [k for k in kinds() if k.explore_weight > 0]
    dk = r.choices(explored, [k.explore_weight for k in explored])[0]
    kind = dk.name
    cseed = r.getrandbits(62)
    base = {
        "seed": seed,
        "index": index,
        "kind": kind,
        "campaign_seed": cseed,
        "shoes_max": shoes_max,
    }
    small = min(shoes_max, 12)
    scenario: Scenario = dk.draw_scenario(r, base, shoes_max, small)
    return scenario


def draw_chaos(r: random.Random, ids: tuple[int, ...]) -> tuple[ChaosPlan, int]:
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


def device_ids(base: int = 0x100) -> tuple[int, ...]:
    return tuple(range(base, base + 8)) + tuple(range(base + 0x10, base + 0x16))


def timing_case(
    r: random.Random,
    p99: float,
    mx: float,
    *,
    at: tuple[float, float] = (0.9, 0.97),
    beyond_max: tuple[float, float] = (1.1, 1.6),
) -> tuple[str, float, str]:
    """(case, value, expect) of a device latency drawn within, at, or beyond its declared
    p99 and max limits (seconds): within 40 % of p99 PASSes, at p99 may go either way,
    beyond p99 (but under the max) or beyond the max must not PASS."""
    case = r.choice(("within", "at", "beyond_p99", "beyond_max"))
    value = {
        "within": r.uniform(0.0, 0.4 * p99),
        "at": p99 * r.uniform(*at),
        "beyond_p99": r.uniform(1.3 * p99, 0.9 * mx),
        "beyond_max": r.uniform(beyond_max[0] * mx, beyond_max[1] * mx),
    }[case]
    return case, value, {"within": "PASS", "at": "ANY"}.get(case, "NOT_PASS")
