"""Side wagers compiled into lookup tables that the C simulator indexes (issue 17).

A card-decided wager's outcome is a function of a few finite inputs: the card codes of its
``card_roles``.  :func:`side_table` evaluates the wager's own vectorised ``classify`` once on
every combination of those inputs and stores the outcome index of each in a uint8 table; the
C simulator (``fl_simulate_tally``, native/src/sim.c) then looks each round up and counts the
outcomes, so no per-round array leaves C.  Since the table is the classifier evaluated
everywhere, it agrees with the classifier (and with live settlement) by construction.

Inputs (:class:`TableInput`): each is one of the simulator's per-round inputs
(``feltlab.native.SIM_INPUTS``: 0..4 the initial cards P1, P2, D1, P3, D2) with its number
of values; a card input takes the code 0..51, or 52 for a role never dealt (``NO_CARD``).
The table is C-ordered over the inputs in the order of ``card_roles``.  Entries where a role
was never dealt, or where the wager is not on offer (``feltlab.math.parsheet.offered_mask``: an
insurance wager without an ace up), hold :data:`feltlab.native.NOT_OFFERED` and are not
counted, as in the batch path (``feltlab.simulation.chunk.classify_side_bets``).

Round-record fields (the play-decided wagers of issue 16: how the box's hands finished, the
dealer's final hand) are simulator inputs too, after the five cards
(``feltlab.native.RECORD_INPUTS``: each byte field of the record, a hand array one input a
hand): a play-decided wager's table is over the fields it declares in ``round_fields``, and
is its ``classify_round`` evaluated on a record holding every combination of their values
(the other fields zero), so it agrees with the classifier wherever the classifier reads only
what it declares, as the wager API requires.  ``dealer_cards`` is read by the ranks of the
dealer's first three cards (Bust Bonus's 8-8-8; three inputs of 14 values, 13 for no card):
such a table is used only when it agrees with ``classify_round`` on every round of
:data:`CHECK_ROUNDS` simulated rounds under two rule sets (:func:`dealer_cards_mismatch`),
else the wager is settled from the simulator's round records by the batch path, as is a
wager reading ``hand_cards``.

Size: a table has the product of its inputs' value counts entries; above
:data:`MAX_TABLE_ENTRIES` (53^4, 7.9 M: four card roles) the wager is not tabulated and is
settled by the batch path (``feltlab simulate`` names it).

Cache: a table is kept in memory per (wager type, paytable) and on disk
(:mod:`feltlab.cache`, kind ``tables``: ``$FELTLAB_CACHE_DIR``, default ``~/.cache/feltlab``),
keyed by a SHA-256 of the wager's module and class, its paytable, the source of the class's
module and the table format, so an edited classifier is tabulated afresh.  An unwritable
cache is skipped.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from feltlab import cache, native
from feltlab.core_rules import simulator_rules
from feltlab.errors import WagerError
from feltlab.math.parsheet import offered_mask
from feltlab.math.strategy_tables import strategy_tables
from feltlab.native import RECORD_DTYPE
from feltlab.record import RECORD_FIELDS
from feltlab.rules import Rules
from feltlab.wagers import WagerType

ROLE_COLUMNS = {"P1": 0, "P2": 1, "D1": 2, "P3": 3, "D2": 4}
"""Columns of the simulator's initial cards (``SimResult.initial``) for each card role of a
wager."""

TABLE_FORMAT = 4
"""Version of the table layout, part of every cache key (2: factored in two levels; 3: the
round record's fields as inputs; 4: the dealer's first three ranks as inputs)."""
MAX_TABLE_ENTRIES = native.SIDE_CARD_VALUES**4
"""The largest table built (53^4 entries, 7.9 MB): larger wagers take the batch path."""
_ROWS_PER_BATCH = 1 << 20


@dataclass(frozen=True)
class TableInput:
    """One input of a side table: ``name`` (a card role, or a round-record field with its
    hand, ``hand_blackjack[0]``), ``column`` (the simulator's per-round input index) and
    ``values`` (how many values it takes)."""

    name: str
    column: int
    values: int


def table_inputs(wager: WagerType) -> tuple[TableInput, ...] | None:
    """The inputs of ``wager``'s table: a card-decided wager's ``card_roles`` in order, a
    play-decided wager's ``round_fields`` (a hand array as its hands 0..3, named
    ``field[h]``); None when the wager is not decided by finite simulator inputs (no roles,
    a role the simulator does not deal, a card array of the record, or more than
    ``feltlab.native.SIDE_MAX_INPUTS`` inputs)."""
    if wager.round_fields:
        found: list[TableInput] = []
        for name in wager.round_fields:
            columns = native.RECORD_INPUTS.get(name)
            if columns is None:
                return None
            for h, col in enumerate(columns):
                label = name if len(columns) == 1 else f"{name}[{h}]"
                found.append(TableInput(label, col, native.SIDE_INPUT_VALUES[col]))
        return tuple(found) if len(found) <= native.SIDE_MAX_INPUTS else None
    roles = tuple(wager.card_roles)
    if not roles or any(r not in ROLE_COLUMNS for r in roles):
        return None
    return tuple(TableInput(r, ROLE_COLUMNS[r], native.SIDE_CARD_VALUES) for r in roles)


def table_entries(wager: WagerType) -> int | None:
    """Entries the table of ``wager`` would have (None: not tabulable at all)."""
    inputs = table_inputs(wager)
    if inputs is None:
        return None
    return int(np.prod([i.values for i in inputs], dtype=np.int64))


def untabulated_reason(wager: WagerType) -> str | None:
    """Why ``wager`` has no side table and is settled by the batch path (None: it has one,
    or it is not a simulated side bet at all)."""
    if wager.round_fields:
        unknown = [f for f in wager.round_fields if f not in RECORD_FIELDS]
        if unknown:
            return f"{', '.join(unknown)}: not fields of the round record (feltlab.record)"
        arrays = [f for f in wager.round_fields if f not in native.RECORD_INPUTS]
        if arrays:
            return f"it reads {', '.join(arrays)}, card arrays of the round record"
        if table_inputs(wager) is None:
            return f"its round fields are more than {native.SIDE_MAX_INPUTS} table inputs"
        reads_ranks = "dealer_cards" in wager.round_fields and not too_large(wager)
        if reads_ranks and side_table(wager) is None:
            return _MISMATCH.get(cache_key(wager)) or "its table disagrees with it"
    n = table_entries(wager)
    if n is not None and n > MAX_TABLE_ENTRIES:
        return f"{n:,} input combinations exceed the {MAX_TABLE_ENTRIES:,} of a side table"
    return None


def too_large(wager: WagerType) -> bool:
    """True when ``wager`` has simulator inputs but more than :data:`MAX_TABLE_ENTRIES`
    combinations of them (it is settled by the batch path)."""
    n = table_entries(wager)
    return n is not None and n > MAX_TABLE_ENTRIES


def _source_digest(wager: WagerType) -> str:
    mod = sys.modules.get(type(wager).__module__)
    try:
        text = inspect.getsource(mod) if mod is not None else ""
    except (OSError, TypeError):  # no source (a frozen or interactive module)
        text = repr(type(wager).__dict__.get("classify"))
    return cache.digest(text)


def cache_key(wager: WagerType) -> str:
    """The SHA-256 key of ``wager``'s table (see the module docstring)."""
    t = type(wager)
    pt = wager.paytable
    parts = [
        f"format={TABLE_FORMAT}",
        f"sim_inputs={native.SIM_INPUTS}",
        f"{t.__module__}.{t.__qualname__}",
        f"paytable={pt.name}",
        f"outcomes={pt.outcomes}",
        f"pays={pt.pays}",
        f"source={_source_digest(wager)}",
    ]
    return cache.digest(*parts)


