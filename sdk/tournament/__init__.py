"""Tournament Blackjack (Division XI), a client of the round engine.

- :mod:`~feltlab.tournament.definition`: the conditions of entry the casino operator determines
  before a tournament (rule 3.2);
- :mod:`~feltlab.tournament.entry`: the entry ledger and the prize pool (rules 3.1, 3.3-3.6);
- :mod:`~feltlab.tournament.strategies`: the bots' betting strategies, registered by plugins
  through ``feltlab_register_tournament_strategies`` into a :class:`feltlab.registry.Registry`;
- :mod:`~feltlab.tournament.table`: a table's rules, main wager and shoe (rule 5.7);
- :mod:`~feltlab.tournament.session`: one session at one table, each round played by
  :func:`feltlab.engine.play_round` (rules 4.1-4.11, 5.2-5.10);
- :mod:`~feltlab.tournament.results`: session results, standings and play-offs (6.1-6.7);
- :mod:`~feltlab.tournament.prizes`: the prize list allocated to the placings (6.5-6.8);
- :mod:`~feltlab.tournament.run`: the whole tournament, stage by stage;
- :mod:`~feltlab.tournament.events`: its event log, on :class:`feltlab.events.Log`.

Errors are :mod:`feltlab.errors`' ``TournamentError`` family; seeds come from
:mod:`feltlab.seeds`.

Units: money (entry fees, prize pool, prizes, chip face values) is integer cents; tournament
chips are integer chip units (rule 4.1: every wager is made with tournament chips).

A definition is read from TOML (:func:`load_definition`) or a dict (:meth:`TournamentDefinition.
from_dict`) and validated field by field: a missing or contradictory field raises
:class:`feltlab.errors.DefinitionError` naming the field (``wagers.maximum``,
``prizes.shares``...).

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

from feltlab.errors import DefinitionError, EntryError, TournamentError, TournamentWagerError
from feltlab.tournament.definition import (
    BASIS_POINTS,
    MAX_TABLE,
    MIN_TABLE,
    REFUND_NOTICE_DAYS,
    Addition,
    LengthKind,
    OneLeft,
    SessionLength,
    Stage,
    Timing,
    TournamentDefinition,
    WagerLimits,
    load_definition,
    tables_for,
)
from feltlab.tournament.entry import Entrant, Entry, EntryStatus
from feltlab.tournament.events import TournamentEvent, TournamentLog
from feltlab.tournament.prizes import Award, allocate_prizes
from feltlab.tournament.results import (
    MAX_PLAYOFF_DEPTH,
    EndReason,
    PlayContest,
    RoundRecord,
    SessionResult,
    Standing,
    chip_groups,
    contest_groups,
    resolve,
)
from feltlab.tournament.run import (
    Applicant,
    PlayoffRecord,
    TableOutcome,
    TournamentResult,
    collect_strategies,
    load_field,
    run_tournament,
    seat_tables,
)
from feltlab.tournament.session import Seat, SessionTable
from feltlab.tournament.strategies import (
    BettingStrategy,
    BettingView,
    StrategyRegistry,
    WagerIntent,
)
from feltlab.tournament.table import (
    ShuffleReason,
    TournamentShoe,
    main_wager,
    make_shoe,
    tournament_rules,
)

__all__ = [
    "BASIS_POINTS",
    "MAX_PLAYOFF_DEPTH",
    "MAX_TABLE",
    "MIN_TABLE",
    "REFUND_NOTICE_DAYS",
    "Addition",
    "Applicant",
    "Award",
    "BettingStrategy",
    "BettingView",
    "DefinitionError",
    "EndReason",
    "Entrant",
    "Entry",
    "EntryError",
    "EntryStatus",
    "LengthKind",
    "OneLeft",
    "PlayContest",
    "PlayoffRecord",
    "RoundRecord",
    "Seat",
    "SessionLength",
    "SessionResult",
    "SessionTable",
    "ShuffleReason",
    "Stage",
    "Standing",
    "StrategyRegistry",
    "TableOutcome",
    "Timing",
    "TournamentDefinition",
    "TournamentError",
    "TournamentEvent",
    "TournamentLog",
    "TournamentResult",
    "TournamentShoe",
    "TournamentWagerError",
    "WagerIntent",
    "WagerLimits",
    "allocate_prizes",
    "chip_groups",
    "collect_strategies",
    "contest_groups",
    "load_definition",
    "load_field",
    "main_wager",
    "make_shoe",
    "resolve",
    "run_tournament",
    "seat_tables",
    "tables_for",
    "tournament_rules",
]
