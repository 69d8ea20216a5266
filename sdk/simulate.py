"""Monte Carlo of whole rounds in the C round simulator, in chunks that scale out.

The C simulator (native/src/sim.c) plays one box under any :class:`feltlab.Rules` with a
table-driven strategy, dealing from a real shoe with a cutting card (or a fresh shoe every
round), and returns each round's main-wager net result in cents and its initial cards.  Side
bets are settled afterwards, vectorised, by each wager's own classifier on those cards, so any
plugin's return is estimated without a Python call per round.

Strategy: :func:`strategy_tables` turns feltlab's basic strategy (sdk/strategy.py: a
composition-approximated expected-value calculation) into tables by player total and dealer
up card, evaluated on a representative two-card hand of each total.  :class:`TablePolicy`
plays the same tables in the Python round engine, which is what makes the differential test
between the two exact.

Scale: work is cut into chunks of ``chunk_rounds`` rounds; chunk i draws from the seed's
generator jumped i + 1 times (xoshiro256** jump: 2^128 outputs apart) and starts from a fresh
shoe, and chunk results are exact integer sums, so a seed gives the identical result on 1
worker, N local processes or a Dask cluster.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.cards import card_value
from feltlab.engine import Decision, DecisionView
from feltlab.errors import RulesError
from feltlab.rules import (
    DealerBlackjackTakes,
    DoubleOn,
    HoleCard,
    Rules,
    ShufflerKind,
    Surrender,
)
from feltlab.seeds import SEED_DERIVATION_VERSION, chunk_generator
from feltlab.strategy import action_values
from feltlab.wagers import WagerType

HIT, STAND, DOUBLE_HIT, DOUBLE_STAND = (
    native.HIT,
    native.STAND,
    native.DOUBLE_ELSE_HIT,
    native.DOUBLE_ELSE_STAND,
)
ROLE_COLUMNS = {"P1": 0, "P2": 1, "D1": 2, "P3": 3, "D2": 4}
"""Columns of the simulator's initial cards for each card role of a wager."""
DEFAULT_STAKE = 1000
"""Cents on the main wager per round (blackjack at 3 to 2 pays exactly 1500)."""
MIN_BEHIND_CUT = 26


def _code(value: int, suit: int = 0) -> int:
    """A card code of blackjack value 1..10 (10 as a ten)."""
    return (value - 1) * 4 + suit


@dataclass(frozen=True)
class StrategyTables:
    """``hard``/``soft``: ``(32, 11)`` uint8 actions by [total][up value 1..10] (0 hit, 1 stand,
    2 double else hit, 3 double else stand); ``pair``: ``(13, 11)`` uint8, 1 to split;
    ``surr``: ``(32, 11)`` uint8, 1 to surrender a hard two-card total (when the rules allow
    it; a pair the ``pair`` table splits is split)."""

    hard: npt.NDArray[np.uint8]
    soft: npt.NDArray[np.uint8]
    pair: npt.NDArray[np.uint8]
    surr: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros((32, 11), dtype=np.uint8))


def _surrenders(rules: Rules, cards: tuple[int, ...], up: int) -> bool:
    av = action_values(rules, cards, up)
    if av.surrender is None:
        return False
    others = [av.stand, av.hit] + ([av.double] if av.double is not None else [])
    return av.surrender > max(others) + 1e-12


def _action(rules: Rules, cards: tuple[int, ...], up: int, allow_split: bool) -> int:
    av = action_values(rules, cards, up)
    best = max(av.stand, av.hit)
    base = HIT if av.hit > av.stand + 1e-12 else STAND
    if av.split is not None and allow_split and av.split > max(best, av.double or -9) + 1e-12:
        return 4
    if av.double is not None and av.double > best + 1e-12:
        return DOUBLE_HIT if base == HIT else DOUBLE_STAND
    return base


STRATEGY_FORMAT = 1
"""Version of the cached strategy tables' layout (part of their cache key)."""


def _strategy_key(rules: Rules) -> str:
    import inspect

    from feltlab import cache, strategy

    try:
        source = inspect.getsource(strategy) + inspect.getsource(compute_strategy_tables)
    except OSError:  # no source to key on: never reuse a cached table
        source = str(time.time_ns())
    return cache.digest("strategy", STRATEGY_FORMAT, repr(rules), cache.digest(source))


