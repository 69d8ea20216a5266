"""Side wagers as lookup tables for the C simulator (feltlab.simulation.side_tables, issue
17): each table is the wager's classifier evaluated everywhere, the C tally equals the batch
path round for round, too-large wagers are named and fall back, and the caches key on what the table
depends on."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

from feltlab import cache, native
from feltlab.core_rules import simulator_rules
from feltlab.errors import WagerError
from feltlab.math import strategy_tables as simstrategy
from feltlab.plugins.insurance import Insurance
from feltlab.plugins.perfect_pairs import PerfectPairs
from feltlab.plugins.super_sevens import SuperSevens
from feltlab.record import RECORD_BATCH
from feltlab.rules import Rules
from feltlab.simulation import chunk as simchunk
from feltlab.simulation import run as sim
from feltlab.simulation import side_tables as sidetables
from feltlab.wagers import WagerType

ALL = [
    ("perfect_pairs", None),
    ("super_sevens", None),
    ("insurance", None),
    ("madness21", None),
    ("lucky_ladies", None),
    ("twenty_one_plus_three", None),
]


def test_perfect_pairs_table_holds_the_rule_15b5_classes() -> None:
    t = sidetables.side_table(PerfectPairs())
    assert t is not None and t.table.shape == (53, 53) and t.inputs == (0, 1)
    assert t.strides == (53, 1)
    # 7 of clubs (24) with: 7 of clubs (perfect), 7 of spades (27: coloured, both black),
    # 7 of hearts (26: mixed), 8 of clubs (28: no pair); J-Q is no pair (rule 1.0)
    assert [int(t.table[24, c]) for c in (24, 27, 26, 28)] == [3, 2, 1, 0]
    assert int(t.table[40, 44]) == 0
    assert int(t.table[24, 52]) == native.NOT_OFFERED  # a role never dealt is not counted
    # classes: 52 * 52 ordered pairs = 2704; perfect 52 (same card code), coloured 52 * 1...
    counts = np.bincount(t.table[:52, :52].ravel(), minlength=4)
    assert counts.tolist() == [2704 - 13 * 16, 13 * 8, 13 * 4, 13 * 4]


def test_every_installed_table_agrees_with_its_classifier_on_random_rounds() -> None:
    rng = np.random.default_rng(5)
    for name, table in ALL:
        w = simchunk.installed_wager(name, table)
        full = sidetables.full_table(w)
        assert full is not None, name
        assert np.array_equal(full, sidetables.build_table(w)), name  # factored exactly
        cards = rng.integers(0, 52, size=(5000, len(w.card_roles)), dtype=np.uint8)
        want = np.asarray(w.classify(cards))
        got = full[tuple(cards.T)]
        offered = got != native.NOT_OFFERED
        assert np.array_equal(got[offered], want[offered]), name
        if name == "insurance":  # offered only under an ace up (D1 is its first role)
            assert np.array_equal(offered, (cards[:, 0] >> 2) == 0)
        else:
            assert offered.all(), name


def test_c_tally_equals_the_batch_path_for_the_same_seed() -> None:
    rules = Rules.preset("vegas_s17")
    kw = {"seed": 21, "chunk_rounds": 60_000, "wagers": ALL}
    tabled = sim.simulate(rules, 150_000, **kw)  # type: ignore[arg-type]
    traced = sim.simulate(rules, 150_000, trace=True, **kw)  # type: ignore[arg-type]
    assert tabled.tally == traced.tally
    assert tabled.batch_wagers == () and tabled.simulator_version == native.SIM_VERSION
    assert traced.trace is not None and traced.trace.net.shape == (150_000,)
    assert int(traced.trace.net.astype(np.int64).sum()) == tabled.tally.net
    assert tabled.tally.offered["insurance"] == int(((traced.trace.initial[:, 2] >> 2) == 0).sum())


class FiveCards(WagerType):
    """A wager on all five initial cards (53^5 combinations: too large to tabulate)."""

    name = "five_cards"
    card_roles = ("P1", "P2", "D1", "P3", "D2")
    paytables = SuperSevens.paytables

    def classify(self, cards: np.ndarray) -> np.ndarray:
        c = self._checked(cards)
        return np.asarray(SuperSevens().classify(np.ascontiguousarray(c[:, [0, 1, 3]])))


def test_a_wager_too_large_to_tabulate_is_named_and_takes_the_batch_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = FiveCards()
    assert sidetables.table_entries(w) == 53**5 and sidetables.too_large(w)
    assert sidetables.side_table(w) is None
    with pytest.raises(WagerError, match="exceed the 7,890,481 of a side table"):
        sidetables.build_table(w)
    from feltlab.simulation import chunk as simchunk

    real = simchunk.installed_wager

    def fake(n: str, t: str | None) -> WagerType:
        return FiveCards() if n == "five_cards" else real(n, t)

    monkeypatch.setattr(sim, "installed_wager", fake)  # the estimates' lookup
    monkeypatch.setattr(simchunk, "installed_wager", fake)  # the chunks' lookup
    specs = [("five_cards", None), ("super_sevens", None)]
    res = sim.simulate(Rules.preset("nz"), 40_000, seed=4, chunk_rounds=40_000, wagers=specs)
    assert res.batch_wagers == ("five_cards",)
    # the same three cards (P1, P2, P3) decide both: the same counts
    assert res.tally.wagers["five_cards"] == res.tally.wagers["super_sevens"]
    # classified in numpy (it holds the GIL): more workers run in processes, not threads,
    # with the same tally; the patched lookup reaches them only in forked workers
    assert sim.executor_for(2, None, specs, trace=False) == "processes"
    if multiprocessing.get_start_method() == "fork":
        kw = {"seed": 4, "chunk_rounds": 10_000, "wagers": specs}
        one = sim.simulate(Rules.preset("nz"), 40_000, workers=1, **kw)  # type: ignore[arg-type]
        two = sim.simulate(Rules.preset("nz"), 40_000, workers=2, **kw)  # type: ignore[arg-type]
        assert two.executor == "processes" and two.ran_on == "2 processes"
        assert one.tally == two.tally and one.batch_wagers == two.batch_wagers


def test_a_four_card_table_is_factored_in_two_levels() -> None:
    w = simchunk.installed_wager("lucky_ladies", None)
    t = sidetables.side_table(w)
    assert t is not None and t.pre is not None and t.n_pre >= 1
    # far smaller than the 53^4 entries, and exactly the same function
    assert t.table.size + 2 * t.pre.size < 53**4 // 4
    full = sidetables.build_table(w)
    i = np.random.default_rng(1).integers(0, 53, size=(4, 2000))
    first = tuple(i[: t.n_pre])
    rest = tuple(i[t.n_pre :])
    assert np.array_equal(t.table[(t.pre[first], *rest)], full[tuple(i)])


def test_tables_are_cached_on_disk_under_a_key_of_their_inputs() -> None:
    w = Insurance()
    key = sidetables.cache_key(w)
    sidetables.side_table(w)
    stored = cache.load("tables", key)  # insurance: factored (D1 -> ace or not)
    pre = cache.load_any("tables", key + "-pre")
    assert stored is not None and pre is not None
    assert np.array_equal(stored[pre], sidetables.build_table(w))
    assert key != sidetables.cache_key(PerfectPairs())
    one, two = PerfectPairs(paytable="one"), PerfectPairs(paytable="two")
    assert sidetables.cache_key(one) != sidetables.cache_key(two)


def test_strategy_tables_are_cached_on_disk_keyed_by_the_rules() -> None:
    rules = Rules.preset("vegas_h17")
    computed = simstrategy.compute_strategy_tables(rules)
    simstrategy.strategy_tables.cache_clear()
    first = simstrategy.strategy_tables(rules)  # computed and stored (or read back)
    simstrategy.strategy_tables.cache_clear()
    second = simstrategy.strategy_tables(rules)  # read from disk
    for name in ("hard", "soft", "pair", "surr"):
        assert np.array_equal(getattr(first, name), getattr(computed, name)), name
        assert np.array_equal(getattr(second, name), getattr(computed, name)), name
    assert simstrategy._strategy_key(rules) != simstrategy._strategy_key(Rules.preset("vegas_s17"))


def test_a_classifier_index_outside_the_paytable_is_refused() -> None:
    class Bad(PerfectPairs):
        name = "bad_pairs"

        def classify(self, cards: np.ndarray) -> np.ndarray:
            return np.full(len(cards), 7, dtype=np.uint8)

    with pytest.raises(WagerError, match="outside its paytable's 4 outcomes"):
        sidetables.build_table(Bad())


PLAY_DECIDED = [
    ("buster_blackjack", "version2"),
    ("buster_blackjack", "wizard"),
]


def test_a_play_decided_table_is_classify_round_on_every_record_it_can_see() -> None:
    """Buster Blackjack's table is over the round-record fields it declares (dealer_bust,
    dealer_n_cards and hand_blackjack of hands 0..3): 2 x 25 x 2^4 entries, and on the
    simulator's own records it gives what classify_round gives."""
    for name, table in PLAY_DECIDED:
        w = simchunk.installed_wager(name, table)
        inputs = sidetables.table_inputs(w)
        assert inputs is not None
        assert [i.name for i in inputs] == [
            "dealer_bust",
            "dealer_n_cards",
            *(f"hand_blackjack[{h}]" for h in range(4)),
        ]
        assert sidetables.table_entries(w) == 2 * 25 * 16
        full = sidetables.full_table(w)
        assert full is not None and np.array_equal(full, sidetables.build_table(w))
        sr = simulator_rules(
            Rules.preset("vegas_s17"), simstrategy.strategy_tables(Rules.preset("vegas_s17"))
        )
        res = native.simulate_rounds(native.Xoshiro256StarStar(9), sr, 20_000, record=True)
        rec = res.record
        assert rec is not None
        got = full[
            rec["dealer_bust"].astype(int),
            rec["dealer_n_cards"],
            *(rec["hand_blackjack"][:, h].astype(int) for h in range(4)),
        ]
        assert np.array_equal(got, w.classify_round(rec)), name
        assert (got != native.NOT_OFFERED).all()  # every round is on offer


