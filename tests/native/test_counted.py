"""The counting machinery of the C round simulator (fl_simulate_counted): every round's count
at the moment of the bet, recomputed here card by card from the traced rounds of the same
generator, and the bucketed sums against the plain tally."""

from __future__ import annotations

import math

import numpy as np
import pytest

from feltlab import native
from feltlab.core_rules import simulator_rules
from feltlab.math.strategy_tables import strategy_tables
from feltlab.rules import Rules
from feltlab.simulation import chunk, side_tables

HILO = tuple(1 if 1 <= c >> 2 <= 5 else -1 if c >> 2 == 0 or c >> 2 >= 9 else 0 for c in range(52))
N = 4_000


def _traced(rules: Rules, seed: int, n: int = N) -> native.SimResult:
    return native.simulate_rounds(
        native.Xoshiro256StarStar(seed),
        simulator_rules(rules, strategy_tables(rules)),
        n,
        trace_cap=64,
    )


def _bets(rules: Rules, res: native.SimResult, value: object) -> list[int]:
    """Each round's bucket value, replaying the shoes: a shoe ends after the round that
    dealt its cutting card (cut_position cards)."""
    cut = simulator_rules(rules, strategy_tables(rules)).cut_position
    size = rules.decks * 52
    assert res.trace is not None and res.trace_len is not None
    seen: list[int] = []
    out = []
    for i in range(len(res.net)):
        out.append(value(seen, size - len(seen)))  # type: ignore[operator]
        seen += [int(c) for c in res.trace[i, : res.trace_len[i]]]
        if cut == 0 or len(seen) >= cut:
            seen = []
    return out


def _check(spec: native.CountSpec, values: list[int], res: native.SimResult, seed: int) -> None:
    rules = Rules.preset("vegas_s17")
    got = native.simulate_counted(
        native.Xoshiro256StarStar(seed), simulator_rules(rules, strategy_tables(rules)), N, spec
    )
    idx = np.clip(np.array(values) - spec.lowest, 0, spec.n_buckets - 1)
    want_rounds = np.bincount(idx, minlength=spec.n_buckets)
    assert got.bucket_rounds.tolist() == want_rounds.tolist()
    net = res.net.astype(np.int64)
    for b in range(spec.n_buckets):
        assert got.bucket_net[b] == int(net[idx == b].sum())
        assert got.bucket_net_sq[b] == int((net[idx == b] ** 2).sum())
    assert got.rounds == N and got.net == int(net.sum())


def test_the_true_count_of_every_round_is_the_hilo_count_of_the_cards_seen_per_deck_left() -> None:
    rules = Rules.preset("vegas_s17")
    res = _traced(rules, 3)

    def tc(seen: list[int], left: int) -> int:  # floor(2 * RC * 52 / left): half-deck steps
        return math.floor(2 * sum(HILO[c] for c in seen) * 52 / left)

    spec = native.CountSpec(HILO, native.COUNT_TRUE, resolution=2, lowest=-12, n_buckets=25)
    values = _bets(rules, res, tc)
    assert min(values) < -12 and max(values) > 12  # both clamped ends are exercised
    _check(spec, values, res, 3)


