"""Tournament Blackjack (Division XI): the tournament definition, entry, prize pool and prizes.

This module holds the conditions of entry the casino operator determines before a tournament
(Division XI rule 3.2), the entry ledger (rules 3.1, 3.3-3.6), the prize pool (rule 3.4) and the
allocation of the prize list to the final placings (rules 6.5-6.8).  Play at the tables is in
:mod:`feltlab.tournament_session`; the whole tournament, table by table and session by session,
in :mod:`feltlab.tournament_run`.

Units: money (entry fees, prize pool, prizes, chip face values) is integer cents; tournament
chips are integer chip units (rule 4.1: every wager is made with tournament chips).

A definition is read from TOML (:func:`load_definition`) or a dict (:meth:`TournamentDefinition.
from_dict`) and validated field by field: a missing or contradictory field raises
:class:`DefinitionError` naming the field (``wagers.maximum``, ``prizes.shares``...).

Assumptions where Division XI is silent (each is repeated where it applies):

- The prize list is a list of shares of the pool in basis points (1/100 of a percent) that add
  up to 10,000, so that everything in the pool is paid out (rule 3.4: the pool is "for
  distribution to the winning players").  Each prize is rounded down to the cent; the cents
  left over go to the winner.
- The operator's additions to the pool (rule 3.4: cash, goods or services) are counted at the
  value in cents the operator declares for them.
- The placings of the prize list come from the final table only (rule 6.5: "the other players
  at the table"), so the prize list may not be longer than the smallest possible final field.
- A prize that no player can take (the final had fewer eligible players than places, e.g. after
  a disqualification) goes to the winner, so that the pool is always paid out in full.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from feltlab.errors import FeltlabError
from feltlab.rules import PRESETS, Rules

MIN_TABLE = 4
"""Fewest players at a table at the commencement of a session (rule 5.4)."""
MAX_TABLE = 7
"""Most players at a table at the commencement of a session (rule 5.4)."""
REFUND_NOTICE_DAYS = 7
"""A withdrawal at least this many days before play begins is refunded (rule 3.5(a))."""
BASIS_POINTS = 10_000
"""The prize shares add up to this many basis points (the whole pool)."""


# ===================================================================== errors
class TournamentError(FeltlabError, ValueError):
    """A tournament operation Division XI does not allow; the message names the rule and the
    fix."""


class DefinitionError(TournamentError):
    """A tournament definition with a missing or contradictory field.  ``field`` is the dotted
    name of the field (e.g. ``"wagers.maximum"``)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


class EntryError(TournamentError):
    """An application, withdrawal, refusal, disqualification or cancellation refused
    (rules 3.2(e), 3.3, 3.5, 3.6)."""


class TournamentWagerError(TournamentError):
    """A wager that cannot be accepted at all (not in tournament chips, rule 4.1; on another
    player's box, rule 5.5; on a void box, rule 4.9)."""


# ===================================================================== the definition
class LengthKind(StrEnum):
    """How a session's length is set (rule 3.2(f) and the definition of "Session")."""

    ROUNDS = "rounds"
    SHOES = "shoes"
    TIME = "time"


class OneLeft(StrEnum):
    """When the "only one player remaining" of the definition of "Session" (a) is reached:
    the one player left holding ``MINIMUM`` (at least the minimum wager in tournament chips)
    or ``ANY`` tournament chips.  The rule allows either "in accordance with the rules"; the
    operator states which in the conditions of entry (default ``MINIMUM``)."""

    MINIMUM = "minimum"
    ANY = "any"


@dataclass(frozen=True)
class WagerLimits:
    """The sign at each table (rules 3.2(d), 4.5, 4.6, 4.11), in chip units.

    ``increment``: wagers are multiples of it (rule 4.6; it may not exceed the minimum; 1 means
    no increment, as rule 4.5 says "unless stated on the sign").  Assumption: the minimum and
    maximum are themselves multiples of the increment (otherwise the sign contradicts itself).
    ``time_limit_seconds``: the period within which a wager must be made (rule 4.11); 0 for
    none.
    """

    minimum: int
    maximum: int
    increment: int = 1
    time_limit_seconds: float = 0.0