def test_play_decided_wagers_are_tallied_in_c_as_the_record_batch_path_counts_them() -> None:
    """Buster Blackjack (the dealer played out) with the card-decided wagers: the C tally
    through its table equals the batch path over the simulator's round records, round for
    round, for the same seed; no wager takes the batch path."""
    rules = Rules.preset("vegas_s17")
    specs = [*ALL, ("buster_blackjack", "version2")]
    kw = {"seed": 33, "chunk_rounds": 50_000, "wagers": specs}
    tabled = sim.simulate(rules, 100_000, **kw)  # type: ignore[arg-type]
    traced = sim.simulate(rules, 100_000, trace=True, **kw)  # type: ignore[arg-type]
    assert tabled.batch_wagers == ()
    assert tabled.tally == traced.tally
    counts = tabled.tally.wagers["buster_blackjack"]
    assert sum(counts) == 100_000 == tabled.tally.offered["buster_blackjack"]
    # the dealer busts in about 28% of rounds when played out; 3-4 card busts most often
    bust = sum(counts[1:]) / 100_000
    assert 0.26 < bust < 0.31 and counts[1] > counts[2] > counts[3]


def test_bust_bonus_is_tallied_in_c_over_the_dealers_first_three_ranks() -> None:
    """Bust Bonus reads dealer_cards for the 8-8-8: its table is over the dealer's first three
    ranks (simulator inputs FL_IN_DEALER_RANK + 0..2), and the C tally equals its
    classify_round over the simulator's round records round for round (the trace path)."""
    w = simchunk.installed_wager("bust_bonus", None)
    inputs = sidetables.table_inputs(w)
    assert inputs is not None and sidetables.untabulated_reason(w) is None
    ranks = native.RECORD_INPUTS["dealer_cards"]
    assert [i.column for i in inputs][-3:] == list(ranks) and len(ranks) == 3
    assert all(native.SIDE_INPUT_VALUES[c] == 14 for c in ranks)
    full = sidetables.full_table(w)
    assert full is not None and full.shape == (2, 53, 2, 14, 14, 14)
    # a busted dealer (1) with the 8 of clubs up (28), unsuited (0): 8-8-8 pays outcome 21,
    # suited 22; 8-8-9 is an 8-up bust (outcome 8); no bust loses (0)
    assert [int(full[1, 28, 0, 7, 7, 7]), int(full[1, 28, 1, 7, 7, 7])] == [21, 22]
    assert int(full[1, 28, 0, 7, 7, 8]) == 8 and int(full[0, 28, 0, 7, 7, 7]) == 0
    specs = [("bust_bonus", None), ("buster_blackjack", "wizard")]
    kw = {"seed": 2, "chunk_rounds": 30_000, "wagers": specs}
    res = sim.simulate(Rules.preset("vegas_s17"), 60_000, **kw)  # type: ignore[arg-type]
    traced = sim.simulate(Rules.preset("vegas_s17"), 60_000, trace=True, **kw)  # type: ignore[arg-type]
    assert res.batch_wagers == () and res.tally == traced.tally
    assert sum(res.tally.wagers["bust_bonus"]) == 60_000


