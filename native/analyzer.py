"""Validating facade of the C core's combinatorial analyzer (native/src/analyzer.c).

The analyzer computes the exact expected value of the main wager of one box dealt from a
shoe of any composition: the dealer's final-total probabilities, and for each two-card hand
against each up card the expectation of standing, hitting, doubling, splitting and
surrendering, under the composition-dependent optimum with the pre-split strategy reused
after splitting (CDZ-, E. Farmer's term) or under the round simulator's total-dependent
tables.  The method is in analyzer.c's header comment.

Card values: index 0 is the ace, 1..8 the values 2..9, 9 the ten-valued cards; a shoe of
``d`` decks is ``(4d, 4d, ..., 4d, 16d)``.  Two-card hands are indexed by value indexes
``a <= b`` (:func:`hand_index`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import (
    DOUBLE_HARD_10_11,
    SURRENDER_EARLY,
    SURRENDER_NONE,
    TAKES_ALL,
    as_flag,
    as_int,
)

STAND, HIT, DOUBLE, SPLIT, SURRENDER, BLACKJACK = (
    int(lib.FL_AN_STAND),
    int(lib.FL_AN_HIT),
    int(lib.FL_AN_DOUBLE),
    int(lib.FL_AN_SPLIT),
    int(lib.FL_AN_SURRENDER),
    int(lib.FL_AN_BLACKJACK),
)
"""Action codes of :attr:`Analysis.action` (BLACKJACK: a player blackjack, no decision)."""
ACTIONS = ("stand", "hit", "double", "split", "surrender")
"""Columns of :attr:`Analysis.action_ev`."""
STRATEGIES = {
    "table": int(lib.FL_AN_TABLE),
    "cdz": int(lib.FL_AN_CDZ),
    "cdp1": int(lib.FL_AN_CDP1),
    "cdp": int(lib.FL_AN_CDP),
}
MIN_CARDS = int(lib.FL_AN_MIN_CARDS)
MAX_CARDS = int(lib.FL_AN_MAX_CARDS)
ANALYZER_VERSION = int(lib.FL_ANALYZER_VERSION)
"""The analyzer's version (``FL_ANALYZER_VERSION``): raised whenever a figure of
:func:`analyze` changes, so that a figure cached under the old one is computed again."""
SPLIT_NET0 = int(lib.FL_AN_SPLIT_NET0)
"""Offset of :attr:`Analysis.split_net`: index ``net + SPLIT_NET0`` for net -8..+8 units."""
NET_VALUES = (-2.0, -1.0, -0.5, 0.0, 1.0, 2.0, None)
"""Net results of :attr:`Analysis.net_dist` (None: the blackjack pay, ``bj_num / bj_den``)."""
DEALER_OUTCOMES = ("17", "18", "19", "20", "21", "bust", "blackjack")
"""Columns of the dealer's final-outcome probabilities."""


def analyzer_build() -> str:
    """What the analyzer's figures depend on besides its input, for the key of a figure
    cached on disk: :data:`ANALYZER_VERSION` and the compiled core's size and modification
    time (a core rebuilt from changed sources is another build even where the version was
    not raised).  A string; never raises (an unreadable core file gives ``"?"``)."""
    try:
        st = os.stat(sys.modules["feltlab.native._core"].__file__ or "")  # loaded above
        build = f"{st.st_size}:{st.st_mtime_ns}"
    except (OSError, KeyError, AttributeError):
        build = "?"
    return f"analyzer={ANALYZER_VERSION} core={build}"


def shoe_counts(decks: int) -> tuple[int, ...]:
    """Counts of values A, 2..9, ten-valued of a full ``decks``-deck shoe."""
    if isinstance(decks, bool) or not isinstance(decks, int) or not 1 <= decks <= 78:
        raise ValueError(f"decks must be an integer in 1..78, got {decks!r}")
    return (4 * decks,) * 9 + (16 * decks,)


