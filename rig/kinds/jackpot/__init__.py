"""The jackpot prize panel kind (docs/certification.md, "Jackpot prize panels"): prize draws
authenticated SecOC-style, the prize distribution, latency, failure detection and the Madness
21 fallback of rule 16.12.

The package holds the kind's whole body: its collection loop (``collect.py``), analysis
(``analyze.py`` and its checks, ``checks.py``), explorer scenarios (``explore.py``) and
misbehaviours (``misbehaviour.py``); its simulator and client are
:class:`feltlab.rig.devices.panel.JackpotPanel` and
:class:`feltlab.rig.clients.panel.JackpotPanelClient`.  The modules of the certify and
explore stages are imported when a campaign or the explorer calls a method, so a simulated
device or a client alone imports neither."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from feltlab.rig.clients.panel import JackpotPanelClient
from feltlab.rig.devices.panel import JackpotPanel
from feltlab.rig.kinds.base import DeviceKind
from feltlab.rig.kinds.jackpot.misbehaviour import JackpotMisbehaviour


class JackpotPanelKind(DeviceKind):
    """A jackpot prize panel: ``--draws``, a SecOC key in its profile."""

    name = "jackpot"
    label = "jackpot prize panel"
    simulator = JackpotPanel
    client = JackpotPanelClient
    base = 0x300
    profile = "jackpot"
    unit = "draws"
    command = "jackpot-panel"
    device_keys = frozenset({"prize_table", "key", "draws"})
    keyed = True
    explore_weight = 0.25

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
        from feltlab.rig.kinds.jackpot.collect import collect_draws  # start-up: the certify stage

        collect_draws(
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
        from feltlab.rig.kinds.jackpot.analyze import analyze_jackpot  # start-up: the certify stage

        return analyze_jackpot(
            data, prof, alpha=alpha, seed=seed, directory=directory, progress=progress, host=host
        )

    def count(self, data: Any) -> int:
        """The prize draws in a capture."""
        return len(data.prizes)

    def draw_scenario(
        self, r: random.Random, base: dict[str, Any], shoes_max: int, small: int
    ) -> Any:
        from feltlab.rig.kinds.jackpot.explore import draw_jackpot  # start-up: the explore stage

        return draw_jackpot(r, base)

    def misbehaviour(self, misbehaviour: Any, truth: Any) -> JackpotMisbehaviour:
        return JackpotMisbehaviour(misbehaviour, truth)


JACKPOT = JackpotPanelKind()
"""The registered instance (the entry point ``jackpot``)."""