def build_table(wager: WagerType) -> npt.NDArray[np.uint8]:
    """Evaluate ``wager.classify`` on every combination of its inputs: a C-ordered uint8
    array of shape ``(values,) * roles`` of outcome indexes, NOT_OFFERED where a role was
    never dealt or the wager is not offered.  Raises WagerError when the wager is not
    tabulable, too large, or its classifier returns an index outside its paytable."""
    inputs = table_inputs(wager)
    n = table_entries(wager)
    if inputs is None or n is None:
        raise WagerError(
            f"{wager.name}: no card roles the simulator deals and no round fields it keeps; "
            "nothing to tabulate"
        )
    if n > MAX_TABLE_ENTRIES:
        raise WagerError(
            f"{wager.name}: {n:,} input combinations exceed the {MAX_TABLE_ENTRIES:,} of a "
            "side table; it is settled by the batch path"
        )
    shape = tuple(i.values for i in inputs)
    table = np.full(n, native.NOT_OFFERED, dtype=np.uint8)
    n_out = len(wager.paytable.pays)
    if wager.round_fields:
        return _build_round_table(wager, inputs, shape, n_out)
    for start in range(0, n, _ROWS_PER_BATCH):
        flat = np.arange(start, min(start + _ROWS_PER_BATCH, n), dtype=np.int64)
        cols = np.stack(np.unravel_index(flat, shape), axis=1).astype(np.uint8)
        dealt = (cols < native.SIDE_CARD_VALUES - 1).all(axis=1)
        cards = np.ascontiguousarray(cols[dealt])
        if not len(cards):
            continue
        offered = offered_mask(wager, cards)
        cards = np.ascontiguousarray(cards[offered])
        out = np.asarray(wager.classify(cards)).astype(np.int64)
        if out.size and (out.min() < 0 or out.max() >= n_out):
            raise WagerError(
                f"{wager.name}.classify returned {int(out.max())}, outside its paytable's "
                f"{n_out} outcomes; return an index into paytable.outcomes"
            )
        rows = flat[dealt][offered]
        table[rows] = out.astype(np.uint8)
    return table.reshape(shape)


