"""The conformance kit's evidence for a play-decided wager (``WagerType.round_fields``):
round records from the C simulator, live sessions through the round engine settled against
the classifier on each box's round record, and the exact PAR sheet against the simulator
(:mod:`feltlab.conformance` calls these where a card-decided wager uses enumeration)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.cards import card_str
from feltlab.conformance.resolution import Spec, Target, resolve
from feltlab.core_rules import simulator_rules
from feltlab.engine import Table, play_round
from feltlab.hands import hand_total
from feltlab.intervals import Z95
from feltlab.jackpot import FakeJackpotPanel
from feltlab.math import play_decided
from feltlab.math.strategy_tables import TablePolicy, strategy_tables
from feltlab.record import RECORD_FIELDS
from feltlab.shoe import make_source
from feltlab.wagers import Decided, WagerType

SESSION_ROUNDS = 400
"""Rounds of a live session (2 boxes each) for the settlement check."""


def round_declaration_problems(t: Target) -> Iterator[str]:
    """A play-decided wager names known, distinct record fields, no card roles, and
    implements ``classify_round``."""
    w = t.wager_type
    fields = tuple(w.round_fields)
    bad = [f for f in fields if f not in RECORD_FIELDS]
    if bad:
        yield f"round_fields {bad} are not fields of the round record; use {list(RECORD_FIELDS)}"
    if len(set(fields)) != len(fields):
        yield f"round_fields {fields} repeat a field"
    if w.card_roles:
        yield (
            f"declares both card_roles {tuple(w.card_roles)} and round_fields: a play-decided "
            "wager reads the round record only (drop card_roles)"
        )
    if w.classify_round is WagerType.classify_round:
        yield "implement classify_round(records) (the outcome of each round record)"
    if w.decided is not Decided.ROUND_END:
        yield f"decided = {w.decided!r}: a wager read from the round record is Decided.ROUND_END"
    if not isinstance(w.dealer_plays_out, bool):
        yield f"dealer_plays_out = {w.dealer_plays_out!r} must be a bool"


@functools.cache
def records(spec: Spec, paytable: str, n: int, seed: int) -> npt.NDArray[np.void]:
    """``n`` round records of the C simulator under the target's rules (fresh shoe each
    round, table strategy, the dealer playing out when the wager requires it)."""
    t = resolve(spec)
    w = t.instance(paytable)
    sr = replace(
        simulator_rules(t.rules, strategy_tables(t.rules), fresh_shoe=True),
        dealer_plays_out=bool(w.dealer_plays_out),
    )
    res = native.simulate_rounds(native.Xoshiro256StarStar(seed), sr, n, record=True)
    assert res.record is not None
    return res.record


def classify_problems(t: Target, paytable: str) -> list[str]:
    """``classify_round`` returns ``(n,)`` uint8 outcome indexes within the paytable."""
    w = t.instance(paytable)
    sample = records(t.spec, paytable, 20_000, 1)
    try:
        idx = np.asarray(w.classify_round(sample.copy()))
    except Exception as exc:
        return [f"classify_round() raised {exc!r} on 20,000 simulated round records"]
    n_out = len(w.paytable.outcomes)
    if idx.shape != (len(sample),) or idx.dtype != np.uint8:
        return [
            f"classify_round() returned {idx.dtype} {idx.shape} for {len(sample)} round "
            "records: return an (n,) uint8 array"
        ]
    if idx.size and int(idx.max()) >= n_out:
        return [
            f"classify_round() returned outcome {int(idx.max())}, beyond the {n_out} outcomes "
            "of the paytable"
        ]
    return []


@dataclass(frozen=True)
class Session:
    """A live session: every ``(round, box, record row, settlement)``, the mismatches with
    the classifier, and rounds where the dealer stopped short though the wager needs the
    hand played out."""

    settled: tuple[tuple[int, int, Any, Any], ...]
    mismatches: tuple[str, ...]
    short_dealer: tuple[str, ...]
    outcomes: frozenset[str]


def live_session(
    t: Target, paytable: str, *, stake: int, seed: int = 1, rounds: int = SESSION_ROUNDS
) -> Session:
    """:data:`SESSION_ROUNDS` rounds of two boxes through the round engine from a ChaCha20
    shoe keyed by ``seed``, the table strategy playing, ``stake`` cents of the wager on each
    box; each settlement compared with ``classify_round`` and the paytable on that box's
    record."""
    w = t.instance(paytable)
    rules = t.rules
    table = Table(
        rules,
        make_source(rules, native.ChaCha20(seed)),
        [t.main_type(), w],
        boxes=2,
        panel=FakeJackpotPanel(seed=seed),
    )
    policy = TablePolicy(strategy_tables(rules))
    settled, bad, short = [], [], []
    seen: set[str] = set()
    for _ in range(rounds):
        bets = [(b, f"p{b}", "main", rules.min_wager) for b in range(2)]
        bets += [(b, f"p{b}", w.name, stake) for b in range(2)]
        result = play_round(table, bets, policy)
        rec = result.record
        assert rec is not None
        total, soft = hand_total(rec.dealer.cards)
        if w.dealer_plays_out and (
            total < 17 or (total == 17 and soft and rules.dealer_hits_soft_17)
        ):
            short.append(" ".join(card_str(c, symbols=False) for c in rec.dealer.cards))
        for b in range(2):
            s = result.find(b, f"p{b}", w.name)
            row = rec.boxes[b].row()
            i = int(np.asarray(w.classify_round(row))[0])
            name = w.paytable.outcomes[i]
            pays = w.paytable.pays[i]
            net = None if pays is None else w.paytable.net(i, stake)
            seen.add(s.outcome)
            settled.append((result.round, b, row, s))
            if s.outcome != name or (net is not None and s.net != net):
                dealer = " ".join(card_str(c, symbols=False) for c in rec.dealer.cards)
                hands = "; ".join(
                    " ".join(card_str(c, symbols=False) for c in h.cards)
                    for h in rec.boxes[b].hands
                )
                bad.append(
                    f"round {result.round} box {b} (hands {hands}; dealer {dealer}): the table "
                    f"settled {s.outcome!r} net {s.net}, classify_round() on the round record "
                    f"and the paytable give {name!r}" + ("" if net is None else f" net {net}")
                )
    return Session(tuple(settled), tuple(bad), tuple(short), frozenset(seen))


def monte_carlo_check(t: Target, paytable: str, rounds: int, seed: int, z: float) -> str | None:
    """The exact return against the simulator dealing the exact analysis's model (the box
    stands on its two cards, so the dealer draws from the shoe less those and the up card),
    within ``z`` standard errors: a failure message, or None.  Raises LookupError with the
    reason when the wager has no exact sheet."""
    w = t.instance(paytable)
    reason = play_decided.exact_reason(w)
    if reason:
        raise LookupError(reason)
    exact = play_decided.exact_par_sheet(w, t.rules)
    sim = play_decided.simulated_par_sheet(w, t.rules, rounds=rounds, seed=seed, stand_only=True)
    half = (sim.half_width or 0.0) / Z95 * z
    if abs(float(sim.return_) - float(exact.return_)) <= half:
        return None
    return (
        f"{t.label}, paytable {paytable!r}, {t.decks} decks, rules {t.rules_name!r}: the exact "
        f"house edge is {100 * float(exact.house_edge):.4f}% (feltlab.math.play_decided) but "
        "the C round "
        f"simulator gives {100 * float(sim.house_edge):.4f}% +- {100 * half:.4f}% ({rounds:,} "
        f"rounds, seed {seed}, the box standing on its two cards as the exact analysis "
        "assumes): classify_round() does not decide simulated records as it decides the "
        "analysed ones (does it read only its round_fields, row by row?)"
    )


def simulated_edge(t: Target, paytable: str, rounds: int, seed: int) -> float:
    """The house edge per unit of the wager's PAR sheet (exact, else simulated)."""
    sheet = play_decided.play_par_sheet(t.instance(paytable), t.rules, rounds=rounds, seed=seed)
    return float(sheet.house_edge)


def outcome_counts(t: Target, paytable: str, rounds: int, seed: int) -> tuple[int, ...]:
    """Outcome counts of ``rounds`` simulated rounds (for the determinism check)."""
    counts = play_decided.simulate_outcomes(t.instance(paytable), t.rules, rounds, seed)
    return tuple(int(c) for c in counts)


def finite(x: float) -> bool:
    """Not NaN or infinite."""
    return math.isfinite(x)
