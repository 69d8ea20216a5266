"""Shoes and Fisher-Yates shuffles: new-deck order, uniformity, reproducibility, streams."""

from itertools import permutations
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from feltlab import native
from feltlab.cards import card_code
from feltlab.seeds import child_seed

ORDERINGS = {p: i for i, p in enumerate(permutations(range(4)))}
# seeded tests: the threshold is a p-value this fixed sample must exceed; the power checks
# below show the same statistic at the same sample size rejecting biased shuffles.
ALPHA = 1e-6


def _ordering_counts(rows: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """Counts of the 24 relative orders of the values 0..3 in each row."""
    rows = np.asarray(rows)
    pos = np.argsort(rows, axis=1)[:, :4] if rows.shape[1] > 4 else np.argsort(rows, axis=1)
    ranks = np.argsort(np.argsort(pos, axis=1), axis=1)  # order of the four cards' positions
    codes = [ORDERINGS[tuple(r)] for r in ranks.tolist()]
    return np.bincount(codes, minlength=24)


def _chi2_pvalue(counts: npt.ArrayLike) -> float:
    return float(stats.chisquare(counts).pvalue)


def test_new_deck_order_is_the_us_new_deck_order() -> None:
    deck = native.new_deck_order()
    names = ["AS", "2S", "KS", "AD", "KD", "KC", "AC", "KH", "AH"]
    positions = [0, 1, 12, 13, 25, 26, 38, 39, 51]
    assert [int(deck[p]) for p in positions] == [card_code(n) for n in names]
    assert sorted(deck.tolist()) == list(range(52))


@pytest.mark.parametrize("decks", range(1, 9))
def test_new_shoe_codes_and_ids(decks: int) -> None:
    codes = native.new_shoe(decks)
    ids = native.new_shoe(decks, ids=True)
    assert codes.dtype == np.uint8 and ids.dtype == np.uint16
    assert codes.shape == ids.shape == (52 * decks,)
    assert (ids % 52 == codes).all()
    assert (ids // 52 == np.repeat(np.arange(decks), 52)).all()
    assert sorted(ids.tolist()) == list(range(52 * decks))


def test_all_24_orderings_of_four_cards_equally_likely() -> None:
    rng = native.Xoshiro256StarStar(20261129)
    n = 48_000
    rows = []
    a = np.empty(4, dtype=np.uint8)
    for _ in range(n):
        a[:] = (0, 1, 2, 3)
        native.shuffle(a, rng)
        rows.append(a.copy())
    counts = np.bincount([ORDERINGS[tuple(r)] for r in np.array(rows).tolist()], minlength=24)
    assert counts.sum() == n and (counts > 0).all()
    assert _chi2_pvalue(counts) > ALPHA


def test_chi_square_detects_the_naive_shuffle_at_the_same_size() -> None:
    # calibration: swapping with a position drawn from all n (not 0..i) is biased
    gen = np.random.default_rng(1)
    n = 48_000
    counts = np.zeros(24, dtype=np.int64)
    for _ in range(n):
        a = [0, 1, 2, 3]
        for i in range(4):
            j = int(gen.integers(4))
            a[i], a[j] = a[j], a[i]
        counts[ORDERINGS[tuple(a)]] += 1
    assert _chi2_pvalue(counts) < ALPHA


@pytest.mark.parametrize("rng_name", ["xoshiro256**", "chacha20"])
def test_batch_orderings_of_four_cards_uniform(rng_name: str) -> None:
    # the relative order of cards 0..3 in a shuffled one-deck batch (four-lane C path)
    batch = native.shuffle_batch(native.make_rng(rng_name, 99), 24_000, decks=1)
    counts = _ordering_counts(batch)
    assert _chi2_pvalue(counts) > ALPHA


def test_card_by_position_uniform_in_six_deck_batch() -> None:
    batch = native.shuffle_batch(native.Xoshiro256StarStar(5), 20_000, decks=6, ids=True)
    # where does id 0 land?  312 positions, 20,000 shoes
    positions = np.argmax(batch == 0, axis=1)
    counts = np.bincount(positions, minlength=312)
    assert _chi2_pvalue(counts) > ALPHA
    # every row is a permutation of the shoe
    assert (np.sort(batch, axis=1) == np.arange(312)).all()


def test_riffle_four_times_fails_the_position_test() -> None:
    # calibration of the same statistic: 4 GSR riffles of one deck are far from uniform
    rng = native.Xoshiro256StarStar(5)
    rows = np.empty((3000, 52), dtype=np.uint8)
    for r in rows:
        r[:] = np.arange(52)
        native.riffle_shuffle(r, rng, passes=4)
    counts = np.bincount(np.argmax(rows == 0, axis=1), minlength=52)
    assert _chi2_pvalue(counts) < ALPHA


def _rising_sequences(order: tuple[int, ...]) -> int:
    where = {v: i for i, v in enumerate(order)}
    return 1 + sum(where[v] < where[v - 1] for v in range(1, len(order)))


@pytest.mark.parametrize("passes", [1, 2, 3, 9])
def test_k_riffles_follow_the_bayer_diaconis_law(passes: int) -> None:
    """k GSR riffles of n cards give the permutation with r rising sequences with probability
    C(2^k + n - r, n) / 2^(kn) (Bayer and Diaconis 1992, Theorem 1): the law of the C core's
    riffle model (drawn as one 2^k-shuffle, in chunks of 8 riffles: 9 is 8 then 1), checked
    exactly on 5 cards by a seeded chi-square over every permutation the law allows; none it
    forbids (more than 2^k rising sequences) ever appears."""
    from math import comb

    n, shoes, a = 5, 60_000, 2**passes
    rng = native.Xoshiro256StarStar(11 + passes)
    seen: dict[tuple[int, ...], int] = {}
    row = np.empty(n, dtype=np.uint8)
    for _ in range(shoes):
        row[:] = np.arange(n)
        native.riffle_shuffle(row, rng, passes=passes)
        key = tuple(row.tolist())
        seen[key] = seen.get(key, 0) + 1
    law = {p: comb(a + n - _rising_sequences(p), n) / a**n for p in permutations(range(n))}
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    assert all(law[p] > 0 for p in seen)  # nothing the law forbids
    allowed = [p for p in law if law[p] > 0]
    observed = [seen.get(p, 0) for p in allowed]
    expected = [law[p] * shoes for p in allowed]
    assert stats.chisquare(observed, expected).pvalue > ALPHA
    if passes <= 3:  # the statistic has the power to tell k riffles from k + 1
        b = 2 * a
        other = [comb(b + n - _rising_sequences(p), n) / b**n * shoes for p in allowed]
        scale = sum(observed) / sum(other)
        assert stats.chisquare(observed, [e * scale for e in other]).pvalue < ALPHA


@pytest.mark.parametrize("ids", [False, True])
@pytest.mark.parametrize("rng_name", ["xoshiro256**", "chacha20"])
def test_same_seed_same_shoes_and_streams_differ(ids: bool, rng_name: str) -> None:
    a = native.shuffle_batch(native.make_rng(rng_name, 3), 50, decks=8, ids=ids)
    b = native.shuffle_batch(native.make_rng(rng_name, 3), 50, decks=8, ids=ids)
    assert (a == b).all()
    c = native.shuffle_batch(native.make_rng(rng_name, 4), 50, decks=8, ids=ids)
    assert (a != c).any(axis=1).all()
    s1, s2 = (native.make_rng(rng_name, child_seed(3, k)) for k in (1, 2))
    x = native.shuffle_batch(s1, 50, decks=8, ids=ids)
    y = native.shuffle_batch(s2, 50, decks=8, ids=ids)
    assert (x != y).any(axis=1).all()
    # no shoe repeats within the batch
    assert len({row.tobytes() for row in np.concatenate([a, x, y])}) == 150


def test_batch_is_a_prefix_in_fours() -> None:
    # rows are shuffled four at a time from one stream: 4 + 6 shoes == 10 shoes, and the
    # rows are distinct from the single-row path's order of draws
    r1 = native.Xoshiro256StarStar(8)
    parts = np.concatenate([native.shuffle_batch(r1, 4), native.shuffle_batch(r1, 6)])
    whole = native.shuffle_batch(native.Xoshiro256StarStar(8), 10)
    assert (parts == whole).all()
    r2 = native.Xoshiro256StarStar(8)
    singles = np.concatenate([native.shuffle_batch(r2, 1) for _ in range(10)])
    assert (np.sort(singles, axis=1) == np.sort(whole, axis=1)).all()
    assert not (singles == whole).all()


def test_out_array_is_filled_in_place() -> None:
    out = np.zeros((7, 104), dtype=np.uint16)
    ret = native.shuffle_batch(native.ChaCha20(1), decks=2, ids=True, out=out)
    assert ret is out
    assert (np.sort(out, axis=1) == np.arange(104)).all()


def test_shuffle_long_array_crosses_every_batch_regime() -> None:
    # 2^16 + 5000 cards: k = 4, 5 (64-bit words), then 3 per half-word
    a = np.arange(70_000, dtype=np.uint64).astype(np.uint16)
    native.shuffle(a, native.Xoshiro256StarStar(1))
    assert np.array_equal(np.sort(a), np.sort(np.arange(70_000).astype(np.uint16)))
    fixed = int((a == np.arange(70_000).astype(np.uint16)).sum())
    assert fixed < 12  # fixed points of a random permutation: Poisson(1)-ish


def test_shelf_single_pass_is_two_monotone_runs_per_shelf() -> None:
    # one pass of an m-shelf machine: each shelf unloads the cards placed on top in reverse
    # order, then those placed under in order (Diaconis, Fulman and Holmes 2013), so the
    # output is at most 2m monotone runs: few turning points, where a Fisher-Yates shoe of
    # 312 cards has about 2/3 * 310 of them.
    rng = native.Xoshiro256StarStar(3)
    a = np.arange(312, dtype=np.uint16)
    native.shelf_shuffle(a, rng, shelves=10)
    assert sorted(a.tolist()) == list(range(312))

    def turning_points(x: npt.NDArray[Any]) -> int:
        return int((np.diff(np.sign(np.diff(x.astype(np.int32)))) != 0).sum())

    assert 0 < turning_points(a) <= 4 * 10
    b = native.shuffle_batch(rng, 1, decks=6, ids=True)[0]
    assert turning_points(b) > 150