def _build_round_table(
    wager: WagerType, inputs: tuple[TableInput, ...], shape: tuple[int, ...], n_out: int
) -> npt.NDArray[np.uint8]:
    """A play-decided wager's table: ``classify_round`` on one record per combination of
    its fields' values (every other field zero; ``dealer_up`` 52 is no card), every entry on
    offer, as in the batch path, which counts every round."""
    n = int(np.prod(shape, dtype=np.int64))
    table = np.empty(n, dtype=np.uint8)
    column_of = {col: name for name, cols in native.RECORD_INPUTS.items() for col in cols}
    for start in range(0, n, _ROWS_PER_BATCH):
        flat = np.arange(start, min(start + _ROWS_PER_BATCH, n), dtype=np.int64)
        values = np.unravel_index(flat, shape)
        rec = np.zeros(flat.size, dtype=RECORD_DTYPE)
        rec["dealer_cards"] = native.NO_CARD  # only the first three are inputs (by rank)
        for inp, v in zip(inputs, values, strict=True):
            field = column_of[inp.column]
            col = v.astype(np.uint8)
            if field == "dealer_up":
                col = np.where(col == native.SIDE_CARD_VALUES - 1, native.NO_CARD, col)
            if field == "dealer_cards":  # a rank: its card of suit 0, 13 no card
                col = np.where(col == _NO_RANK, native.NO_CARD, col * 4).astype(np.uint8)
            if rec[field].ndim == 2:  # a hand array: this input is one hand's
                rec[field][:, native.RECORD_INPUTS[field].index(inp.column)] = col
            else:
                rec[field] = col
        out = np.asarray(wager.classify_round(rec)).astype(np.int64)
        if out.shape != flat.shape or (out.size and (out.min() < 0 or out.max() >= n_out)):
            raise WagerError(
                f"{wager.name}.classify_round must return one index into paytable.outcomes "
                f"(0..{n_out - 1}) per record; it returned shape {out.shape} for "
                f"{flat.size} records, values {out.min(initial=0)}..{out.max(initial=0)}"
            )
        table[flat] = out.astype(np.uint8)
    return table.reshape(shape)