def test_running_window_and_suit_counts_replay_card_by_card() -> None:
    rules = Rules.preset("vegas_s17")
    res = _traced(rules, 4)
    run = native.CountSpec(HILO, native.COUNT_RUNNING, lowest=-20, n_buckets=41)
    _check(run, _bets(rules, res, lambda seen, left: sum(HILO[c] for c in seen)), res, 4)
    win = native.CountSpec(HILO, native.COUNT_WINDOW, window=7, lowest=-7, n_buckets=15)
    _check(win, _bets(rules, res, lambda seen, left: sum(HILO[c] for c in seen[-7:])), res, 4)

    def suit(seen: list[int], left: int) -> int:
        unseen = [rules.decks * 13 - sum(1 for c in seen if c & 3 == s) for s in range(4)]
        return max(math.floor(3 * (52 * u - 13 * left) / left) for u in unseen)

    spec = native.CountSpec((0,) * 52, native.COUNT_SUIT, resolution=3, lowest=0, n_buckets=9)
    _check(spec, _bets(rules, res, suit), res, 4)

    def jacobson(seen: list[int], left: int) -> int:  # most abundant suit less the least
        unseen = [rules.decks * 13 - sum(1 for c in seen if c & 3 == s) for s in range(4)]
        return math.floor(2 * 52 * (max(unseen) - min(unseen)) / left)

    spec = native.CountSpec(
        (0,) * 52, native.COUNT_SUIT_RANGE, resolution=2, lowest=0, n_buckets=15
    )
    values = _bets(rules, res, jacobson)
    assert max(values) > 14  # the clamped top bucket is exercised
    _check(spec, values, res, 4)


def test_counted_sums_and_side_tables_add_up_to_the_plain_tally_of_the_same_rounds() -> None:
    rules = Rules.preset("nz")
    wagers = ("perfect_pairs", "twenty_one_plus_three")
    tables = tuple(side_tables.side_table(chunk.installed_wager(w, None)) for w in wagers)
    assert all(t is not None for t in tables)
    sr = simulator_rules(rules, strategy_tables(rules))
    plain = native.simulate_tally(native.Xoshiro256StarStar(8), sr, 50_000, tables)  # type: ignore[arg-type]
    spec = native.CountSpec(HILO, lowest=-6, n_buckets=13)
    got = native.simulate_counted(native.Xoshiro256StarStar(8), sr, 50_000, spec, tables)  # type: ignore[arg-type]
    assert (got.rounds, got.net, got.net_sq) == (plain.rounds, plain.net, plain.net_sq)
    assert sum(got.bucket_net) == plain.net and sum(got.bucket_net_sq) == plain.net_sq
    for k in range(2):
        assert got.bucket_counts[:, k, :].sum(axis=0).tolist() == plain.counts[k].tolist()
        assert (got.bucket_counts[:, k, :].sum(axis=1) == got.bucket_rounds).all()


def test_every_round_is_bucketed_zero_when_each_round_has_a_fresh_shoe() -> None:
    sr = simulator_rules(
        Rules.preset("vegas_s17"), strategy_tables(Rules.preset("vegas_s17")), fresh_shoe=True
    )
    spec = native.CountSpec(HILO, lowest=-3, n_buckets=7)
    got = native.simulate_counted(native.Xoshiro256StarStar(1), sr, 5_000, spec)
    assert got.bucket_rounds.tolist() == [0, 0, 0, 5_000, 0, 0, 0]


def test_a_continuous_shuffler_is_reproducible_from_its_seed_under_either_generator() -> None:
    sr = simulator_rules(Rules.preset("nz"), strategy_tables(Rules.preset("nz")))
    win = native.CountSpec(HILO, native.COUNT_WINDOW, window=16, lowest=-8, n_buckets=17)
    for buffer in (0, 16, 260):  # 260: the machine keeps one deck, enough for any round
        csm = native.CsmModel(buffer=buffer)
        runs = [
            native.simulate_counted(native.Xoshiro256StarStar(2), sr, 20_000, win, csm=csm)
            for _ in range(2)
        ]
        assert runs[0].bucket_net == runs[1].bucket_net and runs[0].rounds == 20_000
        assert int(runs[0].bucket_rounds.sum()) == 20_000
        chacha = native.ChaCha20(7)
        assert native.simulate_counted(chacha, sr, 1_000, win, csm=csm).rounds == 1_000