class DealersFourthCard(WagerType):
    """Reads dealer_cards beyond the first three ranks (the fourth card's suit)."""

    name = "fourth_card"
    round_fields = ("dealer_bust", "dealer_cards")
    dealer_plays_out = True
    paytables = simchunk.installed_wager("bust_bonus", None).paytables

    def classify_round(self, records: np.ndarray) -> np.ndarray:
        r = self._checked_record(records)
        fourth = r["dealer_cards"][:, 3]
        won = (r["dealer_bust"] != 0) & (fourth != native.NO_CARD) & (fourth % 4 == 0)
        return np.asarray(won, dtype=np.uint8)


def test_a_wager_reading_more_of_the_dealers_cards_takes_the_batch_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = DealersFourthCard()
    assert sidetables.side_table(w) is None
    why = sidetables.untabulated_reason(w)
    assert why is not None and "more of dealer_cards than the first three ranks" in why
    from feltlab.simulation import chunk as simchunk

    real = simchunk.installed_wager

    def fake(n: str, t: str | None) -> WagerType:
        return DealersFourthCard() if n == "fourth_card" else real(n, t)

    monkeypatch.setattr(sim, "installed_wager", fake)
    monkeypatch.setattr(simchunk, "installed_wager", fake)
    res = sim.simulate(
        Rules.preset("vegas_s17"),
        20_000,
        seed=2,
        chunk_rounds=20_000,
        wagers=[("fourth_card", None)],
    )
    assert res.batch_wagers == ("fourth_card",) and res.batch_reasons["fourth_card"] == why
    counts = res.tally.wagers["fourth_card"]
    assert sum(counts) == 20_000 and 0 < counts[1] < 20_000 // 4


def test_a_chunk_longer_than_one_call_gives_the_same_rounds_on_every_path() -> None:
    """Since simulator version 3: a chunk of 250,000 rounds is dealt in calls of RECORD_BATCH
    (200,000) rounds on every path, so the tally path, the trace and a run beside another
    wager (Bust Bonus) see the same rounds."""
    rules = Rules.preset("vegas_s17")
    specs = [("perfect_pairs", None), ("buster_blackjack", "version1")]
    kw = {"seed": 8, "chunk_rounds": 250_000}
    tabled = sim.simulate(rules, 250_000, wagers=specs, **kw)  # type: ignore[arg-type]
    traced = sim.simulate(rules, 250_000, wagers=specs, trace=True, **kw)  # type: ignore[arg-type]
    beside = sim.simulate(
        rules,
        250_000,
        wagers=[*specs, ("bust_bonus", None)],
        **kw,  # type: ignore[arg-type]
    )
    assert RECORD_BATCH < 250_000 and native.SIM_VERSION == 4
    assert tabled.tally == traced.tally
    assert beside.tally.net == tabled.tally.net
    for name, _ in specs:
        assert beside.tally.wagers[name] == tabled.tally.wagers[name]
