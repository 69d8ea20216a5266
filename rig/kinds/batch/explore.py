"""The batch shuffler's part of the explorer (:mod:`feltlab.rig.explore.runner`): its scenarios
(fair, a library model, fault campaigns, timings, chaos, misbehaviours) and its ``genuine``
invariant against the device's ground truth."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.faults import ALL_FAULTS
from feltlab.rig.devices.misbehaviour import GroundTruth, Misbehave, Misbehaviour
from feltlab.rig.devices.models import MIXING, parse_model
from feltlab.rig.explore.scenarios import (
    Scenario,
    campaign_rng,
    device_ids,
    draw_chaos,
    kind_limits,
)

STUCK_MIN_SHOES = 60
"""Shoes of 4 decks from which a stuck card is asserted detected (worst adjusted p of 200
simulated campaigns at 60 shoes: 4e-11)."""


FAULT_SHOES = (30, 40, 12)
"""A fault campaign (not drawn short) has ``randint(a, b) + c * faults`` shoes: enough to
measure the heartbeat and the timings outside the fault windows."""


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
    if m.kind in MIXING:
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
    lim = kind_limits("batch")
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
        plan, cs = draw_chaos(r, device_ids())
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
            misbehaviour=Misbehaviour(Misbehave(name), 1, delay),
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
        misbehaviour=Misbehaviour(Misbehave(name), at, delay),
        tags=(name,),
    )


def check_genuine(
    rec: dict[str, Any], truth: GroundTruth, directory: Path, violate: Callable[[str, str], None]
) -> None:
    """Check the record ``rec`` against the device's ground truth ``truth`` (the shoes it
    really dealt), calling ``violate`` on each mismatch."""
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
