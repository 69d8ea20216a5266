"""Validating wrappers over the C round simulator (``native/src/sim.c``): the simulator's rules
and strategy tables, and whole rounds simulated into caller-owned buffers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.native._core import ffi, lib
from feltlab.native.core import (
    DOUBLE_HARD_10_11,
    SURRENDER_EARLY,
    TAKES_ALL,
    BitGenerator,
    as_flag,
    as_int,
    check,
    check_decks,
    rng_ptr,
)
from feltlab.native.csm import CsmModel

# a strategy table's actions (fl_table_action)
HIT: int = lib.FL_ACT_HIT
STAND: int = lib.FL_ACT_STAND
DOUBLE_ELSE_HIT: int = lib.FL_ACT_DOUBLE_ELSE_HIT
DOUBLE_ELSE_STAND: int = lib.FL_ACT_DOUBLE_ELSE_STAND
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
SIM_VERSION: int = lib.FL_SIM_VERSION
"""The C simulator's version (``FL_SIM_VERSION``): with the seed derivation, what a seed
reproduces (version 2: ``SIM_LANES`` shoes interleaved per call; 3: ``feltlab.simulation.run``
calls it for 200,000 rounds at a time on every path; 4: six shoe positions fixed per 64-bit
generator word)."""
SIM_LANES: int = lib.FL_SIM_LANES
SIM_INPUTS: int = lib.FL_SIM_INPUTS
"""Per-round inputs a side table may index: 0..4 the initial cards P1, P2, D1, P3, D2, then
the round record's byte fields (``FL_IN_*`` in ``feltlab_core.h``; the hand arrays one input a
hand), for the play-decided wagers."""
SIDE_INPUT_VALUES: tuple[int, ...] = tuple(
    int(lib.fl_side_input_values(i)) for i in range(SIM_INPUTS)
)
"""Values each per-round input takes (``fl_side_input_values``): 53 for a card (52: none)."""
RECORD_INPUTS: dict[str, tuple[int, ...]] = {
    "n_hands": (lib.FL_IN_N_HANDS,),
    **{
        name: tuple(getattr(lib, f"FL_IN_{name.upper()}") + h for h in range(REC_HANDS))
        for name in (
            "hand_n_cards",
            "hand_total",
            "hand_bust",
            "hand_blackjack",
            "hand_doubled",
            "hand_surrendered",
        )
    },
    **{
        name: (getattr(lib, f"FL_IN_{name.upper()}"),)
        for name in (
            "dealer_n_cards",
            "dealer_total",
            "dealer_bust",
            "dealer_blackjack",
            "dealer_up",
            "dealer_suited",
        )
    },
    "dealer_cards": tuple(lib.FL_IN_DEALER_RANK + k for k in range(lib.FL_DEALER_RANK_INPUTS)),
}
"""The simulator inputs of each round-record field a side table may read (a hand array: one
input a hand, hands 0..3); ``dealer_cards``: the ranks of the dealer's first three cards
(:data:`DEALER_RANK_INPUTS`, rank index 0..12, 13 for no card), so a table over it is exact
only for a classifier that reads no more of the array (``feltlab.simulation.side_tables``
checks it);
``hand_cards`` has none."""
DEALER_RANK_INPUTS: int = lib.FL_DEALER_RANK_INPUTS
"""Dealer cards a side table may read by rank (the first three: Bust Bonus's 8-8-8)."""
SIDE_CARD_VALUES: int = lib.FL_SIDE_CARD_VALUES
"""Values of a card input: codes 0..51 and 52 for a card never dealt (``NO_CARD``)."""
SIDE_MAX_INPUTS: int = lib.FL_SIDE_MAX_INPUTS
NOT_OFFERED: int = lib.FL_SIDE_NOT_OFFERED
"""The outcome index of a table entry where the wager is not on offer."""


@dataclass(frozen=True)
class SimRules:
    """What the C round simulator needs: table rules as plain values and a strategy as
    tables (built from ``feltlab.Rules`` and a basic strategy by ``feltlab.core_rules``).

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
    c.decks = check_decks(r.decks)
    c.h17, c.peek = as_flag(r.h17, "h17"), as_flag(r.peek, "peek")
    c.enhc_takes = as_int(r.enhc_takes, "enhc_takes", 0, TAKES_ALL)
    c.bj_num = as_int(r.bj_num, "bj_num", 1, 1000)
    c.bj_den = as_int(r.bj_den, "bj_den", 1, 1000)
    c.double_on = as_int(r.double_on, "double_on", 0, DOUBLE_HARD_10_11)
    c.double_after_split = as_flag(r.double_after_split, "double_after_split")
    c.max_hands = as_int(r.max_hands, "max_hands", 1, 4)
    c.resplit_aces = as_flag(r.resplit_aces, "resplit_aces")
    c.split_aces_one_card = as_flag(r.split_aces_one_card, "split_aces_one_card")
    size = r.decks * 52
    cut = as_int(r.cut_position, "cut_position", 0, size)
    if cut and size - cut < 26:
        raise ValueError(
            f"cut_position={cut} leaves fewer than 26 cards behind the cut of a {size}-card "
            "shoe: a round could run out of cards; place the cutting card further forward"
        )
    c.cut_position = cut
    c.stake = as_int(r.stake, "stake", 1, 10**8)
    top = c.stake * max(8, -(-c.bj_num // c.bj_den))  # 4 doubled hands, or a blackjack
    if top > 2**31 - 1:
        raise ValueError(
            f"a round could pay {top} cents (stake {c.stake} x {max(8, -(-c.bj_num // c.bj_den))})"
            ", beyond the simulator's int32 cents per round: lower the stake or the blackjack "
            "odds"
        )
    c.surrender = as_int(r.surrender, "surrender", 0, SURRENDER_EARLY)
    c.dealer_plays_out = as_flag(r.dealer_plays_out, "dealer_plays_out")
    for name, shape, top in (
        ("hard", (32, 11), 3),
        ("soft", (32, 11), 3),
        ("pair", (13, 11), 1),
        ("surr", (32, 11), 1),
    ):
        value = getattr(r, name)
        table = np.asarray(value if value is not None else np.zeros(shape, dtype=np.uint8))
        if table.dtype.kind not in "iub":  # a float table was truncated, a string one raised
            raise TypeError(
                f"{name} must be an integer array of actions 0..{top}, got dtype {table.dtype}"
            )
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
    (151 bytes a round).  Shoes are prepared :data:`SIM_LANES` at a time, shoe k from ``rng``
    long-jumped k % SIM_LANES times (simulator version :data:`SIM_VERSION`); ``rng`` is left
    long-jumped SIM_LANES times, so a next call never overlaps this one.  Raises ValueError
    for bad rules."""
    n = as_int(n_rounds, "n_rounds", 0, 1 << 40)
    cap = as_int(trace_cap, "trace_cap", 0, 255)
    c = _sim_struct(rules)
    net = np.empty(n, dtype=np.int32)
    initial = np.empty((n, 5), dtype=np.uint8)
    trace = np.zeros((n, cap), dtype=np.uint8) if cap else None
    tlen = np.zeros(n, dtype=np.uint8) if cap else None
    rec = np.zeros(n, dtype=RECORD_DTYPE) if record else None
    ptr = rng_ptr(rng)
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
    check(st, "simulate_rounds")
    return SimResult(net, initial, trace, tlen, rec)


def dealer_final(counts: tuple[int, ...], up: int, h17: bool) -> npt.NDArray[np.float64]:
    """The exact distribution of the dealer's final hand drawn out to 17 from ``counts`` (10
    card counts, A, 2..9, ten-valued, the up card already removed) after the up card of value
    index ``up`` (0 ace .. 9 ten): ``(DF_MAX_CARDS + 1, DF_CLASSES)`` float64, [number of
    cards, class] with classes 0..9 the totals 17..26 and 10 a blackjack (native/src/
    dealer_final.c).  Raises ValueError for bad counts or up card."""
    vals = [as_int(c, "counts", 0, 4096) for c in counts]
    if len(vals) != 10 or not 1 <= sum(vals) <= 4096:
        raise ValueError("counts must hold 10 card counts (A, 2..9, ten), 1..4096 cards in all")
    out = np.zeros((DF_MAX_CARDS + 1, DF_CLASSES), dtype=np.float64)
    c = ffi.new("uint32_t[10]", vals)
    st = lib.fl_dealer_final(
        c, as_int(up, "up", 0, 9), as_flag(h17, "h17"), ffi.from_buffer("double[]", out)
    )
    check(st, "dealer_final")
    return out


@dataclass(frozen=True)
class SideTable:
    """A side wager's outcome table for :func:`simulate_tally`: ``table`` a C-contiguous
    uint8 array (any shape) indexed by ``sum(value(inputs[j]) * strides[j])`` in its flat
    order, each entry an outcome index or :data:`NOT_OFFERED`; ``inputs``: which per-round
    inputs (0..4: P1, P2, D1, P3, D2 as card code 0..51 or 52 for no card); ``strides``:
    entries per step of each input.

    Factored in two levels when ``pre`` (uint16) is given: the first ``n_pre`` inputs index
    ``pre`` with their strides, giving a class below ``n_classes``; the entry is then
    ``table[class * class_stride + sum over the other inputs]``."""

    table: npt.NDArray[np.uint8]
    inputs: tuple[int, ...]
    strides: tuple[int, ...]
    pre: npt.NDArray[np.uint16] | None = None
    n_pre: int = 0
    n_classes: int = 0
    class_stride: int = 0


@dataclass(frozen=True)
class TallyResult:
    """Exact sums of :func:`simulate_tally`: ``rounds``; ``net`` and ``net_sq``: the main
    wager's net result summed (cents) and squared (cents^2); ``counts``: per table, ``(256,)``
    int64 counts of each outcome index (index 255: rounds not on offer); ``initial`` and
    ``record``: the per-round arrays when asked for."""

    rounds: int
    net: int
    net_sq: int
    counts: tuple[npt.NDArray[np.int64], ...]
    initial: npt.NDArray[np.uint8] | None = None
    record: npt.NDArray[np.void] | None = None


def _c_tables(
    tables: tuple[SideTable, ...],
) -> tuple[Any, list[Any], list[npt.NDArray[np.uint64]]]:
    """The C side tables of ``tables`` (validated: ValueError names the table and the fix),
    the arrays they point into (keep them alive with the tables) and each table's (256,)
    uint64 counts."""
    if len(tables) > 64:
        raise ValueError(f"at most 64 side tables per simulation, got {len(tables)}")
    ct = ffi.new("fl_side_table[]", max(len(tables), 1))
    keep: list[Any] = []
    counts = [np.zeros(256, dtype=np.uint64) for _ in tables]
    for k, t in enumerate(tables):
        arr = np.ascontiguousarray(t.table, dtype=np.uint8)
        if not 1 <= len(t.inputs) <= SIDE_MAX_INPUTS or len(t.strides) != len(t.inputs):
            raise ValueError(
                f"side table {k}: 1..{SIDE_MAX_INPUTS} inputs with one stride each, got "
                f"{len(t.inputs)} inputs and {len(t.strides)} strides"
            )
        numbers = (*t.inputs, *t.strides, t.class_stride, t.n_pre, t.n_classes)
        if any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in numbers):
            raise TypeError(
                f"side table {k}: inputs, strides and class sizes must be integers; build it "
                "with feltlab.simulation.side_tables"
            )
        if any(not 0 <= s < 1 << 32 for s in (*t.strides, t.class_stride)):
            raise ValueError(
                f"side table {k}: strides must be 0..2**32-1 (a negative stride indexes before "
                "the table); build it with feltlab.simulation.side_tables"
            )
        if any(not 0 <= i < SIM_INPUTS for i in t.inputs):
            raise ValueError(
                f"side table {k}: inputs must be 0..{SIM_INPUTS - 1}; build it with "
                "feltlab.simulation.side_tables"
            )
        steps = [s * (SIDE_INPUT_VALUES[i] - 1) for i, s in zip(t.inputs, t.strides, strict=True)]
        top = sum(steps[t.n_pre :]) + max(t.n_classes - 1, 0) * t.class_stride
        pre = None
        if t.pre is not None:
            pre = np.ascontiguousarray(t.pre, dtype=np.uint16)
            bad = (
                not 0 < t.n_pre < len(t.inputs)
                or sum(steps[: t.n_pre]) >= pre.size
                or int(pre.max(initial=0)) >= t.n_classes
            )
            if bad:
                raise ValueError(
                    f"side table {k}: its first-level table must cover its first {t.n_pre} "
                    f"inputs with classes below {t.n_classes}; build it with "
                    "feltlab.simulation.side_tables"
                )
            keep.append(pre)
            ct[k].pre = ffi.from_buffer("uint16_t[]", pre)
            ct[k].pre_size = pre.size
            ct[k].n_pre = t.n_pre
            ct[k].n_classes = t.n_classes
            ct[k].class_stride = t.class_stride
        if top >= arr.size:  # (the inputs were checked above)
            raise ValueError(
                f"side table {k}: every index must lie below its {arr.size} entries "
                f"(largest {top}); build it with feltlab.simulation.side_tables"
            )
        keep.append(arr)
        ct[k].table = ffi.from_buffer("uint8_t[]", arr)
        ct[k].size = arr.size
        ct[k].n_inputs = len(t.inputs)
        for j, (i, s) in enumerate(zip(t.inputs, t.strides, strict=True)):
            ct[k].input[j] = i
            ct[k].stride[j] = s
        ct[k].counts = ffi.from_buffer("uint64_t[]", counts[k])
    return ct, keep, counts


