"""What the device answers to undeclared ids and debug requests (docs/security.md,
"Undeclared services"): frames on every id of its block the protocol does not declare host to
device, the common diagnostic requests (UDS, ISO 14229, on the OBD functional and physical ids;
XCP's CONNECT), and every opcode the DBC does not declare, authenticated.  A hardened device
answers the undeclared opcodes ``UNKNOWN_OPCODE`` and nothing else, and the rest not at all."""

from __future__ import annotations

import can

from feltlab.rig.protocol.codec import Channel, Result
from feltlab.rig.security.commands import dbc_opcodes
from feltlab.rig.security.findings import Finding, finding
from feltlab.rig.security.host import LabHost, Seen

#: diagnostic and debug requests: (name, id, data)
DEBUG_REQUESTS: tuple[tuple[str, int, bytes], ...] = (
    ("UDS TesterPresent (0x7DF, functional)", 0x7DF, bytes((2, 0x3E, 0))),
    ("UDS TesterPresent (0x7E0)", 0x7E0, bytes((2, 0x3E, 0))),
    ("UDS DiagnosticSessionControl extended (0x7E0)", 0x7E0, bytes((2, 0x10, 3))),
    ("UDS ReadMemoryByAddress (0x7E0)", 0x7E0, bytes((7, 0x23, 0x44, 0, 0, 0, 0, 0x40))),
    ("UDS ReadDataByIdentifier F190 (0x7E0)", 0x7E0, bytes((3, 0x22, 0xF1, 0x90))),
    ("XCP CONNECT (0x7F0)", 0x7F0, bytes((0xFF, 0))),
)


def _host_ids(base: int) -> set[int]:
    ids = {base + 1}
    for ch in Channel:
        data, fc = base + int(ch), base + int(ch) + 1
        ids.add(data if ch == Channel.LOAD else fc)
    return ids


def _answers(host: LabHost, seen: list[Seen], ignore: set[int]) -> list[str]:
    """The frames in ``seen`` that are an answer: anything but heartbeats (and ``ignore``d ids)."""
    out = []
    for s in seen:
        if s.arbitration_id in ignore:
            continue
        names = [f.name for f in host.decoded([s])]
        if names == ["Heartbeat"]:
            continue
        out.append(
            f"0x{s.arbitration_id:X} [{s.data.hex(' ')}]" + (f" {names[0]}" if names else "")
        )
    return out


def probe_check(host: LabHost) -> Finding:
    """probe.undeclared over undeclared ids, debug requests and undeclared opcodes."""
    t = host.target
    base = t.base
    ignore: set[int] = set()
    if t.second_base is not None:  # the second device's own heartbeats
        ignore = {t.second_base + i for i in range(0x10)}
    evidence: list[str] = []
    bad = 0
    undeclared = [base + i for i in range(0x10) if base + i not in _host_ids(base)]
    for aid in undeclared:
        seen = host.exchange(can.Message(arbitration_id=aid, data=bytes(8), is_extended_id=False))
        got = _answers(host, seen, ignore)
        if got:
            bad += 1
            evidence.append(
                f"id 0x{aid:03X} (undeclared host to device): ANSWERED {'; '.join(got)}"
            )
    evidence.insert(
        0, f"{len(undeclared)} undeclared ids of the block 0x{base:03X}-0x{base + 15:03X} probed"
    )
    for name, aid, data in DEBUG_REQUESTS:
        seen = host.exchange(can.Message(arbitration_id=aid, data=data, is_extended_id=False))
        got = _answers(host, seen, ignore)
        if got:
            bad += 1
        evidence.append(f"{name}: " + (f"ANSWERED {'; '.join(got)}" if got else "no answer"))
    declared = {v for v, _ in dbc_opcodes()}
    odd = []
    for op in range(256):
        if op in declared:
            continue
        rid, msg = host.signed(op)
        seen = host.exchange(msg)
        ack = host.ack(seen, rid)
        others = [x for x in _answers(host, seen, ignore) if "Ack" not in x]
        if ack is None or ack.signals["Result"] != Result.UNKNOWN_OPCODE or others:
            odd.append(f"0x{op:02X}")
    bad += len(odd)
    evidence.append(
        f"{256 - len(declared)} undeclared opcodes, authenticated: "
        + (
            f"answered otherwise than UNKNOWN_OPCODE: {', '.join(odd)}"
            if odd
            else "each answered UNKNOWN_OPCODE only"
        )
    )
    return finding("probe.undeclared", bad > 0, evidence, answered=bad)


__all__ = ["DEBUG_REQUESTS", "probe_check"]
