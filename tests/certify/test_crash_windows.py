"""Every moment a kill -9 can land in a campaign leaves a folder that ``--resume`` takes to the
same verdict, every sample collected once (issue 42 item 2; docs/station.md, "Crash
windows").

Each case runs the campaign in a forked child that kills itself with SIGKILL at a named kill
point (:mod:`feltlab.rig.killpoints`) or after its k-th sample (a progress sink that kills),
so the window is hit every time, never by a timer's luck; the parent then resumes it (a
second kill may land in the resume itself) and compares it with the lone campaign of the
same seed.  The station's own kill test (tests/station/test_station_run.py) found the
windows: a journal created before its header ("names no campaign"), a closed part whose
journal went before campaign.json listed it, and a continuous shuffler's part cut short
(ERROR: "no LOAD or no card returned and dealt again").
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.bus.capture import read_journal
from feltlab.rig.bus.writer import journal_path
from feltlab.rig.certify.campaign import resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.decode import read_campaign_capture
from feltlab.rig.certify.profile import CampaignError, NoProgress, Profile, quick_profile
from feltlab.rig.certify.record import check_parts, read_state
from feltlab.rig.certify.report import sha256_file
from feltlab.rig.killpoints import POINTS, set_hook

SIZES = {"batch": 12, "continuous": 40, "jackpot": 30}
"""The station test's sockets: small samples, simulated time."""
SEED = 21


class _KillAt(NoProgress):
    """A progress sink that kills its process with SIGKILL once ``n`` samples are done."""

    def __init__(self, n: int) -> None:
        self.n, self.done = n, 0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.done >= self.n:
            os.kill(os.getpid(), signal.SIGKILL)