@lru_cache(maxsize=64)
def strategy_tables(rules: Rules) -> StrategyTables:
    """:func:`compute_strategy_tables` of ``rules``, cached in memory and on disk
    (``feltlab.cache``, kind ``strategy``) under a key of the rules' every field and the
    source of the strategy code, so ``feltlab simulate`` does not recompute it at each
    start."""
    from feltlab import cache

    key = _strategy_key(rules)
    arr = cache.load("strategy", key)
    if arr is not None and arr.shape == (4, 32, 11):
        return StrategyTables(arr[0].copy(), arr[1].copy(), arr[2, :13].copy(), arr[3].copy())
    t = compute_strategy_tables(rules)
    packed = np.zeros((4, 32, 11), dtype=np.uint8)
    packed[0], packed[1], packed[2, :13], packed[3] = t.hard, t.soft, t.pair, t.surr
    cache.store("strategy", key, packed)
    return t


def compute_strategy_tables(rules: Rules) -> StrategyTables:
    """Basic strategy for ``rules`` as tables: each cell is the best action for a
    representative two-card hand of that total (hard t: two different non-pair values, e.g.
    2 + (t - 2); soft t: ace + (t - 11); soft 12: ace + ace, not split) against the up card.
    Hard totals from 21 and soft 21 stand.  Multi-card hands use their total's cell (a double
    then falls back to hit or stand)."""
    hard = np.full((32, 11), STAND, dtype=np.uint8)
    soft = np.full((32, 11), STAND, dtype=np.uint8)
    pair = np.zeros((13, 11), dtype=np.uint8)
    surr = np.zeros((32, 11), dtype=np.uint8)
    for up_value in range(1, 11):
        up = _code(up_value, 1)
        for t in range(4, 21):
            if t == 4:
                cards = (_code(2), _code(2, 2))  # only 2 + 2 makes a two-card hard 4
            else:
                a = 2 if t - 2 != 2 else 3
                b = t - a
                if b > 10:
                    a, b = t - 10, 10
                cards = (_code(a), _code(b, 2))
            act = _action(rules, cards, up, allow_split=False)
            hard[t, up_value] = act
            surr[t, up_value] = _surrenders(rules, cards, up)
        for t in range(12, 21):
            cards = (_code(1), _code(t - 11, 2)) if t > 12 else (_code(1), _code(1, 2))
            soft[t, up_value] = _action(rules, cards, up, allow_split=False)
        for rank in range(13):
            cards = (rank * 4, rank * 4 + 2)
            pair[rank, up_value] = 1 if _action(rules, cards, up, allow_split=True) == 4 else 0
    return StrategyTables(hard, soft, pair, surr)


class TablePolicy:
    """A round-engine policy that plays :class:`StrategyTables` exactly as the C simulator
    does (the differential test's Python side).  Never insures."""

    def __init__(self, tables: StrategyTables) -> None:
        self.t = tables

    def decide(self, view: DecisionView) -> Decision:
        """The table's action for ``view``, falling back as the simulator does."""
        cards = view.cards
        up = card_value(view.dealer_up)
        if len(cards) == 2 and Decision.SPLIT in view.legal and self.t.pair[cards[0] >> 2, up]:
            return Decision.SPLIT
        hard = sum(card_value(c) for c in cards)
        soft = any((c >> 2) == 0 for c in cards) and hard + 10 <= 21
        total = hard + 10 if soft else hard
        if Decision.SURRENDER in view.legal and not soft and self.t.surr[total, up]:
            return Decision.SURRENDER
        a = int((self.t.soft if soft else self.t.hard)[total, up])
        if a in (DOUBLE_HIT, DOUBLE_STAND):
            if Decision.DOUBLE in view.legal:
                return Decision.DOUBLE
            a = HIT if a == DOUBLE_HIT else STAND
        if a == HIT and Decision.HIT in view.legal:
            return Decision.HIT
        return Decision.STAND

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        """0: never insures."""
        return 0