def may_run_out(counts: tuple[int, ...] | list[int], max_hands: int) -> bool:
    """Whether one round of one box (up to ``max_hands`` split hands, 1..4) and the dealer
    could ask for a card with none left in the shoe ``counts`` (10 ints, A, 2..9, ten): its
    cards less the ``max_hands`` highest hold at most ``20 max_hands + 16`` pips (a hand
    draws only below 21, the dealer below 17; a necessary condition).  The analyzer refuses
    such a shoe: its split values assume no round runs out."""
    return bool(lib.fl_an_may_run_out([int(v) for v in counts], int(max_hands)))


def hand_index(a: int, b: int) -> int:
    """Row of the two-card hand of value indexes ``a`` and ``b`` (0 ace .. 9 ten)."""
    a, b = min(a, b), max(a, b)
    if not 0 <= a <= b <= 9:
        raise ValueError(f"value indexes must be in 0..9, got {a}, {b}")
    return a * 10 - a * (a - 1) // 2 + (b - a)


def _zero_table(shape: tuple[int, int]) -> npt.NDArray[np.uint8]:
    return np.zeros(shape, dtype=np.uint8)


@dataclass(frozen=True)
class AnalyzerRules:
    """Rules, shoe and strategy of one analysis, as plain values.

    ``counts``: cards of each value (A, 2..9, ten-valued), 26..4096 in all, and a shoe no
    round can run out of (:func:`may_run_out`; ValueError "could run out").  ``peek``: the
    dealer checks for blackjack under an ace or ten (player decisions are then conditioned on
    no dealer blackjack); otherwise no hole card, where ``enhc_takes`` is what a dealer
    blackjack takes: 0 the original wager, 1 the original and busted hands, 2 all wagers.
    ``double_on``: 0 any two cards, 1 hard totals, 2 hard 9-11, 3 hard 10-11.
    ``max_hands``: 1 (no split) to 4.  ``surrender``: the header's ``fl_surrender``
    (:data:`SURRENDER_NONE`, :data:`SURRENDER_LATE`, :data:`SURRENDER_EARLY`; a
    :class:`feltlab.Rules` encoded by :mod:`feltlab.core_rules`).
    ``split_dist``: also the exact distribution of split rounds (slower: every split
    round's play is enumerated; ``Analysis.split_net``).
    ``threads``: up cards analysed side by side, 0 one thread per online CPU (at most 10), 1
    the calling thread only; the figures are the same for any count.
    ``strategy``: "cdz" (CDZ-), "cdp1" or "cdp" (the same before splitting, split hands
    played optimally for the pair cards out: CDP1 as found for the first split hand, CDP for
    each count; E. Farmer's post-split strategies) or "table" (``hard``, ``soft``:
    ``(32, 11)`` uint8 actions by
    [total][up value 1..10], 0 hit, 1 stand, 2 double else hit, 3 double else stand;
    ``pair``: ``(13, 11)``, 1 splits, never a ten-valued pair; ``surr``: ``(32, 11)``, 1
    surrenders a hard two-card total).
    """

    counts: tuple[int, ...] = shoe_counts(6)
    h17: bool = False
    peek: bool = True
    enhc_takes: int = 2
    bj_num: int = 3
    bj_den: int = 2
    double_on: int = 0
    double_after_split: bool = True
    max_hands: int = 4
    resplit_aces: bool = False
    split_aces_one_card: bool = True
    surrender: int = SURRENDER_NONE
    strategy: str = "cdz"
    split_dist: bool = False
    threads: int = 0
    hard: npt.NDArray[np.uint8] = field(default_factory=lambda: _zero_table((32, 11)))
    soft: npt.NDArray[np.uint8] = field(default_factory=lambda: _zero_table((32, 11)))
    pair: npt.NDArray[np.uint8] = field(default_factory=lambda: _zero_table((13, 11)))
    surr: npt.NDArray[np.uint8] = field(default_factory=lambda: _zero_table((32, 11)))


