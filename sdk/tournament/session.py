"""Tournament Blackjack (Division XI): a session of play at one table, and its play-offs.

:class:`SessionTable` plays one session (or play-off, which Division XI defines as a session)
at one table, round by round, on the round engine :class:`feltlab.engine.Table` dealing from
the C core's shoe.  It adds what Division XI changes or adds to Division II blackjack:

- wagers in tournament chips only, placed in the order of the betting marker (rules 4.1, 5.8,
  5.9), checked against the table's minimum, maximum and increment (4.5, 4.6), an undersize
  wager valid once per player per session (4.8(a)), an excess void (4.8(b)), a late wager
  restricted to the minimum (4.11), failing to wager disqualifying (4.7);
- a player losing all chips eliminated and the box void (4.9); all remaining players below the
  minimum: equal further chips and a play-off (4.10);
- shuffles at the start of a session, at the completion of the round *following* the round in
  which the cutting card appears, and after the table was vacant (5.7; the engine's own rule
  shuffles at the end of the cutting-card round, so :class:`TournamentShoe` adapts the shoe);
- the end of the session exactly as the definition of "Session" says ((a) one player left,
  (b) time, (c) shoes, or a number of rounds);
- the standings at the end of a session, with play-offs where a result is required (6.2, 6.6).

Adapter note: the engine has no notion of tournament chips; chips are mapped one to one onto
the engine's integer "cents", with the table's ``min_wager`` set to 1 so that a valid undersize
wager (4.8(a)) can be placed, and the Division XI wager checks done here before ``place()``.

Assumptions where Division XI is silent (each repeated where it applies):

- Play decisions are basic strategy for the table's rules (:class:`feltlab.math.strategy.
  BasicStrategy`), never doubling or splitting for more chips than the player holds (rule 4.4:
  no borrowing); a betting strategy may override decisions.
- A wager above the chips the player holds is reduced to the chips held (4.4); a wager not a
  multiple of the increment is rounded down to one (by analogy with 4.8(b)); both are logged.
- A void wager (4.8(a)) means the box takes no part in that round; it is not a failure to wager
  (4.7), which is only a player able to wager at least the minimum making no wager at all.
- A player holding less than the minimum who makes no wager sits the round out (they cannot
  wager in accordance with rule 4.7, so they are not disqualified for it).
- The betting marker moves to the next player still in play (holding chips, not eliminated or
  disqualified).
- Rule 5.4 (4 to 7 players) applies to ordinary sessions; a play-off is held by the tied players
  only, at their table and boxes (the definition of "Play-Off").
- Under rule 4.10(b) each player keeps the chips held and receives the same further amount
  (the definition's play-off chips, at most the chips of the session's commencement).
- Players eliminated under rule 4.9 hold 0 chips at the end of the session and are ranked by
  chips like everyone else (6.2); ties among them are broken by a play-off only where a result
  is required.
- Play-off chips are issued on the same terms as session chips (gratuitously or sold, 3.2(c)).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from feltlab.engine import Decision, DecisionView, Table, play_round
from feltlab.errors import (
    TournamentError,
    TournamentWagerError,
)
from feltlab.events import Event
from feltlab.math.strategy import BasicStrategy
from feltlab.shoe import CardSource
from feltlab.tournament.definition import (
    LengthKind,
    OneLeft,
    SessionLength,
    TournamentDefinition,
)
from feltlab.tournament.events import TournamentEvent, TournamentLog
from feltlab.tournament.results import EndReason, RoundRecord, SessionResult
from feltlab.tournament.strategies import BettingStrategy, BettingView, WagerIntent
from feltlab.tournament.table import ShuffleReason, TournamentShoe, main_wager, tournament_rules
from feltlab.wagers import Limits

log = logging.getLogger(__name__)


# ===================================================================== a seat
@dataclass
class Seat:
    """A player at a table: ``player`` name, ``box`` (0 = the box farthest to the dealer's
    left, dealt first; the boxes run clockwise), ``strategy``, ``chips`` held, and the session
    status."""

    player: str
    box: int
    strategy: BettingStrategy
    chips: int = 0
    undersize_used: bool = False
    eliminated: int | None = None
    disqualified: str = ""
    last_net: int | None = None

    @property
    def active(self) -> bool:
        """Still in the session: not eliminated (4.9) nor disqualified (4.7, 3.3(b))."""
        return self.eliminated is None and not self.disqualified


class _ChipPolicy:
    """Basic strategy that never doubles or splits for chips the player does not hold."""

    def __init__(self, session: SessionTable) -> None:
        self.session = session
        self.basic = BasicStrategy(session.rules)

    def decide(self, view: DecisionView) -> Decision:
        s = self.session
        seat = s.by_box[view.box]
        box = s.table.boxes[view.box]
        stake = box.bets[(seat.player, "main")].amount
        committed = stake * sum(2 if h.doubled else 1 for h in box.hands)
        available = seat.chips - committed
        legal = set(view.legal)
        if available < stake:
            legal -= {Decision.DOUBLE, Decision.SPLIT}
        own = seat.strategy.decide(dataclasses.replace(view, legal=frozenset(legal)), available)
        if own is not None and own in legal:
            return own
        return self.basic.decide(dataclasses.replace(view, legal=frozenset(legal)))

    def insurance(self, box: int, player: str, cards: Sequence[int], main_stake: int) -> int:
        return 0


# ===================================================================== the session
class SessionTable:
    """One session (or play-off) at one table.

    :param definition: the tournament's conditions of entry.
    :param seats: ``(player, box, strategy)`` for each player, boxes 0..6 (rule 5.2).
    :param source: the card source to shuffle and deal from (a :class:`feltlab.shoe.Shoe`
        over ChaCha20 in play; fixed cards in tests); wrapped in a :class:`TournamentShoe`.
    :param chips: chips each player holds at the commencement (rule 4.3).
    :param length: the session's length (rule 3.2(f)).
    :param playoff: True for a play-off (rule 5.4 then does not apply).
    :param log: the :class:`TournamentLog`; ``stage``, ``table_no``, ``label`` name the place.
    :param hook: a pluggy hook relay for the engine's observer hooks.

    Step with :meth:`play_round` until :attr:`result` is set, or call :meth:`run`.  Raises
    :class:`TournamentError` for fewer than 4 or more than 7 players at the commencement of an
    ordinary session (5.4) or fewer than 2 in a play-off.
    """

    def __init__(
        self,
        definition: TournamentDefinition,
        seats: Sequence[tuple[str, int, BettingStrategy]],
        source: CardSource,
        chips: Mapping[str, int],
        *,
        length: SessionLength | None = None,
        playoff: bool = False,
        log: TournamentLog | None = None,
        stage: str = "",
        table_no: int = 1,
        label: str = "session",
        hook: Any = None,
    ) -> None:
        self.definition = definition
        self.limits = definition.limits
        self.length = length or (definition.playoff if playoff else definition.session)
        self.playoff = playoff
        self.log = log if log is not None else TournamentLog()
        self.stage = stage
        self.table_no = table_no
        self.label = label
        n = len(seats)
        if playoff and n < 2:
            raise TournamentError("a play-off is held between 2 or more players (Play-Off)")
        if not playoff and not 4 <= n <= 7:
            raise TournamentError(
                f"{n} players at the commencement of a session: rule 5.4 needs 4 to 7"
            )
        boxes = sorted(b for _, b, _ in seats)
        if len(set(boxes)) != n or not all(0 <= b <= 6 for b in boxes):
            raise TournamentError(f"boxes {boxes}: each player has their own box 0..6 (5.2)")
        self.seats = sorted(
            (Seat(p, b, s, int(chips[p])) for p, b, s in seats), key=lambda s: s.box
        )
        self.by_box = {s.box: s for s in self.seats}
        self.by_player = {s.player: s for s in self.seats}
        self.void_boxes: set[int] = set()
        self.rules = tournament_rules(definition)
        self.shoe = TournamentShoe(source)
        main = main_wager(Limits(1, self.limits.maximum, 1))
        self.table = Table(self.rules, self.shoe, [main], boxes=7, hook=hook)
        if self.log.cards:
            self.table.log.subscribe(self._forward)
        self.policy = _ChipPolicy(self)
        self.rounds: list[RoundRecord] = []
        self.clock = 0.0
        self.shoes_completed = 0
        self.result: SessionResult | None = None
        self._round = 0
        first = self.seats[0]
        self.marker = first.box
        self._emit(
            "session_started",
            "5.2, 5.4" if not playoff else "Play-Off",
            players={s.player: s.box for s in self.seats},
            chips={s.player: s.chips for s in self.seats},
            length=self.length.describe(),
            playoff=playoff,
        )
        self._emit("betting_marker", "5.8", player=first.player, box=first.box)

    # ---------------------------------------------------------------- plumbing
    def _emit(self, kind: str, rule: str = "", **data: Any) -> TournamentEvent:
        return self.log.emit(
            kind,
            stage=self.stage,
            table=self.table_no,
            session=self.label,
            round=self._round,
            rule=rule,
            **data,
        )

    def _forward(self, e: Event) -> None:
        self.log.emit(
            "table_event",
            stage=self.stage,
            table=self.table_no,
            session=self.label,
            round=self._round,
            event=e.kind,
            **e.data,
        )

    def _holds(self, seat: Seat) -> bool:
        if self.definition.one_left is OneLeft.ANY:
            return seat.chips > 0
        return seat.chips >= self.limits.minimum

    @property
    def active(self) -> list[Seat]:
        """Players still in the session, in box order."""
        return [s for s in self.seats if s.active]

    def betting_order(self) -> list[Seat]:
        """The players in the order they wager this round: from the holder of the betting
        marker clockwise (rules 5.8, 5.9)."""
        active = self.active
        i = next((k for k, s in enumerate(active) if s.box >= self.marker), 0)
        return active[i:] + active[:i]

    def vacate(self) -> None:
        """The table was left vacant (e.g. a break); play recommences with a shuffle (5.7(c))."""
        self.shoe.request_shuffle(ShuffleReason.VACANT)
        self._emit("table_vacant", "5.7(c)")

    def disqualify(self, player: str, reason: str, rule: str) -> None:
        """Disqualify ``player`` from the session (rules 3.3(b), 4.7, 5.10): their box is void."""
        seat = self.by_player[player]
        seat.disqualified = reason
        self.void_boxes.add(seat.box)
        self._emit("disqualified", rule, player=player, box=seat.box, reason=reason)

    def check_box(self, player: str, box: int) -> None:
        """Raise :class:`TournamentWagerError` unless ``player`` may wager on ``box``: only on
        their own box (5.5), never on a void box (4.9)."""
        if box in self.void_boxes:
            raise TournamentWagerError(f"box {box} is void (rule 4.9): no player may wager upon it")
        seat = self.by_player.get(player)
        if seat is None or seat.box != box:
            raise TournamentWagerError(
                f"{player!r} may wager on and control only the box allocated to them (rule 5.5)"
            )

    # ---------------------------------------------------------------- wagers (4.x)
    def take_wager(self, seat: Seat, view: BettingView) -> tuple[int, float]:
        """Ask ``seat``'s strategy for its wager and apply rules 4.1-4.11; returns the chips
        wagered (0: no wager this round) and the seconds it took."""
        lim = self.limits
        raw = seat.strategy.wager(view)
        timing = self.definition.timing
        if raw is None:
            if seat.chips >= lim.minimum:
                self.disqualify(seat.player, "made no wager on the hand", "4.7")
            else:
                self._emit("sits_out", "4.7", player=seat.player, chips=seat.chips)
            return 0, timing.wager_seconds
        intent = raw if isinstance(raw, WagerIntent) else WagerIntent(raw)
        amount = intent.chips
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise TournamentWagerError(
                f"{seat.player!r} wagered {amount!r}: all wagers are made with tournament chips "
                "(rule 4.1), given as whole chip units"
            )
        seconds = timing.wager_seconds if intent.seconds is None else float(intent.seconds)
        asked = amount
        notes: list[str] = []
        limit = lim.time_limit_seconds
        if limit and seconds > limit:
            amount = lim.minimum
            seconds = limit
            notes.append("4.11")
            self._emit(
                "late_wager",
                "4.11",
                player=seat.player,
                asked=asked,
                wager=amount,
                seconds=intent.seconds,
                limit=limit,
            )
        if amount > lim.maximum:
            self._emit("excess_void", "4.8(b)", player=seat.player, asked=amount, wager=lim.maximum)
            amount = lim.maximum
            notes.append("4.8(b)")
        if amount > seat.chips:
            self._emit(
                "reduced_to_chips", "4.4", player=seat.player, asked=amount, wager=seat.chips
            )
            amount = seat.chips
            notes.append("4.4")
        if amount % lim.increment:
            rounded = amount - amount % lim.increment
            self._emit(
                "increment_rounded",
                "4.6",
                player=seat.player,
                asked=amount,
                wager=rounded,
                increment=lim.increment,
            )
            amount = rounded
            notes.append("4.6")
        if 0 < amount < lim.minimum:
            if not seat.undersize_used:
                seat.undersize_used = True
                self._emit(
                    "undersize_valid_once",
                    "4.8(a)",
                    player=seat.player,
                    wager=amount,
                    minimum=lim.minimum,
                )
                notes.append("4.8(a) valid once")
            else:
                self._emit(
                    "undersize_void",
                    "4.8(a)",
                    player=seat.player,
                    wager=amount,
                    minimum=lim.minimum,
                )
                return 0, seconds
        if amount <= 0:
            if seat.chips >= lim.minimum:
                self.disqualify(seat.player, f"wagered {asked} chips: no wager", "4.7")
            return 0, seconds
        self.check_box(seat.player, seat.box)
        self._emit(
            "wager",
            "4.1, 5.8" if view.first else "4.1, 5.9",
            player=seat.player,
            box=seat.box,
            asked=asked,
            wager=amount,
            chips=seat.chips,
            applied=notes,
        )
        return amount, seconds

    # ---------------------------------------------------------------- a round
    def play_round(self) -> RoundRecord | None:
        """Play the next round (bets in marker order, deal, play, settle) and apply the end of
        round rules (4.9, 4.10, Session (a)-(c)).  Returns the round's record, or None when the
        session ended before the round's first card (time elapsed, definition (b))."""
        if self.result is not None:
            raise TournamentError("the session has ended: start a new SessionTable")
        length = self.length
        if length.kind is LengthKind.TIME and self.clock >= length.count:
            self._end(EndReason.TIME)
            return None
        self._round += 1
        order = self.betting_order()
        placed: list[tuple[str, int]] = []
        wagers: dict[str, int] = {}
        t = self.clock
        for k, seat in enumerate(order):
            view = BettingView(
                player=seat.player,
                box=seat.box,
                chips=seat.chips,
                table_chips={s.player: s.chips for s in self.seats if s.active},
                placed=tuple(placed),
                limits=self.limits,
                undersize_used=seat.undersize_used,
                round=self._round,
                length=length,
                playoff=self.playoff,
                first=k == 0,
                last_net=seat.last_net,
                start_chips=self.definition.chips_per_session,
            )
            amount, seconds = self.take_wager(seat, view)
            t += seconds
            if amount:
                placed.append((seat.player, amount))
                wagers[seat.player] = amount
        if length.kind is LengthKind.TIME and t >= length.count:
            self.clock = t
            self._emit(
                "wagers_returned",
                "Session (b)",
                wagers=wagers,
                note="time elapsed before the first card of the round",
            )
            self._round -= 1
            self._end(EndReason.TIME)
            return None
        if not wagers:
            self.clock = t
            self._round -= 1
            self._end(EndReason.NO_PLAYERS)
            return None
        if self.shoe.needs_shuffle:
            self._emit("shuffle", self.shoe.reason.value, shoe_number=self.shoe.shoe_number + 1)
        cards_before = len(self.table.log)
        bets = [(self.by_player[p].box, p, "main", amount) for p, amount in placed]
        result = play_round(self.table, bets, self.policy)
        n_cards = sum(1 for e in self.table.log.events[cards_before:] if e.kind == "card_dealt")
        first_card_at = t
        timing = self.definition.timing
        self.clock = t + n_cards * timing.card_seconds + timing.settle_seconds
        net = {p: result.net(p) for p in wagers}
        for seat in self.active:
            seat.last_net = net.get(seat.player)
            seat.chips += net.get(seat.player, 0)
        cut = self.shoe.cut_round_done and not self.shoe.shoe_complete
        rec = RoundRecord(
            self._round, first_card_at, self.clock, wagers, net, cut, self.shoe.shoe_number
        )
        self.rounds.append(rec)
        self._emit(
            "round_result",
            "6.1",
            wagers=wagers,
            net=net,
            chips={s.player: s.chips for s in self.seats if s.active},
            clock=round(self.clock, 3),
            shoe_number=self.shoe.shoe_number,
        )
        if cut:
            self._emit(
                "cutting_card",
                "5.7(b)",
                shoe_number=self.shoe.shoe_number,
                note="the shoe is shuffled at the completion of the next round",
            )
        if self.shoe.shoe_complete:
            self.shoes_completed += 1
            self._emit("shoe_completed", "5.7(b)", shoe_number=self.shoe.shoe_number)
            self.shoe.request_shuffle(ShuffleReason.CUTTING_CARD)
        self._end_of_round()
        return rec

    def _end_of_round(self) -> None:
        lim = self.limits
        remaining = self.active
        if remaining and all(s.chips < lim.minimum for s in remaining):
            if len(remaining) == 1:
                self._eliminate_broke()
                self._end(EndReason.ONE_LEFT)
                return
            all_lost = all(s.chips == 0 for s in remaining)
            rule = "4.10(a)" if all_lost else "4.10(b)"
            self._emit(
                "playoff_4_10",
                rule,
                players=[s.player for s in remaining],
                chips={s.player: s.chips for s in remaining},
            )
            self._end(EndReason.RULE_4_10, [s.player for s in remaining])
            return
        self._eliminate_broke()
        holders = [s for s in self.active if self._holds(s)]
        if len(holders) <= 1:
            self._end(EndReason.ONE_LEFT)
            return
        length = self.length
        if length.kind is LengthKind.ROUNDS and len(self.rounds) >= length.count:
            self._end(EndReason.ROUNDS)
        elif length.kind is LengthKind.SHOES and self.shoes_completed >= length.count:
            self._end(EndReason.SHOES)
        elif length.kind is LengthKind.TIME and self.clock >= length.count:
            self._end(EndReason.TIME)
        else:
            self._move_marker()

    def _eliminate_broke(self) -> None:
        for s in self.active:
            if s.chips == 0:
                s.eliminated = self._round
                self.void_boxes.add(s.box)
                self._emit("eliminated", "4.9", player=s.player, box=s.box)

    def _move_marker(self) -> None:
        active = self.active
        if not active:
            return
        later = [s for s in active if s.box > self.marker]
        nxt = later[0] if later else active[0]
        self.marker = nxt.box
        self._emit("betting_marker", "5.9", player=nxt.player, box=nxt.box)

    def _end(self, reason: EndReason, playoff_410: Sequence[str] = ()) -> None:
        chips = {s.player: s.chips for s in self.seats if not s.disqualified}
        self.result = SessionResult(
            self.label,
            chips,
            {s.player: s.eliminated for s in self.seats if s.eliminated is not None},
            {s.player: s.disqualified for s in self.seats if s.disqualified},
            reason,
            self.rounds,
            self.shoes_completed,
            self.clock,
            self.length,
            list(playoff_410),
        )
        self._emit(
            "session_ended",
            _REASON_RULE[reason],
            reason=reason.value,
            rounds=len(self.rounds),
            shoes_completed=self.shoes_completed,
            clock=round(self.clock, 3),
            chips=chips,
        )
        self._retain_chips()

    def _retain_chips(self) -> None:
        d = self.definition
        for s in self.seats:
            if s.chips == 0:
                continue
            if d.gratuitous:
                self._emit("chips_returned", "6.9(a)", player=s.player, chips=s.chips)
            else:
                self._emit(
                    "chips_retained",
                    "6.9(b)",
                    player=s.player,
                    chips=s.chips,
                    value=s.chips * d.chip_face_value,
                )

    def run(self) -> SessionResult:
        """Play rounds until the session ends; returns its :class:`SessionResult`."""
        while self.result is None:
            self.play_round()
        return self.result


_REASON_RULE = {
    EndReason.ONE_LEFT: "Session (a)",
    EndReason.TIME: "Session (b)",
    EndReason.SHOES: "Session (c)",
    EndReason.ROUNDS: "3.2(f)",
    EndReason.RULE_4_10: "4.10",
    EndReason.NO_PLAYERS: "4.7",
}
