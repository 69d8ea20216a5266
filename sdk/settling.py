"""Settlement of a round on a :class:`feltlab.engine.Table` (a mixin of it): every wager
decided by its wager type, the Madness 21 jackpot button pressed (rules 15A.7-15A.9, 16.12),
the round ended and the cards shuffled when the cutting card came out (rule 5.7(b)) or was
missing (rule 16.10)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from feltlab.errors import (
    DeviceError,
    WagerError,
)
from feltlab.jackpot import EMPLOYEE, FAILURE_PAYOUT
from feltlab.record import BoxRecord, DealerRecord, HandRecord, RoundRecord
from feltlab.round import (
    JACKPOT_PANEL,
    Phase,
    RoundResult,
)
from feltlab.wagers import Bet, Settlement

if TYPE_CHECKING:
    from feltlab.table_state import TableState


class Settling:
    """The settlement operations of :class:`feltlab.engine.Table`."""

    _result: RoundResult | None

    def _record(self: TableState, bet: Bet, s: Settlement) -> None:
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
            detail=list(s.detail),
        )

    def _plays_out(self: TableState) -> bool:
        """A wager placed on a live box requires the dealer to complete the hand
        (``WagerType.dealer_plays_out``)."""
        return any(self.wagers[w].dealer_plays_out for b in self.live_boxes for (_, w) in b.bets)

    def _round_record(self: TableState) -> RoundRecord:
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

    def _settle_ready(self: TableState, *, final: bool = False) -> list[tuple[Bet, Settlement]]:
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

    def settle(self: TableState, jackpot_pressers: Mapping[int, str] | None = None) -> RoundResult:
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

    def _finish(self: TableState, *, void: bool) -> RoundResult:
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
