"""Validating wrappers over the C round simulator (``native/src/sim.c``): the simulator's rules
and strategy tables, and whole rounds simulated into caller-owned buffers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import (
    BitGenerator,
    _as_int,
    _check,
    _check_decks,
    _rng_ptr,
)

HIT, STAND, DOUBLE_ELSE_HIT, DOUBLE_ELSE_STAND = 0, 1, 2, 3
REC_HANDS = int(lib.FL_REC_HANDS)
REC_CARDS = int(lib.FL_REC_CARDS)
RECORD_DTYPE = np.dtype(
    [
        ("n_hands", "u1"),
        ("hand_n_cards", "u1", (REC_HANDS,)),
        ("hand_total", "u1", (REC_HANDS,)),
        ("hand_bust", "?", (REC_HANDS,)),
        ("hand_blackjack", "?", (REC_HANDS,)),
        ("hand_doubled", "?", (REC_HANDS,)),
        ("hand_surrendered", "?", (REC_HANDS,)),
        ("hand_cards", "u1", (REC_HANDS, REC_CARDS)),
        ("dealer_n_cards", "u1"),
        ("dealer_total", "u1"),
        ("dealer_bust", "?"),
        ("dealer_blackjack", "?"),
        ("dealer_up", "u1"),
        ("dealer_suited", "?"),
        ("dealer_cards", "u1", (REC_CARDS,)),
    ]
)
"""The round record of one box, byte for byte the C core's ``fl_round_record``
(``feltlab_core.h``); documented field by field in :mod:`feltlab.record`."""
assert RECORD_DTYPE.itemsize == ffi.sizeof("fl_round_record")
DF_MAX_CARDS = int(lib.FL_DF_MAX_CARDS)
DF_CLASSES = int(lib.FL_DF_CLASSES)


@dataclass(frozen=True)
class SimRules:
    """What the C round simulator needs: table rules as plain values and a strategy as
    tables (built from ``feltlab.Rules`` and a basic strategy by ``feltlab.math``).

    ``hard`` and ``soft``: ``(32, 11)`` uint8 actions indexed [player total][dealer up-card
    value 1..10] (0 hit, 1 stand, 2 double else hit, 3 double else stand); ``pair``: ``(13,
    11)`` uint8, [rank index][up] = 1 to split.  ``enhc_takes``: 0 original wager, 1 original
    and busted hands, 2 all.  ``double_on``: 0 any two cards, 1 hard, 2 hard 9-11, 3 hard
    10-11.  ``cut_position``: cards dealt after which the shoe is shuffled at the end of the
    round (0: a fresh shoe every round).  ``stake``: cents.
    """

    decks: int
    h17: bool
    peek: bool
    enhc_takes: int
    bj_num: int
    bj_den: int
    double_on: int
    double_after_split: bool
    max_hands: int
    resplit_aces: bool
    split_aces_one_card: bool
    cut_position: int
    stake: int
    hard: npt.NDArray[np.uint8]
    soft: npt.NDArray[np.uint8]
    pair: npt.NDArray[np.uint8]
    surrender: int = 0
    surr: npt.NDArray[np.uint8] | None = None
    dealer_plays_out: bool = False


@dataclass(frozen=True)
class SimResult:
    """``net``: ``(n_rounds,)`` int32 cents of the main wager per round.  ``initial``:
    ``(n_rounds, 5)`` uint8 codes (player card 1, card 2, dealer up card, the player's third
    card as always dealt, the dealer's second card or the card it would have been).
    ``trace`` and ``trace_len``: the cards dealt in each round, in order (when asked for).
    ``record``: ``(n_rounds,)`` :data:`RECORD_DTYPE` round records (when asked for)."""

    net: npt.NDArray[np.int32]
    initial: npt.NDArray[np.uint8]
    trace: npt.NDArray[np.uint8] | None = None
    trace_len: npt.NDArray[np.uint8] | None = None
    record: npt.NDArray[np.void] | None = None


def _sim_struct(r: SimRules) -> Any:
    c = ffi.new("fl_sim_rules *")
    c.decks = _check_decks(r.decks)
    c.h17, c.peek = int(bool(r.h17)), int(bool(r.peek))
    c.enhc_takes = _as_int(r.enhc_takes, "enhc_takes", 0, 2)
    c.bj_num = _as_int(r.bj_num, "bj_num", 1, 1000)
    c.bj_den = _as_int(r.bj_den, "bj_den", 1, 1000)
    c.double_on = _as_int(r.double_on, "double_on", 0, 3)
    c.double_after_split = int(bool(r.double_after_split))
    c.max_hands = _as_int(r.max_hands, "max_hands", 1, 4)
    c.resplit_aces = int(bool(r.resplit_aces))
    c.split_aces_one_card = int(bool(r.split_aces_one_card))
    size = r.decks * 52
    cut = _as_int(r.cut_position, "cut_position", 0, size)
    if cut and size - cut < 26:
        raise ValueError(
            f"cut_position={cut} leaves fewer than 26 cards behind the cut of a {size}-card "
            "shoe: a round could run out of cards; place the cutting card further forward"
        )
    c.cut_position = cut
    c.stake = _as_int(r.stake, "stake", 1, 10**8)
    c.surrender = _as_int(r.surrender, "surrender", 0, 2)
    c.dealer_plays_out = int(bool(r.dealer_plays_out))
    for name, shape, top in (
        ("hard", (32, 11), 3),
        ("soft", (32, 11), 3),
        ("pair", (13, 11), 1),
        ("surr", (32, 11), 1),
    ):
        value = getattr(r, name)
        table = np.asarray(value if value is not None else np.zeros(shape, dtype=np.uint8))
        if table.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {table.shape}")
        if table.min(initial=0) < 0 or table.max(initial=0) > top:
            raise ValueError(f"{name} actions must be in 0..{top}")
        ffi.memmove(
            getattr(c, name), np.ascontiguousarray(table, dtype=np.uint8).tobytes(), table.size
        )
    return c


def simulate_rounds(
    rng: BitGenerator, rules: SimRules, n_rounds: int, *, trace_cap: int = 0, record: bool = False
) -> SimResult:
    """Simulate ``n_rounds`` rounds of one box in the C core (see native/src/sim.c for the
    semantics, which follow feltlab's round engine card for card).  ``trace_cap`` > 0 also
    records up to that many cards dealt per round; ``record`` fills ``SimResult.record``
    (151 bytes a round).  Raises ValueError for bad rules."""
    n = _as_int(n_rounds, "n_rounds", 0, 1 << 40)
    cap = _as_int(trace_cap, "trace_cap", 0, 255)
    c = _sim_struct(rules)
    net = np.empty(n, dtype=np.int32)
    initial = np.empty((n, 5), dtype=np.uint8)
    trace = np.zeros((n, cap), dtype=np.uint8) if cap else None
    tlen = np.zeros(n, dtype=np.uint8) if cap else None
    rec = np.zeros(n, dtype=RECORD_DTYPE) if record else None
    ptr = _rng_ptr(rng)
    with rng._lock:
        st = lib.fl_simulate_rounds_rec(
            ptr,
            c,
            n,
            ffi.from_buffer("int32_t[]", net),
            ffi.from_buffer("uint8_t[]", initial),
            ffi.from_buffer("uint8_t[]", trace) if trace is not None else ffi.NULL,
            cap,
            ffi.from_buffer("uint8_t[]", tlen) if tlen is not None else ffi.NULL,
            ffi.cast("fl_round_record *", ffi.from_buffer(rec)) if rec is not None else ffi.NULL,
        )
    _check(st, "simulate_rounds")
    return SimResult(net, initial, trace, tlen, rec)


def dealer_final(counts: tuple[int, ...], up: int, h17: bool) -> npt.NDArray[np.float64]:
    """The exact distribution of the dealer's final hand drawn out to 17 from ``counts`` (10
    card counts, A, 2..9, ten-valued, the up card already removed) after the up card of value
    index ``up`` (0 ace .. 9 ten): ``(DF_MAX_CARDS + 1, DF_CLASSES)`` float64, [number of
    cards, class] with classes 0..9 the totals 17..26 and 10 a blackjack (native/src/
    dealer_final.c).  Raises ValueError for bad counts or up card."""
    vals = [_as_int(c, "counts", 0, 4096) for c in counts]
    if len(vals) != 10 or not 1 <= sum(vals) <= 4096:
        raise ValueError("counts must hold 10 card counts (A, 2..9, ten), 1..4096 cards in all")
    out = np.zeros((DF_MAX_CARDS + 1, DF_CLASSES), dtype=np.float64)
    c = ffi.new("uint32_t[10]", vals)
    st = lib.fl_dealer_final(
        c, _as_int(up, "up", 0, 9), int(bool(h17)), ffi.from_buffer("double[]", out)
    )
    _check(st, "dealer_final")
    return out
