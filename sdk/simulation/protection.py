"""Game protection: can a card counter beat a wager, at what count, for how much.

For each wager in play (the main wager and every installed side wager with a lookup table,
:mod:`feltlab.simulation.side_tables`), :func:`protect` simulates rounds in the C round simulator
(``feltlab.native.simulate_counted``: the shoe, its cutting card and penetration are the
rules'), which keeps the running count of a :class:`feltlab.math.counts.Count` and tallies every
wager's result by the count at the moment of the bet (before the round's first card), one
bucket per count value at the chosen resolution.  Each wager's buckets then go through
:func:`feltlab.math.countability.analyze_buckets`: expectation by count with intervals, trigger
count, frequency, the counter's edge and win per 100 rounds at the wager's maximum bet, and
the verdict.  The whole is a :class:`ProtectionReport` (docs/protection.md explains how to
read it).

Chunks: as :mod:`feltlab.simulation.run`, chunk i of ``chunk_rounds`` rounds draws from the seed's
generator jumped i + 1 times and the simulator is called for
:data:`feltlab.record.RECORD_BATCH` rounds at a time (each call starts from freshly
shuffled shoes), so a seed gives the same figures on any machine.  The continuous-shuffler
audit (``feltlab certify csm-audit``) drives the simulator through the same
:func:`run_counted` with a :class:`feltlab.native.CsmModel` and a window count
(:func:`window_bucketing`): one call a chunk, each loading a fresh machine.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.core_rules import DEFAULT_STAKE, simulator_rules
from feltlab.errors import CountError, RulesError
from feltlab.math.countability import (
    MIN_ROUNDS,
    Bucket,
    Countability,
    analyze_buckets,
    bucket_from_outcomes,
    bucket_from_sums,
)
from feltlab.math.counts import MAX_RESOLUTION, SUIT_MODES, Count
from feltlab.math.strategy_tables import strategy_tables
from feltlab.record import RECORD_BATCH
from feltlab.rules import Rules, ShufflerKind
from feltlab.seeds import SEED_DERIVATION_VERSION, chunk_generator
from feltlab.wagers import WagerType

MAX_BUCKETS: int = native.COUNT_MAX_BUCKETS
"""The simulator's most count buckets (``FL_COUNT_MAX_BUCKETS``, 256)."""
TRUE_RANGE = 15
"""True counts tallied apart: -15 to +15 book units (beyond: the open outer buckets)."""
RUNNING_RANGE = 40
"""Running counts tallied apart around the initial running count: -40 to +40 plus the
unbalanced count's drift (``per_deck`` a deck dealt)."""
SUIT_TOP = {"suit": 39, "suit-range": 52}
"""The suit counts' values tallied apart, 0 to this (all of them): the richest suit's excess
0..39, Jacobson's most-less-least abundant suit 0..52 (per deck remaining)."""


@dataclass(frozen=True)
class Bucketing:
    """How a count buckets rounds in the simulator: ``resolution`` buckets a book unit of
    the count (the bucket value is ``floor(count * scale * resolution)`` in stored units),
    ``lowest`` the bucket value of bucket 0 and ``n_buckets`` (lower values fall into
    bucket 0, higher ones into the last: both open-ended); ``offset``: the count's initial
    running count added to every value reported (stored units); ``window``: 0, or the
    window count of the last ``window`` cards seen (the sum of their tags, whatever the
    count's mode: a continuous shuffler's count, :func:`window_bucketing`)."""

    count: Count
    resolution: int
    lowest: int
    n_buckets: int
    offset: int = 0
    window: int = 0

    def value(self, b: int) -> Fraction:
        """Bucket ``b``'s count value (its lower bound) in the count's book units."""
        step = self.resolution * (1 if self.count.mode in SUIT_MODES else self.count.scale)
        if self.count.index_mode == "running" or self.window:
            step = self.count.scale  # a running count is an integer: resolution 1
        return Fraction(self.lowest + b, step) + Fraction(self.offset, self.count.scale)

    def values(self) -> tuple[Fraction, ...]:
        """Every bucket's value, bucket 0 first."""
        return tuple(self.value(b) for b in range(self.n_buckets))

    def spec(self) -> native.CountSpec:
        """The C simulator's count (``fl_count``) of these buckets."""
        if self.window:
            return native.CountSpec(
                self.count.tags, native.COUNT_WINDOW, self.window, 1, self.lowest, self.n_buckets
            )
        mode = {
            "true": native.COUNT_TRUE,
            "running": native.COUNT_RUNNING,
            "suit": native.COUNT_SUIT,
            "suit-range": native.COUNT_SUIT_RANGE,
        }[self.count.index_mode]
        return native.CountSpec(
            self.count.tags, mode, 0, self.resolution, self.lowest, self.n_buckets
        )


