"""The continuous shuffler models' laws on small decks (native/src/csm.c): the ideal machine's
uniformity, one slot's next-card law, a buffer's exact hold-out and the gap law it implies, and
the C slot machine against the rig's Python model of the same declared machine.  The exact
(deterministic) laws are also in native/tests/test_csm.c (`make test-native`)."""

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from feltlab import native
from feltlab.native import CsmModel, csm_stream
from feltlab.rig.certify.analyze_continuous import simulate_gaps

# Seeded tests: each p-value is a fixed number for its seed; the threshold sits far below it,
# and the power checks beside show the same statistic rejecting the wrong law.
ALPHA = 1e-4


def _gaps(stream: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """Return gaps of a one-deck stream of one card a round: the deals between a card's return
    and its next deal (the rig's definition, analyze_continuous.observed_gaps)."""
    last = np.full(52, -1, dtype=np.int64)
    out: list[int] = []
    for t, c in enumerate(stream.ravel().tolist()):
        if last[c] >= 0:
            out.append(t - int(last[c]) - 1)
        last[c] = t
    return np.asarray(out, dtype=np.int64)


def test_ideal_machine_deals_every_card_uniformly_and_independently() -> None:
    s = csm_stream(native.Xoshiro256StarStar(26), CsmModel("ideal"), 1, 52 * 1000, 1).ravel()
    assert stats.chisquare(np.bincount(s, minlength=52)).pvalue > ALPHA
    # the card just returned is dealt next with probability exactly 1/52
    repeats = int((s[1:] == s[:-1]).sum())
    assert stats.binomtest(repeats, s.size - 1, 1 / 52).pvalue > ALPHA
    # rounds of 3: the next round's first card is one of the 3 just returned with p = 3/52
    r = csm_stream(native.Xoshiro256StarStar(27), CsmModel("ideal"), 1, 30_000, 3)
    hits = int((r[1:, :1] == r[:-1]).any(axis=1).sum())
    assert stats.binomtest(hits, r.shape[0] - 1, 3 / 52).pvalue > ALPHA
    assert all(len(set(row)) == 3 for row in r[:500].tolist())  # one deck: no card twice


def test_one_slot_is_the_ideal_machine_for_the_next_card() -> None:
    # one slot: the returned card lands at a uniform depth among 52 places and the deal takes
    # the top, so it is dealt next with probability exactly 1/52
    s = csm_stream(native.Xoshiro256StarStar(3), CsmModel("slots", slots=1), 1, 60_000, 1)
    s = s.ravel()
    repeats = int((s[1:] == s[:-1]).sum())
    assert stats.binomtest(repeats, s.size - 1, 1 / 52).pvalue > ALPHA
    # 38 slots of about 1.4 cards: the returned card is often alone on top, dealt next more
    # often (the declared machine is not the ideal one; the audit measures what it costs)
    m = csm_stream(native.Xoshiro256StarStar(3), CsmModel("slots", slots=38), 1, 60_000, 1)
    m = m.ravel()
    more = int((m[1:] == m[:-1]).sum())
    assert stats.binomtest(more, m.size - 1, 1 / 52, alternative="greater").pvalue < ALPHA


@pytest.mark.parametrize("buffer", [1, 10, 16])
def test_a_buffer_holds_a_card_out_for_exactly_b_returns(buffer: int) -> None:
    # ideal machine, one card a round: the card enters the machine after `buffer` more
    # returns, then is dealt each round with probability 1/(52 - buffer): the gap is
    # buffer + a geometric number of rounds (support 0, 1, ...) with that probability
    model = CsmModel("ideal", buffer=buffer)
    g = _gaps(csm_stream(native.Xoshiro256StarStar(100 + buffer), model, 1, 40_000, 1))
    assert g.min() == buffer
    p = 1 / (52 - buffer)
    edges = np.array([buffer, buffer + 5, buffer + 15, buffer + 30, buffer + 60, 10**9])
    obs = np.histogram(g, bins=edges)[0]
    cdf = 1 - (1 - p) ** (edges - buffer)
    expected = np.diff(cdf) * g.size
    assert stats.chisquare(obs, expected).pvalue > ALPHA
    # and without the buffer's hold-out the fit fails: the ideal machine with no buffer
    plain = _gaps(csm_stream(native.Xoshiro256StarStar(7), CsmModel("ideal"), 1, 40_000, 1))
    assert (plain < buffer).any()


def test_batches_hold_cards_out_until_the_batch_goes_back() -> None:
    # batches of 4 rounds of 2 cards, no buffer: a card dealt in round r is back in the
    # machine only after the batch's 4th round, so it reappears no earlier than the next batch
    model = CsmModel("ideal", policy="batch", batch=4)
    r = csm_stream(native.Xoshiro256StarStar(9), model, 1, 20_000, 2)
    last: dict[int, int] = {}
    earliest = []
    for i, row in enumerate(r.tolist()):
        for c in row:
            if c in last:
                earliest.append(i // 4 - last[c] // 4)
            last[c] = i
    assert min(earliest) == 1  # never within its own batch, and the next batch is possible


def test_c_slot_machine_matches_the_rigs_declared_model() -> None:
    # the rig's return-gap check simulates the declared slot machine in Python
    # (analyze_continuous.simulate_gaps); the C model must have the same gap law
    deals = 30_000
    py = simulate_gaps(52, 38, deals, 2026)
    c = _gaps(csm_stream(native.Xoshiro256StarStar(2026), CsmModel("slots"), 1, deals, 1))
    edges = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 10**9])
    table = np.vstack([np.histogram(py, edges)[0], np.histogram(c, edges)[0]])
    assert stats.chi2_contingency(table).pvalue > ALPHA
    # power: the ideal machine's gaps are told apart from the slot machine's at this sample
    ideal = _gaps(csm_stream(native.Xoshiro256StarStar(2026), CsmModel("ideal"), 1, deals, 1))
    other = np.vstack([np.histogram(py, edges)[0], np.histogram(ideal, edges)[0]])
    assert stats.chi2_contingency(other).pvalue < ALPHA


