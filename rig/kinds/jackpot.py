"""The jackpot prize panel kind (docs/certification.md, "Jackpot prize panels"): prize draws
authenticated SecOC-style, the prize distribution, latency, failure detection and the Madness
21 fallback of rule 16.12.

The certify and explore stages are imported when a campaign or the explorer calls them, so a
simulated device or a client alone imports neither."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feltlab.rig.clients.panel import JackpotPanelClient
from feltlab.rig.devices.misbehaving import jackpot_misbehaviour
from feltlab.rig.devices.panel import JackpotPanel
from feltlab.rig.kinds import DeviceKind, register_kind

if TYPE_CHECKING:
    from feltlab.rig.certify.analyze import Analysis
    from feltlab.rig.certify.collect import CampaignOptions, Collected
    from feltlab.rig.certify.decode import CaptureData
    from feltlab.rig.certify.faults import FaultRunner
    from feltlab.rig.certify.profile import Profile, Progress
    from feltlab.rig.certify.uncertainty import HostUncertainty
    from feltlab.rig.explore.scenarios import Scenario


def collect(
    opts: CampaignOptions,
    client: Any,
    want: int,
    result: Collected,
    progress: Progress,
    stop: threading.Event,
    *,
    faults: FaultRunner | None,
    directory: Path,
    part: int,
) -> None:
    from feltlab.rig.certify.collect import _collect_jackpot

    _collect_jackpot(opts, client, want, result, progress, stop, directory, part)


def analyze(
    data: CaptureData,
    prof: Profile,
    *,
    alpha: float,
    seed: int,
    directory: Path | None,
    progress: Progress,
    host: HostUncertainty | None,
) -> Analysis:
    from feltlab.rig.certify.analyze import analyze_jackpot

    return analyze_jackpot(
        data, prof, alpha=alpha, directory=directory, progress=progress, host=host
    )


def count(data: CaptureData) -> int:
    """The prize draws in a capture."""
    return len(data.prizes)


def draw_scenario(r: random.Random, base: dict[str, Any], shoes_max: int, small: int) -> Scenario:
    from feltlab.rig.explore.scenarios import _draw_jackpot

    return _draw_jackpot(r, base)


JACKPOT = register_kind(
    DeviceKind(
        name="jackpot",
        label="jackpot prize panel",
        simulator=JackpotPanel,
        client=JackpotPanelClient,
        base=0x300,
        profile="jackpot",
        unit="draws",
        command="jackpot-panel",
        collect=collect,
        analyze=analyze,
        count=count,
        device_keys=frozenset({"prize_table", "key", "draws"}),
        keyed=True,
        misbehave=jackpot_misbehaviour,
        explore_weight=0.25,
        draw_scenario=draw_scenario,
    )
)
