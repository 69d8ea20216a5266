"""NIST SP 800-22 rev 1a (feltlab.rig.rng.sp800_22): the worked examples of its section 2 give
their published p-values, the four constants give the reference STS's p-values (stored in
tests/rng/data/sts_pi_e_sqrt.json by tests/rng/sts_reference.py), short inputs are NOT RUN
with the bits they need, and the second-level verdicts follow section 4.2."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from feltlab.native import ChaCha20
from feltlab.native import sp800_22 as kernels
from feltlab.rig.rng.sp800_22 import (
    STS_LINEAR_COMPLEXITY_PI,
    TEST_NAMES,
    Params,
    aperiodic_templates,
    band_false_alarm,
    excursion_probabilities,
    labels,
    overlapping_probabilities,
    proportion_band,
    run_battery,
    run_test,
    second_level,
)

PI_100 = (
    "1100100100001111110110101010001000100001011010001100001000110100"
    "110001001100011001100010100010111000"
)
LONGEST_RUN_128 = (
    "1100110000010101011011000100110011100000000000100100110101010001"
    "0001001111010110100000001101011111001100111001101101100010110010"
)
STS_DATA = json.loads((Path(__file__).parent / "data" / "sts_pi_e_sqrt.json").read_text())


def packed(bits: str) -> tuple[np.ndarray, int]:
    arr = np.array([int(c) for c in bits], dtype=np.uint8)
    return np.packbits(arr).reshape(1, -1), len(bits)


def p_of(name: str, bits: str, **params: Any) -> np.ndarray:
    data, n = packed(bits)
    result = run_test(name, data, n, Params(**params), enforce_minimum=False)
    return np.asarray(result.p_values[0])


# (section, test, bits, params, column, published p-value): SP 800-22 rev 1a section 2's
# examples, printed to six places.
SMALL_EXAMPLES = [
    ("2.1.4", "frequency", "1011010101", {}, 0, 0.527089),
    ("2.1.8", "frequency", PI_100, {}, 0, 0.109599),
    ("2.2.4", "block_frequency", "0110011010", {"block_frequency_block": 3}, 0, 0.801252),
    ("2.2.8", "block_frequency", PI_100, {"block_frequency_block": 10}, 0, 0.706438),
    ("2.3.4", "runs", "1001101011", {}, 0, 0.147232),
    ("2.3.8", "runs", PI_100, {}, 0, 0.500798),
    ("2.4.8", "longest_run", LONGEST_RUN_128, {}, 0, 0.180609),
    ("2.11.4", "serial", "0011011101", {"serial_length": 3}, 0, 0.808792),
    ("2.11.4", "serial", "0011011101", {"serial_length": 3}, 1, 0.670320),
    ("2.12.4", "approximate_entropy", "0100110101", {"approximate_entropy_length": 3}, 0, 0.261961),
    ("2.12.8", "approximate_entropy", PI_100, {"approximate_entropy_length": 2}, 0, 0.235301),
    ("2.13.4", "cumulative_sums", "1011010111", {}, 0, 0.4116588),
    ("2.13.8", "cumulative_sums", PI_100, {}, 0, 0.219194),
    ("2.13.8", "cumulative_sums", PI_100, {}, 1, 0.114866),
    ("2.15.4", "random_excursions_variant", "0110110101", {"excursion_min_cycles": 1}, 9, 0.683091),
]


@pytest.mark.parametrize(
    ("section", "name", "bits", "params", "column", "published"), SMALL_EXAMPLES
)
def test_worked_example_gives_its_published_p_value(
    section: str, name: str, bits: str, params: dict[str, int], column: int, published: float
) -> None:
    assert p_of(name, bits, **params)[column] == pytest.approx(published, abs=1e-6), section


def test_template_example_2_7_4() -> None:
    """B = 001 in 10100100101110010110, N = 2 blocks of M = 10: W = (2, 1), P = 0.344154."""
    data, n = packed("10100100101110010110")
    w = kernels.template_counts(data, n, np.array([0b001]), 3, 2)
    assert w.tolist() == [[[2, 1]]]
    p = dict(
        zip(
            labels("non_overlapping_template", Params(template_length=3)),
            p_of(
                "non_overlapping_template",
                "10100100101110010110",
                template_length=3,
                template_blocks=2,
            ),
            strict=True,
        )
    )
    assert p["001"] == pytest.approx(0.344154, abs=1e-6)


def test_random_excursion_example_2_14_4() -> None:
    """0110110101: J = 3 cycles, state +1 visited (1, 1, 0, 1, 0, 0) times k = 0..5; the text's
    chi^2 = 4.333033 (P = 0.502529) came from its table's pi rounded to four places: the
    exact chi^2 is 13/3, P = 0.502488."""
    data, n = packed("0110110101")
    cycles, nu, xi = kernels.excursions(data, n)
    assert cycles.tolist() == [3]
    assert nu[0, 4].tolist() == [1, 1, 0, 1, 0, 0]
    assert xi[0, 9] == 4  # state +1 visited 4 times (2.15.4)
    p = p_of("random_excursions", "0110110101", excursion_min_cycles=1)[4]
    assert p == pytest.approx(0.502488, abs=1e-6)
    assert abs(p - 0.502529) < 5e-5


def test_dft_example_2_6_4_counts_every_modulus_below_the_threshold() -> None:
    """1001010011: the moduli of the first n/2 = 5 frequencies are 0, 2, 4.47, 2, 4.47, all
    below T = sqrt(ln(20) 10) = 5.47, so N1 = 5 and P = erfc(0.25 / sqrt(0.11875 * 2)) =
    0.468160; the text prints N1 = 4 (P = 0.029523), against its own moduli.  Our count agrees
    with the STS's at 10^6 bits (test_constants_match_the_reference_sts)."""
    x = np.array([int(c) for c in "1001010011"]) * 2.0 - 1.0
    assert np.all(np.abs(np.fft.fft(x))[:5] < math.sqrt(math.log(20) * 10))
    assert p_of("dft", "1001010011")[0] == pytest.approx(math.erfc(0.25 / math.sqrt(2 * 0.11875)))