def test_bad_models_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="CSM kind must be one of ideal, slots"):
        CsmModel("perfect")
    with pytest.raises(ValueError, match="return policy must be one of round, batch"):
        CsmModel(policy="later")
    with pytest.raises(ValueError, match=r"slots must be in 1\.\.255"):
        CsmModel("slots", slots=0)
    # 42 + 5 rounds x 2 cards = 52 held out of 52: the buffer fits alone, the batch does not
    with pytest.raises(
        ValueError, match="leaves no card in a 1-deck machine: use a batch of at most 4 rounds"
    ):
        csm_stream(
            native.Xoshiro256StarStar(1), CsmModel(buffer=42, policy="batch", batch=5), 1, 1, 2
        )
    with pytest.raises(ValueError, match="use a buffer below 50 \\(with batch 1; a larger"):
        CsmModel(buffer=51, policy="batch", batch=5).check(1, 2)
    # the round simulator's rule: a deck beside the buffer and (batch - 1) rounds of 24 cards
    big = CsmModel(policy="batch", batch=64)
    assert big.max_batch(6) == 11 and CsmModel(buffer=20).max_batch(6) == 11
    assert CsmModel(buffer=21).max_batch(6) == 10 and CsmModel(buffer=261).max_batch(6) == 0
    with pytest.raises(ValueError, match=r"a batch of 64 rounds .* give a batch of at most 11"):
        big.check_table(6)
    with pytest.raises(ValueError, match="give a buffer of at most 260 cards \\(with batch 1\\)"):
        CsmModel(buffer=300, policy="batch", batch=2).check_table(6)
    with pytest.raises(TypeError, match="model must be a CsmModel"):
        csm_stream(native.Xoshiro256StarStar(1), "ideal", 1, 1, 1)  # type: ignore[arg-type]
