"""The batch shuffler kind (docs/certification.md, "Batch shufflers"): a whole shoe per
SHUFFLE, read over ISO-TP; the randomness battery, timings and fault campaigns.

The package holds the kind's whole body: its collection loop (``collect.py``), analysis
(``analyze.py``), explorer scenarios and invariant (``explore.py``) and misbehaviours
(``misbehaviour.py``); its simulator and client are
:class:`feltlab.rig.devices.shufflers.BatchShuffler` and
:class:`feltlab.rig.clients.shufflers.BatchShufflerClient`.  The modules of the certify and
explore stages are imported when a campaign or the explorer calls a method (each import says
so), so a simulated device or a client alone imports neither."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from feltlab.rig.clients.shufflers import BatchShufflerClient
from feltlab.rig.devices.shufflers import BatchShuffler
from feltlab.rig.kinds.base import DeviceKind
from feltlab.rig.kinds.batch.misbehaviour import BatchMisbehaviour


class BatchShufflerKind(DeviceKind):
    """A batch shuffler: ``--shoes``, shuffle models, fault campaigns."""

    name = "batch"
    label = "batch shuffler"
    simulator = BatchShuffler
    client = BatchShufflerClient
    base = 0x100
    profile = "batch6"
    unit = "shoes"
    command = "shuffler"
    device_keys = frozenset({"decks", "model", "reports_decks", "penetration", "seeding"})
    models = True
    fault_campaigns = True
    explore_weight = 0.6

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
        from feltlab.rig.kinds.batch.collect import collect_shoes  # start-up: the certify stage

        collect_shoes(
            opts, client, want, result, progress, stop, faults, directory=directory, part=part
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
        from feltlab.rig.kinds.batch.analyze import analyze_batch  # start-up: the certify stage

        return analyze_batch(
            data, prof, alpha=alpha, seed=seed, directory=directory, progress=progress, host=host
        )

    def count(self, data: Any) -> int:
        """The shoes in a capture."""
        return len(data.shoes)

    def plan_ahead(self, prof: Any, size: int, alpha: float, seed: int) -> Sequence[Any]:
        from feltlab.rig.kinds.batch.analyze import planned_power_jobs  # start-up: certify stage

        return planned_power_jobs(prof, size, alpha, seed)

    def simulated_name(self, prof: Any, model: str) -> str:
        decks = prof.device.get("decks", 6)
        seeding = prof.seeding
        if seeding:  # a predictable shuffler (issue 40): its seeding replaces the model
            return f"feltlab simulated {decks}-deck batch shuffler (seeding {seeding})"
        return f"feltlab simulated {decks}-deck batch shuffler (ChaCha20, model {model})"

    def draw_scenario(
        self, r: random.Random, base: dict[str, Any], shoes_max: int, small: int
    ) -> Any:
        from feltlab.rig.kinds.batch.explore import draw_batch  # start-up: the explore stage

        return draw_batch(r, base, shoes_max, small)

    def explore_campaign(self, scenario: Any) -> dict[str, Any]:
        """The named alternatives the explored campaign must have the power to catch."""
        from feltlab.rig.explore.runner import drawn_alternatives  # start-up: the explore stage

        return {"power_alternatives": drawn_alternatives(scenario)}

    def check_truth(
        self,
        record: dict[str, Any],
        truth: Any,
        directory: Path,
        violate: Callable[[str, str], None],
    ) -> None:
        """The explorer's ``genuine`` invariant: the shoes analysed are the device's."""
        from feltlab.rig.kinds.batch.explore import check_genuine  # start-up: the explore stage

        check_genuine(record, truth, directory, violate)

    def misbehaviour(self, misbehaviour: Any, truth: Any) -> BatchMisbehaviour:
        return BatchMisbehaviour(misbehaviour, truth)


BATCH = BatchShufflerKind()
"""The registered instance (the entry point ``batch``)."""
