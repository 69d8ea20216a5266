"""feltlab.simulation.protection: the counted simulation's buckets add up to the uncounted
tally of the same rounds, the C counter agrees round for round with a Python reference,
bucket values, and the protect command's output and refusals."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab import native
from feltlab.cli import main
from feltlab.core_rules import simulator_rules
from feltlab.errors import CountError
from feltlab.math.counts import BUILTIN
from feltlab.math.strategy_tables import strategy_tables
from feltlab.plugin_manager import collect_wagers, get_plugin_manager
from feltlab.rules import Rules
from feltlab.seeds import chunk_generator
from feltlab.simulation import side_tables
from feltlab.simulation.protection import bucketing, protect, run_counted

from .counted_reference import simulate_counted_reference


def _wagers(*names: str) -> list[Any]:
    types = collect_wagers(get_plugin_manager())
    return [types[n]() for n in names]


def test_bucket_values() -> None:
    hilo = bucketing(BUILTIN["hilo"], 6)
    assert (hilo.lowest, hilo.n_buckets) == (-15, 31)
    assert hilo.value(0) == -15 and hilo.value(15) == 0 and hilo.value(30) == 15
    halves = bucketing(BUILTIN["halves"], 6, resolution=2)  # doubled tags, half units
    assert halves.value(halves.n_buckets // 2 + 1) == F(1, 4)
    ko = bucketing(BUILTIN["ko"], 6)
    assert ko.offset == -20
    assert ko.value(-ko.lowest) == -20  # a raw running count of 0 is KO's -20 for 6 decks
    suit = bucketing(BUILTIN["suit-excess"], 6, resolution=2)
    assert suit.value(0) == 0 and suit.value(3) == F(3, 2)
    jac = bucketing(BUILTIN["jacobson"], 6, resolution=4)  # 0..52 in quarters: 212 buckets
    assert (jac.lowest, jac.n_buckets, jac.value(211)) == (0, 212, F(211, 4))
    assert jac.spec().mode == native.COUNT_SUIT_RANGE


def test_buckets_add_up_to_the_uncounted_tally() -> None:
    rules = Rules.preset("vegas_s17")
    ws = _wagers("main", "perfect_pairs", "twenty_one_plus_three")
    b = bucketing(BUILTIN["hilo"], rules.decks)
    t = run_counted(rules, ws, b, 30_000, seed=5, chunk_rounds=20_000)
    sides = ws[1:]
    tables = tuple(side_tables.side_table(w) for w in sides)
    total = [0, 0, 0]
    outcomes = [np.zeros(256, dtype=np.int64) for _ in sides]
    for chunk, n in enumerate((20_000, 10_000)):
        sr = simulator_rules(rules, strategy_tables(rules))
        out = native.simulate_tally(chunk_generator(5, chunk), sr, n, tables)  # type: ignore[arg-type]
        total = [total[0] + out.rounds, total[1] + out.net, total[2] + out.net_sq]
        for k, c in enumerate(out.counts):
            outcomes[k] += c
    assert [t.total_rounds, sum(t.net), sum(t.net_sq)] == total
    for k, w in enumerate(sides):
        assert (t.outcomes[w.name].sum(axis=0) == outcomes[k]).all()
    # a fresh shoe's first round is at true count 0: at least one round a shoe there
    assert t.rounds[15] >= 30_000 // 60


@pytest.mark.parametrize(
    ("name", "resolution"),
    [("hilo", 1), ("halves", 2), ("ko", 1), ("suit-excess", 1), ("jacobson", 2), ("zen", 4)],
)
def test_c_counter_agrees_with_the_reference_round_for_round(name: str, resolution: int) -> None:
    """fl_simulate_counted against the Python reference, bucket for bucket (tables over the
    initial cards: Perfect Pairs, 21+3)."""
    rules = Rules.preset("vegas_s17")
    ws = _wagers("perfect_pairs", "twenty_one_plus_three")
    tables = tuple(t for w in ws if (t := side_tables.side_table(w)) is not None)
    spec = bucketing(BUILTIN[name], rules.decks, resolution).spec()
    sr = simulator_rules(rules, strategy_tables(rules))
    c = native.simulate_counted(chunk_generator(3, 0), sr, 20_000, spec, tables)
    ref = simulate_counted_reference(chunk_generator(3, 0), sr, 20_000, spec, tables)
    assert list(c.bucket_rounds) == list(ref.bucket_rounds)
    assert c.bucket_net == ref.bucket_net
    assert c.bucket_net_sq == ref.bucket_net_sq
    assert (c.bucket_counts == ref.bucket_counts).all()
    assert int(c.bucket_rounds[0]) < 20_000 and int(c.bucket_rounds[-1]) < 20_000  # spread


def test_report_skips_the_jackpot_wager_with_its_reason() -> None:
    rules = Rules.preset("nz")
    rep = protect(rules, _wagers("madness21", "insurance"), [BUILTIN["hilo"]], 2_000)
    assert [r.wager for r in rep.results] == ["insurance"]
    assert rep.skipped[0].wager == "madness21" and "jackpot panel" in rep.skipped[0].reason
    assert rep.results[0].analysis.rounds < 2_000  # insurance: rounds with an ace up only


def test_a_rule_3_3a_wager_is_counted_at_one_and_two_decks_where_the_rules_allow_it() -> None:
    """Perfect Pairs declares rule 3.3(a)'s 4 decks; under a table outside 3.3(a) (deck_rule
    "any") its own check takes 1 deck up, so protect reports it at 2 decks (it read the declared
    range and left these cells out); Super Sevens' own 6 decks still leave it out at 4, with the
    wager's own reason."""
    two = Rules.preset("vegas_s17", decks=2, deck_rule="any")
    rep = protect(two, _wagers("perfect_pairs"), [BUILTIN["hilo"]], 2_000)
    assert [r.wager for r in rep.results] == ["perfect_pairs"] and not rep.skipped
    four = Rules.preset("vegas_s17", decks=4, deck_rule="any")
    rep = protect(four, _wagers("super_sevens"), [BUILTIN["hilo"]], 2_000)
    assert not rep.results and "6 to 8 decks" in rep.skipped[0].reason