def test_examples_on_e(expansions: dict[str, np.ndarray]) -> None:
    """The worked examples on the first bits of e (2.5.8, 2.8.8, 2.9.8, 2.10.8, 2.11.8,
    2.14.8, 2.15.8)."""
    e = expansions["e"]
    assert kernels.rank(e, 100_000).tolist() == [[23, 60, 14]]
    assert run_test("rank", e, 100_000).p_values[0, 0] == pytest.approx(0.532069, abs=1e-6)
    # 2.8.8: the counts; its P = 0.110434 came from the uncorrected probabilities, the exact
    # ones give 0.159037 (the improved STS agrees: test_constants_match_the_reference_sts)
    assert kernels.overlapping(e, 10**6, 9, 1032, 5).tolist() == [[329, 164, 150, 111, 78, 136]]
    assert run_test("overlapping_template", e, 10**6).p_values[0, 0] == pytest.approx(
        0.159037, abs=1e-6
    )
    assert run_test("universal", e, 10**6).p_values[0, 0] == pytest.approx(0.282568, abs=1e-6)
    serial = run_test("serial", e, 10**6, Params(serial_length=2)).p_values[0]
    assert serial == pytest.approx([0.843764, 0.561915], abs=1e-6)
    lc = Params(
        linear_complexity_block=1000, linear_complexity_probabilities=STS_LINEAR_COMPLEXITY_PI
    )
    hist = kernels.linear_complexity(e, 10**6, 1000)
    from feltlab.rig.rng.sp800_22 import linear_complexity_classes

    assert linear_complexity_classes(hist.astype(float), 1000).tolist() == [
        [11, 31, 116, 501, 258, 57, 26]
    ]
    assert run_test("linear_complexity", e, 10**6, lc).p_values[0, 0] == pytest.approx(
        0.845406, abs=1e-6
    )
    sp = run_test("linear_complexity", e, 10**6, Params(linear_complexity_block=1000)).p_values
    assert sp[0, 0] == pytest.approx(0.844721, abs=1e-6)  # with SP 800-22 3.10's 0.010417
    assert kernels.excursions(e, 10**6)[0].tolist() == [1490]
    excursions = [0.573306, 0.197996, 0.164011, 0.007779, 0.786868, 0.440912, 0.797854, 0.778186]
    assert run_test("random_excursions", e, 10**6).p_values[0] == pytest.approx(
        excursions, abs=1e-6
    )
    variant = [
        0.858946,
        0.794755,
        0.576249,
        0.493417,
        0.633873,
        0.917283,
        0.934708,
        0.816012,
        0.826009,
        0.137861,
        0.200642,
        0.441254,
        0.939291,
        0.505683,
        0.445935,
        0.512207,
        0.538635,
        0.593930,
    ]
    got = run_test("random_excursions_variant", e, 10**6).p_values[0]
    assert got == pytest.approx(variant, abs=1e-6)


