"""Supervision events of the clients of :mod:`feltlab.rig.clients` and the limits of their
waits (moved here from ``feltlab.rig.clients``, which re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from feltlab.rig.protocol.codec import (
    FaultCode,
    Severity,
)

LOST_AFTER_PERIODS = 3

WAIT_CEILING = 600.0
"""No wait of the rig trusts a device beyond this many seconds, whatever a profile declares
(issue 14: nothing a device sends bounds a wait)."""
#: ``security`` event reasons (the ``reason`` detail) of :class:`SecurityFault`.
SECURITY_REASONS = {"forged": 1, "replayed": 2, "reordered": 3, "unauthenticated": 4}


def describe_client_event(kind: str, detail: dict[str, Any], injected: str | None) -> str:
    """A readable line for a client event: a Fault frame with its names from the protocol
    enums, labelled when the campaign injected it (test mode)."""
    if kind == "fault":
        try:
            code = FaultCode(detail.get("code", -1)).name
        except ValueError:
            code = f"code {detail.get('code')}"
        try:
            sev = Severity(detail.get("severity", -1)).name
        except ValueError:
            sev = f"severity {detail.get('severity')}"
        state = "raised" if detail.get("active") else "cleared"
        line = f"fault {code} {state} (severity {sev}, detail {detail.get('detail', 0)})"
        if injected is not None:
            line += f"; injected by the campaign (test fault {injected!r}), as expected"
        return line
    if not detail:
        return kind
    return kind + " (" + ", ".join(f"{k} {v}" for k, v in detail.items()) + ")"


@dataclass(frozen=True)
class DeviceEvent:
    """Something the supervision noticed: ``kind`` is ``online``, ``lost``, ``recovered``,
    ``counter_gap`` (detail ``missed``), ``reboot`` (``boot_count``), ``fault`` (``code``,
    ``severity``, ``active``, ``detail``), ``protocol_version`` (``major``),
    ``sequence_gap`` (``missed``), ``bus_error`` (a command could not be sent: the bus
    went away; ``opcode``), ``transfer_error`` (an ISO-TP read failed or timed out:
    ``channel``), ``payload_error`` (a payload arrived but failed its checks: ``channel``),
    ``security`` (a refused jackpot result: ``reason`` a
    :data:`SECURITY_REASONS` number, ``draw_counter``, ``box``) or ``decode_error`` (a frame
    that broke the protocol or crashed a handler: ``arbitration_id``).  ``timestamp`` in
    seconds since the epoch."""

    kind: str
    base: int
    timestamp: float
    detail: dict[str, int] = field(default_factory=dict)
