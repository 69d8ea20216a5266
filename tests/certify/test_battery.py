"""Calibration of the randomness battery: seeded, so every verdict here is fixed, and sized so
that the fair shuffler passes and each named fault fails by a wide margin."""

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from feltlab import native
from feltlab.rig.certify import battery
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.power import estimate_power
from feltlab.rig.certify.simulate import simulate_shoes


def test_eulerian_pmf_small_cases_exact() -> None:
    # A(4, k) = 1, 11, 11, 1 (OEIS A008292); rising sequences r = k + 1
    assert battery.eulerian_pmf(4).tolist() == pytest.approx([1 / 24, 11 / 24, 11 / 24, 1 / 24])
    pmf = battery.eulerian_pmf(52)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
    mean = float((np.arange(1, 53) * pmf).sum())
    assert math.isclose(mean, 53 / 2, rel_tol=1e-12)  # (n + 1) / 2
    var = float(((np.arange(1, 53) - mean) ** 2 * pmf).sum())
    assert math.isclose(var, 53 / 12, rel_tol=1e-9)  # (n + 1) / 12


def test_kernel_statistics_hand_checked() -> None:
    # output order, as input positions: 2 0 3 1 4
    perm = np.array([[2, 0, 3, 1, 4], [0, 1, 2, 3, 4]], dtype=np.uint16)
    s = native.battery_pass(perm)
    # pos = [1, 3, 0, 2, 4]: descents at v=1 (3>0) and v=... pos[2]=0 < pos[1]=3 -> +1;
    # pos[3]=2 > pos[2]=0; pos[4]=4 > pos[3]=2; pos[1]=3 > pos[0]=1: R = 2
    assert s.rising.tolist() == [2, 1]
    # 2 0 3 1 4: down up down up -> 3 turning points; the identity has none
    assert s.turning.tolist() == [3, 0]
    assert s.successions.tolist() == [0, 4]
    # guesser on 2 0 3 1 4: guess 0 (x), after 2 guess 3 (x), after 0 guess 1 (x),
    # after 3 guess 4 (x), after 1 guess 4 (right) -> 1; identity: all 5 right
    assert s.guesses.tolist() == [1, 5]
    assert s.position_counts[2, 0] == 1 and s.position_counts[0, 0] == 1
    assert s.position_counts.sum() == 10


def test_fair_shuffler_passes() -> None:
    for n_cards, seed in ((52, 11), (312, 12)):
        perm = simulate_shoes("fisher-yates", 400, n_cards, seed)
        result = battery.run_battery(perm, alpha=0.01)
        assert result.verdict is Verdict.PASS, result.to_dict()


def test_four_riffles_of_one_deck_fail_with_a_few_hundred_shoes() -> None:
    perm = simulate_shoes("riffle:k=4", 300, 52, 3)
    result = battery.run_battery(perm, alpha=0.01)
    assert result.verdict is Verdict.FAIL
    assert result.check("rising_sequences").verdict is Verdict.FAIL
    assert result.check("rising_sequences").statistic < -10  # far too few rising sequences
    assert result.check("next_card_guessing").verdict is Verdict.FAIL


def test_single_pass_ten_shelf_machine_fails() -> None:
    perm = simulate_shoes("shelf:m=10", 300, 312, 4)
    result = battery.run_battery(perm, alpha=0.01)
    assert result.verdict is Verdict.FAIL
    assert result.check("turning_points").verdict is Verdict.FAIL


def _fair(n_shoes: int = 200, n: int = 52, seed: int = 5) -> npt.NDArray[np.uint16]:
    return simulate_shoes("fisher-yates", n_shoes, n, seed)


def test_stuck_card_fails() -> None:
    perm = _fair()
    # input card 17 never moves from position 17: swap it back into place in every shoe
    for row in perm:
        j = int(np.flatnonzero(row == 17)[0])
        row[j], row[17] = row[17], row[j]
    result = battery.run_battery(perm)
    assert result.check("position_uniformity").verdict is Verdict.FAIL
    assert result.check("position_uniformity").detail["worst_input_position"] == 17