def test_overlapping_probabilities_are_hamano_kanekos() -> None:
    """The class probabilities of m = 9, M = 1032, K = 5, exact (Hamano and Kaneko 2007), equal
    SP 800-22 rev 1a's printed 0.364091, 0.185659, 0.139381, 0.100571, 0.0704323, 0.139865."""
    pi = overlapping_probabilities(9, 1032, 5)
    published = [0.364091, 0.185659, 0.139381, 0.100571, 0.0704323, 0.139865]
    assert pi == pytest.approx(published, abs=1e-6)
    assert sum(pi) == pytest.approx(1.0, abs=1e-12)
    assert excursion_probabilities(1) == pytest.approx([0.5, 0.25, 0.125, 0.0625, 0.03125, 0.03125])


def test_aperiodic_templates_count_as_in_sp800_22() -> None:
    """The bifix-free words of length 2..10 (OEIS A003000; 148 templates of 9 bits, the STS's
    template files' counts)."""
    assert [len(aperiodic_templates(m)) for m in range(2, 11)] == [
        2,
        4,
        6,
        12,
        20,
        40,
        74,
        148,
        284,
    ]
    assert aperiodic_templates(9)[:3] == (0b000000001, 0b000000011, 0b000000101)
    assert len(labels("non_overlapping_template", Params())) == 148


STS_PARAMS = Params(
    block_frequency_block=16384,  # the STS's default; SP 800-22 leaves M to the user
    universal_test_blocks=128_000,  # the STS uses K = 1000 2^L; SP 800-22 every block
    linear_complexity_probabilities=STS_LINEAR_COMPLEXITY_PI,
)


@pytest.mark.parametrize("constant", ["pi", "e", "sqrt2", "sqrt3"])
def test_constants_match_the_reference_sts(
    constant: str, expansions: dict[str, np.ndarray]
) -> None:
    """All 188 p-values equal the STS's (printed to six places) to 1e-6."""
    ref = STS_DATA["p_values"][constant]
    result = run_battery(expansions[constant], 10**6, STS_PARAMS)
    assert sum(t.p_values.shape[1] for t in result.tests) == 188
    worst = {}
    for t in result.tests:
        assert t.ran, t.not_run
        theirs = np.array(ref[t.name])
        assert theirs.shape == (t.p_values.shape[1],), t.name
        worst[t.name] = float(np.max(np.abs(t.p_values[0] - theirs)))
    assert max(worst.values()) <= 1e-6, worst


def test_linear_complexity_counts_match_the_sts(expansions: dict[str, np.ndarray]) -> None:
    from feltlab.rig.rng.sp800_22 import linear_complexity_classes

    for name, bits in expansions.items():
        nu = linear_complexity_classes(
            kernels.linear_complexity(bits, 10**6, 500).astype(float), 500
        )
        assert nu[0].astype(int).tolist() == STS_DATA["p_values"][name]["linear_complexity_counts"]


def test_short_input_is_not_run_with_the_bits_needed() -> None:
    """10^4 bits: the tests that need more say so and give NaN, never a pass."""
    rng = ChaCha20(seed=39)
    data = rng.random_raw(157 * 3).view(np.uint8).reshape(3, -1)[:, :1250].copy()
    result = run_battery(data, 10_000)
    needed = {t.name: t.bits_needed for t in result.tests if not t.ran}
    assert needed == {
        "rank": 38_912,
        "overlapping_template": 1_000_000,
        "universal": 387_840,
        "approximate_entropy": 65_536,
        "random_excursions": 1_000_000,
        "random_excursions_variant": 1_000_000,
        "serial": 524_288,
        "linear_complexity": 1_000_000,
    }
    for t in result.tests:
        assert np.isnan(t.p_values).all() != t.ran, t.name
        if not t.ran:
            assert t.not_run is not None and str(t.bits_needed) in t.not_run
    ran = {c.test for c in result.second_level()}
    assert ran == set(TEST_NAMES) - set(needed)


def test_block_frequency_needs_fewer_than_100_blocks() -> None:
    data = np.zeros((1, 1250), dtype=np.uint8)
    t = run_test("block_frequency", data, 10_000, Params(block_frequency_block=20))
    assert not t.ran and "fewer than 100 blocks" in (t.not_run or "")


