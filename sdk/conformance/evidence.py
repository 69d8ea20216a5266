"""The evidence the conformance kit (:mod:`feltlab.conformance`) weighs about a resolved
wager (:mod:`feltlab.conformance.resolution`): hook and declaration problems, exact
enumeration samples, live rounds through the round engine and Monte Carlo runs of the C
simulator."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from feltlab import hookspecs
from feltlab.cards import NO_CARD, card_str, card_value
from feltlab.conformance.resolution import NO_INPUTS, Spec, Target, fail, resolve
from feltlab.errors import nearest_name
from feltlab.hookspecs import PROJECT

CANDIDATES_PER_OUTCOME = 12
"""Deals tried per outcome when looking for one that a live round reproduces."""


# ===================================================================== hooks, declaration


def hook_problems(t: Target) -> Iterator[str]:
    """Every ``feltlab_*`` function of the plugins providing the wager is marked, and every
    marked one names a hook of :mod:`feltlab.hookspecs` (pluggy reports an unknown hook only at
    ``check_pending()``, and silently ignores an unmarked function)."""
    spec_names = sorted(n for n in dir(hookspecs) if n.startswith("feltlab_"))
    for plugin in t.providers:
        where = getattr(plugin, "__name__", type(plugin).__name__)
        for name, fn in inspect.getmembers(plugin, callable):
            marked = getattr(fn, f"{PROJECT}_impl", None) is not None
            if marked and name not in spec_names:
                near = nearest_name(name, spec_names)
                hint = f" (did you mean {near!r}?)" if near else ""
                yield (
                    f"{name}() in {where!r} is marked @hookimpl but is not a feltlab hook"
                    f"{hint}: name it after a hook of feltlab.hookspecs"
                )
            elif name.startswith("feltlab_") and not marked:
                yield (
                    f"{name}() in {where!r} is not marked @feltlab.hookimpl, so pluggy never "
                    "calls it: decorate it"
                )


def declaration_problems(t: Target) -> Iterator[str]:
    from feltlab.math.parsheet import MAX_ROLES  # pytest11
    from feltlab.wagers import CARD_ROLES, Decided, Paytable, Placed, WagerType  # pytest11

    w = t.wager_type
    if not isinstance(w.name, str) or not w.name.isidentifier():
        yield f"name {w.name!r} must be a Python identifier (it is a CLI argument and a key)"
    if not isinstance(getattr(w, "title", None), str) or not w.title:
        yield "set a non-empty `title` (shown on the table and in PAR sheets)"
    if not isinstance(w.placed, Placed):
        yield f"placed = {w.placed!r} must be a feltlab.Placed member"
    if not isinstance(w.decided, Decided):
        yield f"decided = {w.decided!r} must be a feltlab.Decided member"
    roles = tuple(w.card_roles)
    bad = [r for r in roles if r not in CARD_ROLES]
    if w.round_fields:
        from feltlab.conformance.rounds import round_declaration_problems  # pytest11

        yield from round_declaration_problems(t)
    elif not roles:
        yield NO_INPUTS
    if bad:
        yield f"card_roles {bad} are not card roles; use {sorted(CARD_ROLES)}"
    if roles and (len(roles) > MAX_ROLES or len(set(roles)) != len(roles)):
        yield (
            f"card_roles {roles}: a card-decided wager names 1 to {MAX_ROLES} distinct roles "
            "(its classify() columns)"
        )
    if not w.round_fields and w.classify is WagerType.classify:
        yield "implement classify(cards) (the vectorised outcome classifier)"
    if not w.paytables:
        yield "declare at least one paytable"
    for key, table in dict(w.paytables).items():
        if not isinstance(table, Paytable):
            yield f"paytables[{key!r}] is not a feltlab.Paytable"
        elif table.name != key:
            yield f"paytables[{key!r}] is named {table.name!r}: use the same name"


MAX_PAY_DENOMINATOR = 10_000
"""A paytable's pays are ratios of small whole numbers (3 to 2, 6 to 5, 1000 to 1); a larger
denominator is a float's binary fraction (``Fraction(1.2)``), refused."""