def test_missing_card_fails_at_once_naming_shoe_and_card() -> None:
    loaded = native.new_shoe(1, ids=True)
    perm = _fair()
    perm[123, 5] = 52  # a card that was never loaded replaces one: that card is missing
    result = battery.run_battery(perm, loaded_ids=loaded)
    assert result.verdict is Verdict.FAIL
    assert result.checks[0].name == "integrity"
    missing = int(np.setdiff1d(np.arange(52), perm[123][perm[123] < 52])[0])
    ident = int(loaded[missing])
    integrity: str = result.integrity  # type: ignore[assignment]
    assert integrity.startswith("shoe 123 is not a permutation")
    assert f"missing card id {ident}" in integrity
    assert "1 card(s) that were never loaded" in integrity


def test_duplicated_card_fails_naming_it() -> None:
    perm = _fair()
    perm[7, 0] = perm[7, 1]
    result = battery.run_battery(perm)
    assert result.verdict is Verdict.FAIL
    assert f"duplicated input position {int(perm[7, 1])}" in result.integrity  # type: ignore[operator]


def test_repeated_shoe_fails_repeated_shoes() -> None:
    """A shoe repeated anywhere (here not even next to its twin) fails its own check, with
    the union bound C(200, 2) / 312! as the p-value (log10 = -640.02...)."""
    perm = _fair(n=312)
    perm[150] = perm[49]
    result = battery.run_battery(perm)
    rep = result.check("repeated_shoes")
    assert rep.verdict is Verdict.FAIL and rep.statistic == 1.0
    bound = math.log10(200 * 199 / 2) - math.lgamma(313) / math.log(10)
    assert rep.detail["log10_p_bound"] == pytest.approx(bound, rel=1e-12)
    assert -640.03 < bound < -640.02
    assert battery.run_battery(_fair(n=312)).check("repeated_shoes").p_value == 1.0


def test_adjacent_rank_pairs_uses_the_composition() -> None:
    rng = native.Xoshiro256StarStar(9)
    ids = native.shuffle_batch(rng, 400, decks=6, ids=True)
    loaded = native.new_shoe(6, ids=True)
    perm = battery.input_positions(ids, loaded)
    codes = (ids % 52).astype(np.uint8)
    fair = battery.run_battery(perm, codes=codes)
    assert fair.check("adjacent_rank_pairs").verdict is Verdict.PASS
    # a dealer-friendly stacking: every ten-value card followed by another ten (sorted pairs)
    stacked = codes.copy()
    stacked[:, ::2] = np.sort(stacked.reshape(400, -1, 2), axis=2)[:, :, 0]
    bad = battery.run_battery(perm, codes=stacked).check("adjacent_rank_pairs")
    assert bad.verdict is Verdict.FAIL


def test_holm_adjustment_exact() -> None:
    assert battery.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_false_positive_rate_at_most_alpha() -> None:
    # 300 seeded small campaigns of a fair shuffler: the battery's family-wise error rate
    # must not be significantly above alpha (one-sided exact binomial test at 1%)
    alpha = 0.05
    campaigns = 300
    failures = sum(
        battery.run_battery(_fair(60, 52, 1000 + i), alpha=alpha).verdict is Verdict.FAIL
        for i in range(campaigns)
    )
    test = stats.binomtest(failures, campaigns, alpha, alternative="greater")
    assert test.pvalue > 0.01, (failures, campaigns)
    ci = test.proportion_ci(0.95)
    assert ci.low <= alpha
    assert Fraction(failures, campaigns) <= Fraction(2 * alpha)


def test_power_against_named_alternatives() -> None:
    power = estimate_power("riffle:k=5", 200, 52, replicates=5, seed=1)
    assert power["rising_sequences"] == 1.0 and power["battery"] == 1.0
    assert estimate_power("fisher-yates", 200, 52, replicates=5, seed=1)["battery"] <= 0.2


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="alpha must be in"):
        battery.run_battery(_fair(), alpha=0)
    with pytest.raises(ValueError, match="unknown checks"):
        battery.run_battery(_fair(), checks=["runs"])
    with pytest.raises(ValueError, match="unknown shuffle model"):
        simulate_shoes("riffles:k=7", 2, 52, 0)  # "riffle" alone: k=7 by default
    with pytest.raises(ValueError, match="need at least 2 shoes"):
        battery.run_battery(_fair()[:1])
