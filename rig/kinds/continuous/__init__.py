"""The continuous shuffler kind (docs/certification.md, "Continuous shufflers"): one card per
DEAL, returned by INSERT; the return-gap test and the card latency.

The package holds the kind's whole body: its collection loop (``collect.py``), analysis
(``analyze.py``), explorer scenarios (``explore.py``) and misbehaviour
(``misbehaviour.py``); its simulator and client are
:class:`feltlab.rig.devices.shufflers.ContinuousShuffler` and
:class:`feltlab.rig.clients.shufflers.ContinuousShufflerClient`.  The modules of the certify
and explore stages are imported when a campaign or the explorer calls a method, so a
simulated device or a client alone imports neither."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from feltlab.rig.clients.shufflers import ContinuousShufflerClient
from feltlab.rig.devices.shufflers import ContinuousShuffler
from feltlab.rig.kinds.base import DeviceKind
from feltlab.rig.kinds.continuous.misbehaviour import ContinuousMisbehaviour


class ContinuousShufflerKind(DeviceKind):
    """A continuous shuffler: ``--deals``, the return-gap test."""

    name = "continuous"
    label = "continuous shuffler"
    simulator = ContinuousShuffler
    client = ContinuousShufflerClient
    base = 0x200
    profile = "continuous"
    unit = "deals"
    command = "shuffler"
    device_keys = frozenset({"decks", "slots", "buffer"})
    # a return gap spans the part: a part cut short by a crash is collected again
    independent_samples = False
    explore_weight = 0.15

    def collect(
        self,
        opts: Any,
        client: Any,
        want: int,
        result: Any,
        progress: Any,
        stop: Any,
        *,
        faults: Any,
        directory: Path,
        part: int,
    ) -> None:
        from feltlab.rig.kinds.continuous.collect import collect_cards  # start-up: certify stage

        collect_cards(
            opts,
            client,
            want,
            result,
            progress,
            stop,
            faults=faults,
            directory=directory,
            part=part,
        )

    def analyze(
        self,
        data: Any,
        prof: Any,
        *,
        alpha: float,
        seed: int,
        directory: Path | None,
        progress: Any,
        host: Any,
    ) -> Any:
        from feltlab.rig.kinds.continuous.analyze import analyze_continuous  # start-up: certify

        return analyze_continuous(
            data, prof, alpha=alpha, seed=seed, directory=directory, progress=progress, host=host
        )

    def count(self, data: Any) -> int:
        """The deals in a capture."""
        return sum(1 for e in data.card_events if e[0] == "deal")

    def draw_scenario(
        self, r: random.Random, base: dict[str, Any], shoes_max: int, small: int
    ) -> Any:
        from feltlab.rig.kinds.continuous.explore import draw_continuous  # start-up: explore stage

        return draw_continuous(r, base)

    def misbehaviour(self, misbehaviour: Any, truth: Any) -> ContinuousMisbehaviour:
        return ContinuousMisbehaviour(misbehaviour, truth)


CONTINUOUS = ContinuousShufflerKind()
"""The registered instance (the entry point ``continuous``)."""
