"""Issue 13, item 4: the analysis never throws results away.  Each check and measurement keeps
its own verdict; a bad timing sample is counted in its own measurement (ERROR) and the battery
is still reported; a missing shoe is a FAIL with its count; one failing check leaves the others;
the campaign verdict is FAIL > ERROR > INCONCLUSIVE > PASS."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import can
import pytest
from click.testing import CliRunner

from feltlab.rig.certify import battery, measures
from feltlab.rig.certify import campaign as certify
from feltlab.rig.certify.battery import Verdict, combine_verdicts
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions, Collected
from feltlab.rig.certify.offline import analyze_campaign, analyze_path
from feltlab.rig.certify.profile import EXIT_CODES, NoProgress, profile_from_dict, quick_profile
from feltlab.rig.certify.record import CampaignResult, record_part
from feltlab.rig.cli.analyze import analyze as analyze_cmd
from feltlab.rig.protocol.codec import Codec, Opcode


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> CampaignResult:
    """A finished 12-shoe fair campaign (the bundled profile, unpaced; 12 shoes: the fewest
    that give every check of the battery at least one degree of freedom)."""
    out = tmp_path_factory.mktemp("verdicts") / "campaign"
    prof = quick_profile("batch")
    return run_campaign(CampaignOptions(prof, out, size=12, seed=11))


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("campaign.json", "capture-001.blf", "host-uncertainty.jsonl"):
        if (src / name).exists():
            shutil.copy(src / name, dst / name)
    return dst


def _stale_read_shoe(capture: Path, which: int = 2) -> None:
    """Rewrite ``capture`` so that the ``which``-th READ_SHOE command is stamped after the
    first frame of the transfer that answers it (a stale transfer): its first-card latency
    is then negative."""
    codec = Codec(0x100)
    cmd = codec.id_of("Command")
    shoe_id = 0x100 + 0x0A
    msgs = list(can.BLFReader(str(capture)))
    seen = 0
    for i, m in enumerate(msgs):
        if m.arbitration_id != cmd:
            continue
        sig = codec.db.decode_message(cmd, bytes(m.data), decode_choices=False)
        if int(sig["Opcode"]) != Opcode.READ_SHOE:
            continue
        seen += 1
        if seen < which:
            continue
        frames = []  # the frames of this transfer: up to the next command
        for k in range(i + 1, len(msgs)):
            if msgs[k].arbitration_id == cmd:
                break
            if msgs[k].arbitration_id == shoe_id:
                frames.append(k)
        first, last = msgs[frames[0]].timestamp, msgs[frames[-1]].timestamp
        m.timestamp = first + (last - first) / 2  # after the transfer began
        break
    else:  # pragma: no cover - the fixture campaign always reads shoes
        raise AssertionError("no READ_SHOE in the capture")
    with can.BLFWriter(str(capture)) as w:
        for m in msgs:
            w.on_message_received(m)


def test_campaign_verdict_order() -> None:
    P, F, E, I = Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.INCONCLUSIVE  # noqa: E741
    assert combine_verdicts([P, P]) is P
    assert combine_verdicts([P, I]) is I
    assert combine_verdicts([I, E, P]) is E
    assert combine_verdicts([E, F, I]) is F
    assert combine_verdicts([]) is E  # nothing judged
    assert EXIT_CODES[Verdict.INCONCLUSIVE] == 3


def test_bad_samples_are_counted_in_their_own_measurement() -> None:
    ms = measures.timing_measurements(
        "first_card", [0.010, 0.020, -0.004, float("nan"), 0.030], limit_p99=0.05, limit_max=0.2
    )
    by = {m.name: m for m in ms}
    assert [m.verdict for m in ms] == [Verdict.ERROR] * 4
    assert by["first_card.max"].value == 0.030  # from the 3 valid samples
    assert by["first_card.p50"].value == 0.020
    d = by["first_card.p99"].detail
    assert (d["n"], d["bad_samples"], d["negative"], d["non_finite"]) == (3, 2, 1, 1)
    assert d["examples"][0] == -0.004 and "2 of 5 timing samples" in d["reason"]
    # the valid samples already beyond the limit: FAIL, the device is late whatever the rest
    late = measures.timing_measurements("first_card", [0.3, -1.0], limit_max=0.2)
    assert {m.name: m.verdict for m in late}["first_card.max"] is Verdict.FAIL
    # nothing valid: every figure an ERROR with its reason
    none = measures.timing_measurements("first_card", [-1.0, -2.0], limit_p99=0.05)
    assert all(m.verdict is Verdict.ERROR and m.value is None for m in none)
    assert none[0].detail["reason"] == "all 2 timing samples are negative or non-finite"


def test_a_negative_latency_keeps_the_battery_and_every_other_result(
    small: CampaignResult, tmp_path: Path
) -> None:
    assert small.verdict is Verdict.PASS, small.record["measurements"]
    d = _copy(small.directory, tmp_path / "stale")
    _stale_read_shoe(d / "capture-001.blf")
    record_part(d, 1, d / "capture-001.blf")  # the edited part is this campaign's
    res = analyze_path(d, None, out=tmp_path / "report")
    rec = res.record
    assert res.verdict is Verdict.ERROR and res.exit_code == 2
    # the battery is there, on all 12 shoes, with the verdicts of the clean capture
    assert rec["battery"]["n_shoes"] == 12
    assert [c["verdict"] for c in rec["battery"]["checks"]] == [
        c["verdict"] for c in small.record["battery"]["checks"]
    ]
    assert rec["collection"]["collected"] == 12
    by = {m["name"]: m for m in rec["measurements"]}
    fc = by["first_card.p99"]
    assert fc["verdict"] == "ERROR" and fc["detail"]["negative"] == 1
    was = {m["name"]: m for m in small.record["measurements"]}["first_card.p99"]["detail"]["n"]
    assert fc["detail"]["bad_samples"] == 1 and fc["detail"]["n"] == was - 1 == 11
    assert fc["detail"]["examples"][0] < 0
    clean = {m["name"]: m["verdict"] for m in small.record["measurements"]}
    for name, m in by.items():
        if not name.startswith(("first_card.", "collection.")):
            assert m["verdict"] == clean[name], name
    html = (tmp_path / "report" / "report.html").read_text()
    assert "1 bad samples" in html and "Randomness battery" in html
    # feltlab analyze prints every verdict, not only an error
    run = CliRunner().invoke(analyze_cmd, [str(d)], env={"COLUMNS": "250"})
    assert run.exit_code == 2, run.output
    for text in ("battery.rising_sequences", "shuffle_cycle.p99", "first_card.p99", "negative"):
        assert text in run.output, text


def test_one_failing_check_leaves_the_others(
    small: CampaignResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = json.loads((small.directory / "campaign.json").read_text())
    prof = profile_from_dict(state["profile"]["data"], None)
    strict = replace(prof, limits={**prof.limits, "per_card_max": 1e-9})
    captures = [small.directory / "capture-001.blf"]
    a, _ = analyze_campaign(captures, strict, alpha=0.01, seed=11)
    by = {m.name: m.verdict for m in a.measurements}
    assert by["per_card.max"] is Verdict.FAIL and a.verdict() is Verdict.FAIL
    assert by["shuffle_cycle.max"] is Verdict.PASS and by["per_card.p99"] is Verdict.PASS
    assert a.battery is not None and a.battery.verdict is Verdict.PASS

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("the battery's kernel refused the sample")

    monkeypatch.setattr(battery, "run_battery", broken)
    b, _ = analyze_campaign(captures, prof, alpha=0.01, seed=11)
    by_b = {m.name: m for m in b.measurements}
    assert by_b["battery"].verdict is Verdict.ERROR
    assert "refused the sample" in by_b["battery"].detail["reason"]
    assert by_b["shuffle_cycle.p99"].verdict is Verdict.PASS
    assert b.verdict() is Verdict.ERROR


def test_a_missing_shoe_is_a_fail_with_its_count(small: CampaignResult, tmp_path: Path) -> None:
    d = _copy(small.directory, tmp_path / "missing")
    state = json.loads((d / "campaign.json").read_text())
    state["size"] = 13  # planned 13, the device delivered 12
    collected = Collected(
        requested=13, done=12, missing=[(12, "READ_SHOE 13: no transfer after 3 tries")]
    )
    res = certify.conclude(certify.recorded_campaign(d, state), collected, progress=NoProgress())
    rec = res.record
    m = {m["name"]: m for m in rec["measurements"]}["collection.shoes_missing"]
    assert (m["value"], m["verdict"]) == (1.0, "FAIL")
    assert m["detail"]["reasons"] == ["12: READ_SHOE 13: no transfer after 3 tries"]
    assert res.verdict is Verdict.FAIL and res.exit_code == 1
    assert rec["battery"]["n_shoes"] == 12 and rec["battery"]["verdict"] == "PASS"
    assert rec["collection"]["collected"] == 12 and rec["collection"]["missing_count"] == 1
    html = (d / "report.html").read_text()
    assert "READ_SHOE 13: no transfer after 3 tries" in html
    suite = ET.fromstring((d / "junit.xml").read_text())
    failed = {tc.get("name") for tc in suite if tc.find("failure") is not None}
    assert failed == {"collection.shoes_missing"}
