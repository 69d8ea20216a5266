"""PAR sheets of play-decided wagers: exact where the wager reads rank-level facts, else
simulated with a confidence interval.

A play-decided wager (``WagerType.round_fields``) classifies round records
(:data:`feltlab.record.RECORD_DTYPE`).  :func:`play_par_sheet` picks the method:

- **exact** (:func:`exact_par_sheet`) when every field it reads is in
  :data:`feltlab.record.EXACT_FIELDS` (the dealer's number of cards, total, bust, blackjack
  and up card; the box's first two cards being a blackjack) and the wager makes the dealer
  play out (``dealer_plays_out``), so the dealer's final hand does not depend on the box's
  play.  For each ordered pair of the box's first two card values and each up card value, with
  its exact probability from the shoe's composition, the C core draws the dealer's hand out
  to 17 exactly (``native/src/dealer_final.c``: the recursive draw-out over the remaining
  composition, the hole card its second card, so a peeked blackjack is its two-card 21); one
  representative record per (box pair, up card, dealer cards, dealer total) is classified,
  weighted by its probability.  **Conditioning** (``condition``): ``"box"`` (the default)
  draws the dealer's cards from the shoe less the up card and the box's first two cards;
  ``"shoe"`` from the shoe less the up card only (the model of the Wizard of Odds' Buster
  Blackjack tables; by exchangeability the two agree for a wager that does not read the
  box's cards).  Neither removes the box's further draws (hits, doubles, splits), which the
  simulator's table strategy does: a simulation in which the box stands on its two cards
  (``stand_only``) deals exactly the exact analysis's model, and one under the table
  strategy differs from it by the effect of removing the box's further draws, measured at
  :data:`FURTHER_DRAWS_ALLOWANCE`.  Float64 sums of products, relative error below 1e-12;
  the sheet's fractions are those floats, written exactly.
- **simulated** (:func:`simulated_par_sheet`) otherwise (e.g. the suits of the dealer's
  cards): whole rounds of the C simulator under the rules and the table strategy
  (:func:`feltlab.math.strategy_tables.strategy_tables`), each from a fresh shoe, the dealer
  playing out when the wager requires it; outcome frequencies, the return and its 95% half-width.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from feltlab import native
from feltlab.cards import NO_CARD
from feltlab.core_rules import STAND, StrategyTables, simulator_rules
from feltlab.errors import WagerError
from feltlab.intervals import half_width
from feltlab.math.parsheet import OutcomeLine, ParSheet
from feltlab.math.strategy_tables import strategy_tables
from feltlab.native import RECORD_DTYPE
from feltlab.record import EXACT_FIELDS, RECORD_BATCH
from feltlab.rules import Rules
from feltlab.wagers import WagerType

CONDITIONS = ("box", "shoe")
DEFAULT_ROUNDS = 2_000_000
FURTHER_DRAWS_ALLOWANCE = 0.001
"""Per unit: how far the exact return (the dealer drawing from the shoe less the up card and
the box's first two cards) may lie from the table strategy's simulated return, in which the
box's further draws are removed from the shoe too.  Measured on Buster Blackjack (``wizard``
paytable, 6 decks, 60,000,000 rounds, seed 9): exact - simulated house edge = -0.00018
(H17) and +0.00013 (S17), each +-0.00049 (95%); so the effect is below 0.0007, and 0.001
is allowed.  Tests comparing the two add it to the statistical interval."""


def exact_reason(wager: WagerType) -> str | None:
    """Why ``wager`` has no exact PAR sheet (None when it has one)."""
    if not wager.round_fields:
        return f"{wager.title} is decided by its card_roles: use feltlab.math.parsheet.par_sheet"
    other = sorted(set(wager.round_fields) - EXACT_FIELDS)
    if other:
        return (
            f"it reads {', '.join(other)}, beyond the rank-level facts the exact analysis "
            f"gives ({', '.join(sorted(EXACT_FIELDS))})"
        )
    if not wager.dealer_plays_out:
        return (
            "the dealer does not play out for it, so the dealer's final hand depends on the "
            "box's play (set dealer_plays_out for an exact sheet)"
        )
    return None


def _up_code(v: int) -> int:
    """A card code of value index ``v`` (0 ace .. 9 ten), clubs."""
    return v * 4


def _joint(rules: Rules, condition: str) -> tuple[npt.NDArray[np.void], npt.NDArray[np.float64]]:
    """Representative records and their probabilities (see the module docstring)."""
    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
    counts = [4 * rules.decks] * 9 + [16 * rules.decks]
    total = sum(counts)
    rows: list[npt.NDArray[np.void]] = []
    probs: list[npt.NDArray[np.float64]] = []
    classes = np.arange(native.DF_CLASSES)
    d_total = np.where(classes == 10, 21, 17 + classes)
    for a in range(10):
        for b in range(10):
            pab = counts[a] * (counts[b] - (a == b)) / (total * (total - 1))
            if pab <= 0:
                continue
            for u in range(10):
                left = counts[u] - (u == a) - (u == b)
                if left <= 0:
                    continue
                p = pab * left / (total - 2)
                rest = list(counts)
                rest[u] -= 1
                if condition == "box":
                    rest[a] -= 1
                    rest[b] -= 1
                dist = native.dealer_final(tuple(rest), u, rules.dealer_hits_soft_17)
                n_cards, cls = np.nonzero(dist > 0)
                m = len(n_cards)
                rec = np.zeros(m, dtype=RECORD_DTYPE)
                rec["hand_cards"] = NO_CARD
                rec["dealer_cards"] = NO_CARD
                rec["n_hands"] = 1
                rec["hand_n_cards"][:, 0] = 2
                rec["hand_cards"][:, 0, 0] = _up_code(a)
                rec["hand_cards"][:, 0, 1] = _up_code(b)
                hard = a + b + 2
                rec["hand_total"][:, 0] = hard + 10 if 0 in (a, b) and hard <= 11 else hard
                rec["hand_blackjack"][:, 0] = {a, b} == {0, 9}
                rec["dealer_n_cards"] = n_cards
                rec["dealer_total"] = d_total[cls]
                rec["dealer_bust"] = (cls >= 5) & (cls <= 9)
                rec["dealer_blackjack"] = cls == 10
                rec["dealer_up"] = _up_code(u)
                rec["dealer_cards"][:, 0] = _up_code(u)
                rows.append(rec)
                probs.append(p * dist[n_cards, cls])
    return np.concatenate(rows), np.concatenate(probs)


def _sheet(
    wager: WagerType,
    rules: Rules,
    rules_name: str,
    probs: npt.NDArray[np.float64],
    counts: list[int] | None,
    method: str,
    half_width: float | None,
    note: str,
) -> ParSheet:
    table = wager.paytable
    lines: list[OutcomeLine] = []
    ret = second = hit = Fraction(0)
    for i, (name, pays) in enumerate(zip(table.outcomes, table.pays, strict=True)):
        p = Fraction(float(probs[i]))
        if counts is not None:
            p = Fraction(counts[i], sum(counts))
        r = None if pays is None else p * pays
        if pays is not None and r is not None:
            ret += r
            second += p * pays * pays
        if pays is None or pays > 0:
            hit += p
        lines.append(OutcomeLine(name, counts[i] if counts else 0, p, pays, r))
    return ParSheet(
        wager=wager.name,
        title=wager.title,
        paytable=table.name,
        decks=rules.decks,
        card_roles=tuple(wager.round_fields),
        lines=tuple(lines),
        total_combinations=sum(counts) if counts else 0,
        return_=ret,
        house_edge=-ret,
        hit_frequency=hit,
        variance=second - ret * ret,
        note=note,
        method=method,
        half_width=half_width,
        rules=rules_name,
    )


def wager_outcomes(wager: WagerType, records: npt.NDArray[np.void]) -> npt.NDArray[np.int64]:
    """The outcome index (int64, shape ``(n,)``) of ``wager`` on each of the ``n`` round
    ``records``; WagerError when its ``classify_round`` returns another shape, dtype or range."""
    idx = np.asarray(wager.classify_round(records))
    n_out = len(wager.paytable.outcomes)
    if idx.shape != (len(records),) or not np.issubdtype(idx.dtype, np.integer):
        raise WagerError(
            f"{wager.name}.classify_round must return an (n,) array of outcome indexes for "
            f"{len(records)} round records, got {idx.dtype} {idx.shape}"
        )
    if idx.size and (int(idx.max()) >= n_out or int(idx.min()) < 0):
        raise WagerError(
            f"{wager.name}.classify_round returned outcome {int(idx.max())}; its paytable "
            f"{wager.paytable.name!r} has outcomes 0..{n_out - 1}"
        )
    return idx.astype(np.int64)


def exact_par_sheet(
    wager: WagerType, rules: Rules, *, rules_name: str = "", condition: str = "box"
) -> ParSheet:
    """The exact PAR sheet of a play-decided ``wager`` under ``rules`` (see the module
    docstring for the method and what it is conditioned on).  Raises :class:`WagerError`
    when the wager reads facts the exact analysis does not give (:func:`exact_reason`)."""
    reason = exact_reason(wager)
    if reason:
        raise WagerError(f"{wager.title} has no exact PAR sheet: {reason}")
    records, p = _joint(rules, condition)
    idx = wager_outcomes(wager, records)
    probs = np.bincount(idx, weights=p, minlength=len(wager.paytable.outcomes)).astype(np.float64)
    given = (
        "the shoe less the up card and the box's first two cards"
        if condition == "box"
        else "the shoe less the up card only"
    )
    note = (
        f"exact: the dealer's hand drawn out to 17 from {given} (the dealer plays out); "
        "the box's further draws are not removed; float64, relative error < 1e-12"
    )
    return _sheet(wager, rules, rules_name, probs, None, "exact", None, note)


def simulate_outcomes(
    wager: WagerType, rules: Rules, rounds: int, seed: int, *, stand_only: bool = False
) -> npt.NDArray[np.int64]:
    """Outcome counts of ``wager`` over ``rounds`` rounds of the C simulator (fresh shoe
    each round, table strategy, the dealer playing out when the wager requires it).
    ``stand_only``: the box stands on its first two cards (never splits, doubles or
    surrenders), the model of :func:`exact_par_sheet`."""

    if rounds < 1:
        raise ValueError(f"rounds must be positive, got {rounds}")
    tables = strategy_tables(rules)
    if stand_only:
        stand = np.full((32, 11), STAND, dtype=np.uint8)
        tables = StrategyTables(stand, stand.copy(), np.zeros((13, 11), dtype=np.uint8))
    sr = simulator_rules(rules, tables, fresh_shoe=True)
    sr = replace(sr, dealer_plays_out=wager.dealer_plays_out)
    rng = native.Xoshiro256StarStar(seed)
    counts = np.zeros(len(wager.paytable.outcomes), dtype=np.int64)
    left = rounds
    while left:
        n = min(left, RECORD_BATCH)
        res = native.simulate_rounds(rng, sr, n, record=True)
        assert res.record is not None
        counts += np.bincount(wager_outcomes(wager, res.record), minlength=len(counts))
        left -= n
    return counts


def simulated_par_sheet(
    wager: WagerType,
    rules: Rules,
    *,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 1,
    rules_name: str = "",
    why: str = "",
    stand_only: bool = False,
) -> ParSheet:
    """The simulated PAR sheet of a play-decided ``wager``: outcome frequencies over
    ``rounds`` rounds (seed ``seed``), with the return's 95% half-width in ``method`` and
    ``half_width``.  ``why``: the reason no exact sheet applies, for the note;
    ``stand_only``: see :func:`simulate_outcomes`."""
    counts = simulate_outcomes(wager, rules, rounds, seed, stand_only=stand_only)
    pays = np.array([0.0 if p is None else float(p) for p in wager.paytable.pays])
    freq = counts / rounds
    mean = float((freq * pays).sum())
    var = float((freq * pays * pays).sum()) - mean * mean
    half = half_width(var, rounds)
    method = f"simulated: {rounds:,} rounds, +-{100 * half:.4f}%"
    note = (
        "simulated: the C round simulator, a fresh shoe each round, "
        + ("the box standing on its two cards" if stand_only else "table strategy")
        + f", seed "
        f"{seed}; 95% interval of the return +-{half:.6f}" + (f"; not exact: {why}" if why else "")
    )
    return _sheet(wager, rules, rules_name, freq, [int(c) for c in counts], method, half, note)


def play_par_sheet(
    wager: WagerType,
    rules: Rules,
    *,
    rules_name: str = "",
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 1,
) -> ParSheet:
    """The PAR sheet of a play-decided ``wager``: exact when :func:`exact_reason` finds
    none against it, else simulated."""
    reason = exact_reason(wager)
    if reason is None:
        return exact_par_sheet(wager, rules, rules_name=rules_name)
    return simulated_par_sheet(
        wager, rules, rounds=rounds, seed=seed, rules_name=rules_name, why=reason
    )