def sim_rules(
    rules: Rules,
    *,
    tables: StrategyTables | None = None,
    stake: int = DEFAULT_STAKE,
    fresh_shoe: bool = False,
) -> native.SimRules:
    """The C simulator's :class:`feltlab.native.SimRules` for ``rules``.  ``fresh_shoe``
    deals every round from a freshly shuffled shoe (where a combinatorial analysis applies
    exactly); a continuous shuffler is modelled the same way (an ideal one).  Raises
    :class:`RulesError` for a cutting card too near the back for a round to finish."""
    t = tables or strategy_tables(rules)
    size = rules.decks * 52
    if fresh_shoe or rules.shuffler is ShufflerKind.CONTINUOUS:
        cut = 0
    else:
        cut = size - rules.cut_card_from_back
        if rules.cut_card_from_back < MIN_BEHIND_CUT:
            raise RulesError(
                f"cut_card_from_back={rules.cut_card_from_back}: the simulator needs at least "
                f"{MIN_BEHIND_CUT} cards behind the cutting card so no round runs out of cards"
            )
    takes = {
        DealerBlackjackTakes.ORIGINAL: 0,
        DealerBlackjackTakes.ORIGINAL_AND_BUSTED: 1,
        DealerBlackjackTakes.ALL: 2,
    }[rules.dealer_blackjack_takes]
    double_on = {
        DoubleOn.ANY: 0,
        DoubleOn.HARD: 1,
        DoubleOn.NINE_TO_ELEVEN: 2,
        DoubleOn.TEN_OR_ELEVEN: 3,
    }[rules.double_on]
    return native.SimRules(
        decks=rules.decks,
        h17=rules.dealer_hits_soft_17,
        peek=rules.hole_card is HoleCard.PEEK,
        enhc_takes=takes,
        bj_num=rules.blackjack_pays.numerator,
        bj_den=rules.blackjack_pays.denominator,
        double_on=double_on,
        double_after_split=rules.double_after_split,
        max_hands=rules.max_split_hands,
        resplit_aces=rules.resplit_aces,
        split_aces_one_card=rules.split_aces_one_card,
        cut_position=cut,
        stake=stake,
        hard=t.hard,
        soft=t.soft,
        pair=t.pair,
        surrender={Surrender.NONE: 0, Surrender.LATE: 1, Surrender.EARLY: 2}[rules.surrender],
        surr=t.surr,
    )


# ---------------------------------------------------------------- chunked simulation


@dataclass
class Tally:
    """Exact integer sums over rounds: ``rounds``, ``net`` and ``net_sq`` (cents, cents^2) of
    the main wager, and per side wager its outcome counts and the rounds it was on offer."""

    rounds: int = 0
    net: int = 0
    net_sq: int = 0
    wagers: dict[str, list[int]] = field(default_factory=dict)
    offered: dict[str, int] = field(default_factory=dict)
    chunk: int = field(default=-1, compare=False)
    trace: native.SimResult | None = field(default=None, compare=False, repr=False)

    def add(self, other: Tally) -> None:
        """Add another tally in place."""
        self.rounds += other.rounds
        self.net += other.net
        self.net_sq += other.net_sq
        for k, v in other.wagers.items():
            mine = self.wagers.setdefault(k, [0] * len(v))
            for i, x in enumerate(v):
                mine[i] += x
        for k, n in other.offered.items():
            self.offered[k] = self.offered.get(k, 0) + n


def classify_side_bets(
    initial: npt.NDArray[np.uint8], wagers: Iterable[WagerType]
) -> dict[str, tuple[npt.NDArray[np.int64], int]]:
    """Outcome counts of each card-decided wager over the simulator's ``initial`` cards
    ``(n, 5)``: {name: (counts per paytable outcome, rounds on offer)}."""
    from feltlab.parsheet import offered_mask

    out: dict[str, tuple[npt.NDArray[np.int64], int]] = {}
    for w in wagers:
        if not w.card_roles or any(r not in ROLE_COLUMNS for r in w.card_roles):
            continue
        cols = np.ascontiguousarray(initial[:, [ROLE_COLUMNS[r] for r in w.card_roles]])
        ok = (cols != native.NO_CARD).all(axis=1)
        ok &= offered_mask(w, cols)
        sel = np.ascontiguousarray(cols[ok])
        idx = np.asarray(w.classify(sel)).astype(np.int64)
        counts = np.bincount(idx, minlength=len(w.paytable.pays)).astype(np.int64)
        out[w.name] = (counts, int(ok.sum()))
    return out


