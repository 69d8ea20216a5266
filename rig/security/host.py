"""The lab's side of the bus for the security pack: one node that records every frame it
receives, sends bare or authenticated commands (:class:`feltlab.rig.protocol.cmdauth
.CommandSigner`), sends firmware packages on the LOAD channel, reads the device's answer to a
command, and snapshots what the device reports of itself (to show a refused command was
never acted on)."""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass
from pathlib import Path

import can

from feltlab.rig.bus.isotp_channel import TransferError
from feltlab.rig.bus.transport import Node
from feltlab.rig.clients.shufflers import BatchShufflerClient
from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.cmdauth import CommandSigner
from feltlab.rig.protocol.codec import (
    PROTOCOL_MAJOR,
    Channel,
    Codec,
    FaultCode,
    Frame,
    Opcode,
    Result,
)
from feltlab.rig.security.targets import Target

#: how long the lab waits for a device's answer to one request (s)
ANSWER_WAIT = 0.05


@dataclass(frozen=True)
class Seen:
    """One frame the lab received: time (s, the bus clock), id, extended, data."""

    t: float
    arbitration_id: int
    extended: bool
    data: bytes


class LabHost:
    """The lab on ``target``'s bus: ``client`` (a batch shuffler client whose commands are
    authenticated), ``signer`` (the lab's command key), ``frames`` (every frame received);
    ``capture``: a .blf path recording every frame on the bus, the lab's own included."""

    def __init__(
        self, target: Target, *, clock_wait: float = ANSWER_WAIT, capture: Path | None = None
    ) -> None:
        self.target = target
        self.node = Node(target.spec, pace=False, clock=target.clock, capture=capture)
        self.clock = self.node.clock
        self.codec = Codec(target.base)
        self.signer = CommandSigner(
            self.codec, target.key, target.device_id, last=target.freshness_start
        )
        self.client = BatchShufflerClient(
            self.node,
            base=target.base,
            timeout=0.5,
            retries=1,
            heartbeat_period=target.heartbeat_period,
        )
        self.client.authenticate = self.signer.wrap
        # the pack's forged, replayed and reordered commands raise SECURITY on purpose: each is
        # evidence in its finding, not a warning for the operator (80 lines before the verdict)
        self.client.provoked_faults = frozenset({int(FaultCode.SECURITY)})
        self.frames: list[Seen] = []
        self.wait = clock_wait
        self._rid = itertools.count(0)
        data_id, fc_id = self.codec.channel_ids(Channel.LOAD)
        self._fw = self.node.open_channel("FIRMWARE", data_id, fc_id, fc_timeout=1.0)
        self.node.add_listener(self._record, wants=lambda aid, ext: True)

    def close(self) -> None:
        self.client.close()
        self.node.close()

    def _record(self, msg: can.Message) -> None:
        self.frames.append(
            Seen(msg.timestamp, msg.arbitration_id, msg.is_extended_id, bytes(msg.data))
        )

    def rid(self) -> int:
        """A request id for the pack's own frames (128..254: apart from the client's)."""
        return 128 + next(self._rid) % 127

    def command(self, opcode: int, arg8: int = 0, arg32: int = 0, rid: int = 1) -> can.Message:
        """A bare Command frame."""
        return self.codec.encode(
            "Command",
            {
                "RequestId": rid,
                "Opcode": int(opcode),
                "ProtocolMajor": PROTOCOL_MAJOR,
                "Arg8": arg8,
                "Arg32": arg32,
            },
        )

    def exchange(self, msg: can.Message, wait: float | None = None) -> list[Seen]:
        """Send ``msg`` and return every frame received in the next ``wait`` seconds."""
        mark = len(self.frames)
        self.node.send(msg)
        self.clock.sleep(self.wait if wait is None else wait)
        return self.frames[mark:]

    def decoded(self, seen: list[Seen], codec: Codec | None = None) -> list[Frame]:
        """The device's single-frame messages among ``seen`` (another device's with ``codec``)."""
        c = codec or self.codec
        out = []
        for s in seen:
            msg = can.Message(
                timestamp=s.t,
                arbitration_id=s.arbitration_id,
                is_extended_id=s.extended,
                data=s.data,
            )
            try:
                f = c.decode(msg)
            except ProtocolError:  # a short frame on a declared id: not a message
                continue
            if f is not None and f.name != "AuthCommand":
                out.append(f)
        return out

    def ack(self, seen: list[Seen], rid: int, codec: Codec | None = None) -> Frame | None:
        """The Ack answering request ``rid`` among ``seen``."""
        for f in self.decoded(seen, codec):
            if f.name == "Ack" and f.signals["RequestId"] == rid:
                return f
        return None

    def signed(self, opcode: int, arg8: int = 0, arg32: int = 0) -> tuple[int, can.Message]:
        """``(rid, AuthCommand frame)`` of one command at the next freshness value."""
        rid = self.rid()
        return rid, self.signer.sign(opcode, arg8, arg32, rid).message(self.codec)

    def send_package(self, payload: bytes) -> float:
        """Send a FIRMWARE payload on the LOAD channel; the transfer's time (s).  A transfer
        the device does not take (no flow control) is sent all the same: the INSTALL that
        follows says what the device has."""
        t0 = self.clock.now()
        # a refused transfer is evidence, not an error: the INSTALL that follows tells
        with contextlib.suppress(TransferError):
            self._fw.send_and_wait(payload, 1.0)
        took = self.clock.now() - t0
        self.clock.sleep(self.wait)
        return took

    def round_trip(self, opcode: int = Opcode.PING) -> float:
        """The time (s) from an authenticated command's frame to its Ack (the wait if none)."""
        rid, msg = self.signed(opcode)
        seen = self.exchange(msg)
        a = self.ack(seen, rid)
        return self.wait if a is None else max(a.timestamp - msg.timestamp, 1e-6)

    def install(self) -> tuple[int, int]:
        """INSTALL_FIRMWARE, authenticated: ``(Result, Value)`` of its Ack (-1, -1: none)."""
        rid, msg = self.signed(Opcode.INSTALL_FIRMWARE)
        a = self.ack(self.exchange(msg), rid)
        return (-1, -1) if a is None else (a.signals["Result"], a.signals["Value"])

    def firmware_version(self) -> int:
        """The installed firmware version (FIRMWARE_VERSION, authenticated; -1: no answer)."""
        rid, msg = self.signed(Opcode.FIRMWARE_VERSION)
        a = self.ack(self.exchange(msg), rid)
        ok = a is not None and a.signals["Result"] == Result.OK
        return a.signals["Value"] if a is not None and ok else -1

    def snapshot(self) -> dict[str, int]:
        """What the device says of itself, through authenticated commands: State, ShoeCount,
        Cards (Status), boot count (PING), firmware version."""
        out: dict[str, int] = {"firmware": self.firmware_version()}
        rid, msg = self.signed(Opcode.STATUS)
        seen = self.exchange(msg)
        for f in self.decoded(seen):
            if f.name == "Status" and f.signals["RequestId"] == rid:
                out.update(
                    state=f.signals["State"],
                    shoes=f.signals["ShoeCount"],
                    cards=f.signals["Cards"] & 0x1FF,
                )
        rid, msg = self.signed(Opcode.PING)
        a = self.ack(self.exchange(msg), rid)
        out["boots"] = a.signals["Value"] if a is not None else -1
        return out


__all__ = ["ANSWER_WAIT", "LabHost", "Seen"]
