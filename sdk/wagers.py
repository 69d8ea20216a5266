"""The wager-type interface: what a side-bet vendor implements.

A wager type (a subclass of :class:`WagerType`) declares

- its ``name`` (unique among loaded plugins), ``title`` and the ``rule`` it implements;
- when it is ``placed`` (:class:`Placed`) and ``decided`` (:class:`Decided`);
- its :class:`Limits` (integer cents) and the deck range it is allowed with;
- its paytables (:class:`Paytable`: outcome index -> net result per unit staked);
- an outcome classifier over numpy batches of dealt cards, :meth:`WagerType.classify`, which
  reads the columns named by ``card_roles`` (see :data:`CARD_ROLES`);
- how it settles in a live round, :meth:`WagerType.settle`, which by default runs the same
  classifier on the round's cards, so the math (exact enumeration, Monte Carlo) and the table
  settle every hand identically.

The vectorised contract, for the math engine::

    cards: (n, k) uint8, C-contiguous; column j holds the card of role wager.card_roles[j]
           (codes 0..51, docs/design.md), NO_CARD (255) where a role was never dealt
    wager.classify(cards) -> (n,) uint8 outcome indexes into wager.paytable.outcomes
    wager.paytable.pays[i] -> Fraction: net result per unit staked (-1 lose, 0 push, k: k to 1),
                              or None when outcome i is paid by a jackpot panel (Madness 21)
    expected return per unit = sum_i P(outcome i) * pays[i]
"""

from __future__ import annotations

import sys
import warnings
from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from feltlab.cards import NO_CARD
from feltlab.errors import RulesError, WagerError
from feltlab.registry import Registry
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS, MIN_DECKS, Rules
from feltlab.settlement import HandSettlement

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from feltlab.record import BoxRecord


CARD_ROLES: dict[str, str] = {
    "P1": "the first card dealt to the box",
    "P2": "the second card dealt to the box (end of the initial deal)",
    "P3": "the third card dealt to the box (its first hand's first draw, or the first card "
    "dealt to the first hand after a split)",
    "D1": "the dealer's first (face-up) card",
    "D2": "the dealer's second card (hole card, or first draw under no-hole-card play)",
}
"""The card roles a classifier may read, in the order the cards are dealt."""


class Placed(StrEnum):
    """When a wager is placed: ``BEFORE_DEAL`` (with the main wager, before any card, rules
    5.1, 15B.3) or ``INSURANCE`` (after the initial deal when the dealer's first card is an
    ace, before any player decision)."""

    BEFORE_DEAL = "before_deal"
    INSURANCE = "insurance"


class Decided(StrEnum):
    """When a wager is decided: at the completion of the ``INITIAL_DEAL`` (15B.6), on the
    box's ``THIRD_CARD``, on the ``DEALER_SECOND_CARD``, or at ``ROUND_END``."""

    INITIAL_DEAL = "initial_deal"
    THIRD_CARD = "third_card"
    DEALER_SECOND_CARD = "dealer_second_card"
    ROUND_END = "round_end"


@dataclass(frozen=True)
class Limits:
    """Wager limits in integer cents: ``minimum <= amount <= maximum``, a multiple of
    ``unit``.  Raises :class:`WagerError` naming the limit broken (rule 15B.4 for Perfect
    Pairs: "the amount ... displayed on the sign at the table")."""

    minimum: int
    maximum: int
    unit: int = 100

    def __post_init__(self) -> None:
        if not 0 < self.minimum <= self.maximum or self.unit < 1:
            raise RulesError(
                f"limits need 0 < minimum <= maximum and unit >= 1 (cents), got {self}"
            )

    def check(self, amount: int, what: str) -> None:
        """Raise :class:`WagerError` unless ``amount`` (cents) is within these limits."""
        np = sys.modules.get("numpy")  # a numpy integer exists only once numpy is loaded
        if np is not None and isinstance(amount, np.integer):
            amount = int(amount)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise WagerError(
                f"{what}: amount must be a whole number of cents (int), got {amount!r}"
            )
        if not self.minimum <= amount <= self.maximum:
            raise WagerError(
                f"{what}: {amount} cents is outside the table limits "
                f"{self.minimum}..{self.maximum} cents; wager within them"
            )
        if amount % self.unit:
            raise WagerError(
                f"{what}: {amount} cents is not a multiple of the {self.unit}-cent chip"
            )


