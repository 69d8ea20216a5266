"""The continuous shuffler's part of the explorer (:mod:`feltlab.rig.explore.runner`): its
scenarios."""

from __future__ import annotations

import random
from typing import Any

from feltlab.rig.devices.misbehaviour import Misbehave, Misbehaviour
from feltlab.rig.explore.scenarios import Scenario, device_ids, draw_chaos, kind_limits, timing_case


def draw_continuous(r: random.Random, base: dict[str, Any]) -> Scenario:
    """A random continuous-shuffler scenario drawn from ``r`` over ``base``."""
    family = r.choices(("fair", "timing", "chaos", "misbehave"), (0.35, 0.3, 0.25, 0.1))[0]
    size = r.randint(40, 80)  # enough deals for returned cards to be dealt again
    dev = {"decks": r.choice((1, 2)), "slots": r.choice((8, 38))}
    common: dict[str, Any] = {"family": family, "device": dev, "campaign": {"null_replicates": 19}}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS")
    if family == "timing":
        lim = kind_limits("continuous")
        case, value, expect = timing_case(r, lim["per_card_p99"], lim["per_card_max"])
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
        plan, cs = draw_chaos(r, device_ids(0x200))
        return Scenario(
            **base, **common, size=size, expect="ANY", chaos=plan, chaos_seed=cs, tags=("chaos",)
        )
    return Scenario(
        **base,
        **common,
        size=size,
        expect="ANY",
        misbehaviour=Misbehaviour(Misbehave.SPONTANEOUS_REBOOT, r.randint(1, size)),
        tags=("spontaneous_reboot",),
    )