def simulate_tally(
    rng: BitGenerator,
    rules: SimRules,
    n_rounds: int,
    tables: tuple[SideTable, ...] = (),
    *,
    initial: bool = False,
    record: bool = False,
) -> TallyResult:
    """Simulate ``n_rounds`` rounds (the same rounds as :func:`simulate_rounds` from the same
    generator state) keeping only exact sums and each table's outcome counts, in the C core;
    ``initial`` / ``record`` also keep each round's initial cards ``(n, 5)`` uint8 / round
    record ``(n,)`` :data:`RECORD_DTYPE` (for wagers without a table; 5 and 151 bytes a
    round).  Raises ValueError for bad rules or a table whose indexes could leave it."""
    n = as_int(n_rounds, "n_rounds", 0, 1 << 40)
    c = _sim_struct(rules)
    ct, _keep, counts = _c_tables(tables)  # _keep: what ct points into, alive to the call
    sums = ffi.new("fl_sim_sums *")
    ptr = rng_ptr(rng)
    init = np.empty((n, 5), dtype=np.uint8) if initial else None
    rec = np.empty(n, dtype=RECORD_DTYPE) if record else None
    c_init = ffi.from_buffer("uint8_t[]", init) if init is not None and n else ffi.NULL
    c_rec = ffi.NULL
    if rec is not None and n:
        c_rec = ffi.cast("fl_round_record *", ffi.from_buffer(rec))
    with rng._lock:
        st = lib.fl_simulate_tally_out(ptr, c, n, ct, len(tables), sums, c_init, c_rec)
    check(st, "simulate_tally")
    net, net_sq = _sums_net(sums)
    return TallyResult(
        int(sums.rounds),
        net,
        net_sq,
        tuple(x.astype(np.int64) for x in counts),
        init,
        rec,
    )


