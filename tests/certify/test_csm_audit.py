"""The CSM exploitability audit (rig/certify/csm_audit.py, `feltlab certify csm-audit`):
the per-count analysis on hand-checked buckets, and seeded audits of the ideal machine (no
exploitable count), a 16-card buffer (the count predicts the next round) and the bundled slot
machine (the cards just seen come back soon).  Each seeded figure sits several standard
errors from its threshold."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.errors import CountError, WagerError
from feltlab.math.countability import bucket_from_outcomes
from feltlab.math.counts import resolve_count
from feltlab.native import CsmModel
from feltlab.rig.certify.csm_audit import AuditError, ByCount, audit
from feltlab.rig.cli.certify import certify
from feltlab.rules import Rules

NZ = Rules.preset("nz")


def _slope_se(r: ByCount) -> tuple[float, float]:
    line = r.analysis.line
    return line.slope, line.slope_se


def test_by_count_reports_the_line_analysis_in_the_audit_json() -> None:
    # three counts, 1,000 rounds each, results +-1 averaging -0.1, 0, +0.1: the line is
    # 0.1 * count (feltlab.math.countability's figures: tests/math/test_countability.py);
    # here the audit's JSON of them, keys and figures
    even = (Fraction(1), Fraction(-1))
    buckets = tuple(
        bucket_from_outcomes(v, [w, 1000 - w], even) for v, w in ((-1, 450), (0, 500), (1, 550))
    )
    r = ByCount("main", 16, buckets, 10_000)
    r.analyze(z=1.0)
    d = r.to_dict()
    assert (d["trigger_count"], d["trigger_side"], d["rounds"]) == (0, ">=", 3000)
    assert d["positive_round_fraction"] == pytest.approx(2 / 3)
    assert d["edge_per_unit"]["value"] == pytest.approx(0.05)
    assert d["slope_per_count"] == pytest.approx(0.1)
    assert d["cents_per_100_rounds_at_max"]["value"] == pytest.approx(100 * 10_000 * 2 / 3 * 0.05)
    assert d["spread_1_8"]["edge_per_unit_bet"]["value"] == pytest.approx(700 / 17_000)
    assert d["spread_1_8"]["small_bet_cents"] == 1250
    assert [(b["count"], b["rounds"]) for b in d["by_count"]] == [(-1, 1000), (0, 1000), (1, 1000)]
    assert d["by_count"][0]["expectation"]["value"] == pytest.approx(-0.1)
    mirrored = ByCount(
        "main",
        16,
        tuple(
            bucket_from_outcomes(b.value, [1000 - w, w], even)
            for b, w in zip(buckets, (450, 500, 550), strict=True)
        ),
        10_000,
    )
    mirrored.analyze(z=1.0)
    assert mirrored.to_dict()["trigger_side"] == "<=" and mirrored.trigger_count() == 0


def test_the_ideal_machine_has_no_exploitable_count() -> None:
    # every card seen is back in the machine before the bet: the count carries no
    # information, the line is flat (the slope within 3 standard errors of 0) and no round
    # is positive (the positive-round fraction the round's own cards explain is 0: none of
    # them is out of the machine at the bet)
    a = audit(CsmModel("ideal"), NZ, window=16, rounds=4_000_000, seed=3, windows=[16])
    (r,) = a.results
    slope, se = _slope_se(r)
    assert abs(slope) < 3 * se
    assert r.analysis.trigger is None and r.analysis.frequency == 0.0
    assert a.verdict() == (
        "no count of window <= 16 finds a positive round at this sample (4,000,000 rounds "
        "simulated)"
    )
    assert -0.0075 < r.analysis.overall.value < -0.003  # the nz game's house edge, about 0.5%


def test_a_16_card_buffer_makes_the_count_of_the_last_16_cards_predict_the_round() -> None:
    # held in the buffer, the last 16 cards are out of the machine: each Hi-Lo point of
    # them is worth about 0.5% / (296 / 52) = 0.09% to the next round
    a = audit(CsmModel("ideal", buffer=16), NZ, rounds=8_000_000, seed=5, windows=[16])
    (r,) = a.results
    slope, se = _slope_se(r)
    assert slope > 0.0004 and slope - 0.0004 > 2.5 * se, (slope, se)
    line = r.analysis.line
    assert 4 < line.mean_count - line.mean / slope < 10  # the fitted line crosses zero near +6


@pytest.mark.slow
def test_a_16_card_buffer_is_exploitable_at_a_larger_sample() -> None:
    a = audit(CsmModel("ideal", buffer=16), NZ, rounds=30_000_000, seed=5, windows=[16])
    (r,) = a.results
    assert r.analysis.trigger is not None and r.analysis.direction == 1
    assert 0.01 < r.analysis.frequency < 0.10
    assert a.verdict().startswith("exploitable: +")


def test_the_slot_machine_deals_the_cards_just_seen_again_soon() -> None:
    # the bundled profile's machine: a returned card lands in a slot of about 8 cards at a
    # uniform depth and is dealt sooner than a uniform draw would: the cards just seen are
    # over-represented in the next rounds, and a high count of them is bad for the player
    a = audit(CsmModel("slots", slots=38), NZ, rounds=4_000_000, seed=7, windows=[16])
    (r,) = a.results
    slope, se = _slope_se(r)
    assert slope < -0.0003 and -0.0003 - slope > 2.5 * se, (slope, se)


def test_counts_parse_and_refuse_in_one_line() -> None:
    # the audit's counts are feltlab.math.counts': the built-ins, eor and tags given
    hilo = resolve_count("hilo")
    assert hilo.label == "Hi-Lo"
    assert hilo.rank_tags == (-1, 1, 1, 1, 1, 1, 0, 0, 0, -1, -1, -1, -1)
    given = resolve_count("tags:0,1,1,1,1,1,0,0,0,-1,-1,-1,-1")
    assert given.rank_tags is not None and given.rank_tags[0] == 0
    assert given.label.startswith("tags +0,+1")
    with pytest.raises(CountError, match="give 13 integer tags"):
        resolve_count("tags:1,2")
    with pytest.raises(CountError, match="unknown count 'hilow'; choose from hilo"):
        resolve_count("hilow")
    with pytest.raises(AuditError, match=r"window 400: give 1\.\.312 cards"):
        audit(CsmModel(), NZ, window=400)
    with pytest.raises(AuditError, match="a buffer of 300 cards leaves the 6-deck machine less"):
        audit(CsmModel(buffer=300), NZ)


def test_the_command_prints_json_and_writes_the_report(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path)) / "audit"
    res = CliRunner().invoke(
        certify,
        [
            "csm-audit",
            "--machine",
            "ideal",
            "--rounds",
            "50000",
            "--window",
            "8",
            "--json",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code in (0, 1), res.output
    data = json.loads(res.output)
    assert data["model"]["description"] == "ideal machine, buffer 0, returns after each round"
    assert data["windows"] == [8, 4] and data["rounds_simulated"] == 100_000
    assert data["exploitable"] == (res.exit_code == 1)
    assert {p.name for p in out.iterdir()} == {"csm-audit.json", "expectation.png", "report.md"}
    bad = CliRunner().invoke(certify, ["csm-audit", "--count", "hilow", "--rounds", "1000"])
    assert bad.exit_code == 2 and bad.output.strip().count("\n") == 0
    assert "unknown count 'hilow'" in bad.output


def test_the_window_buckets_cover_every_window_count() -> None:
    from feltlab.math.counts import BUILTIN
    from feltlab.native import COUNT_WINDOW
    from feltlab.simulation.protection import window_bucketing

    b = window_bucketing(BUILTIN["hilo"], 16)  # -16..+16: one bucket a value
    assert (b.lowest, b.n_buckets, b.values()[0], b.values()[-1]) == (
        -16,
        33,
        Fraction(-16),
        Fraction(16),
    )
    assert (b.spec().mode, b.spec().window) == (COUNT_WINDOW, 16)
    h = window_bucketing(BUILTIN["halves"], 4)  # doubled tags -2..3: values in halves
    assert (h.lowest, h.n_buckets, h.values()[1]) == (-8, 21, Fraction(-7, 2))
    with pytest.raises(CountError, match="the suit count has no tags"):
        window_bucketing(BUILTIN["suit"], 16)


def test_every_input_error_exits_2_in_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["--count", "hilow"], "unknown count 'hilow'"),
        (["--wager", "lucky_ladys"], "wager 'lucky_ladys' is not installed"),
        (["--profile", str(tmp_path / "nosuch.toml")], "nosuch.toml does not exist"),
        (["--capture", str(tmp_path)], "campaign.json is missing"),
        (["--buffer", "300"], "give a buffer of at most 260 cards"),
        (["--policy", "batch", "--batch", "64"], "a batch of 64 rounds"),
        (["--out", str(afile / "sub")], "is a file, not a folder"),
        (["--out", "/proc/x"], "cannot create '/proc/x'"),
        (["--out", str(afile)], "is a file; give a new folder"),
    ]
    for args, said in cases:
        # 10**11 rounds would run for hours: each refusal comes first
        res = CliRunner().invoke(certify, ["csm-audit", *args, "--rounds", str(10**11)])
        assert res.exit_code == 2, (args, res.output)
        assert said in res.output and "Traceback" not in res.output, (args, res.output)
        assert res.output.strip().splitlines()[-1].startswith("Error:"), res.output
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]


def test_all_with_eor_leaves_out_a_wager_decided_by_play(monkeypatch: pytest.MonkeyPatch) -> None:
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager
    from feltlab.rig.certify import csm_audit

    reg = collect_wagers(get_plugin_manager())
    chosen = [reg["insurance"](), reg["buster_blackjack"]()]  # "all" cut to two, to keep it fast
    monkeypatch.setattr(csm_audit, "wagers_in_play", lambda names, rules: chosen)
    a = audit(CsmModel(), NZ, wagers=("all",), count="eor", window=4, rounds=1000)
    assert [r.wager for r in a.results] == ["insurance"]  # window 4 (the halves stop at 4)
    assert a.skipped == {
        "buster_blackjack": "no count of its own: Buster Blackjack is decided by play: use "
        "`feltlab math main --eor`"
    }
    assert a.to_dict()["skipped"] == a.skipped
    with pytest.raises(WagerError, match="decided by play"):  # named alone: still refused
        audit(CsmModel(), NZ, wagers=("buster_blackjack",), count="eor", window=4, rounds=1000)


def test_the_bundled_profile_is_named_and_penetration_is_not_offered() -> None:
    res = CliRunner().invoke(certify, ["csm-audit", "--rounds", "1000", "--window", "4", "--json"])
    assert res.exit_code in (0, 1), res.output
    assert json.loads(res.output)["source"] == "continuous (bundled)"
    assert "--penetration" not in CliRunner().invoke(certify, ["csm-audit", "--help"]).output
    res = CliRunner().invoke(certify, ["csm-audit", "--penetration", "0.8"])
    assert res.exit_code == 2 and "No such option '--penetration'" in res.output
