"""Tournament Blackjack (Division XI): a whole tournament, from entry to prize list.

:func:`run_tournament` takes a :class:`feltlab.tournament.TournamentDefinition`, the
applicants (bots, each with a betting strategy registered through the
``feltlab_register_tournament_strategies`` hook) and a seed, and plays every stage: the entry
ledger and prize pool (3.1-3.6), the seating of each session (3.3(c), 5.2, 5.4), each session
at each table (:class:`feltlab.tournament.SessionTable`), the play-offs where a result
is required (6.2, 6.6, 4.10), advancement (6.3, 6.4), the final placings (6.5-6.7) and the
prizes (6.8).  Every decision is an event of one :class:`TournamentLog`; every shoe, seating
and bot draws from its own ChaCha20 stream derived from the seed, so the same seed gives the
same tournament, event for event.

Assumptions where Division XI is silent:

- Players are allocated to as few tables as rule 5.4 allows (``ceil(n / 7)``), sizes differing
  by at most one, in a seeded random order, taking boxes 0, 1, ... at each table (3.3(c)).
- A player who fails to attend a session (``absent_stage``) is disqualified before the seating
  of that session (3.3(b)(ii)), so the tables are formed from the players present.
- A player disqualified during a session (4.7, 5.10) is out of the tournament and not placed
  (3.6: no refund).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy

from feltlab import native
from feltlab.errors import DefinitionError, EntryError, TournamentError
from feltlab.plugin_manager import collect
from feltlab.seeds import SEED_DERIVATION_VERSION, stream_key
from feltlab.tournament.definition import TournamentDefinition, tables_for
from feltlab.tournament.entry import Entry
from feltlab.tournament.events import TournamentLog
from feltlab.tournament.prizes import Award, allocate_prizes
from feltlab.tournament.results import SessionResult, Standing, contest_groups, resolve
from feltlab.tournament.session import SessionTable
from feltlab.tournament.strategies import BettingStrategy, StrategyRegistry
from feltlab.tournament.table import make_shoe

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Applicant:
    """An applicant (a bot): ``name``, the registered ``strategy`` name, and what the
    operator's records say: ``withdraw_days_before`` (withdrew that many days before play,
    rule 3.5(a)), ``refused`` (rule 3.3(a)), ``absent_stage`` (index of the stage whose playing
    time they fail to attend, rule 3.3(b)(ii))."""

    name: str
    strategy: str
    withdraw_days_before: int | None = None
    refused: bool = False
    absent_stage: int | None = None


@dataclass
class PlayoffRecord:
    """A play-off held (rules 4.10, 6.2, 6.6): its ``label``, players, chips at its
    commencement and conclusion, why it ended, its rounds."""

    label: str
    players: list[str]
    start: dict[str, int]
    result: SessionResult


@dataclass
class TableOutcome:
    """One table of one stage: the seating (player -> box), the session's result, the
    play-offs held, the standing after them, and the players who proceed (6.4)."""

    stage: str
    stage_index: int
    table: int
    seats: dict[str, int]
    session: SessionResult
    playoffs: list[PlayoffRecord]
    standing: Standing
    advanced: list[str]


@dataclass
class TournamentResult:
    """A tournament played (or cancelled): the entry ledger, every table of every stage, the
    final placings (groups of tied players in order), the awards and the event log."""

    definition: TournamentDefinition
    seed: int
    entry: Entry
    tables: list[TableOutcome] = field(default_factory=list)
    placings: list[list[str]] = field(default_factory=list)
    awards: list[Award] = field(default_factory=list)
    log: TournamentLog = field(default_factory=TournamentLog)

    @property
    def cancelled(self) -> bool:
        """The tournament did not proceed (3.3(d))."""
        return self.entry.cancelled

    @property
    def paid_out(self) -> int:
        """Cents paid in prizes (equal to the prize pool, rule 3.4)."""
        return sum(a.amount for a in self.awards)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable account of the tournament (without the event log)."""
        e = self.entry
        return {
            "tournament": self.definition.name,
            "seed": self.seed,
            "seed_derivation": SEED_DERIVATION_VERSION,
            "conditions": self.definition.to_dict(),
            "cancelled": self.cancelled,
            "entry": {
                "players": e.players if not self.cancelled else [],
                "entrants": {n: x.status.value for n, x in e.entrants.items()},
                "fees_kept": e.fees_kept,
                "refunds": e.refunds,
                "additions": self.definition.additions_value,
                "prize_pool": e.prize_pool,
            },
            "sessions": [_table_dict(t) for t in self.tables],
            "placings": self.placings,
            "prizes": [
                {
                    "place": a.place,
                    "player": a.player,
                    "amount": a.amount,
                    "places_combined": list(a.places),
                    "shared_with": list(a.shared_with),
                }
                for a in self.awards
            ],
            "paid_out": self.paid_out,
            "events": len(self.log),
        }