COUNT_TRUE: int = lib.FL_COUNT_TRUE
COUNT_RUNNING: int = lib.FL_COUNT_RUNNING
COUNT_WINDOW: int = lib.FL_COUNT_WINDOW
COUNT_SUIT: int = lib.FL_COUNT_SUIT
COUNT_MAX_BUCKETS: int = lib.FL_COUNT_MAX_BUCKETS
COUNT_MAX_RESOLUTION: int = lib.FL_COUNT_MAX_RESOLUTION
COUNT_MAX_TAG: int = lib.FL_COUNT_MAX_TAG
CSM_IDEAL: int = lib.FL_CSM_IDEAL
CSM_SLOTS: int = lib.FL_CSM_SLOTS
CSM_RETURN_ROUND: int = lib.FL_CSM_RETURN_ROUND
CSM_RETURN_BATCH: int = lib.FL_CSM_RETURN_BATCH


@dataclass(frozen=True)
class CountSpec:
    """A card count as the C simulator buckets it (``fl_count``, native/include/
    feltlab_core.h): ``tags`` the 52 tags of the card codes (rank * 4 + suit); ``mode`` one of
    :data:`COUNT_TRUE` (running count per deck remaining), :data:`COUNT_RUNNING`,
    :data:`COUNT_WINDOW` (the last ``window`` cards seen) or :data:`COUNT_SUIT` (suit
    imbalance per deck remaining; tags unused).  A round falls in bucket
    ``clamp(floor(count * resolution) - lowest, 0, n_buckets - 1)``."""

    tags: tuple[int, ...]
    mode: int = COUNT_TRUE
    window: int = 0
    resolution: int = 1
    lowest: int = -10
    n_buckets: int = 21

    def __post_init__(self) -> None:
        tags = self.tags
        if isinstance(tags, (str, bytes)) or not hasattr(tags, "__iter__"):
            raise TypeError(
                f"CountSpec tags must be a sequence of 52 integers (one per card code), got "
                f"{type(tags).__name__}"
            )
        object.__setattr__(self, "tags", tuple(tags))

    def bucket_value(self, b: int) -> float:
        """The lowest count of bucket ``b`` (the first bucket also holds every lower count,
        the last every higher one)."""
        return (self.lowest + b) / self.resolution