def _extremes(buffer: int) -> tuple[float, float]:
    """(difference, its standard error) of the player's expectation per unit between the
    rounds bet at a window count of >= +8 and of <= -8 (Hi-Lo, the last 52 cards seen), off a
    continuous shuffler with a buffer of ``buffer`` cards (nz rules, 2,000,000 rounds)."""
    sr = simulator_rules(Rules.preset("nz"), strategy_tables(Rules.preset("nz")))
    win = native.CountSpec(HILO, native.COUNT_WINDOW, window=52, lowest=-8, n_buckets=17)
    csm = native.CsmModel(buffer=buffer)
    g = native.simulate_counted(native.Xoshiro256StarStar(7), sr, 2_000_000, win, csm=csm)

    def mean_se(b: int) -> tuple[float, float]:
        n = int(g.bucket_rounds[b])
        m = g.bucket_net[b] / n
        return m / 1000, math.sqrt((g.bucket_net_sq[b] / n - m * m) / n) / 1000

    (lo, lo_se), (hi, hi_se) = mean_se(0), mean_se(16)
    return hi - lo, math.hypot(lo_se, hi_se)


def test_a_buffer_holding_the_last_cards_back_makes_their_count_predict_the_next_round() -> None:
    """Held in a 52-card buffer, the last 52 cards seen are out of the machine: a window count
    of +8 (eight more small cards than big held back) leaves it rich in tens and aces, about
    +1.5 true count over the other five decks, worth about 2% to the player over a count of
    -8 (measured: +2.3%, standard error 0.36%).  With no buffer the same count says nothing
    (every returned card is back in the machine): seeded, each side more than 2.5 standard
    errors from its threshold."""
    held, se = _extremes(52)
    assert held > 0.01 and held - 0.01 > 2.5 * se, (held, se)
    free, se = _extremes(0)
    assert abs(free) < 0.01 and 0.01 - abs(free) > 2.5 * se, (free, se)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tags": (1,) * 51}, "52 tags"),
        ({"mode": native.COUNT_WINDOW, "window": 0}, "window >= 1"),
        ({"resolution": 0}, "resolution"),
        ({"n_buckets": 257}, "n_buckets"),
        ({"tags": (2000,) * 52}, "tag"),
    ],
)
def test_a_bad_count_is_refused_in_one_line(change: dict[str, object], message: str) -> None:
    spec = native.CountSpec(**{"tags": HILO, **change})  # type: ignore[arg-type]
    sr = simulator_rules(Rules.preset("nz"), strategy_tables(Rules.preset("nz")))
    with pytest.raises(ValueError, match=message):
        native.simulate_counted(native.Xoshiro256StarStar(1), sr, 10, spec)


def test_a_continuous_shuffler_refuses_a_true_count_and_a_buffer_that_empties_it() -> None:
    sr = simulator_rules(Rules.preset("nz"), strategy_tables(Rules.preset("nz")))
    rng = native.Xoshiro256StarStar(1)
    with pytest.raises(ValueError, match="never shuffles"):
        native.simulate_counted(rng, sr, 10, native.CountSpec(HILO), csm=native.CsmModel())
    win = native.CountSpec(HILO, native.COUNT_WINDOW, window=4)
    with pytest.raises(ValueError, match="buffer"):
        native.simulate_counted(rng, sr, 10, win, csm=native.CsmModel(buffer=6 * 52))


def test_a_continuous_shuffler_s_running_count_never_wraps() -> None:
    """Off a continuous shuffler the running count never resets: with every tag +1000 it
    passes 2^31 after about 400,000 rounds, and must stay in the top bucket (it once wrapped
    negative in 32 bits and 39% of a million rounds fell into bucket 0)."""
    sr = simulator_rules(Rules.preset("vegas_s17"), strategy_tables(Rules.preset("vegas_s17")))
    spec = native.CountSpec((1000,) * 52, native.COUNT_RUNNING, lowest=0, n_buckets=256)
    got = native.simulate_counted(
        native.Xoshiro256StarStar(1), sr, 1_000_000, spec, csm=native.CsmModel()
    )
    assert got.bucket_rounds[0] == 1 and got.bucket_rounds[255] == 999_999