def paytable_problems(t: Target, paytable: str) -> list[str]:
    from feltlab.math.parsheet import code_tuples  # pytest11

    w = t.instance(paytable)
    table = w.paytable
    out = []
    if len(set(table.outcomes)) != len(table.outcomes):
        out.append(f"outcome names repeat: {table.outcomes}")
    for i, (name, pays) in enumerate(zip(table.outcomes, table.pays, strict=True)):
        if pays is None:
            if not t.wager_type.decided_by_panel:
                out.append(
                    f"outcome {name!r} pays None (a jackpot prize) but the wager is not "
                    "decided_by_panel"
                )
            continue
        if isinstance(pays, bool) or not isinstance(pays, int | Fraction):
            out.append(
                f"outcome {name!r} pays {pays!r} ({type(pays).__name__}): use an int or "
                "fractions.Fraction (e.g. Fraction(3, 2) for 3 to 2), never a float"
            )
            continue
        if isinstance(pays, Fraction) and pays.denominator > MAX_PAY_DENOMINATOR:
            out.append(
                f"outcome {name!r} pays {pays} (about {float(pays):.6g}): a Fraction made from "
                f"a float (its denominator {pays.denominator} is a binary one); give the exact "
                f"pay, e.g. Fraction({pays.limit_denominator(1000).numerator}, "
                f"{pays.limit_denominator(1000).denominator})"
            )
            continue
        if i == 0 and pays != -1:
            out.append(f"outcome 0 ({name!r}) is the losing outcome and must pay -1, not {pays}")
        elif i > 0 and pays < 0 and pays != -1:
            out.append(f"outcome {name!r} pays {pays}: a pay is -1 (lose) or >= 0")
    if not any(p is None or p > 0 for p in table.pays):
        out.append("no outcome pays anything")
    if not out and w.round_fields:
        from feltlab.conformance.rounds import classify_problems  # pytest11

        out += classify_problems(t, paytable)
    elif not out and not w.card_roles:
        out.append(NO_INPUTS)
    elif not out:
        k = len(w.card_roles)
        sample = code_tuples(min(k, 2)) if k <= 2 else sample_rows(t, paytable, 20_000)
        idx = np.asarray(w.classify(np.ascontiguousarray(sample)))
        if idx.shape != (len(sample),) or idx.dtype != np.uint8:
            out.append(
                f"classify() returned {idx.dtype} {idx.shape} for {len(sample)} deals: return "
                "an (n,) uint8 array"
            )
        elif idx.size and int(idx.max()) >= len(table.outcomes):
            out.append(
                f"classify() returned outcome {int(idx.max())}, beyond the {len(table.outcomes)} "
                "outcomes of the paytable"
            )
    return out


# ===================================================================== enumeration


@functools.cache
def _enumerated(spec: Spec, paytable: str) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """Every dealable tuple of card codes (offered rows only) and its outcome, at the
    target's deck count."""
    from feltlab.math.parsheet import code_tuples, multiplicities, offered_mask  # pytest11

    t = resolve(spec)
    w = t.instance(paytable)
    if not 1 <= len(w.card_roles) <= 4:
        fail(f"{t.label}: {NO_INPUTS}" if not w.card_roles else f"{t.label}: too many card_roles")
    tuples = code_tuples(len(w.card_roles))
    ok = (multiplicities(tuples, t.decks) > 0) & offered_mask(w, tuples)
    tuples = np.ascontiguousarray(tuples[ok])
    return tuples, np.asarray(w.classify(tuples.copy())).astype(np.uint8)


def candidates(t: Target, paytable: str) -> dict[int, npt.NDArray[np.uint8]]:
    """Up to :data:`CANDIDATES_PER_OUTCOME` deals per reachable outcome, spread out."""
    tuples, outcomes = _enumerated(t.spec, paytable)
    rng = np.random.default_rng(12345)
    out: dict[int, npt.NDArray[np.uint8]] = {}
    for i in np.unique(outcomes):
        where = np.flatnonzero(outcomes == i)
        pick = rng.choice(where, size=min(CANDIDATES_PER_OUTCOME, len(where)), replace=False)
        out[int(i)] = tuples[pick]
    return out