@dataclass(frozen=True)
class CountedResult:
    """Exact sums of :func:`simulate_counted`: ``rounds``, ``net`` (cents) and ``net_sq``
    (cents^2) over every round; per bucket ``bucket_rounds`` ``(n_buckets,)`` int64,
    ``bucket_net`` and ``bucket_net_sq`` (exact integers, one per bucket) and
    ``bucket_counts`` ``(n_buckets, n_tables, 256)`` int64: each side table's outcome counts
    (index 255: not on offer)."""

    rounds: int
    net: int
    net_sq: int
    bucket_rounds: npt.NDArray[np.int64]
    bucket_net: tuple[int, ...]
    bucket_net_sq: tuple[int, ...]
    bucket_counts: npt.NDArray[np.int64]


def _sums_net(m: Any) -> tuple[int, int]:
    """(net, net_sq) of an ``fl_sim_sums`` (128-bit, net two's complement)."""
    net = (int(m.net_hi) << 64) | int(m.net_lo)
    if net >> 127:
        net -= 1 << 128
    return net, (int(m.sq_hi) << 64) | int(m.sq_lo)


def simulate_counted(
    rng: BitGenerator,
    rules: SimRules,
    n_rounds: int,
    count: CountSpec,
    tables: tuple[SideTable, ...] = (),
    *,
    csm: CsmModel | None = None,
) -> CountedResult:
    """Simulate ``n_rounds`` rounds as :func:`simulate_tally` does (the same rounds from the
    same generator state when ``csm`` is None) and bucket each by ``count`` at the moment of
    the bet (``fl_simulate_counted``, native/src/sim.c): the cards seen are those dealt in
    the earlier rounds since the shuffle.  ``csm``: deal from this continuous shuffler
    instead of a shoe (``rules.cut_position`` unused; the count :data:`COUNT_WINDOW` or
    :data:`COUNT_RUNNING`).  Raises ValueError for bad rules, tables, count or machine, and
    when a continuous shuffler runs out of cards (its buffer holds too many)."""
    n = as_int(n_rounds, "n_rounds", 0, 1 << 40)
    c = _sim_struct(rules)
    ct, _keep, _ = _c_tables(tables)
    if len(count.tags) != 52:
        raise ValueError(f"a count needs 52 tags (one per card code), got {len(count.tags)}")
    k = ffi.new("fl_count *")
    for i, t in enumerate(count.tags):
        k.tags[i] = as_int(t, "tag", -COUNT_MAX_TAG, COUNT_MAX_TAG)
    k.mode = as_int(count.mode, "count mode", 0, COUNT_SUIT)
    k.window = as_int(count.window, "window", 0, 8 * 52)
    if count.mode == COUNT_WINDOW and count.window < 1:
        raise ValueError("a window count needs window >= 1 card")
    k.resolution = as_int(count.resolution, "resolution", 1, COUNT_MAX_RESOLUTION)
    k.lowest = as_int(count.lowest, "lowest", -(1 << 24), 1 << 24)
    nb = k.n_buckets = as_int(count.n_buckets, "n_buckets", 1, COUNT_MAX_BUCKETS)
    m = ffi.NULL
    if csm is not None:
        if count.mode not in (COUNT_WINDOW, COUNT_RUNNING):
            raise ValueError(
                "a continuous shuffler never shuffles: count it with a window "
                "(mode COUNT_WINDOW) or a running count"
            )
        if not isinstance(csm, CsmModel):
            raise TypeError(f"csm must be a CsmModel, got {type(csm).__name__}")
        csm.check_table(rules.decks)
        m = csm.c_struct()
    sums = ffi.new("fl_sim_sums *")
    bsums = ffi.new("fl_sim_sums[]", nb)
    bcounts = np.zeros((nb, len(tables), 256), dtype=np.uint64)
    c_counts = ffi.from_buffer("uint64_t[]", bcounts) if tables else ffi.NULL
    with rng._lock:
        st = lib.fl_simulate_counted(
            rng_ptr(rng), c, n, ct, len(tables), k, m, sums, bsums, c_counts
        )
    if st == lib.FL_ERR_RANGE and csm is not None:
        raise ValueError(
            f"the continuous shuffler ran out of cards or its model is not valid (buffer "
            f"{csm.buffer}, policy {csm.policy}, batch {csm.batch}, slots {csm.slots}): "
            "a smaller buffer or batch leaves the machine enough cards"
        )
    check(st, "simulate_counted")
    net, net_sq = _sums_net(sums)
    per = [_sums_net(bsums[b]) for b in range(nb)]
    return CountedResult(
        int(sums.rounds),
        net,
        net_sq,
        np.array([int(bsums[b].rounds) for b in range(nb)], dtype=np.int64),
        tuple(p[0] for p in per),
        tuple(p[1] for p in per),
        bcounts.astype(np.int64),
    )
