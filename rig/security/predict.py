"""Predictability of a seeded shuffler (``feltlab certify predict``, issue 40 item 1,
docs/security.md): the declared seed space searched in the C core
(:func:`feltlab.native.seedsearch.search`, ``native/src/seedsearch.c``) on every core, from
the fewest cards of one shoe that identify a seed, and the rest of the shoe predicted.

The cards used are the first ``k`` in the order the declared shuffle settles them (``settled``:
the last card of the shoe first for a ``down`` Fisher-Yates, the first dealt for ``up``) or
the first ``k`` dealt (``dealt``: what a player at the table sees), with ``k`` the fewest
whose information (:func:`feltlab.rig.security.shuffler.information_bits`) exceeds the seed
space's bits by :data:`MARGIN_BITS`, so that a wrong seed matches them with a chance below
2^-8 over the whole space.  Each candidate is dropped at its first mismatching card; each
that matches the ``k`` cards is checked on the whole shoe.

A space whose search would take longer than the feasibility bound (``max_seconds``) at the
rate measured on this host, or wider than 64 bits, is not searched: the record gives its
size and the time a full search would take.  Speed is measured in
``benchmarks/bench_seedsearch.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab.host import usable_cores
from feltlab.native.core import NO_CARD
from feltlab.native.seedsearch import search, shuffle
from feltlab.rig.errors import DeclarationError
from feltlab.rig.security.shuffler import (
    Declaration,
    declaration_from_table,
    human_seconds,
    information_bits,
    settle_order,
)

MARGIN_BITS = 8
"""Bits the identifying cards carry beyond the seed space's: a wrong seed matches them with
a chance below 2^-8 over the whole space (every match is checked on the whole shoe)."""

MAX_SEED = (1 << 64) - 1
"""The C search's widest seed: a wider space is never searched."""

DEFAULT_MAX_SECONDS = 3600.0
"""The default feasibility bound: a search that would take longer on this host is reported
infeasible, not run."""

CALIBRATION_SECONDS = 0.3
"""Work (wall time) after which the rate is measured and the feasibility decided."""

CARD_ORDERS = ("settled", "dealt")

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
EXIT_CODES = {PASS: 0, FAIL: 1, INCONCLUSIVE: 3}

CWE_337 = "CWE-337: Predictable Seed in Pseudo-Random Number Generator (PRNG)"
CWE_338 = "CWE-338: Use of Cryptographically Weak Pseudo-Random Number Generator (PRNG)"
CWE_339 = "CWE-339: Small Space of Random Values"
CWES = (CWE_337, CWE_338, CWE_339)
"""The weaknesses the predictability check looks for (MITRE's CWE)."""

_GUESSABLE_SOURCES = ("timer-ms", "timer-us", "clock", "counter")


def weaknesses(record: dict[str, Any]) -> list[str]:
    """The CWEs a predictability ``record`` (:func:`predictability`) shows: on a FAIL the
    small seed space (CWE-339), a guessable source (a timer, clock or counter: CWE-337) and a
    generator other than ChaCha20 (CWE-338); otherwise the three it looked for."""
    if record.get("verdict") != FAIL:
        return list(CWES)
    decl = record["declaration"]
    out = [CWE_339]
    if decl["seed_source"] in _GUESSABLE_SOURCES:
        out.insert(0, CWE_337)
    if decl["generator"] != "chacha20":
        out.insert(-1, CWE_338)
    return out


def evidence(record: dict[str, Any]) -> list[str]:
    """The evidence lines of a predictability ``record``: the one-line verdict, what was
    declared, the space, the identifying cards and the search (rate, time a full search
    takes), and what was recovered."""
    d, sp, cards, se = (record[k] for k in ("declaration", "space", "cards", "search"))
    full = human_seconds(se["full_search_seconds"])
    idle = human_seconds(se["full_search_idle_seconds"])
    lines = [
        record["summary"],
        f"declared: {d['generator']} seeded from {d['seed_bits']} bits of {d['seed_source']}, "
        f"Fisher-Yates {d['direction']}, {d['scaling']} scaling, {d['decks']} decks",
        f"space: {sp['seeds']:,} seeds ({sp['bits']} bits; {sp['meaning']})",
        f"identifying cards: {cards['count']} ({cards['order']}, {cards['bits']} bits)",
        f"search: {se['searched']:,} seeds in {se['seconds']} s on {se['workers']} threads "
        f"({se['rate_per_second']:,.0f} seeds/s; a full search {full}, on idle cores {idle}), "
        f"stopped {se['stopped']}",
    ]
    rec = record.get("recovered")
    if rec is not None:
        lines.append(
            f"recovered: seed {rec['seed']} from {rec['from_cards']} cards; "
            f"{rec['predicted_correct']} of the other {rec['predicted_cards']} cards predicted "
            "right"
        )
    return lines


