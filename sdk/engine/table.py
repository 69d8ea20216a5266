"""The round engine: a deterministic state machine over a card source.

Given the same cards and the same operations, a :class:`Table` emits the same events, so a
round's JSON-lines log is its audit trail and :func:`feltlab.engine.replay.replay_round` reproduces
its outcome.

A round runs through these phases (:class:`Phase`)::

    IDLE -> begin_round() -> BETTING -- place() ... -- deal() / deal_step() -> DEALING
         -> INSURANCE (dealer's first card an ace: place insurance, close_insurance())
         -> PLAYING (decide() for each hand of each box, in box order)
         -> DEALER (play_dealer()) -> SETTLING (settle()) -> IDLE

Irregularities are operations too: :meth:`Table.misdeal` then :meth:`Table.reconstruct` or
:meth:`Table.void_box` / :meth:`Table.void_round` (rule 16.5);
:meth:`Table.remove_exposed_card` (rule 16.3); :meth:`Table.report_missing_cutting_card`
(rule 16.10); :meth:`Table.report_device_fault` (rule 16.12).  The table is one class, its
operations in sections (plumbing, betting and dealing, play, settlement, irregularities); the
round's values are in :mod:`feltlab.engine.round`.

Boxes are numbered from 0.  The first player to place a main wager on a box controls it
(rule 14, which would say otherwise, is not in the rule files); other players' main wagers on
the box follow the controller's decisions (a double or split adds the same proportion of each
player's wager: an assumption, stated here).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from feltlab.engine.policy import Policy
from feltlab.engine.round import (
    JACKPOT_PANEL,
    MAIN,
    BoxState,
    Decision,
    DecisionView,
    HandState,
    Phase,
    RoundResult,
)
from feltlab.errors import (
    DeviceError,
    IllegalDecisionError,
    RoundStateError,
    RulesError,
    WagerError,
)
from feltlab.events import Event, EventLog
from feltlab.hands import ACE, hand_total, is_natural
from feltlab.jackpot import EMPLOYEE, FAILURE_PAYOUT, JackpotPanel
from feltlab.plugin_manager import PluginFailure, call_isolated
from feltlab.record import BoxRecord, DealerRecord, HandRecord, RoundRecord
from feltlab.rules import DoubleOn, Rules, Surrender
from feltlab.shoe import CardSource
from feltlab.wagers import Bet, Placed, RoundView, Settlement, WagerType

log = logging.getLogger(__name__)

__all__ = ["Table", "play_round"]


class Table:
    """A blackjack table: rules, a card source, the wager types offered, and the event log.

    :param rules: the table's :class:`feltlab.Rules`.
    :param source: a :class:`feltlab.shoe.CardSource` (shoe, continuous shuffler, fixed cards).
    :param wagers: the wager types offered; one must be named ``"main"``.  Each is checked
        against the rules (e.g. Super Sevens needs 6-8 decks, rule 3.3(a)); raises
        :class:`feltlab.errors.RulesError`.
    :param boxes: number of boxes on the layout.
    :param panel: the Madness 21 jackpot panel, if Madness 21 is offered.
    :param hook: a pluggy hook relay (``pm.hook``); the observer hooks are called on events.
    :param log: an :class:`EventLog` to append to (a new one by default).
    :param first_round: the number the next round gets.
    """

    def __init__(
        self,
        rules: Rules,
        source: CardSource,
        wagers: Iterable[WagerType],
        *,
        boxes: int = 7,
        panel: JackpotPanel | None = None,
        hook: Any = None,
        log: EventLog | None = None,
        first_round: int = 1,
    ) -> None:
        if rules.surrender is Surrender.EARLY and not rules.no_hole_card:
            raise RulesError(
                "early surrender under peek comes before the dealer's check, which the round "
                "engine does not offer: use surrender='late' here (feltlab math main and "
                "feltlab simulate handle early surrender)"
            )
        self.rules = rules
        self.source = source
        self.wagers: dict[str, WagerType] = {}
        for w in wagers:
            w.check_rules(rules)
            self.wagers[w.name] = w
        if MAIN not in self.wagers:
            raise WagerError(
                "a table needs the main wager: include the registered 'main' wager type "
                "(collect_wagers(pm)['main']())"
            )
        if not 1 <= boxes <= 9:
            raise WagerError(f"boxes={boxes}: a layout has 1 to 9 boxes")
        self.n_boxes = boxes
        self.panel = panel
        self.hook = hook
        self.log = log if log is not None else EventLog()
        self.log.subscribe(self._notify)
        self.round_no = first_round - 1
        self.phase = Phase.IDLE
        self.withdrawn: set[str] = set()
        self.plugin_failures: list[PluginFailure] = []
        """Observer-hook exceptions caught during play (see :meth:`_notify`)."""
        self._reset_round()

    # ================================================================= plumbing
    def _reset_round(self) -> None:
        self.boxes = [BoxState(i) for i in range(self.n_boxes)]
        self.dealer: list[int] = []
        self.dealer_done = False
        self.settled: dict[tuple[int, str, str], Settlement] = {}
        self.order: list[tuple[Bet, Settlement]] = []
        self._deal_queue: list[int | None] = []
        self._misplaced: tuple[int, int | None] | None = None
        self._current: tuple[int, int] | None = None
        self._round_cards: list[int] = []
        self._cut_announced = False
        self._device_failed = False
        self._result: RoundResult | None = None

    def _emit(self, kind: str, **data: Any) -> Event:
        return self.log.emit(self.round_no, kind, **data)

    def _notify(self, event: Event) -> None:
        """Call the observer hooks for ``event``.  Each plugin is called in isolation: an
        exception in one is logged with the plugin's name, kept in :attr:`plugin_failures`,
        and neither stops the other observers nor the round."""
        if self.hook is None:
            return
        h = self.hook
        calls: list[tuple[Any, dict[str, Any]]] = [
            (h.feltlab_table_event, {"table": self, "event": event})
        ]
        d = event.data
        if event.kind == "round_started":
            calls.append((h.feltlab_round_started, {"table": self, "round_no": event.round}))
        elif event.kind == "card_dealt":
            calls.append(
                (
                    h.feltlab_card_dealt,
                    {"table": self, "card": d["card"], "to": d["to"], "box": d.get("box")},
                )
            )
        elif event.kind == "cut_card_reached":
            calls.append((h.feltlab_cut_card_reached, {"table": self, "round_no": event.round}))
        elif event.kind == "shoe_shuffled":
            calls.append((h.feltlab_shoe_shuffled, {"table": self, "reason": d["reason"]}))
        elif event.kind == "round_settled" and self._result is not None:
            calls.append((h.feltlab_round_settled, {"table": self, "result": self._result}))
        elif event.kind == "device_fault":
            calls.append(
                (
                    h.feltlab_device_fault,
                    {"table": self, "device": d["device"], "message": d["message"]},
                )
            )
        for caller, kwargs in calls:
            self.plugin_failures.extend(call_isolated(caller, **kwargs))

    def _need(self, *phases: Phase, op: str) -> None:
        if self.phase not in phases:
            want = " or ".join(p.value for p in phases)
            raise RoundStateError(
                f"{op}() needs the round in phase {want}; it is in {self.phase.value}"
            )

    def _box(self, box: int) -> BoxState:
        if not 0 <= box < self.n_boxes:
            raise WagerError(f"box {box} does not exist: boxes are 0..{self.n_boxes - 1}")
        return self.boxes[box]

    def _draw(self) -> int:
        card = self.source.draw()
        self._round_cards.append(card)
        return card

    def _check_cut(self) -> None:
        if not self._cut_announced and self.source.cut_card_reached:
            self._cut_announced = True
            self._emit("cut_card_reached", rule="5.7(b)")

    def _give(self, card: int, box: int | None, hand: int = 0) -> None:
        if box is None:
            self.dealer.append(card)
            self._emit("card_dealt", card=card, to="dealer")
        else:
            b = self.boxes[box]
            if not b.hands:
                b.hands.append(HandState())
            b.hands[hand].cards.append(card)
            b.cards.append(card)
            self._emit("card_dealt", card=card, to="box", box=box, hand=hand)
        self._check_cut()

    def view(self, box: int, *, final: bool = False) -> RoundView:
        """The :class:`feltlab.wagers.RoundView` of ``box`` now."""
        b = self.boxes[box]
        stakes = {p: bet.amount for (p, w), bet in b.bets.items() if w == MAIN}
        return RoundView(
            rules=self.rules,
            box=box,
            box_cards=tuple(b.cards),
            hands=tuple(h.view() for h in b.hands),
            dealer_cards=tuple(self.dealer),
            dealer_done=self.dealer_done,
            final=final,
            main_stakes=stakes,
        )

    @property
    def result(self) -> RoundResult | None:
        """The last settled (or voided) round's result; None before the first."""
        return self._result

    @property
    def live_boxes(self) -> list[BoxState]:
        """Boxes with a main wager that are not void, in box order."""
        return [b for b in self.boxes if b.live]

    # ================================================================= betting
    def begin_round(self) -> int:
        """Open a round for betting; returns its number.  Shuffles first if the source
        needs it (a new shoe)."""
        self._need(Phase.IDLE, op="begin_round")
        self._reset_round()
        self.round_no += 1
        if self.source.needs_shuffle:
            info = self.source.shuffle()
            self._emit("shoe_shuffled", reason="new_shoe", **info)
        self.phase = Phase.BETTING
        self._emit("round_started", boxes=self.n_boxes, withdrawn=sorted(self.withdrawn))
        return self.round_no

    def place(self, box: int, player: str, wager: str, amount: int) -> Bet:
        """Place ``amount`` cents of ``wager`` for ``player`` on ``box``.

        Main and side wagers are placed in the betting phase, before the first card (rules
        5.1, 15B.3); insurance in the insurance phase.  Raises :class:`WagerError` for an
        unknown or withdrawn wager type (16.12), a side wager without the player's main wager
        on the box (15B.2), a second wager of the same type, or an amount outside the limits
        (the table's ``min_wager``/``max_wager`` for the main wager, rule 15B.4 for others);
        :class:`RoundStateError` in the wrong phase.
        """
        if wager not in self.wagers:
            raise WagerError(
                f"wager {wager!r} is not offered at this table; offered: {sorted(self.wagers)}"
            )
        wt = self.wagers[wager]
        if wager in self.withdrawn:
            raise WagerError(
                f"{wt.title} is withdrawn after an equipment failure (rule 16.12) until "
                "repair_device() is called"
            )
        phase = Phase.INSURANCE if wt.placed is Placed.INSURANCE else Phase.BETTING
        self._need(phase, op=f"place({wager!r})")
        b = self._box(box)
        if b.voided:
            raise WagerError(f"box {box} is void this round (rule 16.5)")
        if (player, wager) in b.bets:
            raise WagerError(f"{player!r} already has a {wt.title} wager on box {box}")
        main_bet = b.bets.get((player, MAIN))
        if wager == MAIN:
            if isinstance(amount, np.integer):
                amount = int(amount)
            if isinstance(amount, bool) or not isinstance(amount, int):
                raise WagerError(
                    f"main wager: amount must be a whole number of cents (int), got {amount!r}"
                )
            r = self.rules
            if not r.min_wager <= amount <= r.max_wager or amount % r.wager_unit:
                raise WagerError(
                    f"main wager: {amount} cents is outside the table limits "
                    f"{r.min_wager}..{r.max_wager} cents in multiples of {r.wager_unit}"
                )
        else:
            if wt.requires_main and main_bet is None:
                raise WagerError(
                    f"{wt.title} on box {box} needs {player!r}'s main wager on that box "
                    "first (rule 15B.2)"
                )
            if wt.placed is Placed.INSURANCE and b.hands and b.hands[0].blackjack:
                pass  # insuring a blackjack ("even money") is allowed
            wt.check_amount(amount, main_stake=main_bet.amount if main_bet else 0)
        if b.controller is None and wager == MAIN:
            b.controller = player
        bet = Bet(box, player, wager, amount)
        b.bets[(player, wager)] = bet
        self._emit(
            "wager_placed",
            box=box,
            player=player,
            wager=wager,
            amount=amount,
            controller=b.controller,
        )
        return bet

    # ================================================================= the deal
    def deal(self) -> None:
        """Deal the whole initial deal (see :meth:`deal_step`)."""
        if self.phase is Phase.BETTING:
            self.deal_step()
        while self.phase is Phase.DEALING:
            self.deal_step()

    def deal_step(self) -> None:
        """Deal the next card of the initial deal: one card to each box in order, one to the
        dealer face up, a second card to each box, then (peek only) the dealer's hole card;
        under no-hole-card play the dealer has one card until the players have acted."""
        self._need(Phase.BETTING, Phase.DEALING, op="deal_step")
        if self.phase is Phase.BETTING:
            live = [b.index for b in self.live_boxes]
            if not live:
                raise RoundStateError("no main wager was placed: place() one before deal()")
            q: list[int | None] = [*live, None, *live]
            if not self.rules.no_hole_card:
                q.append(None)
            self._deal_queue = q
            self.phase = Phase.DEALING
        target = self._deal_queue.pop(0)
        self._give(self._draw(), target)
        if not self._deal_queue:
            self._initial_deal_done()

    def _initial_deal_done(self) -> None:
        for b in self.live_boxes:
            if b.hands[0].blackjack:
                b.hands[0].done = True
                self._emit("hand_done", box=b.index, hand=0, reason="blackjack")
        self._settle_ready()
        if self.rules.insurance and self.dealer and self.dealer[0] >> 2 == ACE:
            self.phase = Phase.INSURANCE
            self._emit("insurance_offered", dealer_up=self.dealer[0])
        else:
            self._after_insurance()

    def close_insurance(self) -> None:
        """End the insurance phase; under peek the dealer then checks the hole card."""
        self._need(Phase.INSURANCE, op="close_insurance")
        self._emit("insurance_closed")
        self._after_insurance()

    def _after_insurance(self) -> None:
        if not self.rules.no_hole_card and is_natural(self.dealer):
            self.dealer_done = True
            self._emit("dealer_done", cards=list(self.dealer), total=21, blackjack=True)
            for b in self.live_boxes:
                for i, h in enumerate(b.hands):
                    if not h.done:
                        h.done = True
                        self._emit("hand_done", box=b.index, hand=i, reason="dealer_blackjack")
            self._settle_ready()
            self.phase = Phase.SETTLING
            return
        self._settle_ready()
        self.phase = Phase.PLAYING
        self._advance()

    # ================================================================= decisions
    @property
    def current(self) -> tuple[int, int] | None:
        """``(box, hand)`` awaiting a decision, or None."""
        return self._current if self.phase is Phase.PLAYING else None

    def _advance(self) -> None:
        for b in self.live_boxes:
            for i, h in enumerate(b.hands):
                if h.done:
                    continue
                if len(h.cards) == 1:  # a split hand receives its second card
                    self._give(self._draw(), b.index, i)
                    if self._auto_done(b, i):
                        continue
                self._current = (b.index, i)
                return
        self._current = None
        self.phase = Phase.DEALER

    def _auto_done(self, b: BoxState, i: int) -> bool:
        h = b.hands[i]
        reason = None
        if h.busted:
            reason = "bust"
        elif h.total == 21:
            reason = "21"
        elif h.split_aces and self.rules.split_aces_one_card:
            pair = h.cards[0] >> 2 == h.cards[1] >> 2
            can_resplit = pair and self.rules.resplit_aces and len(b.hands) < self._max_hands
            if not can_resplit:
                reason = "split_aces"
        if reason is None:
            return False
        h.done = True
        self._emit("hand_done", box=b.index, hand=i, reason=reason)
        self._settle_ready()
        return True

    @property
    def _max_hands(self) -> int:
        return self.rules.max_split_hands

    def legal_decisions(self) -> frozenset[Decision]:
        """The decisions the rules allow on the current hand (empty when none is due)."""
        if self.current is None:
            return frozenset()
        bi, hi = self.current
        b = self.boxes[bi]
        h = b.hands[hi]
        r = self.rules
        legal = {Decision.STAND}
        one_card_aces = h.split_aces and r.split_aces_one_card
        if not one_card_aces:
            legal.add(Decision.HIT)
        if len(h.cards) == 2:
            total, soft = hand_total(h.cards)
            allowed = {
                DoubleOn.ANY: True,
                DoubleOn.HARD: not soft,
                DoubleOn.NINE_TO_ELEVEN: not soft and 9 <= total <= 11,
                DoubleOn.TEN_OR_ELEVEN: not soft and 10 <= total <= 11,
            }[r.double_on]
            if allowed and not one_card_aces and (not h.from_split or r.double_after_split):
                legal.add(Decision.DOUBLE)
            pair = h.cards[0] >> 2 == h.cards[1] >> 2
            aces = h.cards[0] >> 2 == ACE
            if (
                pair
                and len(b.hands) < r.max_split_hands
                and not (h.split_aces and not (aces and r.resplit_aces))
            ):
                legal.add(Decision.SPLIT)
            if r.surrender is not Surrender.NONE and len(b.hands) == 1 and not h.from_split:
                legal.add(Decision.SURRENDER)
        return frozenset(legal)

    def decision_view(self) -> DecisionView:
        """The :class:`DecisionView` of the current hand; raises :class:`RoundStateError`
        when no decision is due."""
        if self.current is None:
            raise RoundStateError(f"no decision is due in phase {self.phase.value}")
        bi, hi = self.current
        b = self.boxes[bi]
        h = b.hands[hi]
        return DecisionView(
            self.rules,
            bi,
            hi,
            tuple(h.cards),
            self.dealer[0],
            len(b.hands),
            h.from_split,
            self.legal_decisions(),
        )

    def decide(self, decision: Decision | str) -> None:
        """Apply the controller's ``decision`` to the current hand.

        Raises :class:`IllegalDecisionError` naming the legal decisions when the Rules forbid
        it (e.g. a double on a soft total under ``double_on='hard'``, a split beyond
        ``max_split_hands``, a hit on a one-card split ace); :class:`RoundStateError` when no
        decision is due.
        """
        self._need(Phase.PLAYING, op="decide")
        try:
            d = Decision(decision)
        except ValueError:
            raise IllegalDecisionError(
                f"{decision!r} is not a decision: use hit, stand, double, split or surrender"
            ) from None
        legal = self.legal_decisions()
        assert self._current is not None
        bi, hi = self._current
        if d not in legal:
            names = ", ".join(sorted(x.value for x in legal))
            raise IllegalDecisionError(
                f"{d.value} is not allowed on box {bi} hand {hi} "
                f"({self.boxes[bi].hands[hi].cards} under these rules); legal now: {names}"
            )
        b = self.boxes[bi]
        h = b.hands[hi]
        self._emit("decision", box=bi, hand=hi, decision=d.value, by=b.controller)
        if d is Decision.STAND:
            h.done = True
            self._emit("hand_done", box=bi, hand=hi, reason="stand")
            self._settle_ready()
        elif d is Decision.HIT:
            self._give(self._draw(), bi, hi)
            self._auto_done(b, hi)
        elif d is Decision.SURRENDER:
            h.surrendered = h.done = True
            self._emit("hand_done", box=bi, hand=hi, reason="surrender")
            self._settle_ready()
        elif d is Decision.DOUBLE:
            h.doubled = True
            self._give(self._draw(), bi, hi)
            if not self._auto_done(b, hi):
                h.done = True
                self._emit("hand_done", box=bi, hand=hi, reason="double")
                self._settle_ready()
        else:  # split
            aces = h.cards[0] >> 2 == ACE
            moved = h.cards.pop()
            h.from_split = True
            h.split_aces = aces
            b.hands.insert(hi + 1, HandState([moved], from_split=True, split_aces=aces))
            self._give(self._draw(), bi, hi)
            self._auto_done(b, hi)
        if h.done:
            self._advance()

    # ================================================================= dealer
    def play_dealer(self) -> None:
        """Complete the dealer's hand: under no-hole-card play the second card first (if any
        hand or insurance is still undecided), then draw to 17 (standing on soft 17 unless
        ``dealer_hits_soft_17``), only while some hand is neither busted nor a blackjack, or
        always when a wager in play requires it (``WagerType.dealer_plays_out``)."""
        self._need(Phase.DEALER, op="play_dealer")
        hands = [h for b in self.live_boxes for h in b.hands]
        insured = any(
            self.wagers[w].placed is Placed.INSURANCE and (b.index, p, w) not in self.settled
            for b in self.live_boxes
            for (p, w) in b.bets
        )
        out = self._plays_out()
        if len(self.dealer) < 2 and (insured or out or any(not h.busted for h in hands)):
            self._give(self._draw(), None)
        open_hands = (not h.busted and not h.blackjack and not h.surrendered for h in hands)
        if not is_natural(self.dealer) and (out or any(open_hands)):
            while True:
                total, soft = hand_total(self.dealer)
                if total < 17 or (total == 17 and soft and self.rules.dealer_hits_soft_17):
                    self._give(self._draw(), None)
                else:
                    break
        total, _ = hand_total(self.dealer)
        self.dealer_done = True
        self._emit(
            "dealer_done", cards=list(self.dealer), total=total, blackjack=is_natural(self.dealer)
        )
        self._settle_ready()
        self.phase = Phase.SETTLING

    # ================================================================= settlement
    def _record(self, bet: Bet, s: Settlement) -> None:
        self.settled[(bet.box, bet.player, bet.wager)] = s
        self.order.append((bet, s))
        self._emit(
            "wager_settled",
            box=bet.box,
            player=bet.player,
            wager=bet.wager,
            amount=bet.amount,
            outcome=s.outcome,
            net=s.net,
            rule=s.rule,
            detail=[d.as_dict() for d in s.detail],
        )

    def _plays_out(self) -> bool:
        """A wager placed on a live box requires the dealer to complete the hand
        (``WagerType.dealer_plays_out``)."""
        return any(self.wagers[w].dealer_plays_out for b in self.live_boxes for (_, w) in b.bets)

    def _round_record(self) -> RoundRecord:
        """The round's record: every live box's final hands and the dealer's final hand."""
        dealer = DealerRecord.of(self.dealer)
        boxes = {
            b.index: BoxRecord(
                b.index,
                tuple(
                    HandRecord.of(
                        h.cards,
                        doubled=h.doubled,
                        from_split=h.from_split,
                        surrendered=h.surrendered,
                    )
                    for h in b.hands
                ),
                dealer,
            )
            for b in self.live_boxes
        }
        return RoundRecord(self.round_no, boxes, dealer)

    def _settle_ready(self, *, final: bool = False) -> list[tuple[Bet, Settlement]]:
        jackpots: list[tuple[Bet, Settlement]] = []
        record = self._round_record() if final else None
        for b in self.live_boxes:
            view = self.view(b.index, final=final)
            if record is not None:
                view = replace(view, record=record.boxes[b.index])
            for bet in list(b.bets.values()):
                key = (b.index, bet.player, bet.wager)
                if key in self.settled:
                    continue
                s = self.wagers[bet.wager].settle(view, bet)
                if s is None:
                    if final:
                        raise WagerError(f"{bet.wager} left undecided at the end of the round")
                    continue
                if s.jackpot:
                    if final:
                        jackpots.append((bet, s))
                    continue
                self._record(bet, s)
        return jackpots

    def settle(self, jackpot_pressers: Mapping[int, str] | None = None) -> RoundResult:
        """Decide every remaining wager, press the jackpot button for Madness 21 wins, end
        the round, and shuffle if the cutting card came out (rule 5.7(b)) or was missing
        (rule 16.10).

        ``jackpot_pressers`` maps a box to who presses the jackpot button for it: the box's
        controller (the default), a nominee holding a wager on the box and a Madness 21 wager,
        or :data:`feltlab.jackpot.EMPLOYEE` (rule 15A.9); anyone else raises
        :class:`WagerError`.  One press per box with winning Madness 21 wagers; every winning
        wager on it receives the displayed prize individually (15A.7).  A panel failure
        withdraws Madness 21 (16.12) and settles won wagers at $25 (2500 cents).
        """
        self._need(Phase.SETTLING, op="settle")
        jackpots = self._settle_ready(final=True)
        pressers = dict(jackpot_pressers or {})
        by_box: dict[int, list[tuple[Bet, Settlement]]] = {}
        for bet, s in jackpots:
            by_box.setdefault(bet.box, []).append((bet, s))
        for box, won in by_box.items():
            b = self.boxes[box]
            presser = pressers.get(box, b.controller or EMPLOYEE)
            eligible = {b.controller, EMPLOYEE} | {
                p for (p, w) in b.bets if self.wagers[w].name == won[0][0].wager
            }
            if presser not in eligible:
                raise WagerError(
                    f"{presser!r} may not press the jackpot button for box {box}: the "
                    "controller, a nominee with a wager on the box and a valid Madness 21 "
                    f"wager, or {EMPLOYEE!r} may (rule 15A.9)"
                )
            prize: int | None = None
            if not self._device_failed and self.panel is not None:
                try:
                    prize = self.panel.press(self.round_no, box, presser)
                except DeviceError as exc:
                    self._fault(JACKPOT_PANEL, str(exc), during="press")
            elif self.panel is None and not self._device_failed:
                self._fault(JACKPOT_PANEL, "no jackpot panel is connected", during="press")
            if prize is not None:
                self._emit("jackpot_pressed", box=box, by=presser, prize=prize, rule="15A.7")
            for bet, s in won:
                if prize is None:
                    s2 = Settlement(s.outcome, FAILURE_PAYOUT, "16.12", s.detail)
                else:
                    s2 = Settlement(s.outcome, prize, "15A.7", s.detail)
                self._record(bet, s2)
        return self._finish(void=False)

    def _finish(self, *, void: bool) -> RoundResult:
        record = None if void else self._round_record()
        result = RoundResult(self.round_no, tuple(self.order), tuple(self.dealer), void, record)
        self._result = result  # the round_settled observers read it
        totals: dict[str, int] = {}
        for bet, s in self.order:
            totals[bet.player] = totals.get(bet.player, 0) + s.net
        self._emit("round_settled", void=void, net=totals, dealer=list(self.dealer))
        self.source.end_round(self._round_cards)
        if self.source.needs_shuffle:
            reason = "cutting_card" if self._cut_announced else "missing_cutting_card"
            rule = "5.7(b)" if self._cut_announced else "16.10"
            info = self.source.shuffle()
            self._emit("shoe_shuffled", reason=reason, rule=rule, **info)
        self.phase = Phase.IDLE
        return result

    # ================================================================= irregularities
    def report_missing_cutting_card(self) -> None:
        """The cutting card was found not inserted after the shuffle: the cards are reshuffled
        at the end of this round (rule 16.10; raises :class:`ShoeError` with a continuous
        shuffler, where the rule does not apply)."""
        if self.phase is Phase.IDLE:
            raise RoundStateError("report_missing_cutting_card() during a round")
        self.source.report_missing_cutting_card()
        self._emit("cutting_card_missing", rule="16.10")

    def misdeal(self, to: int | None) -> int:
        """The dealer placed the next card of the initial deal in error on box ``to`` (None:
        the dealer).  The card is drawn and recorded as misplaced; resolve it with
        :meth:`reconstruct`, :meth:`void_box` or :meth:`void_round` (rule 16.5).  Returns the
        card."""
        self._need(Phase.BETTING, Phase.DEALING, op="misdeal")
        if self.phase is Phase.BETTING:
            self.deal_step()  # starts the deal; the misplaced card is the next one
            self._need(Phase.DEALING, op="misdeal")
        card = self._draw()
        expected = self._deal_queue[0]
        self._misplaced = (card, to)
        self.phase = Phase.MISDEALT
        self._emit("card_misplaced", card=card, to=to, expected=expected, rule="16.5")
        self._check_cut()
        return card

    def reconstruct(self) -> None:
        """Move the misplaced card to where it should have gone, so the sequence of cards is
        as it would have been without the error (rule 16.5), and continue the deal."""
        self._need(Phase.MISDEALT, op="reconstruct")
        assert self._misplaced is not None
        card, wrong = self._misplaced
        target = self._deal_queue.pop(0)
        self._misplaced = None
        self._emit("round_reconstructed", card=card, moved_from=wrong, to=target, rule="16.5")
        if target is None:
            self.dealer.append(card)
        else:
            b = self.boxes[target]
            if not b.hands:
                b.hands.append(HandState())
            b.hands[0].cards.append(card)
            b.cards.append(card)
        self.phase = Phase.DEALING
        if not self._deal_queue:
            self._initial_deal_done()

    def void_box(self, box: int) -> None:
        """Void the hand(s) of ``box`` (rule 16.5): its cards go to the discard rack and every
        wager on it not yet decided is returned (net 0); a pending misplaced card is
        discarded too.  The other hands stand as dealt."""
        if self.phase in (Phase.IDLE, Phase.SETTLING):
            raise RoundStateError(f"void_box() needs a round in play; phase {self.phase.value}")
        b = self._box(box)
        if b.voided:
            raise RoundStateError(f"box {box} is already void")
        b.voided = True
        self._emit("hand_voided", box=box, rule="16.5")
        for bet in b.bets.values():
            if (box, bet.player, bet.wager) not in self.settled:
                self._record(bet, Settlement("void", 0, "16.5"))
        self._deal_queue = [t for t in self._deal_queue if t != box]
        if self.phase is Phase.MISDEALT:
            self._misplaced = None
            self.phase = Phase.DEALING
        if self.phase is Phase.DEALING and not self._deal_queue:
            self._initial_deal_done()
        elif self.phase is Phase.DEALING and not self.live_boxes:
            self._deal_queue = []
            self.phase = Phase.SETTLING
        elif self.phase is Phase.PLAYING and self._current and self._current[0] == box:
            self._advance()

    def void_round(self) -> RoundResult:
        """Void the whole round (rule 16.5): every undecided wager is returned, the cards go
        to the discard rack, and the round ends."""
        if self.phase is Phase.IDLE:
            raise RoundStateError("void_round() needs a round in play")
        self._emit("round_voided", rule="16.5")
        for b in self.boxes:
            for bet in b.bets.values():
                if (b.index, bet.player, bet.wager) not in self.settled:
                    self._record(bet, Settlement("void", 0, "16.5"))
        return self._finish(void=True)

    def remove_exposed_card(self) -> int:
        """A card was dealt in error to the dealer's completed hand (or left exposed after a
        reconstruction): it is removed from play to the discard rack (rule 16.3) and changes
        no hand.  Returns the card."""
        self._need(Phase.SETTLING, Phase.DEALING, Phase.PLAYING, op="remove_exposed_card")
        if self.phase is Phase.SETTLING and not self.dealer_done:
            raise RoundStateError("the dealer's hand is not complete")
        card = self._draw()
        self._emit("card_removed", card=card, rule="16.3")
        self._check_cut()
        return card

    def report_device_fault(self, device: str, message: str) -> None:
        """A table device failed.  For the jackpot panel (rule 16.12) Madness 21 is withdrawn
        until :meth:`repair_device`, and wagers already won this round are settled at $25."""
        self._fault(device, message, during="reported")

    def _fault(self, device: str, message: str, *, during: str) -> None:
        if device == JACKPOT_PANEL:
            self._device_failed = self.phase is not Phase.IDLE
            self.withdrawn |= {n for n, w in self.wagers.items() if w.decided_by_panel}
        self._emit("device_fault", device=device, message=message, during=during, rule="16.12")

    def repair_device(self, device: str) -> None:
        """The device is repaired: wagers withdrawn because of it are offered again."""
        if device == JACKPOT_PANEL:
            self.withdrawn.clear()


# ===================================================================== the driver
def play_round(
    table: Table,
    bets: Iterable[tuple[int, str, str, int]],
    policy: Policy,
    *,
    jackpot_pressers: Mapping[int, str] | None = None,
) -> RoundResult:
    """Run one whole round: place ``bets`` (``(box, player, wager, amount)``; insurance
    bets are asked of ``policy``), deal, play every hand by ``policy``, play the dealer and
    settle."""
    table.begin_round()
    for box, player, wager, amount in bets:
        table.place(box, player, wager, amount)
    table.deal()
    if table.phase is Phase.INSURANCE:
        insurance = [n for n, w in table.wagers.items() if w.placed is Placed.INSURANCE]
        for b in table.live_boxes:
            for (player, w), bet in list(b.bets.items()):
                if w != MAIN or not insurance:
                    continue
                cents = policy.insurance(b.index, player, tuple(b.cards), bet.amount)
                if cents:
                    table.place(b.index, player, insurance[0], cents)
        table.close_insurance()
    while table.phase is Phase.PLAYING:
        table.decide(policy.decide(table.decision_view()))
    if table.phase is Phase.DEALER:
        table.play_dealer()
    return table.settle(jackpot_pressers)