def _invoke(args: list[str]) -> Any:
    env = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def test_protect_json_and_markdown(tmp_path: Path) -> None:
    args = ["protect", "perfect_pairs", "--rounds", "3000", "--seed", "2", "--min-rounds", "50"]
    res = _invoke([*args, "--json", "--count", "hilo", "--count", "suit"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [w["count"]["name"] for w in data["wagers"]] == ["hilo", "suit-excess"]
    w = data["wagers"][0]
    assert w["rounds"] == 3000 and sum(b["rounds"] for b in w["buckets"]) == 3000
    # each bucket's exact units won (issue 41: the scaffolded test pins them from --json)
    for b in filter(lambda b: b["rounds"], w["buckets"]):
        total = F(b["total"])
        assert b["expectation"] == pytest.approx(float(total / b["rounds"]), rel=1e-12)
    # Perfect Pairs pays whole units, so every total is a whole number
    assert all(F(b["total"]).denominator == 1 for b in w["buckets"])
    assert data["penetration"] == 0.75 and data["rules"] == "nz"
    md = _invoke([*args, "--format", "md", "--plot", str(tmp_path / "p.png")])
    assert md.exit_code == 0, md.output
    assert md.output.startswith("# Game protection report")
    assert "| perfect_pairs | hilo | 3,000 |" in md.output
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_protect_refusals() -> None:
    res = CliRunner().invoke(main, ["protect", "perfect_pairs", "--count", "hilow"])
    assert res.exit_code == 2
    assert "unknown count 'hilow'; choose from hilo, ko" in res.output
    res = CliRunner().invoke(main, ["protect", "perfect_pairs", "--all"])
    assert res.exit_code == 2 and "not both" in res.output
    res = CliRunner().invoke(main, ["protect", "no_such"])
    assert res.exit_code == 2 and "no wager 'no_such'" in res.output


def test_seeded_main_and_insurance_with_hilo_pinned() -> None:
    """1,000,000 rounds, seed 7, vegas_s17 (6 decks, 75% penetration), Hi-Lo: the figures
    with their intervals, pinned (simulator 4, seed derivation 1)."""
    rep = protect(
        Rules.preset("vegas_s17"), _wagers("main", "insurance"), [BUILTIN["hilo"]], 1_000_000,
        seed=7, min_rounds=1000,
    )  # fmt: skip
    assert (rep.simulator_version, rep.seed_derivation) == (4, 1)
    main, ins = (r.analysis for r in rep.results)
    assert main.rounds == 1_000_000
    assert main.overall.value == -0.0027585  # exact: the net over the rounds, per unit
    assert main.overall.half_width == pytest.approx(0.0022627, abs=1e-7)
    zero = main.buckets[15]  # true count 0 <= TC < 1
    assert zero.value == 0 and zero.rounds == 268_729 and zero.total == -362
    assert main.trigger_value() == 1 and main.frequency == 0.26694
    assert main.edge_per_unit.value == pytest.approx(0.0116075, abs=1e-7)
    assert main.edge_per_unit.half_width == pytest.approx(0.0043211, abs=1e-7)
    assert main.verdict.startswith("countable: +1.16% ± 0.43% per unit bet at true count +1")
    # insurance (2:1): on offer with an ace up only; the published Hi-Lo index to insure is
    # +3 (the first of the "Illustrious 18"), inside this trigger's interval +3..+5
    assert ins.rounds == 77_213
    assert ins.trigger_value() == 5
    assert ins.trigger_low is not None and ins.trigger_high is not None
    assert ins.buckets[ins.trigger_low].value == 3
    assert ins.buckets[ins.trigger_high].value == 5
    assert ins.edge_per_unit.value == pytest.approx(0.085078, abs=1e-6)
    assert ins.edge_per_unit.rounds == 2245
    assert ins.countable


def test_the_commands_default_min_rounds_is_the_analysis_one() -> None:
    from feltlab.cli import protect as protectcli
    from feltlab.math import countability

    assert protectcli.MIN_ROUNDS == countability.MIN_ROUNDS


def test_protect_checks_the_plot_file_and_resolution_before_simulating(tmp_path: Path) -> None:
    # 10**12 rounds would run for days: each refusal comes before the simulation
    big = ["protect", "insurance", "--rounds", str(10**12)]
    res = CliRunner().invoke(main, [*big, "--plot", str(tmp_path / "x.txt")])
    assert res.exit_code == 2 and "cannot write a .txt file" in res.output
    assert "ending in .png, .svg, .pdf" in res.output
    res = CliRunner().invoke(main, [*big, "--plot", "/proc/nope.png"])
    assert res.exit_code == 2 and "cannot create '/proc/nope.png'" in res.output
    res = CliRunner().invoke(main, [*big, "--resolution", "64"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "resolution 64 does not fit hilo's true counts -15..+15" in res.output
    assert "at most 8" in res.output
    res = CliRunner().invoke(main, [*big, "--resolution", "7", "--count", "suit"])
    assert (
        res.exit_code == 2
        and "richest-suit excess's values 0..39" in res.output
        and "at most 6" in res.output
    )
    assert not list(tmp_path.iterdir())


def test_bucketing_refuses_a_range_that_does_not_fit() -> None:
    assert bucketing(BUILTIN["hilo"], 6, 8).n_buckets == 241  # -15..+15 at 1/8
    assert bucketing(BUILTIN["suit-excess"], 6, 6).n_buckets == 240
    with pytest.raises(CountError, match="at most 8"):
        bucketing(BUILTIN["hilo"], 6, 9)
    with pytest.raises(CountError, match="at most 6"):
        bucketing(BUILTIN["suit-excess"], 6, 7)
    with pytest.raises(CountError, match=r"Jacobson's suit count's values 0\.\.52 .* at most 4"):
        bucketing(BUILTIN["jacobson"], 6, 5)


def test_protect_plot_without_suffix_and_small_sample_verdict(tmp_path: Path) -> None:
    # 20,000 rounds: insurance is on offer in about 1,500 of them, no count has the 10,000
    # rounds to decide, so the verdict is about the sample, not the penetration
    res = CliRunner().invoke(
        main, ["protect", "insurance", "--rounds", "20000", "--plot", str(tmp_path / "p")]
    )
    assert res.exit_code == 0, res.output
    assert "insurance (2:1), hilo: not countable at this sample: no count has 10,000" in res.stdout
    assert f"wrote {tmp_path / 'p.png'}" in res.stderr
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_protect_refuses_json_with_markdown_and_a_penetration_past_the_simulators_reach() -> None:
    res = CliRunner().invoke(main, ["protect", "insurance", "--json", "--format", "md"])
    assert res.exit_code == 2 and "give --json or --format md, not both" in res.output
    # one deck: 26 cards must stay behind the cutting card, so 0.5 is the deepest
    args = ["protect", "main", "--rules", "vegas_s17", "--decks", "1", "--penetration", "0.99"]
    res = CliRunner().invoke(main, args)
    assert (
        res.exit_code == 2 and "Invalid value for --penetration: 0.99 leaves 1 cards" in res.output
    )
    assert "give a penetration from 0.5 to 0.5" in res.output
    res = CliRunner().invoke(
        main, ["protect", "main", "--rules", "vegas_s17", "--penetration", "0.95"]
    )
    assert res.exit_code == 2 and "give a penetration from 0.5 to 0.916" in res.output
    res = CliRunner().invoke(main, ["protect", "--help"])
    assert "Rounds simulated a count" in res.output


def test_a_count_spec_without_tags_is_refused_in_one_line() -> None:
    with pytest.raises(TypeError, match=r"tags must be a sequence of 52 integers.*got NoneType"):
        native.CountSpec(tags=None)  # type: ignore[arg-type]
    assert native.CountSpec(tags=[0] * 52).tags == (0,) * 52  # type: ignore[arg-type]
