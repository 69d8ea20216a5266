"""Irregularities of a round on a :class:`feltlab.engine.Table` (a mixin of it): a card dealt
in error and its reconstruction or voiding (rule 16.5), an exposed card removed (rule 16.3),
a missing cutting card (rule 16.10) and a failed device (rule 16.12)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from feltlab.errors import (
    RoundStateError,
)
from feltlab.round import (
    JACKPOT_PANEL,
    Phase,
    RoundResult,
    _Hand,
)
from feltlab.wagers import Settlement

if TYPE_CHECKING:
    from feltlab.table_state import TableState


class Irregularities:
    """The irregularity operations of :class:`feltlab.engine.Table`."""

    _misplaced: tuple[int, int | None] | None

    def report_missing_cutting_card(self: TableState) -> None:
        """The cutting card was found not inserted after the shuffle: the cards are reshuffled
        at the end of this round (rule 16.10; raises :class:`ShoeError` with a continuous
        shuffler, where the rule does not apply)."""
        if self.phase is Phase.IDLE:
            raise RoundStateError("report_missing_cutting_card() during a round")
        self.source.report_missing_cutting_card()
        self._emit("cutting_card_missing", rule="16.10")

    def misdeal(self: TableState, to: int | None) -> int:
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

    def reconstruct(self: TableState) -> None:
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
                b.hands.append(_Hand())
            b.hands[0].cards.append(card)
            b.cards.append(card)
        self.phase = Phase.DEALING
        if not self._deal_queue:
            self._initial_deal_done()

    def void_box(self: TableState, box: int) -> None:
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

    def void_round(self: TableState) -> RoundResult:
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

    def remove_exposed_card(self: TableState) -> int:
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

    def report_device_fault(self: TableState, device: str, message: str) -> None:
        """A table device failed.  For the jackpot panel (rule 16.12) Madness 21 is withdrawn
        until :meth:`repair_device`, and wagers already won this round are settled at $25."""
        self._fault(device, message, during="reported")

    def _fault(self: TableState, device: str, message: str, *, during: str) -> None:
        if device == JACKPOT_PANEL:
            self._device_failed = self.phase is not Phase.IDLE
            self.withdrawn |= {n for n, w in self.wagers.items() if w.decided_by_panel}
        self._emit("device_fault", device=device, message=message, during=during, rule="16.12")

    def repair_device(self: TableState, device: str) -> None:
        """The device is repaired: wagers withdrawn because of it are offered again."""
        if device == JACKPOT_PANEL:
            self.withdrawn.clear()