def factor(
    table: npt.NDArray[np.uint8],
) -> tuple[npt.NDArray[np.uint16] | None, npt.NDArray[np.uint8]]:
    """Factor ``table`` exactly in two levels where that shrinks it at least fourfold: for the
    best split of its inputs into a first ``a`` and the rest, ``pre`` (the first inputs'
    shape, uint16) numbers the distinct sub-tables of the rest and ``main`` (shape
    ``(classes, *rest)``) holds each once, so ``table[i, j] == main[pre[i], j]``.  Returns
    ``(None, table)`` when no split pays (a table the C simulator reads from cache is
    smaller, and faster).  E.g. Lucky Ladies: (P1, P2) fall into few classes for (D1, D2)."""
    shape = table.shape
    best: tuple[int, npt.NDArray[np.uint16], npt.NDArray[np.uint8]] | None = None
    for a in range(1, table.ndim):
        n_first = int(np.prod(shape[:a]))
        rows = table.reshape(n_first, -1)
        classes: dict[bytes, int] = {}
        inverse = np.empty(n_first, dtype=np.int64)
        for r in range(n_first):  # distinct rows by their bytes (np.unique is far slower)
            inverse[r] = classes.setdefault(rows[r].tobytes(), len(classes))
            if len(classes) >= 1 << 16:
                break
        if len(classes) >= 1 << 16:
            continue
        firsts = np.unique(inverse, return_index=True)[1]
        uniq = rows[firsts]
        size = uniq.size + 2 * n_first
        if best is None or size < best[0]:
            pre = inverse.reshape(shape[:a]).astype(np.uint16)
            best = (size, pre, np.ascontiguousarray(uniq.reshape((len(uniq), *shape[a:]))))
    if best is None or 4 * best[0] > table.size:
        return None, table
    return best[1], best[2]


_MEMORY: dict[str, tuple[npt.NDArray[np.uint16] | None, npt.NDArray[np.uint8]]] = {}
_MISMATCH: dict[str, str | None] = {}
_NO_RANK = 13
CHECK_ROUNDS = 20_000
"""Simulated rounds per rule set on which a table reading ``dealer_cards`` must agree with
the wager's ``classify_round`` round for round."""


def record_input_values(records: npt.NDArray[np.void], column: int) -> npt.NDArray[np.int64]:
    """The value of simulator input ``column`` (a round-record input) in each of ``records``
    ``(n,)`` :data:`feltlab.record.RECORD_DTYPE`, as the C simulator reads it
    (``fl_side_record_inputs``): ``dealer_up`` 52 for no card, a dealer rank 13 for none."""
    for name, cols in native.RECORD_INPUTS.items():
        if column in cols:
            v = records[name]
            v = (v[:, cols.index(column)] if v.ndim == 2 else v).astype(np.int64)
            if name == "dealer_up":
                return np.where(v == native.NO_CARD, native.SIDE_CARD_VALUES - 1, v)
            if name == "dealer_cards":
                return np.where(v == native.NO_CARD, _NO_RANK, v >> 2)
            return v
    raise ValueError(f"input {column} is not a round-record input of the simulator")