def _session_dict(r: SessionResult) -> dict[str, Any]:
    return {
        "label": r.label,
        "end": r.reason.value,
        "rounds": len(r.rounds),
        "shoes_completed": r.shoes_completed,
        "clock_seconds": round(r.clock, 3),
        "chips": r.chips,
        "eliminated": r.eliminated,
        "disqualified": r.disqualified,
    }


def _table_dict(t: TableOutcome) -> dict[str, Any]:
    return {
        "stage": t.stage,
        "table": t.table,
        "seats": t.seats,
        "session": _session_dict(t.session),
        "playoffs": [
            {"players": p.players, "start": p.start, **_session_dict(p.result)} for p in t.playoffs
        ],
        "standings": t.standing.groups,
        "advanced": t.advanced,
    }


# ===================================================================== strategies
def collect_strategies(pm: pluggy.PluginManager) -> StrategyRegistry:
    """The betting strategies every plugin registers through
    ``feltlab_register_tournament_strategies`` (built-ins first;
    :func:`feltlab.plugin_manager.collect`).  Raises :class:`feltlab.errors.PluginError`
    naming the plugin for a name registered twice or a plugin failing while registering."""
    return collect(pm, "feltlab_register_tournament_strategies", StrategyRegistry())


# ===================================================================== the field
MAX_BOTS = 10_000
"""The most bots a ``[field]`` may enter (the entry's max_players bounds who plays)."""


def load_field(data: Mapping[str, Any], registry: StrategyRegistry) -> list[Applicant]:
    """The applicants of a definition file's ``[field]`` table: ``bots = N`` bots named
    ``P01``.. with the ``strategies`` list taken in turn, and/or ``[[field.players]]`` (name,
    strategy, withdraw_days_before, refused, absent_stage).  Raises
    :class:`feltlab.tournament.DefinitionError` naming the field."""
    f = data.get("field")
    if not isinstance(f, Mapping):
        raise DefinitionError("field", "missing: add a [field] table with bots = N")
    strategies = f.get("strategies", registry.names()[:1])
    if not isinstance(strategies, list) or not strategies:
        raise DefinitionError("field.strategies", "give a list of strategy names")
    for s in strategies:
        if s not in registry:
            raise DefinitionError(
                "field.strategies", f"unknown strategy {s!r}; registered: {registry.names()}"
            )
    out: list[Applicant] = []
    players = f.get("players", [])
    if not isinstance(players, list):
        raise DefinitionError("field.players", "must be a list of tables")
    for i, p in enumerate(players):
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
            raise DefinitionError(f"field.players[{i}].name", "missing: each player has a name")
        strat = p.get("strategy", strategies[i % len(strategies)])
        if strat not in registry:
            raise DefinitionError(
                f"field.players[{i}].strategy",
                f"unknown strategy {strat!r}; registered: {registry.names()}",
            )
        out.append(
            Applicant(
                p["name"],
                strat,
                p.get("withdraw_days_before"),
                bool(p.get("refused", False)),
                p.get("absent_stage"),
            )
        )
    bots = f.get("bots", 0)
    if isinstance(bots, bool) or not isinstance(bots, int) or not 0 <= bots <= MAX_BOTS:
        raise DefinitionError(
            "field.bots", f"must be a whole number in 0..{MAX_BOTS}, got {bots!r}"
        )
    width = max(2, len(str(bots)))
    for k in range(bots):
        out.append(Applicant(f"P{k + 1:0{width}d}", strategies[k % len(strategies)]))
    if not out:
        raise DefinitionError("field.bots", "the field is empty: set bots = N or add players")
    return out


