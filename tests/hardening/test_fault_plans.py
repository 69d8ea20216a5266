"""Issue 14, item 6: fault plans.  Every requested fault is injected, or the campaign refuses to
start and says how many shoes it needs; a resumed fault campaign checks the integrity of the
shoes collected before each fault over the right shoes (the earlier parts included)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.faults import ALL_FAULTS
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def fast() -> Profile:
    return quick_profile("batch", null_replicates=39)


def test_too_few_shoes_for_the_faults_is_refused_with_the_number_needed(tmp_path: Path) -> None:
    n = len(ALL_FAULTS)
    with pytest.raises(CampaignError, match=f"needs at least {n + 2} shoes"):
        run_campaign(CampaignOptions(fast(), tmp_path / "c", size=n, seed=1, faults="all"))


def test_every_fault_is_injected_with_the_fewest_shoes(tmp_path: Path) -> None:
    n = len(ALL_FAULTS)
    res = run_campaign(CampaignOptions(fast(), tmp_path / "c", size=n + 2, seed=1, faults="all"))
    assert [r["fault"] for r in res.record["faults"]] == list(ALL_FAULTS)


class _StopAfter:
    """A Progress that sets ``stop`` after ``n`` collected shoes (an operator's Ctrl-C)."""

    def __init__(self, stop: threading.Event, n: int) -> None:
        self.stop, self.n, self.label = stop, n, ""

    def start(self, label: str, total: int | None) -> None:
        self.label = label

    def advance(self, n: int = 1) -> None:
        if self.label == "collecting shoes":
            self.n -= n
            if self.n <= 0:
                self.stop.set()


def test_a_resumed_fault_campaign_checks_integrity_over_the_right_shoes(tmp_path: Path) -> None:
    out = tmp_path / "c"
    stop = threading.Event()
    opts = CampaignOptions(fast(), out, size=24, seed=6, faults="reboot,jam")
    first = run_campaign(opts, progress=_StopAfter(stop, 8), stop=stop)
    assert first.verdict is Verdict.ABORTED
    assert [r["fault"] for r in first.record["faults"]] == ["reboot"]
    done = resume_campaign(out)
    rec = done.record
    assert done.verdict is Verdict.PASS, (rec["errors"], rec["faults"])
    rows = {r["fault"]: r for r in rec["faults"]}
    assert set(rows) == {"reboot", "jam"}
    assert rows["jam"]["shoes_before"] > 8  # after the shoes of the first part
    assert all(r["verdict"] == "PASS" for r in rec["faults"]), rec["faults"]
