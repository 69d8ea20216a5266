"""The tournament definition (Division XI rule 3.2): the conditions of entry the casino
operator determines before a tournament, read from TOML or a dict and validated field by field
(:class:`feltlab.errors.DefinitionError` names the field).  See the package docstring for the
units and the assumptions where Division XI is silent."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from feltlab.errors import (
    DefinitionError,
    FeltlabError,
    TournamentError,
)
from feltlab.rules import PRESETS, Rules

MIN_TABLE = 4
"""Fewest players at a table at the commencement of a session (rule 5.4)."""
MAX_TABLE = 7
"""Most players at a table at the commencement of a session (rule 5.4)."""
REFUND_NOTICE_DAYS = 7
"""A withdrawal at least this many days before play begins is refunded (rule 3.5(a))."""
BASIS_POINTS = 10_000
"""The prize shares add up to this many basis points (the whole pool)."""


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


MAX_SESSION_COUNT = 10_000
"""The most rounds or shoes a session or play-off may last."""


def _length(sec: Mapping[str, Any], prefix: str) -> SessionLength:
    kind = _enum(sec, f"{prefix}.length", LengthKind, LengthKind.ROUNDS)
    if "length" not in sec:
        raise DefinitionError(f"{prefix}.length", "missing: 'rounds', 'shoes' or 'time'")
    if kind is LengthKind.TIME:
        minutes = _get(sec, f"{prefix}.minutes", (int, float), None)
        if minutes is None:
            raise DefinitionError(f"{prefix}.minutes", "missing: length = 'time' needs minutes")
        if not 0 < minutes <= 24 * 60:
            raise DefinitionError(f"{prefix}.minutes", f"must be in (0, 1440], got {minutes!r}")
        return SessionLength(kind, round(float(minutes) * 60))
    key = kind.value
    if key not in sec:
        raise DefinitionError(f"{prefix}.{key}", f"missing: length = '{key}' needs {key}")
    count = _int(f"{prefix}.{key}", sec[key])
    if not 1 <= count <= MAX_SESSION_COUNT:
        raise DefinitionError(f"{prefix}.{key}", f"must be in 1..{MAX_SESSION_COUNT}, got {count}")
    return SessionLength(kind, count)


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
    if not 0 <= lim.time_limit_seconds <= 3600:  # also refuses NaN
        raise DefinitionError(
            "wagers.time_limit_seconds", "must be 0 (none) to 3600 seconds (4.11)"
        )
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