@dataclass(frozen=True)
class Analysis:
    """The analyzer's results, per initial unit.

    ``ev``: the expected net result of a round.  Arrays by (hand row, up index 0 ace .. 9
    ten), hand rows as :func:`hand_index`: ``prob`` (55, 10) float64 probability of the deal;
    ``value`` (55, 10) the hand's expectation under the strategy; ``action_ev`` (55, 10, 5)
    the unconditional expectation of stand, hit, double, split, surrender (NaN where not
    allowed; a player blackjack has its value in column 0); ``action`` (55, 10) uint8 the
    strategy's choice (255: impossible deal); ``p_dealer_bj`` (55, 10) the chance of a dealer
    blackjack given the three cards; ``dealer`` (10, 7) the dealer's final 17..21, bust,
    blackjack off the shoe less the up card (unconditioned).  ``net_dist`` (7,): the
    probability of the round's net result -2, -1, -1/2, 0, +1, +2 and the blackjack pay
    (:data:`NET_VALUES`) over the rounds without a split; ``p_split``: the probability of a
    round that splits (and meets no peeked dealer blackjack); ``ev_split``: those rounds'
    part of ``ev``; ``p_split_approx``: the probability of the deals whose split value under
    no hole card ("original", "original and busted") leaves out the exact term for every
    split hand busting before the dealer's blackjack shows (too many busting plays to
    enumerate within the analyzer's budget; 0 means ``ev`` is exact).  With
    ``AnalyzerRules.split_dist``: ``split_net`` (17,) the probability of a split round ending
    at net -8..+8 units (index ``net + SPLIT_NET0``; sums to ``p_split``), exact by
    enumeration of every split round (native/src/analyzer_dist.c) except
    ``p_split_dist_approx``, the probability of the re-split rounds (3-4 hands) past the
    enumeration budget, approximated and matched to their exact mass and expectation; zeros
    without ``split_dist``.
    """

    ev: float
    p_total: float
    net_dist: npt.NDArray[np.float64]
    p_split: float
    ev_split: float
    p_split_approx: float
    split_net: npt.NDArray[np.float64]
    p_split_dist_approx: float
    prob: npt.NDArray[np.float64]
    value: npt.NDArray[np.float64]
    p_dealer_bj: npt.NDArray[np.float64]
    action_ev: npt.NDArray[np.float64]
    action: npt.NDArray[np.uint8]
    dealer: npt.NDArray[np.float64]


def _counts(counts: object) -> list[int]:
    try:
        values = list(counts)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError("counts must be a sequence of 10 card counts (A, 2..9, ten)") from None
    if len(values) != 10:
        raise ValueError(f"counts must hold 10 card counts (A, 2..9, ten), got {len(values)}")
    out = [as_int(v, f"counts[{i}]", 0, MAX_CARDS) for i, v in enumerate(values)]
    if not MIN_CARDS <= sum(out) <= MAX_CARDS:
        raise ValueError(
            f"the shoe must hold {MIN_CARDS} to {MAX_CARDS} cards (enough for any round of "
            f"one box), got {sum(out)}"
        )
    return out


