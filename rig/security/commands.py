"""The command-authentication checks of the security pack (docs/security.md): every command
of the DBC's Opcode table sent unauthenticated, with a wrong MAC, replayed and out of order.
Each must be refused (Ack ``AUTH_FAILED`` with the right reason), reported (a Fault
``SECURITY``) and never acted on: nothing else comes back, and what the device says of itself
(state, shoes, cards, boot count, firmware) is unchanged."""

from __future__ import annotations

import hashlib

from feltlab.rig.protocol.cmdauth import AuthCommand, AuthRefusal
from feltlab.rig.protocol.codec import Codec, Opcode, Result, load_database
from feltlab.rig.security.findings import Finding, finding
from feltlab.rig.security.host import LabHost, Seen

#: arguments that make each command act (Arg8, Arg32); the others take (0, 0)
ACTING_ARGS: dict[int, tuple[int, int]] = {
    Opcode.READ_SHOE: (1, 0),
    Opcode.READ_RAW: (32, 4),
    Opcode.INSERT: (0, 0),
    Opcode.ARM: (1, 7),
    Opcode.PRESS: (1, 0),
    Opcode.DISPLAY: (0, 100),
    Opcode.INJECT_FAULT: (5, 0),
}
#: frames a refusal may bring: the refusal's Ack and Fault, and heartbeats
_REFUSAL_FRAMES = frozenset({"Ack", "Fault", "Heartbeat"})
#: commands whose authentic original changes the device for a while (the pack waits)
_SETTLE: dict[int, float] = {Opcode.REBOOT: 0.3, Opcode.SHUFFLE: 0.3}


def dbc_opcodes() -> list[tuple[int, str]]:
    """Every opcode of the DBC's Command Opcode value table, ``(value, name)``."""
    sig = load_database().get_message_by_name("Command").get_signal_by_name("Opcode")
    return sorted((int(v), str(n)) for v, n in sig.choices.items())


def _judge(host: LabHost, seen: list[Seen], rid: int, reason: AuthRefusal) -> tuple[bool, str]:
    """(refused properly?, what came back) for one refused-to-be request ``rid``."""
    frames = host.decoded(seen)
    ack = host.ack(seen, rid)
    extra = sorted({f.name for f in frames if f.name not in _REFUSAL_FRAMES})
    faults = [f for f in frames if f.name == "Fault" and f.signals["Detail"] & 0xFF == reason]
    payloads = [
        s for s in seen if not s.extended and s.arbitration_id - host.codec.base in (0xA, 0xC, 0xE)
    ]
    ok = (
        ack is not None
        and ack.signals["Result"] == Result.AUTH_FAILED
        and ack.signals["Value"] == reason
        and bool(faults)
        and not extra
        and not payloads
    )
    if ack is None:
        said = "no Ack"
    else:
        res = ack.signals["Result"]
        said = Result(res).name if res in Result._value2member_map_ else str(res)
        if res == Result.AUTH_FAILED:
            v = ack.signals["Value"]
            said += f" {AuthRefusal(v).name if v in AuthRefusal._value2member_map_ else v}"
    said += ", Fault SECURITY" if faults else ", no Fault SECURITY"
    if extra or payloads:
        said += f", and {', '.join(extra + (['a payload'] if payloads else []))}"
    return ok, said


def _wrong_tag(cmd: AuthCommand) -> AuthCommand:
    tag = hashlib.sha256(b"not the key" + cmd.tag).digest()
    return AuthCommand(
        cmd.request_id, cmd.opcode, cmd.arg8, cmd.arg32, cmd.freshness, cmd.device_id, tag
    )


def _variant(host: LabHost, opcode: int, variant: str) -> tuple[bool, str]:
    """Send one refused-to-be form of ``opcode``; (refused properly and not acted on?, line)."""
    a8, a32 = ACTING_ARGS.get(opcode, (0, 0))
    codec: Codec = host.codec
    if variant == "unauthenticated":
        rid = host.rid()
        msg, reason = host.command(opcode, a8, a32, rid), AuthRefusal.UNAUTHENTICATED
    elif variant == "forged":
        rid = host.rid()
        msg = _wrong_tag(host.signer.sign(opcode, a8, a32, rid)).message(codec)
        reason = AuthRefusal.BAD_MAC
    elif variant == "replayed":
        rid, msg = host.signed(opcode, a8, a32)
        host.exchange(msg, _SETTLE.get(opcode, 0.1))  # the authentic original
        reason = AuthRefusal.REPLAYED
    else:  # reordered: n+1 held back, n+2 sent, then n+1
        rid = host.rid()
        held = host.signer.sign(opcode, a8, a32, rid)
        _, later = host.signed(Opcode.PING)
        host.exchange(later)
        msg, reason = held.message(codec), AuthRefusal.REORDERED
    before = host.snapshot()
    seen = host.exchange(msg, 0.1)
    after = host.snapshot()
    ok, said = _judge(host, seen, rid, reason)
    changed = {k: (before[k], after.get(k)) for k in before if before[k] != after.get(k)}
    if changed:
        ok = False
        said += "; ACTED ON: " + ", ".join(f"{k} {b} -> {a}" for k, (b, a) in changed.items())
    return ok, said


def command_checks(host: LabHost, opcodes: list[tuple[int, str]] | None = None) -> list[Finding]:
    """command.unauthenticated, command.forged, command.replayed, command.reordered over
    every opcode of the DBC (or ``opcodes``)."""
    ops = opcodes if opcodes is not None else dbc_opcodes()
    out = []
    for variant in ("unauthenticated", "forged", "replayed", "reordered"):
        evidence, bad = [], []
        for value, name in ops:
            ok, said = _variant(host, value, variant)
            evidence.append(f"{name} (0x{value:02X}): {said}")
            if not ok:
                bad.append(name)
        head = (
            f"{len(bad)} of {len(ops)} commands not refused as required: {', '.join(bad)}"
            if bad
            else f"all {len(ops)} commands refused, reported, never acted on"
        )
        out.append(
            finding(
                f"command.{variant}",
                bool(bad),
                [head, *evidence],
                commands=len(ops),
                not_refused=bad,
            )
        )
    return out


__all__ = ["ACTING_ARGS", "command_checks", "dbc_opcodes"]