def run_chunk(
    rules: Rules,
    chunk: int,
    n_rounds: int,
    seed: int,
    wager_specs: Sequence[tuple[str, str | None]] = (),
    fresh_shoe: bool = False,
    trace: bool = False,
) -> Tally:
    """Simulate chunk ``chunk`` (``n_rounds`` rounds) of seed ``seed``: a pure function of its
    arguments, so any worker may run it.  ``wager_specs``: (wager name, paytable) pairs.

    Every wager is tallied inside the C simulator through its lookup table
    (``feltlab.sidetables``) unless ``trace`` asks for the per-round arrays (kept in the
    tally's ``trace``) or a wager is too large to tabulate: then the simulator writes the
    per-round arrays and every wager is classified in batches (the same counts)."""
    from feltlab import sidetables

    rng = chunk_generator(seed, chunk)
    srules = sim_rules(rules, fresh_shoe=fresh_shoe)
    instances = [_wager(name, table) for name, table in wager_specs]
    tables = [] if trace else [sidetables.side_table(w) for w in instances]
    if trace or any(t is None for t in tables):
        res = native.simulate_rounds(rng, srules, n_rounds)
        net = res.net.astype(np.int64)
        tally = Tally(rounds=n_rounds, net=int(net.sum()), net_sq=int((net * net).sum()))
        for name, (counts, offered) in classify_side_bets(res.initial, instances).items():
            tally.wagers[name] = [int(c) for c in counts]
            tally.offered[name] = offered
        tally.chunk = chunk
        tally.trace = res if trace else None
        return tally
    out = native.simulate_tally(rng, srules, n_rounds, tuple(t for t in tables if t is not None))
    tally = Tally(rounds=out.rounds, net=out.net, net_sq=out.net_sq, chunk=chunk)
    for w, counts in zip(instances, out.counts, strict=True):
        k = len(w.paytable.pays)
        tally.wagers[w.name] = [int(c) for c in counts[:k]]
        tally.offered[w.name] = int(counts[: native.NOT_OFFERED].sum())
    return tally


def batch_wagers(specs: Sequence[tuple[str, str | None]]) -> tuple[str, ...]:
    """The wagers of ``specs`` too large to tabulate (settled by the batch path)."""
    from feltlab import sidetables

    return tuple(name for name, table in specs if sidetables.too_large(_wager(name, table)))


@dataclass(frozen=True)
class WagerEstimate:
    """A side wager's simulated return per unit (and 95% half-width), hit frequency and the
    rounds on which it was offered.  The return is NaN for a wager whose wins are paid by a
    jackpot panel (Madness 21): its prize distribution is the panel's, not the cards'."""

    name: str
    paytable: str
    rounds: int
    return_: float
    half_width: float
    hit_frequency: float


@dataclass(frozen=True)
class SimulationResult:
    """House edge of the main wager (per unit of the initial stake) with its 95% confidence
    interval, per-wager returns, rounds simulated and rounds per second (wall clock).
    ``seed_derivation`` is the :data:`feltlab.seeds.SEED_DERIVATION_VERSION` that turned
    ``seed`` into the chunks' generators and ``simulator_version`` the C simulator's
    (``feltlab.native.SIM_VERSION``) that dealt them: both say what reproduces the seed.
    ``batch_wagers``: wagers too large to tabulate, settled by the batch path.  ``trace``:
    the per-round arrays in chunk order (``net``, ``initial``) when asked for."""

    rules: Rules
    rounds: int
    seed: int
    house_edge: float
    half_width: float
    std_dev: float
    wagers: tuple[WagerEstimate, ...]
    seconds: float
    workers: int
    tally: Tally
    seed_derivation: int = SEED_DERIVATION_VERSION
    simulator_version: int = native.SIM_VERSION
    batch_wagers: tuple[str, ...] = ()
    trace: native.SimResult | None = field(default=None, compare=False, repr=False)

    @property
    def rounds_per_second(self) -> float:
        """Rounds simulated per wall-clock second."""
        return self.rounds / self.seconds if self.seconds > 0 else math.inf


@lru_cache(maxsize=64)
def _wager(name: str, paytable: str | None) -> WagerType:
    """An instance of the installed wager type ``name`` (the plugins are loaded once per
    process, not once per chunk)."""
    from feltlab.plugin_manager import collect_wagers, get_plugin_manager

    return collect_wagers(get_plugin_manager())[name](paytable=paytable)