@dataclass(frozen=True)
class SessionLength:
    """A session's length (rule 3.2(f)): ``count`` rounds, ``count`` shoes, or ``count``
    seconds of play (definition of "Session" (b), (c))."""

    kind: LengthKind
    count: int

    def describe(self) -> str:
        """``"25 rounds"``, ``"2 shoes"``, ``"1800 s"``."""
        unit = {"rounds": "rounds", "shoes": "shoes", "time": "s"}[self.kind.value]
        return f"{self.count} {unit}"


@dataclass(frozen=True)
class Stage:
    """One session of the tournament (all its tables play it): ``advance_per_table`` players
    of each table proceed to the next session (rules 6.2-6.4; 1 = the winner of the table,
    rule 6.2; more is the operator's discretion, rule 6.3).  The last stage is the final."""

    name: str
    advance_per_table: int = 1


@dataclass(frozen=True)
class Addition:
    """Value the operator adds to the prize pool (rule 3.4): ``kind`` is ``"cash"``,
    ``"goods"`` or ``"services"``, ``value`` its declared value in cents."""

    kind: str
    description: str
    value: int


@dataclass(frozen=True)
class Timing:
    """The simulated clock of a session determined by time (definition of "Session" (b)):
    each wager takes ``wager_seconds`` (unless a betting strategy says otherwise), each card
    ``card_seconds`` and each settlement ``settle_seconds``.  Assumption: Division XI has no
    clock model; this one makes time-limited sessions reproducible."""

    wager_seconds: float = 5.0
    card_seconds: float = 3.0
    settle_seconds: float = 10.0


