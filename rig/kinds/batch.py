"""The batch shuffler kind (docs/certification.md, "Batch shufflers"): a whole shoe per
SHUFFLE, read over ISO-TP; the randomness battery, timings and fault campaigns.

The certify and explore stages are imported when a campaign or the explorer calls them, so a
simulated device or a client alone imports neither."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.rig.clients.shufflers import BatchShufflerClient
from feltlab.rig.devices.misbehaving import GroundTruth, batch_misbehaviour
from feltlab.rig.devices.shufflers import BatchShuffler
from feltlab.rig.kinds import DeviceKind, lazy

if TYPE_CHECKING:
    from feltlab.rig.certify.decode import CaptureData
    from feltlab.rig.certify.profile import Profile
    from feltlab.rig.explore.scenarios import Scenario


def count(data: CaptureData) -> int:
    """The shoes in a capture."""
    return len(data.shoes)


def simulated_name(prof: Profile, model: str) -> str:
    decks = prof.device.get("decks", 6)
    return f"feltlab simulated {decks}-deck batch shuffler (ChaCha20, model {model})"


def draw_scenario(r: random.Random, base: dict[str, Any], shoes_max: int, small: int) -> Scenario:
    from feltlab.rig.explore.scenarios import draw_batch

    return draw_batch(r, base, shoes_max, small)


def check_truth(
    rec: dict[str, Any], truth: GroundTruth, directory: Path, violate: Callable[[str, str], None]
) -> None:
    """The explorer's ``genuine`` invariant: the shoes analysed are the device's."""
    from feltlab.rig.explore.checks import check_genuine

    check_genuine(rec, truth, directory, violate)


BATCH = DeviceKind(
    name="batch",
    label="batch shuffler",
    simulator=BatchShuffler,
    client=BatchShufflerClient,
    base=0x100,
    profile="batch6",
    unit="shoes",
    command="shuffler",
    # through the campaign module, which re-exports it: a test replaces it there
    collect=lazy("feltlab.rig.certify.collect", "collect_batch"),
    analyze=lazy("feltlab.rig.certify.analyze", "analyze_batch"),
    plan_ahead=lazy("feltlab.rig.certify.analyze", "planned_power_jobs"),
    count=count,
    device_keys=frozenset({"decks", "model", "reports_decks", "penetration"}),
    models=True,
    fault_campaigns=True,
    simulated_name=simulated_name,
    misbehave=batch_misbehaviour,
    explore_weight=0.6,
    draw_scenario=draw_scenario,
    check_truth=check_truth,
)
