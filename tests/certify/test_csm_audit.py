"""The CSM exploitability audit (rig/certify/csm_audit.py, `feltlab certify csm-audit`):
the per-count analysis on hand-checked buckets, and seeded audits of the ideal machine (no
exploitable count), a 16-card buffer (the count predicts the next round) and the bundled slot
machine (the cards just seen come back soon).  Each seeded figure sits several standard
errors from its threshold."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab.errors import CountError
from feltlab.math.counts import resolve_count
from feltlab.native import CsmModel
from feltlab.rig.certify.csm_audit import AuditError, ByCount, audit
from feltlab.rig.cli.certify import certify
from feltlab.rules import Rules

NZ = Rules.preset("nz")


def _slope_se(r: ByCount) -> tuple[float, float]:
    _, slope, _, resid, sxx = r.fit()
    return slope, math.sqrt(resid / sxx)


def test_by_count_fits_the_line_and_finds_the_trigger_by_hand() -> None:
    # three counts, 1,000 rounds each, results +-1 per round with means -0.1, 0, +0.1:
    # the line is exactly x = 0.1 * count; the rounds at or above count 0 are positive
    # (fitted 0 at count 0), 2/3 of the rounds, fitted edge 0.1 * mean count 0.5 = +0.05
    n = np.array([1000.0, 1000.0, 1000.0])
    s1 = np.array([-100.0, 0.0, 100.0])
    r = ByCount("main", 16, np.array([-1, 0, 1]), n, s1, n.copy(), 10_000)
    xbar, slope, cbar, _, sxx = r.fit()
    assert (xbar, slope, cbar, sxx) == (0.0, 0.1, 0.0, 2000.0)
    r.analyze(z=1.0)
    assert r.trigger == 1 and r.direction == 1
    assert r.fraction() == pytest.approx(2 / 3)
    assert r.edge().value == pytest.approx(0.05)
    assert r.observed_edge().value == pytest.approx(0.05)
    # cents per 100 rounds at a $100 maximum: 100 * 10,000 * 2/3 * 0.05
    assert r.win_per_100().value == pytest.approx(100 * 10_000 * 2 / 3 * 0.05)
    spread = r.spread()
    assert spread is not None  # 8 units on 2,000 rounds, 1 on 1,000: (8 * 100 - 100) / 17,000
    assert spread["edge_per_unit_bet"]["value"] == pytest.approx(700 / 17_000)
    mirrored = ByCount("main", 16, np.array([-1, 0, 1]), n, -s1, n.copy(), 10_000)
    mirrored.analyze(z=1.0)
    assert mirrored.direction == -1 and mirrored.trigger == 1
    assert mirrored.fraction() == pytest.approx(2 / 3)
    flat = ByCount("main", 16, np.array([-1, 0, 1]), n, np.full(3, -50.0), n.copy(), 10_000)
    flat.analyze(z=1.0)
    assert flat.trigger is None and flat.fraction() == 0.0


def test_the_ideal_machine_has_no_exploitable_count() -> None:
    # every card seen is back in the machine before the bet: the count carries no
    # information, the line is flat (the slope within 3 standard errors of 0) and no round
    # is positive (the positive-round fraction the round's own cards explain is 0: none of
    # them is out of the machine at the bet)
    a = audit(CsmModel("ideal"), NZ, window=16, rounds=4_000_000, seed=3, windows=[16])
    (r,) = a.results
    slope, se = _slope_se(r)
    assert abs(slope) < 3 * se
    assert r.trigger is None and r.fraction() == 0.0
    assert a.verdict() == (
        "no count of window <= 16 finds a positive round at this sample (4,000,000 rounds "
        "simulated)"
    )
    assert -0.0075 < r.overall().value < -0.003  # the nz game's house edge, about 0.5%


def test_a_16_card_buffer_makes_the_count_of_the_last_16_cards_predict_the_round() -> None:
    # held in the buffer, the last 16 cards are out of the machine: each Hi-Lo point of
    # them is worth about 0.5% / (296 / 52) = 0.09% to the next round
    a = audit(CsmModel("ideal", buffer=16), NZ, rounds=8_000_000, seed=5, windows=[16])
    (r,) = a.results
    slope, se = _slope_se(r)
    assert slope > 0.0004 and slope - 0.0004 > 2.5 * se, (slope, se)
    xbar, _, cbar, _, _ = r.fit()
    assert 4 < cbar - xbar / slope < 10  # the fitted line crosses zero near +6


@pytest.mark.slow
def test_a_16_card_buffer_is_exploitable_at_a_larger_sample() -> None:
    a = audit(CsmModel("ideal", buffer=16), NZ, rounds=30_000_000, seed=5, windows=[16])
    (r,) = a.results
    assert r.trigger is not None and r.direction == 1
    assert 0.01 < r.fraction() < 0.10
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
    assert bad.exit_code == 1 and bad.output.strip().count("\n") == 0
    assert "unknown count 'hilow'" in bad.output
