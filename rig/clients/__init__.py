"""Host-side clients of the rig protocol: one per device kind, behind one base class.

Every wait has a timeout; every command is retried with the same request id (the device
replays its reply instead of executing twice); every ISO-TP read is retried after an ISO
15765-2 timeout or a CRC-32 mismatch, so a payload is either received intact or reported with
the reason it was not.  A watchdog declares the device lost after 3 missed heartbeat periods
and raises a ``lost`` event; counter gaps, reboots, faults and protocol mismatches are events
too.  :meth:`DeviceClient.close` joins every thread the client started.
"""

from __future__ import annotations

import logging

from feltlab.rig.clients.base import DeviceClient as DeviceClient
from feltlab.rig.clients.events import LOST_AFTER_PERIODS as LOST_AFTER_PERIODS
from feltlab.rig.clients.events import SECURITY_REASONS as SECURITY_REASONS
from feltlab.rig.clients.events import WAIT_CEILING as WAIT_CEILING
from feltlab.rig.clients.events import DeviceEvent as DeviceEvent
from feltlab.rig.clients.events import describe_client_event as describe_client_event
from feltlab.rig.clients.panel import CanJackpotPanel as CanJackpotPanel
from feltlab.rig.clients.panel import JackpotPanelClient as JackpotPanelClient
from feltlab.rig.clients.shufflers import BatchShufflerClient as BatchShufflerClient
from feltlab.rig.clients.shufflers import Collection as Collection
from feltlab.rig.clients.shufflers import ContinuousShufflerClient as ContinuousShufflerClient
from feltlab.rig.clients.shufflers import DealtCard as DealtCard
from feltlab.rig.errors import (
    SecurityFault,
)
from feltlab.rig.protocol.codec import (
    FaultCode,
)

log = logging.getLogger(__name__)


__all__ = [
    "BatchShufflerClient",
    "CanJackpotPanel",
    "Collection",
    "ContinuousShufflerClient",
    "DealtCard",
    "DeviceClient",
    "DeviceEvent",
    "FaultCode",
    "JackpotPanelClient",
    "SecurityFault",
]