def _kill_at(point: str, nth: int = 1) -> Callable[[str], None]:
    seen = [0]

    def hook(reached: str) -> None:
        if reached == point:
            seen[0] += 1
            if seen[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _killed(run: Callable[[], Any], hook: Callable[[str], None] | None = None) -> None:
    """``run()`` in a forked child with kill-point ``hook``; the child must die by SIGKILL
    (the window was reached)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            set_hook(hook)
            run()
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
        f"the child was not killed in the window (status {status})"
    )


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The quick profiles, a lab state folder of the module's own (the jackpot panel's
    freshness), and the lone campaign of each kind for :data:`SEED`."""
    root = tmp_path_factory.mktemp("windows")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FELTLAB_STATE_DIR", str(root / "state"))
        profiles = {k: quick_profile(k, power_shoes=200, null_replicates=19) for k in SIZES}
        lone = {k: run_campaign(_opts(profiles[k], root / f"lone-{k}", k)) for k in SIZES}
        assert {r.verdict.value for r in lone.values()} == {"PASS"}
        yield {"root": root, "profiles": profiles, "lone": lone}


def _opts(prof: Profile, out: Path, kind: str) -> CampaignOptions:
    return CampaignOptions(prof, out, size=SIZES[kind], seed=SEED, ahead=False, plots=False)


def _resumed_as_lone(setting: dict[str, Any], kind: str, out: Path) -> dict[str, Any]:
    """Resume ``out`` and check it against the lone campaign: the same verdict, every sample
    collected once, nothing half-made left; returns its record."""
    res = resume_campaign(out)
    lone = setting["lone"][kind]
    rec = res.record
    assert res.verdict == lone.verdict, rec.get("errors")
    coll = rec["collection"]
    assert coll["collected"] == coll["requested"] == SIZES[kind] and not coll["missing"]
    left = sorted(
        p.name
        for p in out.iterdir()
        if p.name.endswith(".opening") or (p.name.startswith(".") and "-" in p.name)
    )
    assert not left and not list(out.glob("capture-[0-9][0-9][0-9].journal.log"))
    prof = setting["profiles"][kind]
    data = read_campaign_capture([out / c for c in rec["captures"]], prof.base)
    if kind == "batch":  # none lost, none counted twice
        keys = [(s.part, s.number) for s in data.shoes]
        assert len(keys) == len(set(keys)) == SIZES[kind] == rec["battery"]["n_shoes"]
    check_parts(out, read_state(out), [out / c for c in rec["captures"]])
    assert json.loads((out / "record.json").read_text())["verdict"] == rec["verdict"]
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert manifest["record.json"] == sha256_file(out / "record.json")
    return rec


@pytest.mark.parametrize(
    "point",
    [
        "state-written",
        "journal-opened",  # was: "capture-001.journal.log names no campaign"
        "journal-named",
        "part-opened",
        "blf-written",  # was: "capture-001.blf was not collected by campaign ..."
        "part-recorded",
        "outputs-written",  # was: a torn record.json, then "campaign complete" refused
    ],
)
def test_a_kill_at_each_point_of_a_new_campaign_resumes_to_its_verdict(
    setting: dict[str, Any], point: str
) -> None:
    out = setting["root"] / f"batch-{point}"
    prof = setting["profiles"]["batch"]
    _killed(lambda: run_campaign(_opts(prof, out, "batch")), _kill_at(point))
    rec = _resumed_as_lone(setting, "batch", out)
    lone = setting["lone"]["batch"].directory
    if point in ("state-written", "journal-opened", "journal-named", "part-opened"):
        # no frame had reached the journal: the one part collected as the lone campaign's
        assert rec["captures"] == ["capture-001.blf"] and not rec["recovered_parts"]
        assert sha256_file(out / "capture-001.blf") == sha256_file(lone / "capture-001.blf")
    if point in ("blf-written", "part-recorded", "outputs-written"):  # the part had closed
        assert rec["captures"] == ["capture-001.blf"]
        assert sha256_file(out / "capture-001.blf") == sha256_file(lone / "capture-001.blf")


def test_a_kill_mid_shoe_then_in_each_step_of_the_resume_keeps_every_shoe_once(
    setting: dict[str, Any],
) -> None:
    prof = setting["profiles"]["batch"]
    for point in ("recovered-blf", "recovered-recorded", "state-written"):
        out = setting["root"] / f"batch-resume-{point}"
        _killed(partial(run_campaign, _opts(prof, out, "batch"), progress=_KillAt(5)))
        frames = len(read_journal(journal_path(out / "capture-001.blf")))
        _killed(partial(resume_campaign, out), _kill_at(point))
        rec = _resumed_as_lone(setting, "batch", out)
        assert rec["captures"] == ["capture-001.blf", "capture-002.blf"], point
        assert rec["recovered_parts"] == ["capture-001.blf"], point
        assert rec["collection"]["collected"] == SIZES["batch"]
        got = read_campaign_capture([out / "capture-001.blf"], prof.base)
        assert len(got.shoes) >= 5 and frames > 0  # the shoes before the kill kept


def test_a_continuous_part_cut_short_is_collected_again_as_the_lone_campaigns(
    setting: dict[str, Any],
) -> None:
    """The kill of the station's test: 10 of 40 deals.  Kept, its part and the next hold
    no card dealt again after its return (ERROR, "nothing to test", where the lone campaign
    PASSes on 3 return gaps); set aside, the part is collected again with its own device
    seed: the lone campaign's capture, byte for byte.  A second kill as it is set aside
    changes nothing."""
    prof = setting["profiles"]["continuous"]
    lone = setting["lone"]["continuous"].directory
    for second in (None, "part-set-aside"):
        out = setting["root"] / f"continuous-{second}"
        _killed(partial(run_campaign, _opts(prof, out, "continuous"), progress=_KillAt(10)))
        if second is not None:
            _killed(partial(resume_campaign, out), _kill_at(second))
        rec = _resumed_as_lone(setting, "continuous", out)
        assert rec["captures"] == ["capture-001.blf"] and not rec["recovered_parts"]
        assert sha256_file(out / "capture-001.blf") == sha256_file(lone / "capture-001.blf")
        aside = read_state(out)["set_aside_parts"]
        assert [a["journal"] for a in aside] == ["capture-001.set-aside-1.journal.log"]
        assert rec["set_aside_parts"] == aside and "10 of 40 deals" in aside[0]["why"]
        assert len(read_journal(out / aside[0]["journal"])) > 0  # kept, as evidence
        gap = [m for m in rec["measurements"] if m["name"] == "return_gap.p_value"]
        ref = json.loads((lone / "record.json").read_text())["measurements"]
        assert gap and gap == [m for m in ref if m["name"] == "return_gap.p_value"]


def test_a_continuous_part_that_holds_every_deal_is_kept(setting: dict[str, Any]) -> None:
    """Killed after its last deal, before its part closed: the part completes the sample,
    nothing is collected again."""
    prof = setting["profiles"]["continuous"]
    out = setting["root"] / "continuous-full"
    _killed(lambda: run_campaign(_opts(prof, out, "continuous"), progress=_KillAt(40)))
    rec = _resumed_as_lone(setting, "continuous", out)
    assert rec["recovered_parts"] == ["capture-001.blf"] and "set_aside_parts" not in rec


@pytest.mark.parametrize("after", [15, 30])
def test_a_jackpot_panel_killed_mid_campaign_resumes_to_its_verdict(
    setting: dict[str, Any], after: int
) -> None:
    prof = setting["profiles"]["jackpot"]
    out = setting["root"] / f"jackpot-{after}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FELTLAB_STATE_DIR", str(setting["root"] / "state"))
        _killed(lambda: run_campaign(_opts(prof, out, "jackpot"), progress=_KillAt(after)))
        _resumed_as_lone(setting, "jackpot", out)


def test_a_part_of_another_campaign_is_still_refused(setting: dict[str, Any]) -> None:
    """The windows closed widen nothing (issue 41): a journal of another campaign's part put
    in place of this one's unclosed part is refused, and nothing is set aside or rebuilt."""
    prof = setting["profiles"]["continuous"]
    mine, theirs = (setting["root"] / f"foreign-{n}" for n in ("mine", "theirs"))
    for out in (mine, theirs):
        _killed(partial(run_campaign, _opts(prof, out, "continuous"), progress=_KillAt(10)))
    j = journal_path(mine / "capture-001.blf")
    j.write_bytes(journal_path(theirs / "capture-001.blf").read_bytes())
    with pytest.raises(CampaignError, match=r"names campaign .* part 1, not campaign"):
        resume_campaign(mine)
    assert j.exists() and not list(mine.glob("*set-aside*"))


def test_every_kill_point_is_tested() -> None:
    tested = {
        "state-written",
        "journal-opened",
        "journal-named",
        "part-opened",
        "blf-written",
        "part-recorded",
        "recovered-blf",
        "recovered-recorded",
        "part-set-aside",
        "outputs-written",
    }
    assert set(POINTS) == tested