def bucketing(count: Count, decks: int, resolution: int = 1) -> Bucketing:
    """The default buckets of ``count`` for a ``decks``-deck shoe at ``resolution`` buckets a
    unit (1..64; a running count always 1): true counts -15..+15, running counts around
    the initial running count, the suit counts over all their values (:data:`SUIT_TOP`), at
    most :data:`MAX_BUCKETS`.  Raises :class:`CountError` for a resolution out of range."""
    if not 1 <= resolution <= MAX_RESOLUTION:
        raise CountError(f"resolution must be 1..{MAX_RESOLUTION} buckets a unit, got {resolution}")
    mode = count.index_mode
    if mode in SUIT_MODES:
        top = SUIT_TOP[mode]
        most = MAX_BUCKETS // (top + 1)
        if resolution > most:
            raise CountError(
                f"resolution {resolution} does not fit {count.label}'s values 0..{top} in "
                f"{MAX_BUCKETS} buckets: give a resolution of at most {most}"
            )
        return Bucketing(count, resolution, 0, (top + 1) * resolution)
    if mode == "running":
        lo = -RUNNING_RANGE * count.scale
        drift = max(count.per_deck * decks, 0) if count.per_deck > 0 else 0
        n = min(2 * RUNNING_RANGE * count.scale + 1 + drift, MAX_BUCKETS)
        return Bucketing(count, 1, lo, n, count.initial_running_count(decks))
    per = resolution * count.scale
    most = (MAX_BUCKETS - 1) // (2 * TRUE_RANGE * count.scale)
    if resolution > most:
        raise CountError(
            f"resolution {resolution} does not fit {count.name}'s true counts "
            f"-{TRUE_RANGE}..+{TRUE_RANGE} in {MAX_BUCKETS} buckets: give a resolution of at "
            f"most {most}"
        )
    return Bucketing(count, resolution, -TRUE_RANGE * per, 2 * TRUE_RANGE * per + 1)


