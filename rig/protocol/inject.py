"""The faults a simulated device in test mode injects on request (docs/protocol.md,
INJECT_FAULT): the protocol's numbering, shared by the devices that inject them and the
clients that ask for them."""

from __future__ import annotations

#: injectable faults: name -> number used by the INJECT_FAULT command (Arg8).
FAULTS: dict[str, int] = {
    "stop_heartbeats": 1,
    "silence_mid_transfer": 2,
    "corrupt_frame": 3,
    "jump_counter": 4,
    "reboot": 5,
    "jam": 6,
    "drop_result": 7,
    "button": 8,
    "display": 9,
    "forge_result": 10,
    "replay_result": 11,
    "reorder_results": 12,
    "clear": 15,
}
FAULT_NAMES = {v: k for k, v in FAULTS.items()}

__all__ = ["FAULTS", "FAULT_NAMES"]