def dealer_cards_mismatch(wager: WagerType, table: npt.NDArray[np.uint8]) -> str | None:
    """None when ``table`` (one level, over ``table_inputs(wager)``) gives what
    ``wager.classify_round`` gives on every round of :data:`CHECK_ROUNDS` rounds simulated
    with their records under vegas_s17 and nz (the dealer playing out, seed 2024); else why
    not.  The check a table over ``dealer_cards`` (read by the first three ranks) passes
    before it is used: a classifier reading more of the array fails it."""
    inputs = table_inputs(wager)
    assert inputs is not None
    for preset in ("vegas_s17", "nz"):
        table_rules = Rules.preset(preset)
        rules = replace(
            simulator_rules(table_rules, strategy_tables(table_rules)), dealer_plays_out=True
        )
        res = native.simulate_rounds(
            native.Xoshiro256StarStar(2024), rules, CHECK_ROUNDS, record=True
        )
        assert res.record is not None
        idx = tuple(record_input_values(res.record, i.column) for i in inputs)
        got = table[idx]
        want = np.asarray(wager.classify_round(res.record)).astype(np.int64)
        bad = np.flatnonzero(got != want)
        if bad.size:
            return (
                f"its classify_round reads more of dealer_cards than the first three ranks "
                f"({bad.size} of {CHECK_ROUNDS:,} simulated {preset} rounds differ from a table "
                "over them)"
            )
    return None


def side_table(wager: WagerType) -> native.SideTable | None:
    """The C simulator's :class:`feltlab.native.SideTable` of ``wager`` (built and
    :func:`factor`-ed, or read from the memory or disk cache); None when the wager is not
    tabulable or too large (the caller settles it by the batch path).  Raises WagerError
    for a bad classifier."""
    inputs = table_inputs(wager)
    if inputs is None or too_large(wager):
        return None
    key = cache_key(wager)
    parts = _MEMORY.get(key)
    if parts is None:
        parts = _load(key)
        if parts is None:
            parts = factor(build_table(wager))
            _store(key, parts)
        _MEMORY[key] = parts
    pre, main = parts
    if "dealer_cards" in wager.round_fields:
        if key not in _MISMATCH:
            _MISMATCH[key] = dealer_cards_mismatch(wager, main if pre is None else main[pre])
        if _MISMATCH[key] is not None:
            return None
    columns = tuple(i.column for i in inputs)
    if pre is None:
        strides = tuple(int(s) // main.itemsize for s in main.strides)
        return native.SideTable(main, columns, strides)
    pre_strides = tuple(int(s) // pre.itemsize for s in pre.strides)
    rest = tuple(int(s) // main.itemsize for s in main.strides)
    return native.SideTable(
        main,
        columns,
        pre_strides + rest[1:],
        pre=pre,
        n_pre=pre.ndim,
        n_classes=main.shape[0],
        class_stride=rest[0],
    )


def _load(key: str) -> tuple[npt.NDArray[np.uint16] | None, npt.NDArray[np.uint8]] | None:
    main = cache.load("tables", key)
    if main is None:
        return None
    pre = cache.load_any("tables", key + "-pre")
    if pre is not None and pre.dtype == np.uint16:
        return pre, main
    return None if pre is not None else (None, main)


def _store(key: str, parts: tuple[npt.NDArray[np.uint16] | None, npt.NDArray[np.uint8]]) -> None:
    pre, main = parts
    if pre is not None:  # written first: a main table without it is read as one level
        cache.store("tables", key + "-pre", pre)
    cache.store("tables", key, main)


def full_table(wager: WagerType) -> npt.NDArray[np.uint8] | None:
    """The one-level table of ``wager`` (its factored form expanded), or None as for
    :func:`side_table`."""
    t = side_table(wager)
    if t is None:
        return None
    if t.pre is None:
        return t.table
    return t.table[t.pre]


__all__ = [
    "MAX_TABLE_ENTRIES",
    "TABLE_FORMAT",
    "TableInput",
    "build_table",
    "cache_key",
    "dealer_cards_mismatch",
    "factor",
    "full_table",
    "record_input_values",
    "side_table",
    "table_entries",
    "table_inputs",
    "too_large",
    "untabulated_reason",
]