def window_bucketing(count: Count, window: int) -> Bucketing:
    """Buckets of the window count of the last ``window`` cards (1 stored unit each) covering
    every value the tags allow, ``window * min(tags, 0)`` to ``window * max(tags, 0)``; beyond
    :data:`MAX_BUCKETS`, centred on 0 with the outer buckets open.  Raises
    :class:`CountError` for a window below 1 or a count with no tags (a suit count)."""
    if window < 1:
        raise CountError(f"window must be at least 1 card, got {window}")
    if count.mode in SUIT_MODES:
        raise CountError(f"{count.label} has no tags to sum over a window: choose a point count")
    lo, hi = window * min(min(count.tags), 0), window * max(max(count.tags), 0)
    n = hi - lo + 1
    if n > MAX_BUCKETS:
        lo, n = max(lo, -(MAX_BUCKETS // 2)), MAX_BUCKETS
    return Bucketing(count, 1, lo, n, window=window)


@dataclass
class CountedTally:
    """Exact integer sums of a counted simulation, per bucket: ``rounds``, ``net`` and
    ``net_sq`` (the main wager, cents and cents^2), and per side wager its ``(n_buckets,
    256)`` outcome counts (index 255: rounds not on offer)."""

    n_buckets: int
    rounds: npt.NDArray[np.int64] = field(init=False)
    net: list[int] = field(init=False)
    net_sq: list[int] = field(init=False)
    outcomes: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        self.rounds = np.zeros(self.n_buckets, dtype=np.int64)
        self.net = [0] * self.n_buckets
        self.net_sq = [0] * self.n_buckets

    @property
    def total_rounds(self) -> int:
        """Rounds over every bucket."""
        return int(self.rounds.sum())


def counted_call(
    rng: native.BitGenerator,
    rules: native.SimRules,
    n_rounds: int,
    tables: Sequence[native.SideTable],
    b: Bucketing,
    csm: native.CsmModel | None = None,
) -> tuple[npt.NDArray[np.int64], list[int], list[int], npt.NDArray[np.int64]]:
    """One call of the C simulator's counted tally (:func:`feltlab.native.simulate_counted`,
    off the continuous shuffler ``csm`` when given): per bucket the rounds, the main wager's
    net and squared net (exact Python ints), and the tables' outcome counts ``(n_buckets,
    n_tables, 256)``."""
    res = native.simulate_counted(rng, rules, n_rounds, b.spec(), tuple(tables), csm=csm)
    return (
        np.asarray(res.bucket_rounds, dtype=np.int64),
        [int(x) for x in res.bucket_net],
        [int(x) for x in res.bucket_net_sq],
        np.asarray(res.bucket_counts, dtype=np.int64).reshape(b.n_buckets, len(tables), 256),
    )


def run_counted(
    rules: Rules,
    wagers: Sequence[WagerType],
    b: Bucketing,
    rounds: int,
    *,
    seed: int = 1,
    chunk_rounds: int = 2_000_000,
    progress: Callable[[int], None] | None = None,
    csm: native.CsmModel | None = None,
) -> CountedTally:
    """Simulate ``rounds`` rounds under ``rules`` (basic strategy, the rules' cutting card)
    with ``wagers`` (the main wager from the simulator's sums, each other one through its
    side table) tallied by ``b``'s buckets.  ``csm``: deal off this continuous shuffler
    instead of a shoe, one simulator call a chunk (each call loads a fresh machine).  A pure
    function of its arguments (see the module docstring).  Raises :class:`CountError` for a
    non-positive count of rounds or a wager without a table."""
    from feltlab.simulation import side_tables  # start-up: the CSM audit's model needs no table

    if rounds < 1 or chunk_rounds < 1:
        raise CountError("rounds and chunk_rounds must be positive")
    sides = [w for w in wagers if w.name != "main"]  # the main wager: the simulator's sums
    tables = []
    for w in sides:
        t = side_tables.side_table(w)
        if t is None:
            raise CountError(f"{w.name} has no side table: it cannot be counted in the simulator")
        tables.append(t)
    sr = dataclasses.replace(
        simulator_rules(rules, strategy_tables(rules), fresh_shoe=csm is not None),
        dealer_plays_out=any(w.dealer_plays_out for w in wagers),
    )
    batch = RECORD_BATCH if csm is None else chunk_rounds
    out = CountedTally(b.n_buckets)
    for w in sides:
        out.outcomes[w.name] = np.zeros((b.n_buckets, 256), dtype=np.int64)
    sizes = [chunk_rounds] * (rounds // chunk_rounds) + (
        [rounds % chunk_rounds] if rounds % chunk_rounds else []
    )
    done = 0
    t0 = time.perf_counter()
    for chunk, size in enumerate(sizes):
        rng = chunk_generator(seed, chunk)
        left = size
        while left:
            n = min(left, batch)
            r, net, sq, counts = counted_call(rng, sr, n, tables, b, csm)
            out.rounds += r
            out.net = [a + x for a, x in zip(out.net, net, strict=True)]
            out.net_sq = [a + x for a, x in zip(out.net_sq, sq, strict=True)]
            for k, w in enumerate(sides):
                out.outcomes[w.name] += counts[:, k, :]
            left -= n
            done += n
            if progress:
                progress(done)
    out.seconds = time.perf_counter() - t0
    return out


def wager_buckets(tally: CountedTally, b: Bucketing, wager: WagerType) -> tuple[Bucket, ...]:
    """``wager``'s buckets from a counted tally: the main wager's from its sums (per unit of
    the simulator's stake), a side wager's from its outcome counts and paytable."""
    values = b.values()
    if wager.name == "main":
        return tuple(
            bucket_from_sums(
                values[i], int(tally.rounds[i]), tally.net[i], tally.net_sq[i], DEFAULT_STAKE
            )
            for i in range(b.n_buckets)
        )
    k = len(wager.paytable.pays)
    counts = tally.outcomes[wager.name]
    return tuple(
        bucket_from_outcomes(values[i], [int(x) for x in counts[i, :k]], wager.paytable.pays)
        for i in range(b.n_buckets)
    )


@dataclass(frozen=True)
class WagerProtection:
    """One wager under one count: its name, paytable, the count and bucketing, and the
    :class:`feltlab.math.countability.Countability` of its buckets."""

    wager: str
    paytable: str
    count: Count
    bucketing: Bucketing
    analysis: Countability

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "wager": self.wager,
            "paytable": self.paytable,
            "count": self.count.to_dict(),
            "resolution": self.bucketing.resolution,
            **self.analysis.to_dict(),
        }


@dataclass(frozen=True)
class Skipped:
    """A wager left out of the report and why."""

    wager: str
    reason: str


@dataclass(frozen=True)
class ProtectionReport:
    """The game protection report: the rules, rounds and seed behind every figure, one
    :class:`WagerProtection` per wager and count, the wagers left out, and the simulator's
    seconds and rounds per second."""

    rules: Rules
    rules_name: str
    rounds: int
    seed: int
    results: tuple[WagerProtection, ...]
    skipped: tuple[Skipped, ...]
    seconds: float
    rounds_simulated: int
    seed_derivation: int = SEED_DERIVATION_VERSION
    simulator_version: int = native.SIM_VERSION

    @property
    def rounds_per_second(self) -> float:
        """Counted rounds per second in the simulator, over every run of the report."""
        return self.rounds_simulated / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "rules": self.rules_name,
            "decks": self.rules.decks,
            "penetration": penetration(self.rules),
            "rounds": self.rounds,
            "seed": self.seed,
            "seed_derivation": self.seed_derivation,
            "simulator_version": self.simulator_version,
            "seconds": self.seconds,
            "rounds_per_second": self.rounds_per_second,
            "wagers": [r.to_dict() for r in self.results],
            "skipped": [{"wager": s.wager, "reason": s.reason} for s in self.skipped],
        }


