"""The table rules: a frozen, validated :class:`Rules` and its named presets.

Each field cites the rule it implements (New Zealand Gazette amendments to Division 2
Blackjack, in ``../shared/rules/``).  Where the rules are silent (rules 10.3, 14, 15.x and the
house's own choices), the field is configuration and its docstring says what the default
assumes.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from feltlab.errors import RulesError

MIN_DECKS = 4
MAX_DECKS = 8
ANY_MIN_DECKS = 1
"""Fewest decks of a table outside rule 3.3(a) (``deck_rule="any"``): a single deck."""
DECK_RULES = ("nz", "any")
"""``Rules.deck_rule`` values: "nz" rule 3.3(a) (4 to 8 decks), "any" 1 to 8 decks."""
SUPER_SEVENS_MIN_DECKS = 6


class HoleCard(StrEnum):
    """How the dealer takes a second card.

    ``PEEK``: the dealer takes a hole card in the initial deal and checks it for blackjack
    under an ace or ten-value up card (Las Vegas).  ``NO_HOLE_CARD``: European no-hole-card;
    the dealer's second card is dealt only after the players have acted (NZ practice).
    """

    PEEK = "peek"
    NO_HOLE_CARD = "no_hole_card"


class DealerBlackjackTakes(StrEnum):
    """Under no-hole-card play, what a dealer blackjack takes from a player who doubled or
    split (NZ practice, ``../shared/rules/README.md``).

    ``ORIGINAL``: the original wager only, once per box; double and split wagers are
    returned, even on a hand that busted (the dealer's blackjack shows only if some hand on
    the table is still live, so a busted hand's result depends on the other boxes: the option
    as reported).  ``ORIGINAL_AND_BUSTED``: the original wager once, plus every hand that
    already busted, whole (wagers already lost stay lost, whichever split hand busted).
    ``ALL``: every wager on the box, as rule 5.1(d)/(g) alone would say.
    """

    ORIGINAL = "original"
    ORIGINAL_AND_BUSTED = "original_and_busted"
    ALL = "all"


class DoubleOn(StrEnum):
    """Which two-card hands may double: ``ANY`` two cards, any ``HARD`` total, hard
    ``NINE_TO_ELEVEN`` or ``TEN_OR_ELEVEN``."""

    ANY = "any"
    HARD = "hard"
    NINE_TO_ELEVEN = "9-11"
    TEN_OR_ELEVEN = "10-11"


class Surrender(StrEnum):
    """Whether a player may give up a hand for half the wager back (house setting; NZ
    practice: no surrender).  Offered only as the first decision on the first two cards,
    never after a split.

    ``NONE``: no surrender.  ``LATE``: under peek, after the dealer has checked for
    blackjack (so only when the dealer has none); under no hole card, before the dealer's
    second card, and a dealer blackjack then takes the whole wager (the half is not
    returned).  ``EARLY``: half the wager comes back whatever the dealer holds, before any
    blackjack check (Atlantic City's 1978-81 rule).  Source: Wizard of Odds, "Blackjack
    Surrender" (late and early surrender); P. Griffin, "The Theory of Blackjack", ch. 4.
    """

    NONE = "none"
    LATE = "late"
    EARLY = "early"


class ShufflerKind(StrEnum):
    """How the cards are shuffled (rules 3.3(e), 3.4, 7.2, 7.6): by hand (``MANUAL``), by an
    ``AUTOMATIC`` batch shuffler, or by a ``CONTINUOUS`` shuffler (rule 1.0 as amended by
    2.1: cards return to the machine after every round; no cutting card, rule 7.6(b))."""

    MANUAL = "manual"
    AUTOMATIC = "automatic"
    CONTINUOUS = "continuous"


def _did_you_mean(unknown: list[str], known: set[str]) -> str:
    """``blakjack_pays (did you mean 'blackjack_pays'?); the fields are ...``."""
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(str(name), sorted(known), n=1)
        parts.append(f"{name}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"{', '.join(parts)}; the fields are {', '.join(sorted(known))}"


def _fraction_field(value: Any) -> Fraction:
    if isinstance(value, Fraction):
        return value
    try:
        if (
            isinstance(value, tuple)
            and len(value) == 2
            and not any(isinstance(v, bool) or not isinstance(v, int) for v in value)
        ):
            return Fraction(int(value[0]), int(value[1]))
        if isinstance(value, str) and len(value) <= 40:
            num, _, den = value.strip().partition(":")
            return Fraction(int(num), int(den or 1))
    except (ValueError, ZeroDivisionError) as exc:
        raise RulesError(
            f"blackjack_pays={value!r} is not 'win:stake' with two whole numbers and a stake "
            f"above 0 (e.g. '3:2'): {exc}"
        ) from None
    raise RulesError(
        f"blackjack_pays must be a Fraction, a (win, stake) tuple or 'win:stake', got {value!r}"
    )


@dataclass(frozen=True)
class Rules:
    """The rules of one blackjack table.  Frozen; every field is validated on construction
    and an invalid value raises :class:`feltlab.errors.RulesError` naming the rule.

    Money is integer cents.  Use :meth:`preset` (``"nz"``, ``"vegas_s17"``, ``"vegas_h17"``)
    and :meth:`replace` rather than spelling every field.
    """

    decks: int = 6
    """Decks in the shoe: 4 to 8 under rule 3.3(a) (``deck_rule="nz"``), 1 to 8 otherwise;
    6 to 8 when ``super_sevens`` is offered."""
    deck_rule: str = "nz"
    """Which deck range applies: "nz" (rule 3.3(a) of the NZ Gazette amendments: 4 to 8
    decks) or "any" (1 to 8 decks: a house outside those rules, e.g. the Las Vegas presets,
    where single- and double-deck games are dealt)."""
    super_sevens: bool = False
    """The Super Sevens wager is offered (rule 3.3(a) then needs 6 to 8 decks)."""
    dealer_hits_soft_17: bool = False
    """H17 when True, S17 when False (house setting; NZ practice: S17)."""
    hole_card: HoleCard = HoleCard.NO_HOLE_CARD
    """Peek or European no-hole-card (NZ practice: no hole card)."""
    dealer_blackjack_takes: DealerBlackjackTakes = DealerBlackjackTakes.ORIGINAL
    """Under no-hole-card play, what a dealer blackjack takes (ignored under peek, where a
    dealer blackjack ends the round before any double or split)."""
    blackjack_pays: Fraction = Fraction(3, 2)
    """Odds paid on a winning blackjack: 3 to 2 (rule 5.4, subject to rule 10.3, which is not
    in the rule files: other odds are accepted as house configuration)."""
    double_on: DoubleOn = DoubleOn.HARD
    """Which first two cards may double (house setting; NZ practice: hard totals)."""
    double_after_split: bool = True
    """A split hand may double on its first two cards."""
    max_split_hands: int = 3
    """Most hands one box may become by splitting: 1 (no split) to 4 (NZ practice: 3)."""
    resplit_aces: bool = False
    """Split aces may be split again (NZ practice: aces split once)."""
    split_aces_one_card: bool = True
    """Each split ace receives exactly one card (NZ practice)."""
    surrender: Surrender = Surrender.NONE
    """Surrender on the first two cards: none, late or early (see :class:`Surrender`; NZ
    practice: none)."""
    insurance: bool = True
    """Insurance (2 to 1) is offered when the dealer's first card is an ace."""
    shuffler: ShufflerKind = ShufflerKind.AUTOMATIC
    """Manual, automatic batch or continuous shuffler (rules 3.3(e), 3.4)."""
    cutting_cards: int = 1
    """1 or 2 cutting cards (rule 3.3(b)); 0 exactly when a continuous shuffler is used, whose
    cutting card is put aside (rule 7.6(b)).  A second cutting card sits at the back of the
    stack (rule 7.6(a))."""
    cut_card_from_back: int = -1
    """Cards behind the (first) cutting card: 1 to half the stack (rule 7.6(a): "no more than
    half way in from the back").  -1 (the default) means a quarter of the stack (75 %
    penetration, a common house choice)."""
    min_wager: int = 1000
    """Table minimum of the main wager (rule 5.1), in cents."""
    max_wager: int = 500_000
    """Table maximum of the main wager, in cents."""
    wager_unit: int = 100
    """Every main wager is a multiple of this many cents (the smallest chip)."""

    def __post_init__(self) -> None:
        _set = object.__setattr__
        for name, kind in (
            ("hole_card", HoleCard),
            ("dealer_blackjack_takes", DealerBlackjackTakes),
            ("double_on", DoubleOn),
            ("surrender", Surrender),
            ("shuffler", ShufflerKind),
        ):
            value = getattr(self, name)
            try:
                _set(self, name, kind(value))
            except ValueError:
                allowed = ", ".join(repr(m.value) for m in kind)
                raise RulesError(f"{name}={value!r} is not one of {allowed}") from None
        _set(self, "blackjack_pays", _fraction_field(self.blackjack_pays))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "bool" and not isinstance(value, bool):
                raise RulesError(f"{f.name} must be true or false, got {value!r}")
        for name in (
            "decks",
            "max_split_hands",
            "cutting_cards",
            "cut_card_from_back",
            "min_wager",
            "max_wager",
            "wager_unit",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise RulesError(f"{name} must be an integer, got {value!r}")
        self._check_decks()
        if self.blackjack_pays <= 0:
            raise RulesError(f"blackjack_pays={self.blackjack_pays} must be positive (rule 5.4)")
        bj = self.blackjack_pays
        if bj.numerator > 1000 or bj.denominator > 1000:
            raise RulesError(
                f"blackjack_pays={bj.numerator}:{bj.denominator} is out of range: the win and "
                "the stake of the odds (in lowest terms) must each be 1..1000, e.g. 3:2 or 6:5"
            )
        if not 1 <= self.max_split_hands <= 4:
            raise RulesError(
                f"max_split_hands={self.max_split_hands} must be 1 (no split) to 4",
                field="max_split_hands",
                allowed=(1, 4),
            )
        continuous = self.shuffler is ShufflerKind.CONTINUOUS
        if continuous and self.cutting_cards != 0:
            raise RulesError(
                "a continuous shuffler uses no cutting card in play (rule 7.6(b)): "
                "set cutting_cards=0"
            )
        if not continuous and self.cutting_cards not in (1, 2):
            raise RulesError(
                f"cutting_cards={self.cutting_cards}: rule 3.3(b) uses 1 or 2 cutting cards "
                "(0 only with shuffler='continuous')"
            )
        stack = self.decks * 52
        if self.cut_card_from_back == -1:
            _set(self, "cut_card_from_back", 0 if continuous else stack // 4)
        elif continuous:
            raise RulesError("a continuous shuffler has no cutting card: leave cut_card_from_back")
        elif not 1 <= self.cut_card_from_back <= stack // 2:
            raise RulesError(
                f"cut_card_from_back={self.cut_card_from_back}: rule 7.6(a) inserts the cutting "
                f"card no more than half way in from the back: 1 to {stack // 2} for "
                f"{self.decks} decks",
                field="cut_card_from_back",
                allowed=(1, stack // 2),
            )
        if self.wager_unit < 1:
            raise RulesError(f"wager_unit={self.wager_unit} must be at least 1 cent")
        if not 0 < self.min_wager <= self.max_wager:
            raise RulesError(
                f"table limits min_wager={self.min_wager}, max_wager={self.max_wager} (cents) "
                "need 0 < min <= max"
            )
        if self.min_wager % self.wager_unit or self.max_wager % self.wager_unit:
            raise RulesError(
                f"table limits min_wager={self.min_wager} and max_wager={self.max_wager} (cents) "
                f"must be multiples of wager_unit={self.wager_unit}, or no chip can make them"
            )

    def _check_decks(self) -> None:
        """The deck count against the deck rule (rule 3.3(a)) and Super Sevens' range."""
        if self.deck_rule not in DECK_RULES:
            raise RulesError(
                f"deck_rule={self.deck_rule!r} is not one of {', '.join(map(repr, DECK_RULES))}"
            )
        if self.deck_rule == "nz" and not MIN_DECKS <= self.decks <= MAX_DECKS:
            raise RulesError(
                f"decks={self.decks}: rule 3.3(a) requires {MIN_DECKS} to {MAX_DECKS} decks "
                "(deck_rule='nz'; a game outside those rules sets deck_rule='any' for 1 to 8)",
                field="decks",
                allowed=(MIN_DECKS, MAX_DECKS),
            )
        if not ANY_MIN_DECKS <= self.decks <= MAX_DECKS:
            raise RulesError(
                f"decks={self.decks}: a table holds {ANY_MIN_DECKS} to {MAX_DECKS} decks",
                field="decks",
                allowed=(ANY_MIN_DECKS, MAX_DECKS),
            )
        if self.super_sevens and self.decks < SUPER_SEVENS_MIN_DECKS:
            raise RulesError(
                f"decks={self.decks}: rule 3.3(a) plays Super Sevens with "
                f"{SUPER_SEVENS_MIN_DECKS} to {MAX_DECKS} decks; raise decks or set "
                "super_sevens=False",
                field="decks",
                allowed=(SUPER_SEVENS_MIN_DECKS, MAX_DECKS),
            )

    # ------------------------------------------------------------------ helpers
    @property
    def cards(self) -> int:
        """Cards in the shoe: ``decks * 52``."""
        return self.decks * 52

    @property
    def no_hole_card(self) -> bool:
        """True under European no-hole-card play."""
        return self.hole_card is HoleCard.NO_HOLE_CARD

    def replace(self, **changes: Any) -> Rules:
        """A copy with ``changes`` applied, validated again."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise RulesError(f"Rules has no field {_did_you_mean(unknown, known)}")
        resized = "decks" in changes or "shuffler" in changes
        if resized and "cut_card_from_back" not in changes:
            changes["cut_card_from_back"] = -1
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields (enums as their values, ``blackjack_pays`` as "3:2")."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Fraction):
                value = f"{value.numerator}:{value.denominator}"
            elif isinstance(value, StrEnum):
                value = value.value
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rules:
        """The inverse of :meth:`to_dict`; unknown keys raise :class:`RulesError`."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise RulesError(f"unknown Rules fields {_did_you_mean(unknown, names)}")
        return cls(**data)

    @classmethod
    def preset(cls, name: str, **changes: Any) -> Rules:
        """A named rule set (see :data:`PRESETS`), with optional ``changes``.

        Raises :class:`RulesError` listing the preset names for an unknown ``name``.
        """
        try:
            base = PRESETS[name]
        except KeyError:
            raise RulesError(
                f"unknown rules preset {name!r}; choose one of {sorted(PRESETS)}"
            ) from None
        return base.replace(**changes) if changes else base


NZ = Rules()
"""New Zealand practice (``../shared/rules/README.md``): 6 decks, 3 to 2, S17, no hole card
(a dealer blackjack takes the original wager only), double on hard totals, double after split,
split to three hands, aces split once with one card each, no surrender, one cutting card a
quarter of the stack from the back, automatic shuffler."""

VEGAS_S17 = Rules(
    decks=6,
    deck_rule="any",
    dealer_hits_soft_17=False,
    hole_card=HoleCard.PEEK,
    double_on=DoubleOn.ANY,
    double_after_split=True,
    max_split_hands=4,
    resplit_aces=False,
    split_aces_one_card=True,
)
"""Las Vegas Strip six-deck game: S17, peek, double any two, DAS, split to 4 hands, no
resplit of aces, no surrender, 3 to 2; any deck count 1 to 8 (``deck_rule="any"``)."""

VEGAS_H17 = dataclasses.replace(VEGAS_S17, dealer_hits_soft_17=True)
"""As :data:`VEGAS_S17` with the dealer hitting soft 17."""

PRESETS: dict[str, Rules] = {"nz": NZ, "vegas_s17": VEGAS_S17, "vegas_h17": VEGAS_H17}
"""The named rule sets of :meth:`Rules.preset`."""