def _estimates(tally: Tally, specs: Sequence[tuple[str, str | None]]) -> tuple[WagerEstimate, ...]:
    out = []
    for name, table in specs:
        if name not in tally.wagers:
            continue
        w = _wager(name, table)
        counts = np.array(tally.wagers[name], dtype=np.float64)
        n = tally.offered[name]
        pays = np.array([float(p) if p is not None else 0.0 for p in w.paytable.pays])
        paying = np.array([p is None or p > 0 for p in w.paytable.pays])
        if n == 0:
            continue
        if any(p is None for p in w.paytable.pays):  # a jackpot prize: the panel pays it
            mean = var = math.nan
        else:
            mean = float((counts * pays).sum() / n)
            var = float((counts * pays * pays).sum() / n - mean * mean)
        out.append(
            WagerEstimate(
                name,
                w.paytable.name,
                n,
                mean,
                1.96 * math.sqrt(max(var, 0.0) / n) if math.isfinite(var) else math.nan,
                float(counts[paying].sum() / n),
            )
        )
    return tuple(out)


def simulate(
    rules: Rules,
    rounds: int,
    *,
    seed: int = 1,
    workers: int = 1,
    scheduler: str | None = None,
    chunk_rounds: int = 2_000_000,
    wagers: Sequence[tuple[str, str | None]] = (),
    fresh_shoe: bool = False,
    progress: Callable[[int], None] | None = None,
    trace: bool = False,
) -> SimulationResult:
    """Simulate ``rounds`` rounds under ``rules`` with basic strategy.

    ``workers`` > 1 runs chunks in local processes; ``scheduler`` (a Dask scheduler address,
    or ``"local"`` for a LocalCluster of ``workers`` processes) runs them on Dask distributed
    (the ``dist`` extra).  ``wagers``: side bets to settle, as (name, paytable or None).
    ``progress`` is called with the rounds finished so far.  ``trace`` keeps every round's
    net result and initial cards (``SimulationResult.trace``).  The result depends only on
    ``rules``, ``rounds``, ``seed``, ``chunk_rounds`` and ``fresh_shoe``, never on the
    partitioning.  Raises ValueError for a non-positive count.
    """
    if rounds < 1 or chunk_rounds < 1 or workers < 1:
        raise ValueError("rounds, chunk_rounds and workers must be positive")
    sizes = [chunk_rounds] * (rounds // chunk_rounds)
    if rounds % chunk_rounds:
        sizes.append(rounds % chunk_rounds)
    args = [(rules, i, n, seed, tuple(wagers), fresh_shoe, trace) for i, n in enumerate(sizes)]
    total = Tally()
    traces: dict[int, native.SimResult] = {}
    done = 0
    t0 = time.perf_counter()

    def collect(t: Tally) -> None:
        nonlocal done
        total.add(t)
        if t.trace is not None:
            traces[t.chunk] = t.trace
        done += t.rounds
        if progress:
            progress(done)

    if scheduler:
        import importlib

        try:
            distributed: Any = importlib.import_module("dask.distributed")
        except ImportError as exc:
            raise RuntimeError(
                "--scheduler needs Dask distributed: pip install 'feltlab[dist]'"
            ) from exc
        Client, LocalCluster = distributed.Client, distributed.LocalCluster
        as_completed = distributed.as_completed

        cluster = None
        if scheduler == "local":
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        client = Client(cluster if cluster is not None else scheduler)
        try:
            futures = [client.submit(run_chunk, *a, pure=False) for a in args]
            for fut in as_completed(futures):
                collect(fut.result())
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    elif workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for t in pool.map(_run_chunk_args, args):
                collect(t)
    else:
        for a in args:
            collect(run_chunk(*a))
    seconds = time.perf_counter() - t0
    n = total.rounds
    mean = total.net / n / DEFAULT_STAKE
    var = total.net_sq / n / DEFAULT_STAKE**2 - mean * mean
    sd = math.sqrt(max(var, 0.0))
    return SimulationResult(
        rules=rules,
        rounds=n,
        seed=seed,
        house_edge=-mean,
        half_width=1.96 * sd / math.sqrt(n),
        std_dev=sd,
        wagers=_estimates(total, wagers),
        seconds=seconds,
        workers=workers,
        tally=total,
        batch_wagers=batch_wagers(wagers),
        trace=_joined(traces) if trace else None,
    )


def _joined(traces: dict[int, native.SimResult]) -> native.SimResult:
    parts = [traces[k] for k in sorted(traces)]
    return native.SimResult(
        np.concatenate([p.net for p in parts]), np.concatenate([p.initial for p in parts])
    )


def _run_chunk_args(a: tuple[Any, ...]) -> Tally:
    return run_chunk(*a)


def default_workers() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
