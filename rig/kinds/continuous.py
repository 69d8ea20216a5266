"""The continuous shuffler kind (docs/certification.md, "Continuous shufflers"): one card per
DEAL, returned by INSERT; the return-gap test and the card latency.

The certify and explore stages are imported when a campaign or the explorer calls them, so a
simulated device or a client alone imports neither."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from feltlab.rig.clients.shufflers import ContinuousShufflerClient
from feltlab.rig.devices.misbehaving import continuous_misbehaviour
from feltlab.rig.devices.shufflers import ContinuousShuffler
from feltlab.rig.kinds import DeviceKind, lazy

if TYPE_CHECKING:
    from feltlab.rig.certify.decode import CaptureData
    from feltlab.rig.explore.scenarios import Scenario


def count(data: CaptureData) -> int:
    """The deals in a capture."""
    return sum(1 for e in data.card_events if e[0] == "deal")


def draw_scenario(r: random.Random, base: dict[str, Any], shoes_max: int, small: int) -> Scenario:
    from feltlab.rig.explore.scenarios import draw_continuous

    return draw_continuous(r, base)


CONTINUOUS = DeviceKind(
    name="continuous",
    label="continuous shuffler",
    simulator=ContinuousShuffler,
    client=ContinuousShufflerClient,
    base=0x200,
    profile="continuous",
    unit="deals",
    command="shuffler",
    collect=lazy("feltlab.rig.certify.collect", "collect_continuous"),
    analyze=lazy("feltlab.rig.certify.analyze", "analyze_continuous"),
    count=count,
    device_keys=frozenset({"decks", "slots", "buffer"}),
    misbehave=continuous_misbehaviour,
    explore_weight=0.15,
    draw_scenario=draw_scenario,
)
