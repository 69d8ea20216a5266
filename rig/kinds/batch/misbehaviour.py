"""The batch shuffler's misbehaviours (:class:`feltlab.rig.devices.misbehaviour.Misbehave`): an
absurd shuffle duration announced (and kept, or not), a shoe re-sent changed, one READ_SHOE or
every command answered late, a spontaneous reboot after a shuffle."""

from __future__ import annotations

from typing import Any

from feltlab.rig.devices.misbehaviour import Absurd, Misbehave, MisbehaviourPlan
from feltlab.rig.protocol.codec import Opcode, ShoePayload, State


class BatchMisbehaviour(MisbehaviourPlan):
    """The plan a simulated batch shuffler consults (see :class:`MisbehaviourPlan`)."""

    def command_delay(self, device: Any, frame: Any) -> float | None:
        mb = self.misbehaviour
        if mb is None:
            return None
        if mb.name is Misbehave.REPLY_LATENCY and device.state != State.BOOT:
            return mb.delay
        if (
            mb.name is Misbehave.LATE_REPLY
            and frame.signals["Opcode"] == Opcode.READ_SHOE
            and device.shoe is not None
            and self.active(int(device.shoe.shoe_number))
        ):
            self.fire()
            return mb.delay
        return None

    def shuffle_starts(self, device: Any, number: int) -> Absurd:
        super().shuffle_starts(device, number)
        lie, stall = Misbehave.ABSURD_DURATION_LIE, Misbehave.ABSURD_DURATION_STALL
        if not self.is_(lie, stall) or not self.active(number):
            return Absurd.NO
        self.fire()
        return Absurd.STALL if self.is_(stall) else Absurd.LIE

    def shuffled(self, device: Any, shoe: Any) -> None:
        super().shuffled(device, shoe)
        if self.is_(Misbehave.SPONTANEOUS_REBOOT) and self.active(device.shoe_count):
            self.fire(reboot=True)
            device.reboot_in(max(device.timing.shuffle_duration, 0.0) + 0.001)

    def shoe_read(self, device: Any, shoe: Any) -> None:
        if self.is_(Misbehave.RESEND_SHOE_CHANGED) and self.active(int(shoe.shoe_number)):
            self.fire()
            codes, decks = shoe.codes.copy(), shoe.card_decks.copy()
            i, j = 0, len(codes) - 1  # swap the top and bottom cards: still a permutation
            codes[[i, j]], decks[[i, j]] = codes[[j, i]], decks[[j, i]]
            device.send_shoe(
                ShoePayload(shoe.shoe_number, shoe.decks, shoe.cut_position, codes, decks)
            )
