"""``feltlab certify explore --scheduler``: the explorer's campaigns as tasks on a local Dask
cluster of 2 worker processes give the outcomes of one process (issue 42 item 5): the same
verdicts, simulated seconds and chaos for each campaign, no violation, and a violation planted
in the invariant checks (on the workers and in this process alike) found at the same
campaigns."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from feltlab.rig.explore import runner

CAMPAIGNS = 6
SEED = 1


def plant() -> None:
    """Make the invariant checks report a violation at every third campaign (in whatever
    process this runs: a Dask worker, or the test's own)."""
    from feltlab.rig.explore import runner as r

    original = r.check_campaign  # type: ignore[attr-defined]  # the runner's own binding
    if getattr(original, "planted", False):
        return

    def planted(sc: Any, out: Any, *args: Any, **kwargs: Any) -> None:
        original(sc, out, *args, **kwargs)
        if sc.index % 3 == 1:
            out.violations.append(("planted", f"planted at campaign {sc.index}"))

    planted.planted = True  # type: ignore[attr-defined]
    r.check_campaign = planted  # type: ignore[attr-defined]


def _found(summary: runner.RunSummary) -> list[tuple[Any, ...]]:
    return [o.fingerprint() for o in summary.outcomes]


@pytest.mark.slow
def test_explore_on_two_dask_workers_finds_what_one_process_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distributed = pytest.importorskip("dask.distributed")
    cloudpickle: Any = pytest.importorskip("cloudpickle")

    one = runner.explore(CAMPAIGNS, SEED, shoes_max=8)
    assert not one.violations
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = runner.explore(CAMPAIGNS, SEED, shoes_max=8, scheduler=cluster.scheduler_address)
        assert [o.scenario.index for o in on_dask.outcomes] == list(range(CAMPAIGNS))
        assert _found(on_dask) == _found(one) and not on_dask.violations
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        try:
            assert set(client.run(plant)) == set(cluster.scheduler_info["workers"])
        finally:
            cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        planted_dask = runner.explore(
            CAMPAIGNS, SEED, shoes_max=8, scheduler=cluster.scheduler_address
        )
    undo = runner.check_campaign  # type: ignore[attr-defined]
    monkeypatch.setattr(runner, "check_campaign", undo)  # undone after
    plant()
    planted_one = runner.explore(CAMPAIGNS, SEED, shoes_max=8)
    bad = [o.scenario.index for o in planted_one.violations]
    assert bad == [1, 4]
    assert [o.scenario.index for o in planted_dask.violations] == bad
    assert _found(planted_dask) == _found(planted_one)