def _struct(r: AnalyzerRules) -> Any:
    c = ffi.new("fl_analyzer_rules *")
    for i, v in enumerate(_counts(r.counts)):
        c.counts[i] = v
    c.h17 = as_flag(r.h17, "h17")
    c.peek = as_flag(r.peek, "peek")
    c.enhc_takes = as_int(r.enhc_takes, "enhc_takes", 0, TAKES_ALL)
    c.bj_num = as_int(r.bj_num, "bj_num", 1, 1000)
    c.bj_den = as_int(r.bj_den, "bj_den", 1, 1000)
    c.double_on = as_int(r.double_on, "double_on", 0, DOUBLE_HARD_10_11)
    c.double_after_split = as_flag(r.double_after_split, "double_after_split")
    c.max_hands = as_int(r.max_hands, "max_hands", 1, 4)
    c.resplit_aces = as_flag(r.resplit_aces, "resplit_aces")
    c.split_aces_one_card = as_flag(r.split_aces_one_card, "split_aces_one_card")
    c.surrender = as_int(r.surrender, "surrender", SURRENDER_NONE, SURRENDER_EARLY)
    if r.strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {sorted(STRATEGIES)}, got {r.strategy!r}")
    c.strategy = STRATEGIES[r.strategy]
    c.split_dist = as_flag(r.split_dist, "split_dist")
    c.threads = as_int(r.threads, "threads", 0, 1024)
    if may_run_out(list(c.counts), int(c.max_hands)):
        raise ValueError(
            f"the shoe of {sum(c.counts)} cards could run out in a round of up to "
            f"{c.max_hands} split hands (its cards but the {c.max_hands} highest fit within "
            "the hands' hard 20 and the dealer's hard 16); give a fuller shoe or fewer split "
            "hands (max_hands)"
        )
    for name, shape, top in (
        ("hard", (32, 11), 3),
        ("soft", (32, 11), 3),
        ("pair", (13, 11), 1),
        ("surr", (32, 11), 1),
    ):
        table = np.asarray(getattr(r, name))
        if table.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {table.shape}")
        if table.min(initial=0) < 0 or table.max(initial=0) > top:
            raise ValueError(f"{name} actions must be in 0..{top}")
        if name == "pair" and table[9:].any():
            raise ValueError(
                "pair may not split ten-valued pairs: the analyzer counts cards by value"
            )
        ffi.memmove(
            getattr(c, name), np.ascontiguousarray(table, dtype=np.uint8).tobytes(), table.size
        )
    return c


def _array(cdata: Any, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    buf = ffi.buffer(cdata)
    return np.frombuffer(bytes(buf), dtype=dtype).reshape(shape).copy()


def analyze(rules: AnalyzerRules) -> Analysis:
    """Run the combinatorial analyzer.  Raises ValueError or TypeError naming a bad field."""
    c = _struct(rules)
    out = ffi.new("fl_analysis *")
    st = lib.fl_analyze(c, out)
    if st != lib.FL_OK:
        raise ValueError(f"the analyzer refused the rules (status {st})")
    return Analysis(
        ev=float(out.ev),
        p_total=float(out.p_total),
        net_dist=np.array(list(out.net_dist), dtype=np.float64),
        p_split=float(out.p_split),
        ev_split=float(out.ev_split),
        p_split_approx=float(out.p_split_approx),
        split_net=np.array(list(out.split_net), dtype=np.float64),
        p_split_dist_approx=float(out.p_split_dist_approx),
        prob=_array(out.prob, (55, 10), np.float64),
        value=_array(out.value, (55, 10), np.float64),
        p_dealer_bj=_array(out.p_dealer_bj, (55, 10), np.float64),
        action_ev=_array(out.action_ev, (55, 10, 5), np.float64),
        action=_array(out.action, (55, 10), np.uint8),
        dealer=_array(out.dealer, (10, 7), np.float64),
    )


def dealer_probabilities(
    counts: tuple[int, ...] | list[int], up: int, *, h17: bool = False, peek: bool = False
) -> npt.NDArray[np.float64]:
    """The dealer's final 17, 18, 19, 20, 21, bust, blackjack probabilities, ``(7,)``
    float64, for up-card value ``up`` (1 ace .. 10), the up card removed from ``counts``;
    ``peek``: conditioned on no dealer blackjack.  Raises ValueError for a bad shoe."""
    cs = _counts(counts)
    u = as_int(up, "up", 1, 10)
    if cs[u - 1] < 1:
        raise ValueError(f"the shoe holds no card of value {u} to be the up card")
    arr = ffi.new("uint32_t[10]", cs)
    out = ffi.new("double[7]")
    st = lib.fl_dealer_probabilities(arr, u, as_flag(h17, "h17"), as_flag(peek, "peek"), out)
    if st != lib.FL_OK:
        raise ValueError(f"dealer_probabilities refused the shoe (status {st})")
    return np.array(list(out), dtype=np.float64)