@dataclass(frozen=True)
class Paytable:
    """Outcome names and what each pays.

    ``outcomes[i]``: the name of outcome i (index 0 is the losing outcome by convention).
    ``pays[i]``: the net result per unit staked as a Fraction (-1 lost, 0 stand off, 5 for
    "5 to 1"), or None for an outcome paid by a jackpot panel.  ``source``: the rule or
    reference the figures come from.
    """

    name: str
    outcomes: tuple[str, ...]
    pays: tuple[Fraction | None, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if len(self.outcomes) != len(self.pays) or not self.outcomes:
            raise RulesError(f"paytable {self.name!r}: one pay per outcome, at least one")

    def index(self, outcome: str) -> int:
        """The index of ``outcome``; raises :class:`WagerError` for an unknown name."""
        try:
            return self.outcomes.index(outcome)
        except ValueError:
            raise WagerError(
                f"paytable {self.name!r} has no outcome {outcome!r}; it has {self.outcomes}"
            ) from None

    def net(self, outcome: int, stake: int) -> int:
        """Net result in cents of ``stake`` cents on outcome index ``outcome``, rounded down
        to the cent (a negative result is exact: the stake).  Raises :class:`WagerError` for a
        jackpot outcome (its prize comes from the panel)."""
        pays = self.pays[outcome]
        if pays is None:
            raise WagerError(f"outcome {self.outcomes[outcome]!r} is paid by the jackpot panel")
        return int((stake * pays).__floor__())

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (pays as "5:1"-style strings)."""
        return {
            "name": self.name,
            "source": self.source,
            "outcomes": [
                {"outcome": o, "pays": None if p is None else _odds_text(p)}
                for o, p in zip(self.outcomes, self.pays, strict=True)
            ],
        }


def _odds_text(p: Fraction) -> str:
    if p < 0:
        return "lose"
    return f"{p.numerator}:{p.denominator}"


@dataclass(frozen=True)
class HandView:
    """One hand of a box as a wager sees it: ``cards`` (codes, in deal order), ``doubled``,
    ``from_split`` (a two-card 21 on it is not a blackjack), ``done``, ``busted`` and
    ``surrendered`` (given up for half the wager, ``Rules.surrender``)."""

    cards: tuple[int, ...]
    doubled: bool
    from_split: bool
    done: bool
    busted: bool
    surrendered: bool = False


@dataclass(frozen=True)
class Bet:
    """A wager on a box: ``box`` (0-based), ``player`` (a name), ``wager`` (its type's name)
    and ``amount`` (cents)."""

    box: int
    player: str
    wager: str
    amount: int


@dataclass(frozen=True)
class Settlement:
    """A decided wager: ``outcome`` (a paytable outcome name, or for the main wager the
    hands' outcomes joined by ","), ``net`` (cents won, negative when lost, 0 stand off or
    void), ``rule`` (the rule applied) and ``detail`` (the main wager's per-hand results, a
    :class:`feltlab.settlement.HandSettlement` a hand; empty for a side wager).
    ``jackpot``: the win is paid by the jackpot panel; the engine fills ``net`` (15A.7).

    Deprecated for one release: ``detail`` given as dicts of the shape of 0.1 (``hand``,
    ``outcome``, ``rule``, ``stake``, ``net``) is converted with a ``DeprecationWarning``
    (0.2; refused in the release after); anything else in ``detail`` raises ``TypeError``."""

    outcome: str
    net: int
    rule: str = ""
    detail: tuple[HandSettlement, ...] = ()
    jackpot: bool = False

    def __post_init__(self) -> None:
        detail = tuple(self.detail)  # a generator is read once; a list made a tuple
        object.__setattr__(self, "detail", detail)
        if any(not isinstance(d, HandSettlement) for d in detail):
            records = tuple(HandSettlement.of(d) for d in detail)  # SettlementError if neither
            warnings.warn(
                "a Settlement's detail as dicts is deprecated: give "
                "feltlab.settlement.HandSettlement records (dicts are refused in the release "
                "after 0.2)",
                DeprecationWarning,
                stacklevel=3,  # the caller of Settlement(...)
            )
            object.__setattr__(self, "detail", records)


@dataclass(frozen=True)
class RoundView:
    """What a wager may read when it settles: the rules, one box's cards and hands, the
    dealer's cards and whether the dealer's hand is complete; ``final`` is True at the end of
    the round (every wager must then be decided).  Cards are codes.  ``record``: at the end
    of the round, the box's :class:`feltlab.record.BoxRecord` (its final hands and the
    dealer's), None before."""

    rules: Rules
    box: int
    box_cards: tuple[int, ...]
    hands: tuple[HandView, ...]
    dealer_cards: tuple[int, ...]
    dealer_done: bool
    final: bool
    main_stakes: Mapping[str, int] = field(default_factory=dict)
    record: BoxRecord | None = None

    def role(self, name: str) -> int:
        """The card of role ``name`` (see :data:`CARD_ROLES`), or :data:`NO_CARD`."""
        seq = self.box_cards if name[0] == "P" else self.dealer_cards
        i = int(name[1:]) - 1
        return seq[i] if i < len(seq) else NO_CARD


class WagerType(ABC):
    """Base of every wager type.  Subclasses set the class attributes and implement
    :meth:`classify` (or override :meth:`settle` for a wager decided by play, like the main
    wager).  Instances carry the table's configuration (limits, chosen paytable)."""

    name: ClassVar[str]
    """Unique name, e.g. ``"perfect_pairs"``."""
    title: ClassVar[str]
    """Human-readable name, e.g. ``"Perfect Pairs"``."""
    rule: ClassVar[str] = ""
    """The rule the wager implements, e.g. ``"15B"``."""
    placed: ClassVar[Placed] = Placed.BEFORE_DEAL
    decided: ClassVar[Decided] = Decided.INITIAL_DEAL
    card_roles: ClassVar[tuple[str, ...]] = ()
    """The columns :meth:`classify` reads (keys of :data:`CARD_ROLES`)."""
    min_decks: ClassVar[int] = MIN_DECKS
    max_decks: ClassVar[int] = MAX_DECKS
    requires_main: ClassVar[bool] = True
    """The player must hold a main wager on the box (rule 15B.2 and NZ practice)."""
    decided_by_panel: ClassVar[bool] = False
    """Wins are paid the prize of the jackpot panel (Madness 21); the option is withdrawn on
    a panel failure (rule 16.12)."""
    paytables: ClassVar[Mapping[str, Paytable]] = {}
    default_limits: ClassVar[Limits] = Limits(100, 10_000)
    round_fields: ClassVar[tuple[str, ...]] = ()
    """A play-decided wager: the fields of the round record (:data:`feltlab.record.
    RECORD_DTYPE`) its :meth:`classify_round` reads; empty for a card-decided wager."""
    dealer_plays_out: ClassVar[bool] = False
    """The dealer completes the hand even when every hand of the box has busted,
    surrendered or has a blackjack (Buster Blackjack's rule); the engine and the simulator do
    so only in rounds where such a wager is in play."""

    def __init__(self, *, limits: Limits | None = None, paytable: str | None = None) -> None:
        self.limits = limits or self.default_limits
        if self.paytables:
            choice = paytable or next(iter(self.paytables))
            if choice not in self.paytables:
                raise RulesError(
                    f"{self.name}: unknown paytable {choice!r}; choose one of "
                    f"{sorted(self.paytables)}"
                )
            self.paytable: Paytable = self.paytables[choice]
        elif paytable is not None:
            raise RulesError(f"{self.name} has no paytables to choose from")

    # --------------------------------------------------------------- configuration
    def check_rules(self, rules: Rules) -> None:
        """Raise :class:`RulesError` if the wager may not be offered under ``rules`` (by
        default: ``rules.decks`` outside ``min_decks..max_decks``; a wager whose
        ``min_decks`` is rule 3.3(a)'s 4 takes 1 deck up under ``rules.deck_rule == "any"``,
        a table outside rule 3.3(a))."""
        lo = self.min_decks
        if rules.deck_rule == "any" and lo == MIN_DECKS:
            lo = ANY_MIN_DECKS
        if not lo <= rules.decks <= self.max_decks:
            raise RulesError(
                f"{self.title} is played with {lo} to {self.max_decks} decks "
                f"(rule {self.rule or '3.3(a)'}), the rules have {rules.decks}; change decks"
            )

    def check_amount(self, amount: int, *, main_stake: int) -> None:
        """Raise :class:`WagerError` unless ``amount`` cents may be wagered; ``main_stake`` is
        the player's main wager on the box (0 if none)."""
        self.limits.check(amount, self.title)

    # --------------------------------------------------------------- vectorised
    def classify(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """Outcome index of each row of ``cards``: ``(n, len(card_roles))`` uint8 codes ->
        ``(n,)`` uint8 indexes into ``self.paytable.outcomes``.  Raises :class:`WagerError`
        for a wager that no card-only classifier decides (e.g. the main wager)."""
        raise WagerError(
            f"{self.title} has no card-only classifier: its outcome depends on play; "
            "simulate it with the round engine"
        )

    def classify_round(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.uint8]:
        """Outcome index of each round record: ``(n,)`` :data:`feltlab.record.RECORD_DTYPE`
        -> ``(n,)`` uint8 indexes into ``self.paytable.outcomes``, reading only the fields
        named in ``round_fields``.  Raises :class:`WagerError` for a wager not decided by
        play."""
        raise WagerError(
            f"{self.title} declares no round_fields: it is decided by its card_roles "
            "(classify), not by the round record"
        )

    def _checked_record(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        from feltlab.native import RECORD_DTYPE  # start-up

        arr = np.asarray(records)
        if arr.dtype != RECORD_DTYPE or arr.ndim != 1:
            raise WagerError(
                f"{self.name}.classify_round needs an (n,) array of feltlab.record.RECORD_DTYPE "
                f"round records, got {arr.dtype} {arr.shape}"
            )
        return arr

    def _checked(self, cards: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        arr = np.asarray(cards)
        k = len(self.card_roles)
        if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != k:
            raise WagerError(
                f"{self.name}.classify needs an (n, {k}) uint8 array of card codes in the "
                f"columns {self.card_roles}, got {arr.dtype} {arr.shape}"
            )
        return arr

    # --------------------------------------------------------------- live play
    def settle(self, view: RoundView, bet: Bet) -> Settlement | None:
        """Decide ``bet`` in a live round, or return None while it cannot be decided yet.

        The default runs :meth:`classify` on one row made of ``card_roles`` once every role has
        been dealt (or at the end of the round, missing roles as :data:`NO_CARD`); a
        play-decided wager (``round_fields``) runs :meth:`classify_round` on the box's round
        record at the end of the round."""
        import numpy as np  # start-up: `feltlab --help` loads every wager plugin, not numpy

        if self.round_fields:
            if view.record is None:
                return None
            result = np.asarray(self.classify_round(view.record.row()))
            what, fn = "the round record", "classify_round"
        else:
            row = [view.role(r) for r in self.card_roles]
            if NO_CARD in row and not view.final:
                return None
            result = np.asarray(self.classify(np.array([row], dtype=np.uint8)))
            what, fn = f"cards {row}", "classify"
        n_out = len(self.paytable.outcomes)
        if result.shape != (1,) or not np.issubdtype(result.dtype, np.integer):
            raise WagerError(
                f"{self.name}.{fn} must return an (n,) array of outcome indexes (uint8) "
                f"for an (n, {len(self.card_roles)}) batch; for one row it returned "
                f"{result.dtype} {result.shape}"
            )
        outcome = int(result[0])
        if not 0 <= outcome < n_out:
            raise WagerError(
                f"{self.name}.{fn} returned outcome {outcome} for {what}; its paytable "
                f"{self.paytable.name!r} has outcomes 0..{n_out - 1} {self.paytable.outcomes}"
            )
        name = self.paytable.outcomes[outcome]
        if self.paytable.pays[outcome] is None:
            return Settlement(name, 0, self.rule, jackpot=True)
        return Settlement(name, self.paytable.net(outcome, bet.amount), self.rule)

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable declaration (for ``feltlab plugins --json`` and PAR sheets)."""
        return {
            "name": self.name,
            "title": self.title,
            "rule": self.rule,
            "placed": self.placed.value,
            "decided": self.decided.value,
            "card_roles": list(self.card_roles),
            "round_fields": list(self.round_fields),
            "dealer_plays_out": self.dealer_plays_out,
            "decks": [self.min_decks, self.max_decks],
            "limits": {
                "minimum": self.limits.minimum,
                "maximum": self.limits.maximum,
                "unit": self.limits.unit,
            },
            "paytables": [p.as_dict() for p in self.paytables.values()],
            "paytable": self.paytable.name if self.paytables else None,
        }


class WagerRegistry(Registry[WagerType]):
    """Wager types by name, filled through the ``feltlab_register_wagers`` hook (a
    :class:`feltlab.registry.Registry`; an unknown name raises :class:`WagerError`)."""

    def __init__(self) -> None:
        super().__init__(WagerType, noun="wager type", unknown=WagerError)

    def create(self, name: str, **config: Any) -> WagerType:
        """An instance of the wager type ``name`` with ``config``."""
        return self[name](**config)


def as_pays(values: Sequence[int | Fraction | None]) -> tuple[Fraction | None, ...]:
    """Pays as Fractions (ints are "k to 1"; -1 lose); None is kept (jackpot).

    Raises :class:`WagerError` for a float (``1.2`` is the binary fraction
    5404319552844595/4503599627370496, which settled 500 cents to 599: give
    ``Fraction(6, 5)``), a bool, or anything else that is not an exact number."""
    out: list[Fraction | None] = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, int | Fraction) and not isinstance(v, bool)):
            out.append(None if v is None else Fraction(v))
            continue
        hint = f"Fraction({Fraction(v).limit_denominator(1000)})" if isinstance(v, float) else ""
        raise WagerError(
            f"pays[{i}] = {v!r} is not exact: give an int (k to 1) or a Fraction"
            + (f", e.g. {hint.replace('/', ', ')}" if hint else "")
        )
    return tuple(out)