@dataclass(frozen=True)
class CardPlan:
    """The cards a search compares: ``positions`` (dealt positions, in the order compared),
    ``bits`` (their information), ``observed`` (``(n,)`` uint8: their codes,
    :data:`~feltlab.native.core.NO_CARD` elsewhere), ``order`` (``settled``/``dealt``)."""

    positions: list[int]
    bits: float
    observed: npt.NDArray[np.uint8]
    order: str


def plan_cards(decl: Declaration, codes: npt.NDArray[np.uint8], order: str) -> CardPlan:
    """The fewest cards of ``codes`` (one shoe, dealt order) in ``order`` whose information
    exceeds the seed space's bits by :data:`MARGIN_BITS` (all cards if none do)."""
    if order not in CARD_ORDERS:
        raise DeclarationError(
            f"unknown card order {order!r}; choose one of {', '.join(CARD_ORDERS)}"
        )
    n = decl.cards
    sequence = settle_order(decl.direction, n) if order == "settled" else list(range(n))
    need = math.log2(decl.space) + MARGIN_BITS
    k = 1
    while k < n and information_bits(codes, sequence[:k], decl.decks) < need:
        k += 1
    positions = sequence[:k]
    observed = np.full(n, NO_CARD, np.uint8)
    observed[positions] = codes[positions]
    return CardPlan(positions, information_bits(codes, positions, decl.decks), observed, order)


@dataclass
class SearchRun:
    """What a search did: ``searched`` seeds, ``steps`` (shuffle steps replayed), wall
    ``seconds`` and the workers' CPU seconds (``cpu_seconds``), ``candidates`` (seeds
    matching the identifying cards), ``seed`` (the one dealing the whole shoe, or None),
    ``stopped`` (``found``, ``exhausted``, ``infeasible``)."""

    searched: int = 0
    steps: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    candidates: list[int] = field(default_factory=list)
    seed: int | None = None
    stopped: str = "exhausted"

    @property
    def rate(self) -> float:
        """Seeds a second of wall time, all workers together (what this host gave)."""
        return self.searched / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_rate(self) -> float:
        """Seeds a CPU second of one core (the search's own speed, whatever the load)."""
        return self.searched / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def _chunks(lo: int, hi: int, size: Callable[[], int]) -> Any:
    at = lo
    while at <= hi:
        end = min(hi + 1, at + size())
        yield at, end
        at = end


def run_search(
    decl: Declaration,
    plan: CardPlan,
    codes: npt.NDArray[np.uint8],
    *,
    workers: int,
    max_seconds: float,
    bounds: tuple[int, int] | None = None,
    progress: Callable[[int], None] | None = None,
    verify: bool = True,
) -> SearchRun:
    """Search ``bounds`` (default the declared seeds, at most 64 bits) in chunks on
    ``workers`` threads, each chunk one C call (the GIL released), in ascending order.  After
    :data:`CALIBRATION_SECONDS` the rate decides: a full search longer than ``max_seconds``
    stops, ``infeasible``.  Stops at the first seed whose shuffle deals all of ``codes``
    (with ``verify``; without, a timing run: candidates neither kept nor checked)."""
    lo, hi = bounds or decl.bounds
    run = SearchRun()
    per_chunk = [1 << 12]  # grown to about 0.1 s of one worker's work
    gen, scaling, direction = decl.generator, decl.scaling, decl.direction

    def work(a: int, b: int) -> tuple[int, list[int], int, float, float]:
        t0, c0 = time.perf_counter(), time.thread_time()
        found, _, steps = search(gen, scaling, direction, plan.observed, a, b, max_found=64)
        return b - a, found, steps, time.thread_time() - c0, time.perf_counter() - t0

    start = time.perf_counter()
    chunks = _chunks(lo, hi, lambda: per_chunk[0])
    pending: set[Future[tuple[int, list[int], int, float, float]]] = set()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while True:
            while run.stopped == "exhausted" and len(pending) < 2 * workers:
                nxt = next(chunks, None)
                if nxt is None:
                    break
                pending.add(pool.submit(work, *nxt))
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                count, found, steps, cpu, secs = f.result()
                run.searched += count
                run.steps += steps
                run.cpu_seconds += cpu
                per_chunk[0] = int(min(1 << 26, max(1 << 12, count * 0.1 / max(secs, 1e-6))))
                for s in found if verify else ():
                    run.candidates.append(s)
                    if run.seed is None and _deals(decl, s, codes):
                        run.seed, run.stopped = s, "found"
                if progress is not None:
                    progress(count)
            run.seconds = time.perf_counter() - start
            if run.stopped == "exhausted" and run.seconds >= CALIBRATION_SECONDS:
                left = (hi - lo + 1) - run.searched
                if left / max(run.rate, 1e-9) > max_seconds:
                    run.stopped = "infeasible"
        run.seconds = time.perf_counter() - start
    return run


