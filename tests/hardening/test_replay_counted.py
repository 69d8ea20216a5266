"""Issue 41 (still present from earlier rounds): a result replayed on the bus and refused
live is a security fault of the record (``security.results_refused``), the campaign goes on
to its planned draws, and ``feltlab analyze`` reaches the same verdict and the same refusals
(before the fix: 0 refused live, FAIL; ABORTED offline)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.profile import quick_profile
from feltlab.rig.certify.record import verdict_summary
from feltlab.rig.devices import JackpotPanel


class ReplayingPanel(JackpotPanel):
    """Sends, instead of its 6th draw, the signed result of its 3rd again (a replay of a
    result accepted two rounds before, with its own valid MAC)."""

    def _press(self, rid: int | None, box: int, source: int) -> None:
        if self.presses == 5:
            self.faults["replay_result"] = 2
        super()._press(rid, box, source)


def _measure(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in record["measurements"] if m["name"] == name)


def test_a_replay_refused_live_is_counted_live_and_offline(tmp_path: Path) -> None:
    key_file = tmp_path / "panel.key"
    key_file.write_text(bytes(range(32)).hex())
    prof = quick_profile(
        "jackpot", null_replicates=39, key_file=str(key_file), key_id="p", authenticate=True
    )
    campaign = {
        **prof.campaign,
        "inject_faults": False,
        "freshness_state": str(tmp_path / "lab" / "freshness.json"),
    }
    prof = replace(prof, campaign=campaign, raw=dict(prof.raw, campaign=campaign))
    opts = CampaignOptions(prof, tmp_path / "c", size=20, seed=4, simulator=ReplayingPanel)
    live = run_campaign(opts)
    refused = _measure(live.record, "security.results_refused")
    assert refused["value"] == 1 and refused["verdict"] == "FAIL"
    assert [f["reason"] for f in live.record["security_faults"]] == ["replayed"]
    assert live.record["collection"]["collected"] == 20  # the voided round drawn again
    assert live.verdict is Verdict.FAIL
    offline = analyze_path(tmp_path / "c", None, out=None)
    assert offline.verdict is Verdict.FAIL
    assert verdict_summary(offline.record) == verdict_summary(live.record)
    assert offline.record["security_faults"] == live.record["security_faults"]