def penetration(rules: Rules) -> float | None:
    """The fraction of the shoe dealt before the cutting card; None for a continuous
    shuffler (the simulator deals every round from a freshly shuffled ideal machine: no
    count carries over; the continuous shuffler audit models a real one)."""
    if rules.shuffler is ShufflerKind.CONTINUOUS:
        return None
    return 1 - rules.cut_card_from_back / rules.cards


def _unit(count: Count) -> str:
    return {
        "true": "true count",
        "running": "running count",
        "suit": "richest-suit excess",
        "suit-range": "Jacobson's suit count",
    }[count.index_mode]


def why_not_counted(wager: WagerType, rules: Rules) -> str | None:
    """Why ``wager`` cannot be in the protection report under ``rules`` (None: it can)."""
    from feltlab.simulation import side_tables  # start-up: the CSM audit's model needs no table

    if wager.name == "main":
        return None
    try:  # the wager's own rule check: rule 3.3(a)'s 4 decks is 1 under deck_rule "any"
        wager.check_rules(rules)
    except RulesError as exc:
        return str(exc)
    if any(p is None for p in wager.paytable.pays):
        return "a jackpot panel pays its prizes: its return is the panel's, not the cards'"
    try:
        t = side_tables.side_table(wager)
    except Exception as exc:  # a plugin's classifier
        return f"its classifier failed: {exc}"
    if t is None:
        why = side_tables.untabulated_reason(wager) or "not decided by the simulator's inputs"
        return f"no side table ({why}): the counted simulator tallies tables only"
    return None


def protect(
    rules: Rules,
    wagers: Sequence[WagerType],
    counts: Sequence[Count | Callable[[WagerType], Count]],
    rounds: int,
    *,
    rules_name: str = "",
    seed: int = 1,
    resolution: int = 1,
    min_rounds: int = MIN_ROUNDS,
    chunk_rounds: int = 2_000_000,
    progress: Callable[[int], None] | None = None,
) -> ProtectionReport:
    """The protection report of ``wagers`` under ``rules``: one counted simulation of
    ``rounds`` rounds per count (a count given as a function of the wager, such as its own
    best linear count, is one simulation per wager), every wager that can be counted
    analysed under every count; the others listed in ``skipped`` with the reason.  Raises
    :class:`CountError` for bad arguments."""
    keep: list[WagerType] = []
    skipped: list[Skipped] = []
    for w in wagers:
        why = why_not_counted(w, rules)
        if why is None:
            keep.append(w)
        else:
            skipped.append(Skipped(w.name, why))
    results: list[WagerProtection] = []
    done: set[tuple[str, str]] = set()
    seconds = 0.0
    simulated = 0
    plan: list[tuple[Count, list[WagerType], Bucketing]] = []
    for spec in counts:  # every count and its buckets checked before the first simulation
        if isinstance(spec, Count):
            groups: list[tuple[Count, list[WagerType]]] = [(spec, keep)] if keep else []
        else:
            groups = []
            for w in keep:
                try:
                    groups.append((spec(w), [w]))
                except (CountError, ValueError) as exc:
                    skipped.append(Skipped(w.name, f"no count of its own: {exc}"))
        for count, given in groups:
            ws = [w for w in given if (count.name, w.name) not in done]
            done.update((count.name, w.name) for w in ws)
            if ws:  # the main wager's own count is Hi-Lo, perhaps planned already
                plan.append((count, ws, bucketing(count, rules.decks, resolution)))
    for count, ws, b in plan:
        tally = run_counted(
            rules, ws, b, rounds, seed=seed, chunk_rounds=chunk_rounds, progress=progress
        )
        seconds += tally.seconds
        simulated += tally.total_rounds
        for w in ws:
            a = analyze_buckets(
                wager_buckets(tally, b, w),
                max_bet=w.limits.maximum,
                min_rounds=min_rounds,
                unit=_unit(count),
            )
            results.append(WagerProtection(w.name, w.paytable.name, count, b, a))
    return ProtectionReport(
        rules, rules_name, rounds, seed, tuple(results), tuple(skipped), seconds, simulated
    )
