"""The jackpot prize panel's part of the explorer (:mod:`feltlab.rig.explore.runner`): its
scenarios."""

from __future__ import annotations

import random
from typing import Any

from feltlab.rig.devices.misbehaviour import Misbehave, Misbehaviour
from feltlab.rig.explore.scenarios import Scenario, device_ids, draw_chaos, kind_limits, timing_case


def draw_jackpot(r: random.Random, base: dict[str, Any]) -> Scenario:
    """A random jackpot-panel scenario drawn from ``r`` over ``base``."""
    family = r.choices(("fair", "timing", "chaos", "misbehave"), (0.35, 0.25, 0.25, 0.15))[0]
    size = r.randint(20, 60)
    auth = r.random() < 0.5
    common: dict[str, Any] = {"family": family, "authenticate": auth}
    if family == "fair":
        return Scenario(**base, **common, size=size, expect="PASS")
    if family == "timing":
        lim = kind_limits("jackpot")
        case, value, expect = timing_case(
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
        plan, cs = draw_chaos(r, device_ids(0x300))
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
        misbehaviour=Misbehaviour(Misbehave(name), r.randint(3, size)),
        tags=(name,),
    )