def sample_rows(t: Target, paytable: str, n: int) -> npt.NDArray[np.uint8]:
    tuples, _ = _enumerated(t.spec, paytable)
    rng = np.random.default_rng(54321)
    pick = rng.choice(len(tuples), size=min(n, len(tuples)), replace=False)
    return np.ascontiguousarray(tuples[np.sort(pick)])


# ===================================================================== live rounds

FILLER = tuple(rank * 4 + suit for rank in (1, 2, 3, 4, 5) for suit in range(4)) * 3
"""Cards after the planned ones: 2s to 6s, so every hand and the dealer can finish."""
DEFAULTS = {"P1": 4 * 1 + 0, "P2": 4 * 2 + 1, "D1": 4 * 4 + 2, "D2": 4 * 8 + 3, "P3": 4 * 3}
"""Cards for the roles a wager does not read: 2♣ 3♦ to the box, 5♥ 9♠ to the dealer, 4♣."""


@dataclass(frozen=True)
class Live:
    """One live round: the planned role cards, what the engine dealt to those roles, its
    settlement, and the outcome the classifier gives for the dealt cards."""

    planned: tuple[int, ...]
    dealt: tuple[int, ...]
    settlement: Any
    expected_outcome: int
    stake: int

    @property
    def planned_dealt(self) -> bool:
        """The engine dealt the planned cards to every role."""
        return self.planned == self.dealt


class _Policy:
    """Hit once (when the wager reads ``P3``), then stand; insure with the wager's stake."""

    def __init__(self, hit: bool, insure: int) -> None:
        self.hit = hit
        self.insure = insure

    def decide(self, view: Any) -> Any:
        from feltlab.engine import Decision  # pytest11

        if self.hit and Decision.HIT in view.legal:
            self.hit = False
            return Decision.HIT
        return Decision.STAND

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        return self.insure


def _natural(a: int, b: int) -> bool:
    v = sorted(card_value(c) for c in (a, b))
    return v == [1, 10]


def live_round(t: Target, w: Any, row: Sequence[int], *, stake: int) -> Live:
    """Deal ``row`` (codes in ``w.card_roles`` order) in a one-box round through the engine
    and settle ``stake`` cents of the wager."""
    from feltlab.engine import Table, play_round  # pytest11
    from feltlab.jackpot import FakeJackpotPanel  # pytest11
    from feltlab.shoe import FixedCards  # pytest11
    from feltlab.wagers import Placed  # pytest11

    roles = tuple(w.card_roles)
    card = dict(DEFAULTS)
    card.update({r: int(c) for r, c in zip(roles, row, strict=True)})
    rules = t.rules
    peek = not rules.no_hole_card
    seq = [card["P1"], card["D1"], card["P2"]] + ([card["D2"]] if peek else [])
    hit = "P3" in roles
    dealer_natural = peek and _natural(card["D1"], card["D2"])
    if hit and not _natural(card["P1"], card["P2"]) and not dealer_natural:
        seq.append(card["P3"])
    if not peek:
        seq.append(card["D2"])
    seq.extend(FILLER)
    insurance = w.placed is Placed.INSURANCE
    table = Table(
        rules,
        FixedCards(seq),
        [t.main_type(), w],
        boxes=1,
        panel=FakeJackpotPanel(seed=1),
    )
    bets = [(0, "p", "main", rules.min_wager)]
    if not insurance:
        bets.append((0, "p", w.name, stake))
    result = play_round(table, bets, _Policy(hit, stake if insurance else 0))
    view = table.view(0, final=True)
    dealt = tuple(view.role(r) for r in roles)
    try:
        s = result.find(0, "p", w.name)
    except KeyError:
        fail(
            f"{t.label}: the wager placed on box 0 was never settled in a round dealt "
            f"{_cards_text(roles, dealt)}"
        )
    expected = int(np.asarray(w.classify(np.array([dealt], dtype=np.uint8)))[0])
    return Live(tuple(int(c) for c in row), dealt, s, expected, stake)