# ===================================================================== seating
def seat_tables(players: Sequence[str], rng: native.BitGenerator) -> list[list[str]]:
    """Allocate ``players`` to tables (3.3(c), 5.2): a seeded Fisher-Yates order dealt round
    the ``ceil(n / 7)`` tables, so table sizes differ by at most one and each has 4 to 7
    players (5.4).  Each table's list is in box order (box 0 first)."""
    order = list(players)
    for i in range(len(order) - 1, 0, -1):
        j = int(rng.integers(i + 1)[0])
        order[i], order[j] = order[j], order[i]
    n_tables = tables_for(len(order))
    tables: list[list[str]] = [[] for _ in range(n_tables)]
    for k, p in enumerate(order):
        tables[k % n_tables].append(p)
    return tables


# ===================================================================== the tournament
def run_tournament(
    definition: TournamentDefinition,
    applicants: Sequence[Applicant],
    *,
    seed: int,
    strategies: StrategyRegistry,
    log_cards: bool = True,
    hook: Any = None,
) -> TournamentResult:
    """Play a whole tournament.  Returns a :class:`TournamentResult`; a tournament with fewer
    players than ``min_players`` is cancelled (3.3(d)) and every fee refunded (3.5(b)).

    ``log_cards=False`` leaves the round engine's card-level events out of the log (faster).
    Raises :class:`TournamentError` when disqualifications leave a stage with fewer than 4
    players (5.4)."""
    d = definition
    tlog = TournamentLog(cards=log_cards)
    entry = Entry(d)
    result = TournamentResult(d, seed, entry, log=tlog)
    bots = _enter(entry, applicants, strategies, seed, tlog)
    if len(entry.players) < d.min_players:
        entry.cancel()
        tlog.emit(
            "cancelled",
            rule="3.3(d), 3.5(b)",
            players=len(entry.players),
            min_players=d.min_players,
            refunds=entry.refunds,
        )
        return result
    entry.start()
    pool = entry.prize_pool
    tlog.emit(
        "prize_pool",
        rule="3.4",
        fees=entry.fees_kept,
        additions=d.additions_value,
        pool=pool,
        amounts=d.prize_amounts(pool),
    )
    absent = {a.name: a.absent_stage for a in applicants if a.absent_stage is not None}
    field_players = list(entry.players)
    last = len(d.stages) - 1
    for si, stage in enumerate(d.stages):
        for p in list(field_players):
            if absent.get(p) == si:
                entry.disqualify(p, "failed to attend at the designated playing time")
                tlog.emit(
                    "disqualified",
                    rule="3.3(b)(ii), 3.6",
                    stage=stage.name,
                    player=p,
                    reason="absent",
                )
                field_players.remove(p)
        try:
            tables = seat_tables(field_players, native.ChaCha20(stream_key(seed, "seat", si)))
        except TournamentError as exc:
            raise TournamentError(f"stage {stage.name!r}: {exc}") from None
        if si == last and len(tables) > 1:
            raise TournamentError(
                f"{len(field_players)} players reached the final: it is played at one table (6.5)"
            )
        next_field: list[str] = []
        for ti, players in enumerate(tables, start=1):
            outcome = _play_table(d, si, ti, players, bots, seed, tlog, hook, final=si == last)
            result.tables.append(outcome)
            for p, reason in outcome.session.disqualified.items():
                entry.disqualify(p, reason)
            for pr in outcome.playoffs:
                for p, reason in pr.result.disqualified.items():
                    if entry.entrants[p].status.value == "accepted":
                        entry.disqualify(p, reason)
            next_field.extend(outcome.advanced)
            if si == last:
                result.placings = outcome.standing.groups
        field_players = next_field
    result.awards = allocate_prizes(d.prize_amounts(pool), result.placings)
    for award in result.awards:
        tlog.emit(
            "prize",
            rule="6.8" if award.shared_with else "6.5",
            player=award.player,
            place=award.place,
            amount=award.amount,
            places=list(award.places),
            shared_with=list(award.shared_with),
        )
    return result


