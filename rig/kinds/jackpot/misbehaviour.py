"""The jackpot prize panel's misbehaviours (:class:`feltlab.rig.devices.misbehaviour.Misbehave`):
an earlier signed result replayed, a spontaneous reboot as its button is pressed."""

from __future__ import annotations

from typing import Any

from feltlab.rig.devices.misbehaviour import Misbehave, MisbehaviourPlan


class JackpotMisbehaviour(MisbehaviourPlan):
    """The plan a simulated jackpot panel consults (see :class:`MisbehaviourPlan`)."""

    def pressing(self, device: Any, number: int) -> None:
        super().pressing(device, number)
        if not self.active(number):
            return
        if self.is_(Misbehave.REPLAY_RESULT) and device.signed_count >= 2:
            self.fire()
            device.faults["replay_result"] = 1  # the panel's own fault: the result one back
        elif self.is_(Misbehave.SPONTANEOUS_REBOOT):
            self.fire(reboot=True)
            device.reboot_in(0.01)