def _deals(decl: Declaration, seed: int, codes: npt.NDArray[np.uint8]) -> bool:
    """Whether ``seed``'s shuffle deals the whole shoe ``codes``."""
    shoe = shuffle(decl.generator, decl.scaling, decl.direction, seed, decl.cards)
    return bool(np.array_equal(shoe % 52, codes))


def measure_rate(
    decl: Declaration, plan: CardPlan, codes: npt.NDArray[np.uint8], workers: int
) -> SearchRun:
    """The search's rate on this host over the first seeds (0..) for
    :data:`CALIBRATION_SECONDS`: a space too wide to search is timed, never searched."""
    return run_search(
        decl, plan, codes, workers=workers, max_seconds=0.0, bounds=(0, MAX_SEED), verify=False
    )


def predictability(
    decl: Declaration,
    codes: npt.NDArray[np.uint8],
    *,
    order: str = "settled",
    workers: int | None = None,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The predictability record of one shoe ``codes`` (``(52 decks,)`` card codes, dealt
    order) against the declaration ``decl`` (module docstring): ``declaration``, ``space``
    (the seeds, their bits, the generator's ``effective_seed_bits``, what they are in the
    source's units), ``cards`` (the identifying cards), ``search`` (seeds searched, wall and
    CPU seconds, the rate a wall second on this host and a CPU second of one core, steps a
    candidate, the time a full search takes at the wall rate, ``full_search_seconds``, and on
    idle cores at the CPU rate, ``full_search_idle_seconds``), ``recovered`` (the seed and the
    prediction of the rest, or None), ``verdict`` (PASS, FAIL, INCONCLUSIVE), ``summary``
    (the one-line verdict) and ``exit_code``.  Raises DeclarationError for a shoe of another
    size than the declaration's, ValueError for a ``max_seconds`` that is not a finite number
    0 or more (a NaN bound never stopped the search)."""
    if not (math.isfinite(max_seconds) and max_seconds >= 0):
        raise ValueError(
            f"the feasibility bound {max_seconds} s is not a finite number of seconds; give "
            "--max-search SECONDS"
        )
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    if codes.shape != (decl.cards,):
        raise DeclarationError(
            f"the shoe has {codes.size} cards but the declaration {decl.decks} decks "
            f"({decl.cards}); declare --decks {codes.size // 52}"
        )
    workers = workers or usable_cores()
    plan = plan_cards(decl, codes, order)
    if decl.bounds[1] > MAX_SEED:
        run = measure_rate(decl, plan, codes, workers)
        run.stopped = "infeasible"
    else:
        run = run_search(
            decl, plan, codes, workers=workers, max_seconds=max_seconds, progress=progress
        )
    return _record(decl, plan, codes, run, workers, max_seconds)


def campaign_predictability(
    table: dict[str, Any], codes: npt.NDArray[np.uint8], *, where: str
) -> dict[str, Any]:
    """The predictability check of a shuffler campaign (``feltlab certify shuffler``, its
    device's or a file's shoes): the ``[predictability]`` ``table`` of the profile named
    ``where`` (``decks`` defaulting to the shoe's) against the first shoe ``codes``
    (``(n,)`` card codes in dealt order, the cards of the declared factory order): the
    :func:`predictability` record with ``shoe`` (1), ``cwe`` (:func:`weaknesses`) and
    ``evidence`` (:func:`evidence`).  Raises DeclarationError for a bad declaration."""
    table = {"decks": int(codes.size) // 52, **table}
    decl = declaration_from_table(table, where=where)
    rec = predictability(decl, np.ascontiguousarray(codes, dtype=np.uint8))
    rec["shoe"] = 1
    rec["cwe"] = weaknesses(rec)
    rec["evidence"] = evidence(rec)
    return rec


def _record(
    decl: Declaration,
    plan: CardPlan,
    codes: npt.NDArray[np.uint8],
    run: SearchRun,
    workers: int,
    max_seconds: float,
) -> dict[str, Any]:
    full = decl.space / run.rate if run.rate > 0 else math.inf
    idle = decl.space / (run.cpu_rate * workers) if run.cpu_rate > 0 else math.inf
    record: dict[str, Any] = {
        "check": "predictability",
        "declaration": decl.describe(),
        "space": {
            "seeds": decl.space,
            "bits": round(math.log2(decl.space), 3),
            "effective_seed_bits": decl.effective_bits,
            "meaning": decl.meaning(),
        },
        "cards": {
            "order": plan.order,
            "count": len(plan.positions),
            "positions": plan.positions,
            "bits": round(plan.bits, 2),
        },
        "search": {
            "searched": run.searched,
            "seconds": round(run.seconds, 4),
            "workers": workers,
            "rate_per_second": round(run.rate, 1),
            "cpu_seconds": round(run.cpu_seconds, 4),
            "rate_per_cpu_second": round(run.cpu_rate, 1),
            "full_search_idle_seconds": idle,
            "steps_per_candidate": round(run.steps / run.searched, 3) if run.searched else None,
            "full_search_seconds": full,
            "feasibility_bound_seconds": max_seconds,
            "stopped": run.stopped,
            "false_candidates": len([s for s in run.candidates if s != run.seed]),
        },
        "recovered": None,
    }
    if run.seed is not None:
        shoe = shuffle(decl.generator, decl.scaling, decl.direction, run.seed, decl.cards) % 52
        rest = [p for p in range(decl.cards) if p not in set(plan.positions)]
        right = int((shoe[rest] == codes[rest]).sum())
        record["recovered"] = {
            "seed": run.seed,
            "from_cards": len(plan.positions),
            "predicted_cards": len(rest),
            "predicted_correct": right,
            "shoe": [int(c) for c in shoe],
        }
        verdict = FAIL
        summary = (
            f"FAIL: predictable: seed {run.seed} recovered from {len(plan.positions)} cards "
            f"({plan.bits:.1f} bits) in {run.seconds:.3g} s; the other {len(rest)} cards "
            f"predicted, {right} right"
        )
    elif run.stopped == "infeasible":
        verdict = PASS
        summary = (
            f"PASS: infeasible at {human_seconds(full)}: {decl.space:.4g} seeds "
            f"({math.log2(decl.space):.1f} bits) at {run.rate:,.0f} seeds/s on "
            f"{workers} cores (bound {human_seconds(max_seconds)})"
        )
    else:
        verdict = INCONCLUSIVE
        summary = (
            f"INCONCLUSIVE: no seed of the declared {decl.space:,} deals this shoe (all "
            f"searched in {run.seconds:.3g} s): the declared generator, shuffle or seeding "
            "is not this shuffler's"
        )
    record.update(verdict=verdict, summary=summary, exit_code=EXIT_CODES[verdict])
    return record


__all__ = [
    "CALIBRATION_SECONDS",
    "CARD_ORDERS",
    "CWES",
    "CWE_337",
    "CWE_338",
    "CWE_339",
    "DEFAULT_MAX_SECONDS",
    "MARGIN_BITS",
    "CardPlan",
    "SearchRun",
    "campaign_predictability",
    "evidence",
    "measure_rate",
    "plan_cards",
    "predictability",
    "run_search",
    "weaknesses",
]
