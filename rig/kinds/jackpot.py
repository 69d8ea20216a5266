"""The jackpot prize panel kind (docs/certification.md, "Jackpot prize panels"): prize draws
authenticated SecOC-style, the prize distribution, latency, failure detection and the Madness
21 fallback of rule 16.12.

The certify and explore stages are imported when a campaign or the explorer calls them, so a
simulated device or a client alone imports neither."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from feltlab.rig.clients.panel import JackpotPanelClient
from feltlab.rig.devices.misbehaving import jackpot_misbehaviour
from feltlab.rig.devices.panel import JackpotPanel
from feltlab.rig.kinds import DeviceKind, lazy

if TYPE_CHECKING:
    from feltlab.rig.certify.decode import CaptureData
    from feltlab.rig.explore.scenarios import Scenario


def count(data: CaptureData) -> int:
    """The prize draws in a capture."""
    return len(data.prizes)


def draw_scenario(r: random.Random, base: dict[str, Any], shoes_max: int, small: int) -> Scenario:
    from feltlab.rig.explore.scenarios import draw_jackpot

    return draw_jackpot(r, base)


JACKPOT = DeviceKind(
    name="jackpot",
    label="jackpot prize panel",
    simulator=JackpotPanel,
    client=JackpotPanelClient,
    base=0x300,
    profile="jackpot",
    unit="draws",
    command="jackpot-panel",
    collect=lazy("feltlab.rig.certify.collect", "collect_jackpot"),
    analyze=lazy("feltlab.rig.certify.analyze", "analyze_jackpot"),
    count=count,
    device_keys=frozenset({"prize_table", "key", "draws"}),
    keyed=True,
    misbehave=jackpot_misbehaviour,
    explore_weight=0.25,
    draw_scenario=draw_scenario,
)