def _enter(
    entry: Entry,
    applicants: Sequence[Applicant],
    strategies: StrategyRegistry,
    seed: int,
    tlog: TournamentLog,
) -> dict[str, BettingStrategy]:
    """The entry (3.1-3.3, 3.5): each application accepted or refused, then the refusals
    and withdrawals before the day; the accepted players' betting strategies, each on its
    own ChaCha20 stream."""
    d = entry.definition
    bots: dict[str, BettingStrategy] = {}
    for a in applicants:
        try:
            entry.apply(a.name)
        except EntryError as exc:
            tlog.emit("application_refused", rule="3.2(e)", player=a.name, reason=str(exc))
            continue
        bots[a.name] = strategies.create(a.strategy, native.ChaCha20(stream_key(seed, a.name)))
        tlog.emit(
            "application", rule="3.1, 3.2(b)", player=a.name, fee=d.entry_fee, strategy=a.strategy
        )
    for a in applicants:
        if a.name not in entry.entrants:
            continue
        if a.refused:
            entry.refuse(a.name)
            tlog.emit("refused", rule="3.3(a)", player=a.name, refund=d.entry_fee)
        elif a.withdraw_days_before is not None:
            e = entry.withdraw(a.name, days_before=a.withdraw_days_before)
            tlog.emit(
                "withdrawn",
                rule="3.5(a)",
                player=a.name,
                refund=e.refunded,
                days_before=a.withdraw_days_before,
            )
    return bots


def _play_table(
    d: TournamentDefinition,
    si: int,
    ti: int,
    players: list[str],
    bots: Mapping[str, BettingStrategy],
    seed: int,
    tlog: TournamentLog,
    hook: Any,
    *,
    final: bool,
) -> TableOutcome:
    stage = d.stages[si]
    boxes = {p: b for b, p in enumerate(players)}
    playoffs: list[PlayoffRecord] = []

    def play(group: list[str], start: dict[str, int], label: str, depth: int) -> SessionResult:
        _issue_chips(d, tlog, stage.name, ti, label, group, start, playoff=True)
        st = SessionTable(
            d,
            [(p, boxes[p], bots[p]) for p in group],
            make_shoe(d, seed, si, ti, label),
            start,
            playoff=True,
            log=tlog,
            stage=stage.name,
            table_no=ti,
            label=label,
            hook=hook,
        )
        r = st.run()
        playoffs.append(PlayoffRecord(label, list(group), dict(start), r))
        return r

    start = dict.fromkeys(players, d.chips_per_session)
    _issue_chips(d, tlog, stage.name, ti, stage.name, players, start, playoff=False)
    session = SessionTable(
        d,
        [(p, boxes[p], bots[p]) for p in players],
        make_shoe(d, seed, si, ti, stage.name),
        start,
        log=tlog,
        stage=stage.name,
        table_no=ti,
        label=stage.name,
        hook=hook,
    ).run()
    labels: list[str] = []
    groups = contest_groups(session, players, play, d, 0, labels)
    required = min(2, len(d.prize_shares)) if final else stage.advance_per_table
    groups = resolve(
        groups,
        required,
        positions=final,
        play=play,
        definition=d,
        box_order=players,
        label=stage.name,
        playoffs=labels,
    )
    disq = dict(session.disqualified)
    for pr in playoffs:
        disq.update(pr.result.disqualified)
    groups = [[p for p in g if p not in disq] for g in groups]
    groups = [g for g in groups if g]
    standing = Standing(groups, dict(session.chips), disq, labels)
    advanced: list[str] = []
    if not final:
        for g in groups:
            if len(advanced) >= stage.advance_per_table:
                break
            advanced.extend(g)
        tlog.emit(
            "advanced",
            rule="6.2, 6.3, 6.4",
            stage=stage.name,
            table=ti,
            players=advanced,
            standings=groups,
        )
    else:
        tlog.emit(
            "final_standings", rule="6.5, 6.6, 6.7", stage=stage.name, table=ti, standings=groups
        )
    return TableOutcome(stage.name, si, ti, boxes, session, playoffs, standing, advanced)


def _issue_chips(
    d: TournamentDefinition,
    tlog: TournamentLog,
    stage: str,
    table: int,
    label: str,
    players: Sequence[str],
    start: Mapping[str, int],
    *,
    playoff: bool,
) -> None:
    rule = "4.3, 3.2(c)" if not playoff else ("4.10" if label.endswith("/4.10") else "3.2(f)")
    for p in players:
        chips = start[p]
        if label.endswith("/4.10"):
            chips = min(d.playoff_chips, d.chips_per_session)
        data: dict[str, Any] = {"player": p, "chips": chips, "gratuitous": d.gratuitous}
        if not d.gratuitous:
            data["price"] = chips * d.chip_face_value
        tlog.emit("chips_issued", stage=stage, table=table, session=label, rule=rule, **data)