def test_excursions_skip_sequences_with_too_few_cycles() -> None:
    """A walk that never returns to zero (all ones) has J = 1 cycle: NaN for that sequence,
    and the second level counts only the others."""
    ones = np.full((1, 125_000), 0xFF, dtype=np.uint8)
    alternating = np.full((1, 125_000), 0b01010101, dtype=np.uint8)  # J = 500,000
    t = run_test("random_excursions", np.vstack([ones, alternating]), 10**6)
    assert t.sequence_ran.tolist() == [False, True]
    assert np.isnan(t.p_values[0]).all() and not np.isnan(t.p_values[1]).any()
    assert second_level(t.name, "x=+1", t.p_values[:, 4], 0.01).sequences == 1
    none = second_level(t.name, "x=+1", t.p_values[:1, 4], 0.01)
    assert not none.judged and not none.ok


def test_second_level_band_and_uniformity() -> None:
    """4.2.1: 1000 sequences at alpha 0.01: the band is 0.99 -+ 0.0094392; 4.2.2: P-value_T =
    igamc(9/2, chi^2/2) over ten bins, uniform at >= 0.0001; below 55 sequences, no verdict."""
    lo, hi = proportion_band(1000, 0.01)
    assert (lo, hi) == pytest.approx(
        (0.99 - 3 * math.sqrt(0.0099 / 1000), 0.99 + 3 * math.sqrt(0.0099 / 1000))
    )
    grid = (np.arange(1000) + 0.5) / 1000  # exactly uniform: 100 a bin
    s = second_level("t", "", grid, 0.01)
    assert s.passed == 990 and s.proportion_ok and s.uniformity_p == pytest.approx(1.0)
    assert s.histogram.tolist() == [100] * 10
    skewed = np.concatenate([grid[:990] * 0.5 + 0.5, grid[:10] * 0.01])
    k = second_level("t", "", skewed, 0.01)
    assert k.proportion_ok and k.uniformity_ok is False and k.uniformity_p < 1e-4
    few = second_level("t", "", np.array([0.5] * 54), 0.01)
    assert few.uniformity_ok is None and math.isnan(few.uniformity_p)
    # 100 sequences, 4 failures: outside 0.99 -+ 0.0298 (the band's false alarm: P(X >= 4))
    four = second_level("t", "", np.array([0.001] * 4 + [0.5] * 96), 0.01)
    assert not four.proportion_ok
    assert band_false_alarm(100, 0.01) == pytest.approx(0.018374, abs=1e-6)


def test_fair_generator_passes_the_family_verdict() -> None:
    """60 ChaCha20 sequences of 2^17 bits (the tests that fit): no column fails the
    family-wise verdict at 0.01 (seeded: the same sequences every run)."""
    rng = ChaCha20(seed=3901)
    data = rng.random_raw(60 * 2048).view(np.uint8).reshape(60, 16384)
    result = run_battery(data, 1 << 17)
    verdict = result.family_verdict(0.01)
    assert verdict.passed, verdict.failing
    assert verdict.columns == len(result.second_level()) > 150


def test_stuck_bit_fails() -> None:
    """Every 8th bit stuck at 1: frequency and runs fail on every sequence."""
    rng = ChaCha20(seed=3902)
    data = (rng.random_raw(60 * 2048).view(np.uint8) | 1).reshape(60, 16384)
    result = run_battery(data, 1 << 17, Params(tests=("frequency", "runs")))
    verdict = result.family_verdict(0.01)
    assert not verdict.passed
    assert {f[0] for f in verdict.failing} == {"frequency", "runs"}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: run_battery(np.zeros(10, dtype=np.uint8), 80), TypeError, "2-D uint8"),
        (lambda: run_battery(np.zeros((1, 10), dtype=np.int8), 80), TypeError, "2-D uint8"),
        (lambda: run_battery(np.zeros((1, 10), dtype=np.uint8), 81), ValueError, "needs 11 bytes"),
        (lambda: run_battery(np.zeros((1, 10), dtype=np.uint8), 0), ValueError, "positive"),
        (
            lambda: run_battery(np.zeros((1, 10), dtype=np.uint8), 80, alpha=1.5),
            ValueError,
            "alpha",
        ),
        (lambda: run_battery(np.zeros((0, 10), dtype=np.uint8), 80), ValueError, "no rows"),
        (lambda: Params(tests=("frequency", "nope")), ValueError, "unknown"),
        (lambda: Params(serial_length=0), ValueError, "positive integer"),
        (lambda: Params(template_length=30), ValueError, "2..21"),
        (lambda: run_test("nope", np.zeros((1, 10), dtype=np.uint8), 80), ValueError, "unknown"),
    ],
)
def test_bad_input_is_one_clear_error(call: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]