@dataclass(frozen=True)
class TournamentDefinition:
    """The conditions of entry (rule 3.2), validated on construction.

    ``entry_fee`` (cents, rules 3.1, 3.2(b)); ``chips_per_session`` and ``gratuitous``
    (rule 3.2(c), 2.3, 6.9) with ``chip_face_value`` (cents per chip when chips are sold at face
    value, rule 4.3); ``limits`` (rule 3.2(d)); ``min_players``/``max_players`` (rule 3.2(e));
    ``session`` and ``playoff`` lengths and the chips issued for a play-off (rule 3.2(f); 4.10
    caps them at ``chips_per_session``); ``stages`` and ``prize_shares`` (rule 3.2(g)); the
    operator's ``additions`` (rule 3.4).  ``rules`` are the Division II table rules (rule 2.1).
    """

    name: str
    entry_fee: int
    chips_per_session: int
    limits: WagerLimits
    min_players: int
    max_players: int
    session: SessionLength
    playoff: SessionLength
    stages: tuple[Stage, ...]
    prize_shares: tuple[int, ...]
    gratuitous: bool = True
    chip_face_value: int = 0
    playoff_chips: int = 0
    additions: tuple[Addition, ...] = ()
    one_left: OneLeft = OneLeft.MINIMUM
    rules: Rules = field(default_factory=Rules)
    timing: Timing = field(default_factory=Timing)

    def __post_init__(self) -> None:
        if self.playoff_chips == 0:
            object.__setattr__(self, "playoff_chips", self.chips_per_session)
        _validate(self)

    # ---------------------------------------------------------------- derived
    @property
    def final_stage(self) -> Stage:
        """The last stage: the final (rule 6.5)."""
        return self.stages[-1]

    def fields_by_stage(self, entrants: int) -> list[int]:
        """Players at the commencement of each stage for ``entrants`` players, if nobody is
        disqualified (rules 5.4, 6.3, 6.4)."""
        out = []
        n = entrants
        for i, stage in enumerate(self.stages):
            out.append(n)
            if i < len(self.stages) - 1:
                n = tables_for(n) * stage.advance_per_table
        return out

    def prize_amounts(self, pool: int) -> list[int]:
        """The prize of each place for a pool of ``pool`` cents (rule 3.2(g)): each share
        rounded down to the cent, the cents left over added to the winner's prize (an
        assumption, so that the whole pool is paid out)."""
        amounts = [pool * s // BASIS_POINTS for s in self.prize_shares]
        amounts[0] += pool - sum(amounts)
        return amounts

    @property
    def additions_value(self) -> int:
        """Cents the operator added to the pool (rule 3.4)."""
        return sum(a.value for a in self.additions)

    # ---------------------------------------------------------------- I/O
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TournamentDefinition:
        """A definition from the TOML layout of ``examples/tournament.toml``; raises
        :class:`DefinitionError` naming the first missing or wrong field."""
        t = _section(data, "tournament")
        entry = _section(data, "entry")
        chips = _section(data, "chips")
        wagers = _section(data, "wagers")
        session = _section(data, "session")
        playoff = _section(data, "playoff")
        prizes = _section(data, "prizes")
        timing = data.get("timing", {})
        if not isinstance(timing, Mapping):
            raise DefinitionError("timing", "must be a table")
        preset = _get(t, "tournament.rules", str, "nz")
        if preset not in PRESETS:
            raise DefinitionError(
                "tournament.rules", f"unknown rules preset {preset!r}; choose {sorted(PRESETS)}"
            )
        rules = PRESETS[preset]
        decks = t.get("decks")
        if decks is not None:
            try:
                rules = rules.replace(decks=_int("tournament.decks", decks))
            except FeltlabError as exc:
                raise DefinitionError("tournament.decks", str(exc)) from None
        raw_stages = data.get("stages")
        if not isinstance(raw_stages, list) or not raw_stages:
            raise DefinitionError(
                "stages", "missing: list at least one [[stages]] table (the last is the final)"
            )
        stages = []
        for i, s in enumerate(raw_stages):
            if not isinstance(s, Mapping):
                raise DefinitionError(f"stages[{i}]", "must be a table")
            stages.append(
                Stage(
                    _get(s, f"stages[{i}].name", str, f"session {i + 1}"),
                    _get(s, f"stages[{i}].advance_per_table", int, 1),
                )
            )
        additions = []
        for i, a in enumerate(prizes.get("additions", [])):
            if not isinstance(a, Mapping):
                raise DefinitionError(f"prizes.additions[{i}]", "must be a table")
            kind = _get(a, f"prizes.additions[{i}].kind", str, "cash")
            additions.append(
                Addition(
                    kind,
                    _get(a, f"prizes.additions[{i}].description", str, kind),
                    _req(a, f"prizes.additions[{i}].value", int),
                )
            )
        shares = prizes.get("shares")
        if not isinstance(shares, list) or not shares:
            raise DefinitionError(
                "prizes.shares", "missing: give the share of each place in basis points"
            )
        return cls(
            name=_get(t, "tournament.name", str, "tournament"),
            entry_fee=_req(t, "tournament.entry_fee", int),
            chips_per_session=_req(chips, "chips.per_session", int),
            gratuitous=_get(chips, "chips.gratuitous", bool, True),
            chip_face_value=_get(chips, "chips.face_value", int, 0),
            limits=WagerLimits(
                _req(wagers, "wagers.minimum", int),
                _req(wagers, "wagers.maximum", int),
                _get(wagers, "wagers.increment", int, 1),
                float(_get(wagers, "wagers.time_limit_seconds", (int, float), 0)),
            ),
            min_players=_req(entry, "entry.min_players", int),
            max_players=_req(entry, "entry.max_players", int),
            session=_length(session, "session"),
            playoff=_length(playoff, "playoff"),
            playoff_chips=_get(playoff, "playoff.chips", int, 0),
            stages=tuple(stages),
            prize_shares=tuple(_int(f"prizes.shares[{i}]", v) for i, v in enumerate(shares)),
            additions=tuple(additions),
            one_left=_enum(session, "session.ends_when_one_holds", OneLeft, OneLeft.MINIMUM),
            rules=rules,
            timing=Timing(
                float(_get(timing, "timing.wager_seconds", (int, float), 5.0)),
                float(_get(timing, "timing.card_seconds", (int, float), 3.0)),
                float(_get(timing, "timing.settle_seconds", (int, float), 10.0)),
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary of the conditions of entry (rule 3.7: what applicants
        are notified of)."""
        return {
            "name": self.name,
            "entry_fee": self.entry_fee,
            "chips_per_session": self.chips_per_session,
            "gratuitous": self.gratuitous,
            "chip_face_value": self.chip_face_value,
            "limits": {
                "minimum": self.limits.minimum,
                "maximum": self.limits.maximum,
                "increment": self.limits.increment,
                "time_limit_seconds": self.limits.time_limit_seconds,
            },
            "players": [self.min_players, self.max_players],
            "session": self.session.describe(),
            "playoff": self.playoff.describe(),
            "playoff_chips": self.playoff_chips,
            "stages": [[s.name, s.advance_per_table] for s in self.stages],
            "prize_shares": list(self.prize_shares),
            "additions": [[a.kind, a.description, a.value] for a in self.additions],
            "one_left": self.one_left.value,
        }


def tables_for(players: int) -> int:
    """How many tables seat ``players`` with 4 to 7 at each (rule 5.4): as few as possible,
    ``ceil(players / 7)`` (any count from 4 up can be split so; raises
    :class:`TournamentError` below 4)."""
    if players < MIN_TABLE:
        raise TournamentError(
            f"{players} players cannot fill a table: rule 5.4 needs {MIN_TABLE} to {MAX_TABLE} "
            "players at each table at the commencement of a session"
        )
    return math.ceil(players / MAX_TABLE)


def load_definition(path: str | Path) -> TournamentDefinition:
    """Read and validate a tournament definition TOML file (stdlib ``tomllib``); raises
    :class:`DefinitionError` naming the field, or naming the file when it is unreadable."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DefinitionError(str(p), f"cannot read the definition file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise DefinitionError(
            str(p), f"not UTF-8 text (byte {exc.start}): save it as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(str(p), f"not valid TOML: {exc}") from None
    return TournamentDefinition.from_dict(data)


# ----------------------------------------------------------------------- parsing helpers
def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    sec = data.get(name)
    if not isinstance(sec, Mapping):
        raise DefinitionError(name, f"missing: add a [{name}] table")
    return sec


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DefinitionError(name, f"must be an integer, got {value!r}")
    return value


def _req(sec: Mapping[str, Any], name: str, kind: type[int]) -> int:
    key = name.rsplit(".", 1)[-1]
    if key not in sec:
        raise DefinitionError(name, "missing: this field is required (rule 3.2)")
    return _int(name, sec[key])


def _get(sec: Mapping[str, Any], name: str, kind: Any, default: Any) -> Any:
    key = name.rsplit(".", 1)[-1]
    if key not in sec:
        return default
    value = sec[key]
    if kind is int:
        return _int(name, value)
    if kind is bool and not isinstance(value, bool):
        raise DefinitionError(name, f"must be true or false, got {value!r}")
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise DefinitionError(name, f"has the wrong type: {value!r}")
    return value


def _enum(sec: Mapping[str, Any], name: str, kind: type[StrEnum], default: Any) -> Any:
    value = _get(sec, name, str, default.value)
    try:
        return kind(value)
    except ValueError:
        raise DefinitionError(name, f"{value!r} is not one of {[m.value for m in kind]}") from None


def _length(sec: Mapping[str, Any], prefix: str) -> SessionLength:
    kind = _enum(sec, f"{prefix}.length", LengthKind, LengthKind.ROUNDS)
    if "length" not in sec:
        raise DefinitionError(f"{prefix}.length", "missing: 'rounds', 'shoes' or 'time'")
    if kind is LengthKind.TIME:
        minutes = _get(sec, f"{prefix}.minutes", (int, float), None)
        if minutes is None:
            raise DefinitionError(f"{prefix}.minutes", "missing: length = 'time' needs minutes")
        return SessionLength(kind, round(float(minutes) * 60))
    key = kind.value
    if key not in sec:
        raise DefinitionError(f"{prefix}.{key}", f"missing: length = '{key}' needs {key}")
    return SessionLength(kind, _int(f"{prefix}.{key}", sec[key]))


def _validate(d: TournamentDefinition) -> None:
    """Every check of a definition; the first failure raises :class:`DefinitionError`."""
    if not d.name:
        raise DefinitionError("tournament.name", "must not be empty")
    if d.entry_fee < 0:
        raise DefinitionError("tournament.entry_fee", "must be 0 or more cents (rule 3.1)")
    if d.chips_per_session < 1:
        raise DefinitionError("chips.per_session", "must be at least 1 chip (rule 3.2(c))")
    if d.gratuitous and d.chip_face_value != 0:
        raise DefinitionError(
            "chips.face_value", "gratuitous chips are not sold (rule 4.3): leave face_value 0"
        )
    if not d.gratuitous and d.chip_face_value < 1:
        raise DefinitionError(
            "chips.face_value",
            "chips issued at their face value (rule 3.2(c)) need a face value of 1 cent or more",
        )
    lim = d.limits
    if lim.minimum < 1:
        raise DefinitionError("wagers.minimum", "must be at least 1 chip (rule 3.2(d))")
    if lim.maximum < lim.minimum:
        raise DefinitionError(
            "wagers.maximum",
            f"{lim.maximum} is below the minimum {lim.minimum} (rule 3.2(d)): raise it",
        )
    if not 1 <= lim.increment <= lim.minimum:
        raise DefinitionError(
            "wagers.increment",
            f"{lim.increment} must be 1 to the minimum wager {lim.minimum} (rule 4.6)",
        )
    if lim.minimum % lim.increment or lim.maximum % lim.increment:
        raise DefinitionError(
            "wagers.increment",
            f"the minimum {lim.minimum} and maximum {lim.maximum} must be multiples of the "
            f"increment {lim.increment} (rule 4.6)",
        )
    if lim.time_limit_seconds < 0:
        raise DefinitionError("wagers.time_limit_seconds", "must be 0 (none) or more (4.11)")
    if lim.minimum > d.chips_per_session:
        raise DefinitionError(
            "wagers.minimum",
            f"{lim.minimum} is more than the {d.chips_per_session} chips a player holds at the "
            "commencement of a session (rules 3.2(c), 4.7): nobody could wager",
        )
    if not 1 <= d.playoff_chips <= d.chips_per_session:
        raise DefinitionError(
            "playoff.chips",
            f"{d.playoff_chips} must be 1 to chips.per_session ({d.chips_per_session}) "
            "(rule 4.10: not more than the chips held at the commencement of the session)",
        )
    if d.playoff_chips < lim.minimum:
        raise DefinitionError(
            "playoff.chips", f"{d.playoff_chips} is below the minimum wager {lim.minimum}"
        )
    for name, length in (("session", d.session), ("playoff", d.playoff)):
        if length.count < 1:
            key = "minutes" if length.kind is LengthKind.TIME else length.kind.value
            raise DefinitionError(f"{name}.{key}", "must be positive (rule 3.2(f))")
    if d.min_players < MIN_TABLE:
        raise DefinitionError(
            "entry.min_players",
            f"{d.min_players} players cannot fill a table: rule 5.4 needs at least {MIN_TABLE}",
        )
    if d.max_players < d.min_players:
        raise DefinitionError(
            "entry.max_players",
            f"{d.max_players} is below entry.min_players {d.min_players} (rule 3.2(e))",
        )
    for i, s in enumerate(d.stages):
        if s.advance_per_table < 1 and i < len(d.stages) - 1:
            raise DefinitionError(
                f"stages[{i}].advance_per_table", "at least one player per table proceeds (6.4)"
            )
        if s.advance_per_table > MAX_TABLE - 1:
            raise DefinitionError(
                f"stages[{i}].advance_per_table",
                f"{s.advance_per_table}: a table of {MIN_TABLE} to {MAX_TABLE} players must "
                "leave someone out",
            )
    if len(d.prize_shares) < 1:
        raise DefinitionError("prizes.shares", "give at least the winner's share (rule 3.2(g))")
    if any(s < 0 for s in d.prize_shares):
        raise DefinitionError("prizes.shares", "shares must be 0 or more basis points")
    if sum(d.prize_shares) != BASIS_POINTS:
        raise DefinitionError(
            "prizes.shares",
            f"add up to {sum(d.prize_shares)} basis points; they must add up to {BASIS_POINTS} "
            "so the whole prize pool is distributed (rule 3.4)",
        )
    if list(d.prize_shares) != sorted(d.prize_shares, reverse=True):
        raise DefinitionError("prizes.shares", "a lower place may not pay more than a higher one")
    if len(d.prize_shares) > d.min_players:
        raise DefinitionError(
            "prizes.shares",
            f"the prize list has {len(d.prize_shares)} places, longer than the field of "
            f"entry.min_players={d.min_players}",
        )
    for a in d.additions:
        if a.kind not in ("cash", "goods", "services"):
            raise DefinitionError(
                "prizes.additions.kind", f"{a.kind!r}: rule 3.4 allows cash, goods or services"
            )
        if a.value < 0:
            raise DefinitionError("prizes.additions.value", "must be 0 or more cents")
    # the field through the stages, for every number of entrants allowed (rules 5.4, 6.5)
    last = len(d.stages) - 1
    for n in range(d.min_players, d.max_players + 1):
        for i, players in enumerate(d.fields_by_stage(n)):
            if players < MIN_TABLE:
                raise DefinitionError(
                    f"stages[{i - 1}].advance_per_table",
                    f"with {n} entrants only {players} players reach {d.stages[i].name!r}; "
                    f"rule 5.4 needs at least {MIN_TABLE} at a table: advance more players",
                )
            if i == last and players > MAX_TABLE:
                where = f"stages[{i - 1}].advance_per_table" if i else "entry.max_players"
                raise DefinitionError(
                    where,
                    f"with {n} entrants {players} players reach the final "
                    f"{d.stages[i].name!r}; the final is played at one table of at most "
                    f"{MAX_TABLE} (rules 5.4, 6.5): add a stage or advance fewer",
                )
            if i == last and len(d.prize_shares) > players:
                raise DefinitionError(
                    "prizes.shares",
                    f"the prize list has {len(d.prize_shares)} places but with {n} entrants "
                    f"only {players} players play the final (rule 6.5 places them): shorten it",
                )


# ===================================================================== entry (3.1-3.6)
class EntryStatus(StrEnum):
    """Where an application stands."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    WITHDRAWN = "withdrawn"
    DISQUALIFIED = "disqualified"
    CANCELLED = "cancelled"


@dataclass
class Entrant:
    """One applicant: ``name`` (rule 5.3), the ``fee_paid`` and ``refunded`` cents, and the
    ``status``."""

    name: str
    fee_paid: int
    status: EntryStatus = EntryStatus.ACCEPTED
    refunded: int = 0
    reason: str = ""


class Entry:
    """The entry ledger of one tournament (rules 3.1-3.7).

    Applications are accepted up to ``max_players`` (rule 3.2(e)); the operator may refuse any
    (rule 3.3(a)); a player may withdraw, refunded only at least 7 days before play begins
    (rule 3.5(a)); a disqualified player is never refunded (rule 3.6); before play begins the
    operator may cancel for lack of participation, refunding every fee (rules 3.3(d),
    3.5(b)).  The prize pool is every entry fee kept plus the operator's additions (rule 3.4).

    Assumption: an application the operator refuses is refunded in full (the applicant never
    became a player, so rule 3.5 does not apply to it).
    """

    def __init__(self, definition: TournamentDefinition) -> None:
        self.definition = definition
        self.entrants: dict[str, Entrant] = {}
        self.started = False
        self.cancelled = False

    def _open(self, what: str) -> None:
        if self.cancelled:
            raise EntryError(f"{what}: the tournament was cancelled (rule 3.3(d))")

    def apply(self, name: str, *, accepted_conditions: bool = True) -> Entrant:
        """Accept ``name``'s application and entry fee (rules 3.1, 3.2(b)).  Refused with
        :class:`EntryError` once play has begun, when the field is full (rule 3.2(e)), for a
        name already entered, or when the applicant has not endorsed the conditions (3.7)."""
        self._open("apply")
        if self.started:
            raise EntryError(f"{name!r} applied after play began: entries close at commencement")
        if not name:
            raise EntryError("an applicant gives a name for recording purposes (rule 5.3)")
        if name in self.entrants:
            raise EntryError(f"{name!r} has already applied: each applicant enters once")
        if not accepted_conditions:
            raise EntryError(
                f"{name!r} has not endorsed the conditions of play on the application form "
                "(rule 3.7): have the applicant endorse them"
            )
        if len(self.players) >= self.definition.max_players:
            raise EntryError(
                f"the field is full at entry.max_players={self.definition.max_players} "
                f"(rule 3.2(e)): {name!r} cannot enter"
            )
        e = Entrant(name, self.definition.entry_fee)
        self.entrants[name] = e
        return e

    def _get(self, name: str) -> Entrant:
        try:
            return self.entrants[name]
        except KeyError:
            raise EntryError(f"{name!r} has not applied to this tournament") from None

    def refuse(self, name: str, reason: str = "") -> Entrant:
        """The operator refuses ``name``'s application (rule 3.3(a)); the fee is returned
        (assumption, see the class docstring).  Only before play begins."""
        self._open("refuse")
        e = self._get(name)
        if self.started:
            raise EntryError("applications are refused before play begins (rule 3.3(a))")
        if e.status is not EntryStatus.ACCEPTED:
            raise EntryError(f"{name!r} is {e.status.value}, not an accepted application")
        e.status = EntryStatus.REFUSED
        e.refunded = e.fee_paid
        e.reason = reason or "refused by the operator (rule 3.3(a))"
        return e

    def withdraw(self, name: str, *, days_before: int) -> Entrant:
        """``name`` withdraws ``days_before`` days before play begins: refunded in full when
        that is at least 7 (rule 3.5(a)), else not at all (the fee stays in the pool)."""
        self._open("withdraw")
        e = self._get(name)
        if e.status is not EntryStatus.ACCEPTED:
            raise EntryError(f"{name!r} is {e.status.value} and cannot withdraw")
        e.status = EntryStatus.WITHDRAWN
        if days_before >= REFUND_NOTICE_DAYS and not self.started:
            e.refunded = e.fee_paid
            e.reason = f"withdrew {days_before} days before play (rule 3.5(a): refunded)"
        else:
            e.reason = (
                f"withdrew {days_before} days before play: less than {REFUND_NOTICE_DAYS} "
                "days, no refund (rule 3.5(a))"
            )
        return e

    def disqualify(self, name: str, reason: str) -> Entrant:
        """Disqualify ``name`` (rule 3.3(b): failing to comply with the rules, or to attend at
        a designated playing time); the fee is not refunded (rule 3.6)."""
        e = self._get(name)
        if e.status is not EntryStatus.ACCEPTED:
            raise EntryError(f"{name!r} is {e.status.value}, not a player")
        e.status = EntryStatus.DISQUALIFIED
        e.reason = reason
        return e

    def start(self) -> None:
        """Play begins.  Raises :class:`EntryError` when fewer than ``min_players`` are
        accepted: the operator must :meth:`cancel` (rules 3.2(e), 3.3(d))."""
        self._open("start")
        n = len(self.players)
        if n < self.definition.min_players:
            raise EntryError(
                f"only {n} players entered, fewer than entry.min_players="
                f"{self.definition.min_players}: cancel the tournament (rule 3.3(d))"
            )
        self.started = True

    def cancel(self) -> None:
        """Cancel before play begins for lack of participation (rule 3.3(d)); every fee not
        already refunded is refunded (rule 3.5(b): the tournament does not proceed)."""
        if self.started:
            raise EntryError("a tournament is cancelled only prior to its commencement (3.3(d))")
        n = len(self.players)
        if n >= self.definition.min_players:
            raise EntryError(
                f"{n} players entered, enough for entry.min_players="
                f"{self.definition.min_players}: rule 3.3(d) cancels only for lack of "
                "participation"
            )
        self.cancelled = True
        for e in self.entrants.values():
            e.refunded = e.fee_paid
            if e.status is EntryStatus.ACCEPTED:
                e.status = EntryStatus.CANCELLED
                e.reason = "the tournament did not proceed (rule 3.5(b): refunded)"

    @property
    def players(self) -> list[str]:
        """Accepted players still in the tournament, in order of application."""
        return [n for n, e in self.entrants.items() if e.status is EntryStatus.ACCEPTED]

    @property
    def fees_kept(self) -> int:
        """Entry fees received and not refunded (cents)."""
        return sum(e.fee_paid - e.refunded for e in self.entrants.values())

    @property
    def refunds(self) -> dict[str, int]:
        """Cents refunded to each applicant who was refunded."""
        return {n: e.refunded for n, e in self.entrants.items() if e.refunded}

    @property
    def prize_pool(self) -> int:
        """Every entry fee kept plus the operator's additions, in cents (rule 3.4)."""
        return 0 if self.cancelled else self.fees_kept + self.definition.additions_value


# ===================================================================== prizes (6.5-6.8)
@dataclass(frozen=True)
class Award:
    """A prize paid: ``player``, the ``place`` reached, ``amount`` in cents, and for a tie
    (rule 6.8) the ``places`` whose prizes were combined and the players ``shared_with``."""

    place: int
    player: str
    amount: int
    places: tuple[int, ...] = ()
    shared_with: tuple[str, ...] = ()


def allocate_prizes(amounts: Sequence[int], placings: Sequence[Sequence[str]]) -> list[Award]:
    """Pay the prize list ``amounts`` (cents, place 1 first) to ``placings``: groups of
    players in order, each group tied at the next place (a group of one is a single place).

    Rule 6.8: ``k`` players tied for a place share equally that prize combined with the
    ``k - 1`` subsequent prizes (if any); the rule does not apply to the winner or the
    runner-up, who must each be alone in their group (else :class:`TournamentError`: hold the
    play-off of rule 6.6 first).  Cents that do not divide equally go one each to the tied
    players in the order given (their box order, an assumption).  Prizes for places no player
    reached go to the winner (an assumption: the pool is always paid out in full).  Returns
    one :class:`Award` per player placed, including zero amounts after the prize list.
    """
    awards: list[Award] = []
    place = 1
    seen: set[str] = set()
    for group in placings:
        k = len(group)
        if k == 0:
            continue
        if k > 1 and place <= 2:
            raise TournamentError(
                f"{list(group)} are tied for place {place}: rule 6.8 does not apply to the "
                "winner or the runner-up; hold the play-off of rule 6.6 first"
            )
        dup = seen.intersection(group)
        if dup:
            raise TournamentError(f"{sorted(dup)} placed twice: each player is placed once")
        seen.update(group)
        places = tuple(range(place, place + k))
        pot = sum(amounts[p - 1] for p in places if p - 1 < len(amounts))
        share, extra = divmod(pot, k)
        for i, player in enumerate(group):
            awards.append(
                Award(
                    place,
                    player,
                    share + (1 if i < extra else 0),
                    places if k > 1 else (),
                    tuple(p for p in group if p != player) if k > 1 else (),
                )
            )
        place += k
    unclaimed = sum(amounts[place - 1 :])
    if unclaimed and awards:
        first = awards[0]
        awards[0] = Award(first.place, first.player, first.amount + unclaimed)
    return awards
