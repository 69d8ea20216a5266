"""Card sources for the round engine: a shuffled shoe with cutting cards, a continuous
shuffler, and a fixed sequence (tests and replays).

Every source gives card *codes* (uint8 values 0..51, docs/design.md) one at a time through
:meth:`CardSource.draw`.  The engine, not the source, emits the events (``cut_card_reached``,
``shoe_shuffled``) and decides when to shuffle: at the end of the round in which the cutting
card came out (rule 5.7(b)) or in which the cutting card was found missing (rule 16.10).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from feltlab import native
from feltlab.errors import RulesError, ShoeError
from feltlab.rules import Rules, ShufflerKind


@runtime_checkable
class CardSource(Protocol):
    """What the round engine needs from a shoe, a shuffler device or a test sequence."""

    @property
    def needs_shuffle(self) -> bool:
        """True when the cards must be shuffled before the next round."""
        ...

    @property
    def cut_card_reached(self) -> bool:
        """True once the cutting card has come out since the last shuffle."""
        ...

    def shuffle(self) -> dict[str, Any]:
        """Shuffle (and cut); returns JSON-serialisable facts for the ``shoe_shuffled`` event."""
        ...

    def draw(self) -> int:
        """The next card code; raises :class:`ShoeError` when no card is left."""
        ...

    def end_round(self, cards: Sequence[int]) -> None:
        """The round is over and ``cards`` (codes) went to the discard rack."""
        ...

    def report_missing_cutting_card(self) -> None:
        """The cutting card was found not inserted (rule 16.10): shuffle after this round."""
        ...


class _CuttingCardSource(ABC):
    """What a shoe with a cutting card and a fixed sequence share: a shuffle is due after
    the round in which the cutting card came out (rule 5.7(b)) or was found missing (16.10).
    Subclasses keep ``_missing``, ``_needs_shuffle`` and ``cut_card_reached``."""

    _missing: bool
    _needs_shuffle: bool

    @property
    @abstractmethod
    def cut_card_reached(self) -> bool:
        """True once the cutting card has come out since the last shuffle."""

    def end_round(self, cards: Sequence[int]) -> None:
        if self._missing or self.cut_card_reached:
            self._needs_shuffle = True

    def report_missing_cutting_card(self) -> None:
        self._missing = True


class Shoe(_CuttingCardSource):
    """A shoe of ``rules.decks`` decks shuffled by the C core (Fisher-Yates over ``rng``),
    with ``rules.cutting_cards`` cutting cards, the first ``rules.cut_card_from_back`` cards
    from the back of the stack (rule 7.6(a)); a second cutting card sits at the back.

    ``rng`` is a :class:`feltlab.native.BitGenerator` (use ChaCha20 for play).  Not for a
    continuous shuffler (use :class:`ContinuousShuffler`; raises :class:`RulesError`).
    """

    def __init__(self, rules: Rules, rng: native.BitGenerator) -> None:
        if rules.shuffler is ShufflerKind.CONTINUOUS:
            raise RulesError("rules.shuffler is 'continuous': use feltlab.shoe.ContinuousShuffler")
        self.rules = rules
        self.rng = rng
        self._cards = native.new_shoe(rules.decks)
        self._pos = 0
        self._cut_at = rules.cards - rules.cut_card_from_back
        self._missing = False
        self._needs_shuffle = True
        self._shuffles = 0

    @property
    def needs_shuffle(self) -> bool:
        return self._needs_shuffle

    @property
    def cut_card_reached(self) -> bool:
        return not self._missing and self._pos >= self._cut_at

    @property
    def remaining(self) -> int:
        """Cards left in the shoe."""
        return self.rules.cards - self._pos

    def shuffle(self) -> dict[str, Any]:
        """Gather every card, Fisher-Yates shuffle in the C core, insert the cutting card."""
        self._cards = native.new_shoe(self.rules.decks)
        native.shuffle(self._cards, self.rng)
        self._pos = 0
        self._missing = False
        self._needs_shuffle = False
        self._shuffles += 1
        return {
            "cards": self.rules.cards,
            "cutting_cards": self.rules.cutting_cards,
            "cut_card_from_back": self.rules.cut_card_from_back,
            "shuffle": self._shuffles,
        }

    def draw(self) -> int:
        if self._needs_shuffle and self._pos == 0:
            raise ShoeError("the shoe has not been shuffled: call shuffle() before draw()")
        if self._pos >= self.rules.cards:
            raise ShoeError(
                "the shoe ran out of cards in a round: insert the cutting card further from the "
                "back (Rules.cut_card_from_back) or deal fewer boxes"
            )
        card = int(self._cards[self._pos])
        self._pos += 1
        return card


class ContinuousShuffler:
    """A continuous shuffler (rule 1.0 as amended by 2.1): each card is drawn uniformly from
    the cards in the machine (an unbiased bounded draw from ``rng``); the cards of a round
    return to the machine when it ends.  No cutting card (rule 7.6(b)); rule 16.10 does not
    apply, so :meth:`report_missing_cutting_card` raises :class:`ShoeError`.
    """

    def __init__(self, rules: Rules, rng: native.BitGenerator) -> None:
        if rules.shuffler is not ShufflerKind.CONTINUOUS:
            raise RulesError("ContinuousShuffler needs rules.shuffler='continuous'")
        self.rules = rules
        self.rng = rng
        self._pool = [int(c) for c in native.new_shoe(rules.decks)]
        self._needs_shuffle = True

    @property
    def needs_shuffle(self) -> bool:
        return self._needs_shuffle

    @property
    def cut_card_reached(self) -> bool:
        return False

    def shuffle(self) -> dict[str, Any]:
        self._needs_shuffle = False
        return {"cards": len(self._pool), "cutting_cards": 0, "continuous": True}

    def draw(self) -> int:
        if not self._pool:
            raise ShoeError("the continuous shuffler is empty: deal fewer boxes per round")
        i = int(self.rng.integers(len(self._pool))[0])
        self._pool[i], self._pool[-1] = self._pool[-1], self._pool[i]
        return self._pool.pop()

    def end_round(self, cards: Sequence[int]) -> None:
        self._pool.extend(int(c) for c in cards)

    def report_missing_cutting_card(self) -> None:
        raise ShoeError("rule 16.10 does not apply when a continuous shuffler is used")


class FixedCards(_CuttingCardSource):
    """A fixed card sequence (tests, replays): :meth:`draw` gives ``cards`` in order.

    ``cut_after``: the cutting card comes out after that many draws (None: never).
    ``needs_shuffle``: a shuffle is due before the first round (a replayed log that opens with
    one).
    :meth:`shuffle` does not reorder; the sequence continues where it was.
    """

    def __init__(
        self, cards: Iterable[int], *, cut_after: int | None = None, needs_shuffle: bool = False
    ) -> None:
        self._cards = [int(c) for c in np.asarray(list(cards), dtype=np.int64)]
        bad = [c for c in self._cards if not 0 <= c <= 51]
        if bad:
            raise ShoeError(f"card codes must be 0..51, got {bad[:5]}")
        self._pos = 0
        self._cut_after = cut_after
        self._cut_base = 0
        self._missing = False
        self._needs_shuffle = needs_shuffle

    @property
    def drawn(self) -> int:
        """Cards drawn so far."""
        return self._pos

    @property
    def needs_shuffle(self) -> bool:
        return self._needs_shuffle

    @property
    def cut_card_reached(self) -> bool:
        if self._cut_after is None or self._missing:
            return False
        return self._pos >= self._cut_after

    def shuffle(self) -> dict[str, Any]:
        self._needs_shuffle = False
        self._missing = False
        self._cut_after = None
        return {"cards": len(self._cards) - self._pos, "fixed": True}

    def draw(self) -> int:
        if self._pos >= len(self._cards):
            raise ShoeError(
                f"the fixed card sequence ran out after {len(self._cards)} cards: "
                "give more cards to FixedCards"
            )
        card = self._cards[self._pos]
        self._pos += 1
        return card


def make_source(rules: Rules, rng: native.BitGenerator) -> CardSource:
    """The card source the rules call for: :class:`ContinuousShuffler` or :class:`Shoe`."""
    if rules.shuffler is ShufflerKind.CONTINUOUS:
        return ContinuousShuffler(rules, rng)
    return Shoe(rules, rng)
