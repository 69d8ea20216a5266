"""A counter's edge with a bet spread from per-true-count tallies: a hand-checked tally of six
rounds (every figure worked by hand below) and the ramp's bets."""

import math

import numpy as np
import pytest

from feltlab.simulation.bet_spread import BetRamp, CountTally, counter_edge


def _tally() -> CountTally:
    # true count 0: four rounds -1, -1, +1, 0; true count 5: two rounds +1, +1.5
    return CountTally(
        true_counts=np.array([0, 5], dtype=np.int64),
        rounds=np.array([4, 2], dtype=np.int64),
        net=np.array([-1.0, 2.5]),
        net_sq=np.array([3.0, 3.25]),
    )


def test_ramp_bets_one_unit_to_tc_two_then_tc_less_one_up_to_the_spread() -> None:
    bets = BetRamp(12).bets([-7, 0, 1, 2, 3, 8, 13, 14, 40])
    assert bets.tolist() == [1, 1, 1, 1, 2, 7, 12, 12, 12]
    steep = BetRamp(12, units_per_count=2).bets([1, 2, 3, 6, 7, 9])
    assert steep.tolist() == [1, 2, 4, 10, 12, 12]
    with pytest.raises(ValueError, match="1 to 1000"):
        BetRamp(0)
    with pytest.raises(ValueError, match="whole number"):
        BetRamp(12, units_per_count=1.5)  # type: ignore[arg-type]


def test_counter_edge_of_a_hand_checked_tally() -> None:
    e = counter_edge(_tally(), BetRamp(12))
    # bets 1 at TC 0 and 4 at TC 5: the rounds' results -1, -1, 1, 0, 4, 6 units
    assert e.rounds == 6 and e.mean_bet == pytest.approx(2.0)
    assert e.edge.value == pytest.approx(9 / 12)  # won 9 units on 12 units bet
    # sum of w^2 (x - 3/4)^2 = 2 * 1.75^2 + 0.25^2 + 0.75^2 + 16 * 0.25^2 + 16 * 0.75^2
    assert e.edge.se == pytest.approx(math.sqrt(16.75) / 12)
    assert e.win_per_100.value == pytest.approx(150.0)
    assert e.sd_round == pytest.approx(math.sqrt(55 / 6 - 2.25))
    assert e.win_per_100.se == pytest.approx(100 * math.sqrt((55 / 6 - 2.25) / 6))
    assert e.flat.value == pytest.approx(0.25)
    assert e.flat.se == pytest.approx(math.sqrt(5.875) / 6)
    assert e.bet_share == pytest.approx({1.0: 4 / 6, 4.0: 2 / 6})
    lo, hi = e.edge.interval
    assert lo < 0.75 < hi and hi - lo == pytest.approx(2 * 1.959963984540054 * e.edge.se)


def test_a_flat_bettor_has_the_flat_edge() -> None:
    e = counter_edge(_tally(), BetRamp(1))
    assert e.edge == e.flat and e.mean_bet == 1.0


def test_bad_tallies_are_refused() -> None:
    with pytest.raises(ValueError, match="equal"):
        CountTally(np.array([0]), np.array([1, 2]), np.array([0.0]), np.array([0.0]))
    one = CountTally(np.array([0]), np.array([1]), np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="at least 2 rounds"):
        counter_edge(one, BetRamp(12))


def test_counted_tally_buckets_the_same_rounds_as_the_plain_tally() -> None:
    from feltlab import Rules, native
    from feltlab.core_rules import simulator_rules
    from feltlab.math.strategy_tables import strategy_tables
    from feltlab.seeds import chunk_generator
    from feltlab.simulation.bet_spread import counted_tally

    rules = Rules.preset("nz")
    t = counted_tally(rules, 1_000_000, seed=11)
    plain = native.simulate_tally(
        chunk_generator(11, 0), simulator_rules(rules, strategy_tables(rules)), 1_000_000
    )
    stake = simulator_rules(rules, strategy_tables(rules)).stake
    assert t.total_rounds == plain.rounds == 1_000_000
    assert float(t.net.sum()) == pytest.approx(plain.net / stake, abs=1e-6)
    assert float(t.net_sq.sum()) == pytest.approx(plain.net_sq / stake**2, rel=1e-12)
    # the player's expectation rises with the count: TC >= +3 against TC <= -1 differ by
    # about 2.5 % with standard errors near 0.4 % and 0.2 % at this size (seeded: about 5
    # standard errors apart)
    tc = t.true_counts
    hi, lo = tc >= 3, tc <= -1
    mean_hi = t.net[hi].sum() / t.rounds[hi].sum()
    mean_lo = t.net[lo].sum() / t.rounds[lo].sum()
    assert mean_hi > mean_lo


def test_bet_spread_cli_reports_the_edge_as_json() -> None:
    import json

    from click.testing import CliRunner

    from feltlab.cli import main

    r = CliRunner().invoke(
        main, ["bet-spread", "--rules", "vegas_s17", "--rounds", "50000", "--seed", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["rounds"] == 50_000 and doc["spread"] == 12 and doc["penetration"] == 0.75
    lo, hi = doc["edge_per_unit_bet"]["interval95"]
    assert lo < doc["edge_per_unit_bet"]["value"] < hi
    bad = CliRunner().invoke(main, ["bet-spread", "--penetration", "0.99"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
