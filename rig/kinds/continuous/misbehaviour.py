"""The continuous shuffler's misbehaviour (:class:`feltlab.rig.devices.misbehaviour.Misbehave`):
a spontaneous reboot as it deals."""

from __future__ import annotations

from typing import Any

from feltlab.rig.devices.misbehaviour import Misbehave, MisbehaviourPlan


class ContinuousMisbehaviour(MisbehaviourPlan):
    """The plan a simulated continuous shuffler consults (see :class:`MisbehaviourPlan`)."""

    def dealing(self, device: Any, number: int) -> None:
        super().dealing(device, number)
        if self.is_(Misbehave.SPONTANEOUS_REBOOT) and self.active(number):
            self.fire(reboot=True)
            device.reboot_in(0.01)
