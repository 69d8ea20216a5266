"""The explorer's constants and scenario drawing (:mod:`feltlab.rig.explore.runner`): what each
campaign runs, drawn from a generator seeded by (seed, campaign index)."""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from feltlab.rig.bus.chaos import ChaosPlan
from feltlab.rig.certify.faults import ALL_FAULTS
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.devices.misbehaving import Misbehaviour
from feltlab.rig.devices.models import parse_model
from feltlab.rig.kinds import kinds

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


def _limits(kind: str) -> dict[str, float]:
    return load_profile(None, kind).limits


def draw_scenario(seed: int, index: int, *, shoes_max: int = 64) -> Scenario:
    """The scenario of campaign ``index`` of run ``seed`` (see the module doc).
    ``shoes_max`` (>= 5) caps a batch campaign's shoes."""
    r = campaign_rng(seed, index)
    explored = [k for k in kinds() if k.draw_scenario is not None and k.explore_weight > 0]
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
    assert dk.draw_scenario is not None
    scenario: Scenario = dk.draw_scenario(r, base, shoes_max, small)
    return scenario


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


def _library_draws(r: random.Random, decks: int) -> tuple[str, ...]:
    """The shuffle models a ``model`` campaign draws from (one of them is chosen): the
    library's flawed machines (docs/certification.md, "The library of shuffle models"), with
    parameters where the flaw is strong, weak or undetectable at the explorer's sizes.  The
    ground truth is the model itself: ``parse_model(name).uniform`` is False for every one."""
    n = 52 * decks
    return (
        f"riffle:k={r.randint(1, 3)}",
        f"shelf:m={r.randint(2, 40)}",
        f"stuck:pos={r.randrange(n)}",
        f"missing:pos={r.randrange(n)}",
        f"duplicate:pos={r.randrange(n)}",
        "biased",
        f"overhand:passes={r.randint(1, 3)},cut={r.randint(10, 50)}",
        f"strip:cuts={r.randint(1, 8)},passes={r.randint(1, 2)}",
        f"position-bias:pos={r.randrange(n)},stay={r.randint(20, 100)},width={r.randint(0, 2)}",
        f"modulo:bits={r.randint(8, 15)}",
        f"lcg:shift={r.choice((0, 16))}",
        f"short-seed:bits={r.randint(1, 4)}",
        f"reboot:every={r.randint(1, 12)}",
    )


def _detected(model: str, size: int, decks: int) -> bool:
    """True where the battery has the power to reject ``model`` in ``size`` shoes of
    ``decks`` decks whatever the seed (measured: docs/certification.md, "Detection is
    asserted only where the sample has the power"): the mixing models at these few passes;
    a stuck card from STUCK_MIN_SHOES shoes of 4 decks; a shoe sure to repeat (a reboot
    within the campaign, or more shoes than a short seed's 2^bits), which the successive
    shoes check catches."""
    m = parse_model(model)
    if m.kind in ("riffle", "shelf", "overhand", "strip"):
        return True
    if m.kind == "stuck":
        return size >= STUCK_MIN_SHOES and decks == 4
    if m.kind == "reboot":
        return m.settings["every"] < size
    if m.kind == "short-seed":
        return size > 1 << m.settings["bits"]
    return False


def draw_batch(r: random.Random, base: dict[str, Any], shoes_max: int, small: int) -> Scenario:
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
        model = r.choice(_library_draws(r, decks))
        kind = model.split(":")[0]
        causes: tuple[str, ...]
        if kind == "stuck" and shoes_max >= STUCK_MIN_SHOES and r.random() < 0.5:
            size = r.randint(STUCK_MIN_SHOES, shoes_max)
        if kind in ("missing", "duplicate"):
            expect, causes = "NOT_PASS", ("integrity",)
        elif _detected(model, size, decks):
            expect, causes = "NOT_PASS", ("battery.",)
        else:  # a sample without the power for this flaw: a known false negative
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


def _timing_case(
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


def draw_continuous(r: random.Random, base: dict[str, Any]) -> Scenario:
    """A random continuous-shuffler scenario drawn from ``r`` over ``base``."""
    family = r.choices(("fair", "timing", "chaos", "misbehave"), (0.35, 0.3, 0.25, 0.1))[0]
    size = r.randint(40, 80)  # enough deals for returned cards to be dealt again
    dev = {"decks": r.choice((1, 2)), "slots": r.choice((8, 38))}
    common: dict[str, Any] = {"family": family, "device": dev, "campaign": {"null_replicates": 19}}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS")
    if family == "timing":
        lim = _limits("continuous")
        case, value, expect = _timing_case(r, lim["per_card_p99"], lim["per_card_max"])
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


def draw_jackpot(r: random.Random, base: dict[str, Any]) -> Scenario:
    """A random jackpot-panel scenario drawn from ``r`` over ``base``."""
    family = r.choices(("fair", "timing", "chaos", "misbehave"), (0.35, 0.25, 0.25, 0.15))[0]
    size = r.randint(20, 60)
    auth = r.random() < 0.5
    common: dict[str, Any] = {"family": family, "authenticate": auth}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS")
    if family == "timing":
        lim = _limits("jackpot")
        case, value, expect = _timing_case(
            r, lim["button_to_result_p99"], lim["button_to_result_max"]
        )
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
