"""Card counts: point counts by rank or by card code, the suit-imbalance count of flush bets,
a wager's best linear count from its effects of removal, and running and true counts.

A **point count** gives each card a tag (an integer); the **running count** is the sum of the
tags of the cards seen since the shuffle (``running_count``); the **true count** is the
running count per deck remaining, ``RC * 52 / cards remaining`` (``true_count``), floored to
the count's resolution where it buckets a round: a round's bucket value is
``floor(TC * resolution)`` (resolution 1: the true count floored, so -0.4 is -1 and +1.9 is
+1).  Tags are integers; a count whose book tags are halves (Wong Halves) is stored doubled
(``scale`` 2: the book's true count is the stored one over 2, and the report says so).

A **suit-imbalance count** (``mode`` "suit", the count of flush bets such as 21+3; E.
Jacobson, "Beating 21+3 with a suit count"): the excess of the richest suit over its share,
per deck remaining: ``max over suits s of (52 * unseen_s - 13 * unseen) / unseen`` (0 for a
full shoe, up to 39).  It uses no tags.

A **wager's own count** (``eor``): the best linear count of its effects of removal
(:mod:`feltlab.math.eor`, P. Griffin, "The Theory of Blackjack", ch. 4), its tags scaled so the
largest magnitude is 2 and rounded to integers by largest remainders, so they still sum to
zero (:func:`balanced_round`).

The built-in counts (:data:`BUILTIN`), tags for A, 2..9, T (J, Q and K take the ten's tag):

=============  =====================================  ========================================
name           tags A 2 3 4 5 6 7 8 9 T                source
=============  =====================================  ========================================
hilo           -1 +1 +1 +1 +1 +1  0  0  0 -1           H. Dubner (1963); Griffin, ch. 4
ko             -1 +1 +1 +1 +1 +1 +1  0  0 -1           Vancura and Fuchs, "Knock-Out Blackjack"
                                                       (1998): unbalanced
hiopt1          0  0 +1 +1 +1 +1  0  0  0 -1           C. Einstein (1968); L. Humble and C.
                                                       Cooper, "The World's Greatest Blackjack
                                                       Book" (1980)
hiopt2          0 +1 +1 +2 +2 +1 +1  0  0 -2           Humble and Cooper (1980)
omega2          0 +1 +1 +2 +2 +2 +1  0 -1 -2           B. Carlson, "Blackjack for Blood" (1992)
zen            -1 +1 +1 +2 +2 +2 +1  0  0 -2           A. Snyder, "Blackbelt in Blackjack"
                                                       (1983)
halves         -2 +1 +2 +2 +3 +2 +1  0 -1 -2           S. Wong, "Professional Blackjack"
                                                       (1975): halves doubled, scale 2
=============  =====================================  ========================================

A count given by its tags (``tags:A,2,...,K``, :func:`tags_count`): any integer tags, as
``feltlab protect --count`` and ``feltlab certify csm-audit --count`` accept them.  Hi-Lo's
tags are :data:`feltlab.math.eor.HI_LO` (their one home: every effect of removal reports its
betting correlation with them).  How a count buckets rounds in the simulator (a true count,
a running count, the suit imbalance, or a window count of the last cards seen off a
continuous shuffler) is :mod:`feltlab.simulation.protection`'s and the CSM audit's.

An unbalanced count (KO: its tags sum to +4 a deck) is read as a running count, its index
given as the running count from Vancura and Fuchs's initial running count ``4 - 4 * decks``
(``Count.mode`` "running"); every other count as a true count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from feltlab import native
from feltlab.cards import RANK_LETTERS
from feltlab.errors import CountError
from feltlab.math.eor import HI_LO, main_eor, side_bet_eor

MODES = ("true", "running", "suit")
"""How a count buckets a round: its true count (per 52 cards remaining), its running count
(since the shuffle, from the initial running count), or the suit imbalance."""
MAX_RESOLUTION: int = native.COUNT_MAX_RESOLUTION
"""The finest resolution: a bucket of 1/64 of a count unit (the C simulator's limit)."""
MAX_TAG: int = native.COUNT_MAX_TAG
"""The largest tag magnitude accepted (a running count must fit the simulator's 32 bits)."""


def _by_rank(ten_up: Sequence[int]) -> tuple[int, ...]:
    """13 rank tags from 10 (A, 2..9, ten-valued)."""
    return tuple(ten_up) + (ten_up[9],) * 3


@dataclass(frozen=True)
class Count:
    """One count.  ``tags``: 52 integer tags, one per card code ``rank * 4 + suit`` (all
    zero for ``mode`` "suit"); ``scale``: stored tags per book unit (2 for Wong Halves);
    ``mode``: "true" (bucketed by the true count), "running" or "suit"; ``source``: where
    the count is published.  Build one with :func:`rank_count`, :func:`code_count`,
    :func:`suit_count`, :func:`eor_count` or :func:`builtin_count`."""

    name: str
    tags: tuple[int, ...]
    mode: str = "true"
    scale: int = 1
    source: str = ""
    title: str = ""
    """The count's book name as printed ("Hi-Lo"); :attr:`label` falls back to ``name``."""

    def __post_init__(self) -> None:
        if len(self.tags) != 52:
            raise CountError(
                f"count {self.name}: 52 tags (one per card code), got {len(self.tags)}"
            )
        if any(not isinstance(t, int) or abs(t) > MAX_TAG for t in self.tags):
            raise CountError(
                f"count {self.name}: tags must be integers -{MAX_TAG}..{MAX_TAG}; scale a "
                "fractional count to integers and give its scale"
            )
        if self.mode not in MODES:
            raise CountError(
                f"count {self.name}: mode {self.mode!r}; choose from {', '.join(MODES)}"
            )
        if not 1 <= self.scale <= MAX_RESOLUTION:
            raise CountError(
                f"count {self.name}: scale must be 1..{MAX_RESOLUTION}, got {self.scale}"
            )

    @property
    def label(self) -> str:
        """The count's name as a report prints it: its book name (``title``), else ``name``."""
        return self.title or self.name

    @property
    def rank_tags(self) -> tuple[int, ...] | None:
        """The 13 tags by rank (A, 2..9, T, J, Q, K) when every suit of a rank has the same
        tag, else None (a count by card code)."""
        out = []
        for r in range(13):
            same = set(self.tags[r * 4 : r * 4 + 4])
            if len(same) != 1:
                return None
            out.append(same.pop())
        return tuple(out)

    @property
    def per_deck(self) -> int:
        """The sum of the tags over one deck (0: a balanced count)."""
        return sum(self.tags)

    @property
    def balanced(self) -> bool:
        """True when the tags sum to zero over a deck."""
        return self.per_deck == 0

    def initial_running_count(self, decks: int) -> int:
        """The running count a counter starts from after the shuffle: 0 for a balanced
        count; for an unbalanced one ``-per_deck * (decks - 1)`` (KO's ``4 - 4 * decks``:
        Vancura and Fuchs), so its key counts hold for any number of decks."""
        return 0 if self.balanced else -self.per_deck * (decks - 1)

    @property
    def index_mode(self) -> str:
        """How the count's index is read: its ``mode`` ("running" for KO, built so; a
        wager's own count stays "true" even where rounding its tags left them a card or two
        off balance)."""
        return self.mode

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        ranks = self.rank_tags
        return {
            "name": self.name,
            "mode": self.index_mode,
            "scale": self.scale,
            "balanced": self.balanced,
            "tags": dict(zip(RANK_LETTERS, ranks, strict=True))
            if ranks is not None
            else list(self.tags),
            "source": self.source,
        }


def rank_count(
    name: str,
    tags: Sequence[int],
    *,
    source: str = "",
    scale: int = 1,
    mode: str = "true",
    title: str = "",
) -> Count:
    """A point count from 13 tags by rank (A, 2..9, T, J, Q, K) or 10 (A, 2..9, ten-valued).
    Raises :class:`CountError` for another length or a non-integer tag."""
    t = tuple(tags)
    if len(t) == 10:
        t = _by_rank(t)
    if len(t) != 13:
        raise CountError(
            f"count {name}: give 13 tags (A, 2..9, T, J, Q, K) or 10 (A, 2..9, ten), got {len(t)}"
        )
    return Count(name, tuple(t[c // 4] for c in range(52)), mode, scale, source, title)


def code_count(name: str, tags: Sequence[int], *, source: str = "", scale: int = 1) -> Count:
    """A point count from 52 tags, one per card code ``rank * 4 + suit`` (suits clubs,
    diamonds, hearts, spades): a count that tells suits apart.  Raises :class:`CountError`
    for another length."""
    return Count(name, tuple(tags), "true", scale, source)


def suit_count() -> Count:
    """The suit-imbalance count of flush bets (see the module docstring)."""
    return Count(
        "suit",
        (0,) * 52,
        "suit",
        1,
        "E. Jacobson, suit-imbalance count for 21+3 (excess cards of the richest suit per "
        "deck remaining)",
    )


BUILTIN: dict[str, Count] = {
    c.name: c
    for c in (
        rank_count(
            "hilo",
            HI_LO,
            title="Hi-Lo",
            source="Hi-Lo: H. Dubner (1963); P. Griffin, The Theory of Blackjack, ch. 4",
        ),
        rank_count(
            "ko",
            (-1, 1, 1, 1, 1, 1, 1, 0, 0, -1),
            title="KO",
            source="Knock-Out (KO): O. Vancura and K. Fuchs, Knock-Out Blackjack (1998); "
            "unbalanced, read as a running count",
            mode="running",
        ),
        rank_count(
            "hiopt1",
            (0, 0, 1, 1, 1, 1, 0, 0, 0, -1),
            title="Hi-Opt I",
            source="Hi-Opt I: C. Einstein (1968); L. Humble and C. Cooper, The World's "
            "Greatest Blackjack Book (1980)",
        ),
        rank_count(
            "hiopt2",
            (0, 1, 1, 2, 2, 1, 1, 0, 0, -2),
            title="Hi-Opt II",
            source="Hi-Opt II: L. Humble and C. Cooper, The World's Greatest Blackjack Book (1980)",
        ),
        rank_count(
            "omega2",
            (0, 1, 1, 2, 2, 2, 1, 0, -1, -2),
            title="Omega II",
            source="Omega II: B. Carlson, Blackjack for Blood (1992)",
        ),
        rank_count(
            "zen",
            (-1, 1, 1, 2, 2, 2, 1, 0, 0, -2),
            title="Zen",
            source="Zen: A. Snyder, Blackbelt in Blackjack (1983)",
        ),
        rank_count(
            "halves",
            (-2, 1, 2, 2, 3, 2, 1, 0, -1, -2),
            title="Wong Halves",
            scale=2,
            source="Wong Halves: S. Wong, Professional Blackjack (1975); the half tags "
            "doubled (scale 2: the book's count is the stored one over 2)",
        ),
        suit_count(),
    )
}
"""The built-in counts by name (see the module docstring for their tags and sources)."""
COUNT_CHOICES = (*BUILTIN, "eor")
"""What ``--count`` accepts: a built-in count, or ``eor`` (the wager's own best linear
count)."""


def balanced_round(values: Sequence[float]) -> tuple[int, ...]:
    """``values`` (summing to zero) rounded to integers that still sum to zero, by largest
    remainders (Hamilton's method): each value floored, then +1 to the values with the
    largest fractional parts (ties to the earlier rank) until the sum is zero.  Each
    integer lies within 1 of its value."""
    floors = [math.floor(v) for v in values]
    give = round(sum(values) - sum(floors))
    order = sorted(range(len(values)), key=lambda i: (-(values[i] - floors[i]), i))
    for i in order[: max(give, 0)]:
        floors[i] += 1
    return tuple(floors)


def eor_count(wager: Any, decks: int, *, level: int = 2, rules: Any | None = None) -> Count:
    """The best linear count of ``wager`` (a card-decided :class:`feltlab.WagerType`, or the
    main wager given ``rules``) for a ``decks``-deck shoe: its effects of removal
    (:func:`feltlab.math.eor.side_bet_eor`; the main wager's under the table strategy,
    :func:`feltlab.math.eor.main_eor`) centred, scaled so the largest magnitude is ``level``
    and rounded to integers by largest remainders (:func:`balanced_round`), so the count
    stays balanced and its true count means what a true count means (rounding each tag alone,
    the ``integer`` column of ``feltlab math WAGER --eor``, can leave it several points a deck
    off balance: Lucky Ladies' +8).  Raises :class:`feltlab.errors.WagerError` for a side
    wager decided by play (no effects of removal by card), :class:`CountError` for the main
    wager without ``rules`` or a wager no rank moves."""
    if wager.name == "main":
        if rules is None:
            raise CountError(
                "the main wager's own count needs the rules: give them, or --count hilo"
            )
        e = main_eor(rules.replace(decks=decks), "table")
    else:
        e = side_bet_eor(wager, decks)
    if not any(e.best_count):
        raise CountError(
            f"{wager.name}: every rank has the same effect of removal; no linear count tracks "
            "it (try --count suit for a wager decided by suits)"
        )
    tags = balanced_round([level * x for x in e.best_count])
    return rank_count(
        f"eor:{wager.name}",
        tags,
        title=f"{wager.name}'s best linear count",
        source=f"best linear count of {wager.name}'s effects of removal, {decks} decks "
        f"(Griffin, ch. 4), scaled to -{level}..{level}, rounded by largest remainders",
    )


TAGS_EXAMPLE = "tags:-1,1,1,1,1,1,0,0,0,-1 (Hi-Lo)"
"""How a count given by its tags is written (:func:`tags_count`)."""


def tags_count(spec: str) -> Count:
    """A count given on the command line by its tags: ``tags:A,2,...,9,T,J,Q,K`` (13
    integers) or ``tags:A,2,...,9,T`` (10, the ten's tag for J, Q and K), each within
    :data:`MAX_TAG`.  Named ``tags +a,+b,...``.  Raises :class:`CountError` naming the
    expected form."""
    body = spec.strip()[len("tags:") :]
    try:
        tags = tuple(int(p) for p in body.split(","))
    except ValueError:
        tags = ()
    if len(tags) not in (10, 13) or any(abs(t) > MAX_TAG for t in tags):
        raise CountError(
            f"count {spec!r}: give 13 integer tags (A, 2..9, T, J, Q, K) or 10 (A, 2..9, ten) "
            f"in -{MAX_TAG}..{MAX_TAG}, e.g. {TAGS_EXAMPLE}"
        )
    name = "tags " + ",".join(f"{t:+d}" for t in tags)
    return rank_count(name, tags, source="tags given on the command line")


def builtin_count(name: str) -> Count:
    """The built-in count ``name`` (case-insensitive; "hi-lo" and "wong-halves" are
    accepted).  Raises :class:`CountError` naming the known counts."""
    key = name.strip().lower().replace("-", "").replace("_", "")
    key = {
        "wonghalves": "halves",
        "omegaii": "omega2",
        "hioptii": "hiopt2",
        "hiopti": "hiopt1",
    }.get(key, key)
    if key not in BUILTIN:
        raise CountError(
            f"unknown count {name!r}; choose from {', '.join(COUNT_CHOICES)} or tags:A,2,...,K"
        )
    return BUILTIN[key]


def resolve_count(
    name: str, wager: Any | None = None, decks: int = 6, *, rules: Any | None = None
) -> Count:
    """``name`` as :func:`builtin_count`; "eor": ``wager``'s own best linear count for
    ``decks`` decks (:func:`eor_count`; the main wager's needs ``rules``); or
    "tags:A,2,...,K" (:func:`tags_count`).  Raises :class:`CountError` naming the problem."""
    key = name.strip().lower()
    if key == "eor":
        if wager is None:
            raise CountError("--count eor needs a wager: name one, or choose a built-in count")
        return eor_count(wager, decks, rules=rules)
    if key.startswith("tags:"):
        return tags_count(name)
    return builtin_count(name)


def running_count(count: Count, seen: Sequence[int], decks: int = 1) -> int:
    """The running count after the card codes ``seen`` (0..51), from the initial running
    count (:meth:`Count.initial_running_count`).  Raises :class:`CountError` for a code
    outside 0..51."""
    total = count.initial_running_count(decks)
    for c in seen:
        if not 0 <= c < 52:
            raise CountError(f"card code {c} outside 0..51")
        total += count.tags[c]
    return total


def true_count(running: int, cards_remaining: int) -> float:
    """``running * 52 / cards_remaining``: the running count per deck remaining.  Raises
    :class:`CountError` when no card remains."""
    if cards_remaining < 1:
        raise CountError("no card remains: the true count is undefined")
    return running * 52 / cards_remaining


def suit_imbalance(unseen: Sequence[int]) -> float:
    """The suit-imbalance count from the cards left of each suit (4 counts: clubs, diamonds,
    hearts, spades): ``max_s (52 * unseen_s - 13 * unseen) / unseen``.  Raises
    :class:`CountError` for another length or an empty shoe."""
    if len(unseen) != 4:
        raise CountError(f"give the cards left of each of the 4 suits, got {len(unseen)}")
    n = sum(unseen)
    if n < 1:
        raise CountError("no card remains: the suit imbalance is undefined")
    return max((52 * u - 13 * n) / n for u in unseen)


def bucket_value(value: float, resolution: int) -> int:
    """The bucket value of a count ``value`` at ``resolution`` buckets per unit:
    ``floor(value * resolution)`` (the true count floored, at resolution 1)."""
    return math.floor(value * resolution)