def check_live(t: Target, w: Any, live: Live) -> None:
    table = w.paytable
    want_name = table.outcomes[live.expected_outcome]
    pays = table.pays[live.expected_outcome]
    s = live.settlement
    want_net = None if pays is None else table.net(live.expected_outcome, live.stake)
    if s.outcome != want_name or (want_net is not None and s.net != want_net):
        roles = tuple(w.card_roles)
        want = f"{want_name!r}" + ("" if want_net is None else f" net {want_net} cents")
        fail(
            f"{t.label}, paytable {table.name!r}: in a live round dealt "
            f"{_cards_text(roles, live.dealt)} with {live.stake} cents staked, the table settled "
            f"{s.outcome!r} net {s.net} cents, but classify() and the paytable give {want}: "
            "settle() must agree with classify() (drop the settle() override, or decide "
            "through self.classify and self.paytable.net)"
        )


def _cards_text(roles: Sequence[str], codes: Sequence[int]) -> str:
    return " ".join(
        f"{r}={'none' if c == NO_CARD else card_str(int(c), symbols=False)}"
        for r, c in zip(roles, codes, strict=True)
    )


def session_log(t: Target, w: Any, seed: int) -> str:
    """The event log of 30 rounds from a ChaCha20 shoe keyed by ``seed``, the wager on every
    round, played by the simulator's strategy tables."""
    from feltlab import native  # pytest11
    from feltlab.engine import Table, play_round  # pytest11
    from feltlab.jackpot import FakeJackpotPanel  # pytest11
    from feltlab.math.strategy_tables import TablePolicy, strategy_tables  # pytest11
    from feltlab.shoe import make_source  # pytest11
    from feltlab.wagers import Placed  # pytest11

    rules = t.rules
    table = Table(
        rules,
        make_source(rules, native.ChaCha20(seed)),
        [t.main_type(), type(w)(paytable=w.paytable.name)],
        boxes=2,
        panel=FakeJackpotPanel(seed=seed),
    )
    policy = TablePolicy(strategy_tables(rules))
    for _ in range(30):
        bets = [(b, f"p{b}", "main", rules.min_wager) for b in range(2)]
        if w.placed is not Placed.INSURANCE:
            bets += [(b, f"p{b}", w.name, w.limits.minimum) for b in range(2)]
        play_round(table, bets, policy)
    return table.log.to_jsonl()


# ===================================================================== Monte Carlo


@dataclass(frozen=True)
class MonteCarlo:
    """Outcome counts over the rounds the wager was offered, its mean return and variance."""

    counts: tuple[int, ...]
    offered: int
    mean: float
    variance: float


def monte_carlo(t: Target, paytable: str, rounds: int, seed: int) -> MonteCarlo:
    """``rounds`` rounds of the C round simulator, each from a freshly shuffled shoe (so the
    exact enumeration applies), the wager settled by its classifier on the dealt cards."""
    from feltlab import native  # pytest11
    from feltlab.core_rules import simulator_rules  # pytest11
    from feltlab.math.strategy_tables import strategy_tables  # pytest11
    from feltlab.simulation.chunk import classify_side_bets  # pytest11

    w = t.instance(paytable)
    rng = native.Xoshiro256StarStar(seed)
    res = native.simulate_rounds(
        rng, simulator_rules(t.rules, strategy_tables(t.rules), fresh_shoe=True), rounds
    )
    counts, offered = classify_side_bets(res.initial, [w])[w.name]
    pays = np.array([0.0 if p is None else float(p) for p in w.paytable.pays])
    c = counts.astype(np.float64)
    mean = float((c * pays).sum() / offered) if offered else math.nan
    var = float((c * pays * pays).sum() / offered - mean * mean) if offered else math.nan
    return MonteCarlo(tuple(int(x) for x in counts), offered, mean, var)
