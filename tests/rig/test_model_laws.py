"""The law of every shuffle model of the library (native/src/models.c), exactly where it is
computable: the C core reproduced word for word by the Python references of
``model_reference`` (whole batches, several deck sizes), each mechanism's law enumerated on
small decks and compared with its published formula or a hand-checked table, and seeded C
samples fitted to those exact laws."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from math import comb, factorial

import numpy as np
import pytest
from scipy import stats

from feltlab import native
from feltlab.rig.certify.simulate import simulate_shoes
from feltlab.rig.devices import models
from feltlab.rig.errors import ModelError

from . import model_reference as ref

Perm = tuple[int, ...]
Law = dict[Perm, Fraction]


def _words(seed: int) -> ref.Words:
    raw = native.Xoshiro256StarStar(seed).random_raw(200_000)
    return ref.Words(iter(int(x) for x in raw))


def _rising_sequences(p: Perm) -> int:
    pos = {v: i for i, v in enumerate(p)}
    return 1 + sum(pos[v + 1] < pos[v] for v in range(len(p) - 1))


def _fit(model: str, n: int, law: Law, shoes: int, seed: int) -> float:
    """The chi-square p-value of ``shoes`` C shoes of ``model`` against the exact ``law``
    (every order of positive probability a cell); asserts no shoe outside its support."""
    got = Counter(map(tuple, simulate_shoes(model, shoes, n, seed).tolist()))
    assert set(got) <= {p for p, q in law.items() if q > 0}
    cells = [p for p, q in law.items() if q > 0]
    observed = [got.get(p, 0) for p in cells]
    expected = [float(law[p]) * shoes for p in cells]
    return float(stats.chisquare(observed, expected).pvalue)


# ---------------------------------------------------------------- word for word


REFERENCES: dict[str, Callable[[ref.Words, int], list[int]]] = {
    "riffle:k=1": lambda w, n: ref.riffle(w, n, 1),
    "riffle:k=7": lambda w, n: ref.riffle(w, n, 7),
    "riffle:k=11": lambda w, n: ref.riffle(w, n, 11),  # two 2^k-shuffles (8 + 3)
    "shelf:m=10": lambda w, n: ref.shelf(w, n, 10, 1),
    "shelf:m=3,passes=2": lambda w, n: ref.shelf(w, n, 3, 2),
    "overhand:passes=3,cut=30": lambda w, n: ref.overhand(w, n, 3, 30),
    "strip:cuts=4,passes=2": lambda w, n: ref.strip(w, n, 4, 2),
    "naive": ref.naive,
    "biased": ref.naive,
    "modulo:bits=7": lambda w, n: ref.modulo(w, n, 7),
    "modulo": lambda w, n: ref.modulo(w, n, 15),
}


@pytest.mark.parametrize("model", sorted(REFERENCES))
@pytest.mark.parametrize("n", [5, 52, 312])
def test_core_equals_the_reference_word_for_word(model: str, n: int) -> None:
    shoes = simulate_shoes(model, 12, n, seed=n)
    w = _words(n)
    want = [REFERENCES[model](w, n) for _ in range(12)]
    assert shoes.dtype == np.uint16 and shoes.shape == (12, n)
    assert shoes.tolist() == want


@pytest.mark.parametrize("shift", [0, 16])
def test_lcg_exact_orbit(shift: int) -> None:
    # the stream's first word (low 31 bits) is the power-up state; the state carries on
    first = int(native.Xoshiro256StarStar(9).random_raw(1)[0])
    lcg = ref.Lcg(first, shift)
    want = [lcg.shoe(52) for _ in range(30)]
    assert simulate_shoes(f"lcg:shift={shift}", 30, 52, seed=9).tolist() == want
    # split over two calls of one stream: the same orbit
    stream, rng = models.parse_model(f"lcg:shift={shift}").stream(), native.Xoshiro256StarStar(9)
    both = np.vstack([stream.shoes(rng, 10, 52), stream.shoes(rng, 20, 52)])
    assert both.tolist() == want


def test_lcg_constants_are_the_c_standards() -> None:
    # ANSI X3.159-1989 4.10.2.2's example rand() from srand(1): 16838, 5758, 10113, ...
    g = ref.Lcg(1, 16)
    assert [g.rand() for _ in range(5)] == [16838, 5758, 10113, 17515, 31051]
    # glibc TYPE_0 (shift 0): bit 0 of the state alternates, so two-card shoes alternate
    two = simulate_shoes("lcg", 12, 2, seed=4).tolist()
    assert all(two[i] == two[i % 2] for i in range(12)) and two[0] != two[1]


def test_short_seed_shoes_are_seeded_fisher_yates() -> None:
    words = native.Xoshiro256StarStar(11).random_raw(400)
    shoes = simulate_shoes("short-seed:bits=3", 400, 52, seed=11)
    for row, w in zip(shoes[:40], words[:40], strict=True):
        want = np.arange(52, dtype=np.uint16)
        native.shuffle(want, native.Xoshiro256StarStar(int(w) >> 61))
        assert row.tolist() == want.tolist()
    # 2^3 seeds: exactly 8 distinct shoes in 400 (each missed with probability (7/8)^400)
    assert len({tuple(r) for r in shoes.tolist()}) == 8
    assert (
        len({tuple(r) for r in simulate_shoes("short-seed:bits=64", 400, 52, 11).tolist()}) == 400
    )


@pytest.mark.parametrize("bits", [1, 2, 5])
def test_short_seed_distinct_shoes_never_exceed_two_to_the_bits(bits: int) -> None:
    shoes = simulate_shoes(f"short-seed:bits={bits}", 300, 10, seed=bits)
    assert len({tuple(r) for r in shoes.tolist()}) == 2**bits


def test_reboot_restarts_the_shoe_sequence() -> None:
    shoes = simulate_shoes("reboot:every=7", 30, 52, seed=2).tolist()
    assert all(shoes[i] == shoes[i % 7] for i in range(30))
    assert len({tuple(r) for r in shoes[:7]}) == 7
    boot = native.Xoshiro256StarStar(int(native.Xoshiro256StarStar(2).random_raw(1)[0]))
    for row in shoes[:7]:  # between reboots: a Fisher-Yates stream from the power-up seed
        want = np.arange(52, dtype=np.uint16)
        native.shuffle(want, boot)
        assert row == want.tolist()


def test_fair_models_draw_as_the_per_shoe_calls() -> None:
    """simulate_shoes of fisher-yates, riffle and shelf equals native.shuffle,
    native.riffle_shuffle and native.shelf_shuffle shoe by shoe (the demo's draws)."""
    calls: tuple[tuple[str, Callable[[np.ndarray, native.BitGenerator], None]], ...] = (
        ("fisher-yates", lambda a, g: native.shuffle(a, g)),
        ("riffle:k=7", lambda a, g: native.riffle_shuffle(a, g, 7)),
        ("shelf:m=10,passes=2", lambda a, g: native.shelf_shuffle(a, g, 10, 2)),
    )
    for model, call in calls:
        g = native.Xoshiro256StarStar(3)
        rows = []
        for _ in range(6):
            a = np.arange(312, dtype=np.uint16)
            call(a, g)
            rows.append(a.tolist())
        assert simulate_shoes(model, 6, 312, seed=3).tolist() == rows


# ---------------------------------------------------------------- exact laws


def _labels_law(n: int, k: int) -> Law:
    """k GSR riffles as one 2^k-shuffle: every k-bit labelling of the n output positions
    equally likely (Bayer and Diaconis 1992)."""
    counts = Counter(
        tuple(ref.riffle_labels(list(range(n)), list(lab)))
        for lab in itertools.product(range(2**k), repeat=n)
    )
    return {p: Fraction(c, 2 ** (k * n)) for p, c in counts.items()}


@pytest.mark.parametrize(("n", "k"), [(n, 1) for n in range(1, 7)] + [(5, 2), (6, 2), (4, 3)])
def test_gsr_law_is_bayer_diaconis(n: int, k: int) -> None:
    law = _labels_law(n, k)
    for p in itertools.permutations(range(n)):
        r = _rising_sequences(p)
        # Bayer and Diaconis (1992), Theorem 1: C(2^k + n - r, n) / 2^(kn)
        want = Fraction(comb(2**k + n - r, n), 2 ** (k * n)) if r <= 2**k else Fraction(0)
        assert law.get(p, Fraction(0)) == want


def test_gsr_sample_fits_the_exact_law() -> None:
    assert _fit("riffle:k=2", 5, _labels_law(5, 2), 30_000, seed=1) > 1e-4


def _shelf_law(n: int, m: int) -> Law:
    counts = Counter(
        tuple(ref.shelf_layout(list(range(n)), list(s), list(t), m))
        for s in itertools.product(range(m), repeat=n)
        for t in itertools.product((0, 1), repeat=n)
    )
    return {p: Fraction(c, (2 * m) ** n) for p, c in counts.items()}


def _peaks(p: Perm) -> int:
    return sum(p[i - 1] < p[i] > p[i + 1] for i in range(1, len(p) - 1))


@pytest.mark.parametrize(("n", "m"), [(4, 2), (5, 3), (6, 2)])
def test_shelf_law_depends_only_on_peaks(n: int, m: int) -> None:
    """Diaconis, Fulman and Holmes (2013): one pass's chance of an order depends only on its
    number of valleys (in these rows, input positions top first, the peaks)."""
    law = _shelf_law(n, m)
    assert sum(law.values()) == 1
    by_peaks: dict[int, set[Fraction]] = {}
    for p in itertools.permutations(range(n)):
        by_peaks.setdefault(_peaks(p), set()).add(law.get(p, Fraction(0)))
    assert all(len(v) == 1 for v in by_peaks.values())


def test_shelf_law_by_hand() -> None:
    # one shelf: a V (down to the first card, then up) each of the 2^(n-1) V's equally likely
    law = _shelf_law(4, 1)
    assert len(law) == 8 and set(law.values()) == {Fraction(1, 8)}
    assert (3, 1, 0, 2) in law and (0, 2, 1, 3) not in law
    # two shelves, 4 cards: 1/16 for an order without a peak, 1/32 with one (enumerated)
    assert {_peaks(p): q for p, q in _shelf_law(4, 2).items()} == {
        0: Fraction(1, 16),
        1: Fraction(1, 32),
    }
    assert _fit("shelf:m=2", 5, _shelf_law(5, 2), 30_000, seed=2) > 1e-4


def _reversal_law(n: int, weight: Callable[[tuple[bool, ...]], Fraction]) -> Law:
    law: Law = {}
    for cut in itertools.product((False, True), repeat=n - 1):
        p = tuple(ref.reverse_packets(list(range(n)), list(cut)))
        law[p] = law.get(p, Fraction(0)) + weight(cut)
    return law


def test_overhand_law() -> None:
    """Pemantle (1989): each gap a cut with probability p, packets reversed.  p = 1/2: the
    2^(n-1) packet reversals are distinct and equally likely."""
    half = _reversal_law(6, lambda c: Fraction(1, 32))
    assert len(half) == 32 and set(half.values()) == {Fraction(1, 32)}
    assert half[(5, 4, 3, 2, 1, 0)] == Fraction(1, 32)  # every gap cut: the deck reversed
    assert half[(0, 1, 2, 3, 4, 5)] == Fraction(1, 32)  # no cut: one packet, unchanged
    p = Fraction(1, 5)
    fifth = _reversal_law(5, lambda c: p ** sum(c) * (1 - p) ** (len(c) - sum(c)))
    assert sum(fifth.values()) == 1 and fifth[(0, 1, 2, 3, 4)] == Fraction(256, 625)
    assert _fit("overhand:cut=50", 5, _reversal_law(5, lambda c: Fraction(1, 16)), 16_000, 3) > 1e-4
    assert _fit("overhand:cut=20", 5, fifth, 20_000, seed=4) > 1e-4
    # two passes: the law of one convolved with itself
    two: Law = {}
    for a, qa in fifth.items():
        for b, qb in fifth.items():
            ab = tuple(a[i] for i in b)
            two[ab] = two.get(ab, Fraction(0)) + qa * qb
    assert _fit("overhand:passes=2,cut=20", 5, two, 20_000, seed=5) > 1e-4


def test_strip_law() -> None:
    """c uniform distinct cuts: the C(n-1, c) reversals equally likely."""
    law = _reversal_law(6, lambda c: Fraction(sum(c) == 2, comb(5, 2)))
    assert sum(law.values()) == 1 and len([q for q in law.values() if q]) == 10
    assert law[(4, 5, 2, 3, 0, 1)] == Fraction(1, 10)
    assert _fit("strip:cuts=2", 6, law, 10_000, seed=6) > 1e-4


def test_position_bias_law() -> None:
    """(1-q)/n! + q [card pos within the window] / (w (n-1)!)."""
    n, pos, q, width = 4, 1, Fraction(40, 100), 1
    window = range(pos - width, pos + width + 1)
    law: Law = {}
    for p in itertools.permutations(range(n)):
        law[p] = (1 - q) / factorial(n) + q * (p.index(pos) in window) / (
            len(window) * factorial(n - 1)
        )
    assert sum(law.values()) == 1
    marginal = [sum(v for p, v in law.items() if p.index(pos) == t) for t in range(n)]
    assert marginal == [Fraction(17, 60)] * 3 + [Fraction(3, 20)]  # 0.6/4 + 0.4/3, 0.6/4
    assert _fit(f"position-bias:pos={pos},stay=40,width={width}", n, law, 24_000, seed=7) > 1e-4
    stuck = simulate_shoes("position-bias:pos=17,stay=100", 50, 312, seed=8)
    assert (stuck[:, 17] == 17).all()


def _naive_law(n: int) -> Law:
    counts = Counter(tuple(_naive_path(n, js)) for js in itertools.product(range(n), repeat=n))
    return {p: Fraction(c, n**n) for p, c in counts.items()}


def _naive_path(n: int, js: tuple[int, ...]) -> list[int]:
    a = list(range(n))
    for i, j in enumerate(js):
        a[i], a[j] = a[j], a[i]
    return a


def test_naive_law() -> None:
    # 27 paths over 6 orders (J. Atwood, "The danger of naivete", 2007: 123 4, 132 5, 213 5,
    # 231 5, 312 4, 321 4 of 27)
    three = {p: q * 27 for p, q in _naive_law(3).items()}
    assert three == {
        (0, 1, 2): 4,
        (0, 2, 1): 5,
        (1, 0, 2): 5,
        (1, 2, 0): 5,
        (2, 0, 1): 4,
        (2, 1, 0): 4,
    }
    four = _naive_law(4)
    assert len(four) == 24 and sum(four.values()) == 1
    assert max(four.values()) / min(four.values()) == Fraction(15, 8)
    assert _fit("naive", 4, four, 24_000, seed=9) > 1e-4


def _swaps(n: int, rs: tuple[int, ...]) -> Perm:
    """Durstenfeld's loop with j = r % (i+1) for the values ``rs`` (i = n-1 down to 1)."""
    it = iter(rs)
    return tuple(ref.durstenfeld(n, lambda i: next(it) % (i + 1)))


def _modulo_law(n: int, bits: int) -> Law:
    """Durstenfeld's loop with j = r % (i+1), r uniform on 2^bits values: each path of
    draws is a distinct order, of probability the product of P(j) = (floor(2^b/(i+1)) +
    [j < 2^b mod (i+1)]) / 2^b."""
    law: Law = {}
    steps = [range(i + 1) for i in range(n - 1, 0, -1)]
    for js in itertools.product(*steps):
        q = Fraction(1)
        for i, j in zip(range(n - 1, 0, -1), js, strict=True):
            q *= Fraction(2**bits // (i + 1) + (j < 2**bits % (i + 1)), 2**bits)
        law[_swaps(n, js)] = q
    return law


def test_modulo_law() -> None:
    law = _modulo_law(4, 2)
    assert sum(law.values()) == 1
    # by enumeration of the 4^3 values of r: the same law
    counts = Counter(_swaps(4, rs) for rs in itertools.product(range(4), repeat=3))
    assert {p: Fraction(c, 64) for p, c in counts.items()} == law
    # i = 2 draws r % 3 from 0..3: j = 0 with probability 1/2 (r = 0 or 3)
    assert max(law.values()) == Fraction(1, 4) * Fraction(2, 4) * Fraction(1, 2)
    assert _fit("modulo:bits=2", 4, law, 24_000, seed=10) > 1e-4
    # 32 bits: the bias is there, but tiny: P(j) within 1/2^32 of uniform
    assert max(_modulo_law(4, 32).values()) - Fraction(1, 24) < Fraction(1, 2**32)


# ---------------------------------------------------------------- names, streams, errors


def test_every_kind_parses_with_its_defaults() -> None:
    for kind in models.MODEL_NAMES:
        m = models.parse_model(kind)
        assert m.kind == kind and m.uniform == (kind == "fisher-yates")
        shoes = simulate_shoes(kind, 3, 52, seed=1)
        assert shoes.shape == (3, 52)
    assert models.parse_model("biased").kind == "naive" and models.parse_model("biased").faulty
    assert models.parse_model("shelf:m=4").settings == {"m": 4, "passes": 1}
    assert models.parse_model("lcg:shift=0x10").settings == {"shift": 16}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("overhand:cut=101", "overhand:cut must be in 0..100 (percent)"),
        ("modulo:bits=0", "modulo:bits must be in 1..32"),
        ("lcg:shift=31", "lcg:shift must be in 0..30"),
        ("short-seed:bits=65", "short-seed:bits must be in 1..64"),
        ("reboot:every=0", "reboot:every must be in 1..4294967295"),
        ("position-bias:stay=200", "position-bias:stay must be in 0..100"),
        ("strip:packets=3", "strip takes cuts=N, passes=N"),
        ("naive:k=1", "naive takes no parameters"),
        ("shuffle", "unknown shuffle model 'shuffle'"),
    ],
)
def test_bad_names_say_what_to_give(bad: str, says: str) -> None:
    with pytest.raises(ModelError, match=says.replace("(", r"\(").replace(")", r"\)")):
        models.parse_model(bad)


def test_parameters_beyond_the_shoe_are_refused_in_one_line() -> None:
    with pytest.raises(ModelError, match="pos=60 is not a card of a 52-card shoe"):
        simulate_shoes("position-bias:pos=60", 2, 52, seed=0)
    with pytest.raises(ModelError, match="60 cuts do not fit the 51 gaps"):
        simulate_shoes("strip:cuts=60", 2, 52, seed=0)
    with pytest.raises(ModelError, match="pos=400"):
        models.parse_model("stuck:pos=400").apply(
            np.arange(312, dtype=np.uint16), native.ChaCha20(1)
        )
    with pytest.raises(ValueError, match="takes exactly the parameters"):
        native.ModelStream("shelf", {"m": 3})
    with pytest.raises(ValueError, match="out of range"):
        native.ModelStream("shelf", {"m": 0, "passes": 1})
    with pytest.raises(ValueError, match="unknown shuffle model kind"):
        native.ModelStream("bogus")


def test_missing_in_a_batch_marks_the_lost_card() -> None:
    shoes = simulate_shoes("missing:pos=4", 5, 52, seed=1)
    assert (shoes[:, -1] == native.NO_POSITION).all()
    assert all(len(set(r[:-1])) == 51 for r in shoes.tolist())
    assert native.check_permutations(shoes) is not None  # the battery's integrity check sees it


def test_a_device_stream_keeps_the_state_across_shoes() -> None:
    m = models.parse_model("lcg")
    rng, stream = native.ChaCha20(3), m.stream()
    order = np.arange(2, dtype=np.uint16)
    shoes = [m.apply(order, rng, stream).tolist() for _ in range(6)]
    assert shoes[0::2] == [shoes[0]] * 3 and shoes[1::2] == [shoes[1]] * 3
    assert shoes[0] != shoes[1] and stream.shoes_drawn == 6
    reboot = models.parse_model("reboot:every=3")
    rng, stream = native.ChaCha20(4), reboot.stream()
    seq = [reboot.apply(np.arange(52, dtype=np.uint16), rng, stream).tolist() for _ in range(7)]
    assert seq[3:6] == seq[0:3] and seq[6] == seq[0] and seq[1] != seq[0]
