"""Collect a device's raw generator output over the bus (protocol 2.2, docs/protocol.md "Raw
output"): READ_RAW, the RAW_BLOCK payloads reassembled from the raw channel (CAN FD or
classic ISO-TP), every block checked (CRC-32, number, request id), and each block lost, cut
short or corrupted asked for again by number (READ_RAW_BLOCK) until it comes whole or the
attempts run out: a block is never silently dropped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import can

from feltlab.rig.errors import ProtocolError, RigError
from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, Opcode
from feltlab.rig.protocol.rawout import IsoTpReassembler, RawBlock, check_width, raw_channel_ids


class RawCollectionError(RigError):
    """Raw output could not be collected whole: names the blocks missing and why."""


@dataclass
class RawCollection:
    """Words collected from a device: ``data`` the ``words`` words of ``width`` bits, most
    significant byte first (a raw file's bytes); ``bus_seconds`` the bus time from the
    READ_RAW sent to the last block received (simulated seconds in simulated time);
    ``resends`` the blocks asked for again and ``errors`` why."""

    data: bytes
    width: int
    words: int
    blocks: int
    generator_request: int
    bus_seconds: float
    resends: int = 0
    errors: list[str] = field(default_factory=list)


class RawReceiver:
    """The host's end of a device's raw channel on ``node``: reassembles ISO-TP payloads,
    answers each first frame with flow control (block size 0, STmin 0; CAN FD when ``fd``),
    and keeps each valid block by number.  ``cf_timeout`` is N_Cr (s): a transfer quiet for
    longer is abandoned at its next frame or at :meth:`settle`."""

    def __init__(self, node: Any, base: int, *, fd: bool = True, cf_timeout: float = 0.25) -> None:
        self.node = node
        self.fd = fd
        self.cf_timeout = cf_timeout
        self.data_id, self.fc_id = raw_channel_ids(base)
        self.blocks: dict[int, RawBlock] = {}
        self.rids: set[int] = set()
        self.errors: list[str] = []
        self.last_frame = 0.0
        self.last_block = 0.0
        self._rx = IsoTpReassembler()
        node.add_listener(self._on_frame, arbitration_id=self.data_id)

    def close(self) -> None:
        self.node.remove_listener(self._on_frame)

    def settle(self) -> None:
        """Abandon a transfer quiet for longer than N_Cr."""
        if self._rx.active and self.node.clock.now() - self.last_frame > self.cf_timeout:
            self._rx.abandon("N_Cr: no consecutive frame within the timeout")
        self._collect_errors()

    def _collect_errors(self) -> None:
        if self._rx.errors:
            self.errors += self._rx.errors
            self._rx.errors.clear()

    def _on_frame(self, msg: can.Message) -> None:
        if not msg.is_extended_id:
            return
        self.settle()
        now = self.node.clock.now()
        self.last_frame = now
        data = bytes(msg.data)
        payload = self._rx.feed(data)
        if data and data[0] >> 4 == 1:
            self.node.send(
                can.Message(
                    arbitration_id=self.fc_id,
                    data=b"\x30\x00\x00",
                    is_extended_id=True,
                    is_fd=self.fd,
                    bitrate_switch=self.fd,
                )
            )
        self._collect_errors()
        if payload is None:
            return
        try:
            block = RawBlock.decode(payload, PROTOCOL_MAJOR)
        except ProtocolError as exc:
            self.errors.append(str(exc))
            return
        if block.request_id not in self.rids:
            self.errors.append(f"block {block.block} answers request {block.request_id}: stale")
            return
        self.blocks.setdefault(block.block, block)
        self.last_block = now


def collect_raw(
    client: Any,
    words: int,
    width: int = 32,
    *,
    fd: bool = True,
    attempts: int = 3,
    idle: float = 0.25,
) -> RawCollection:
    """Ask the device of ``client`` (a :class:`feltlab.rig.clients.base.DeviceClient`) for
    ``words`` raw words of ``width`` bits and collect them whole.  ``idle`` (s): the quiet
    after which the stream (or a resent block) is taken as over; ``attempts``: READ_RAW_BLOCK
    requests per missing block.

    Raises :class:`RawCollectionError` naming the blocks still missing, and the client's
    errors (DeviceTimeout, DeviceRefused) for a command that is not answered.
    """
    check_width(width)
    clock = client.clock
    rx = RawReceiver(client.node, client.base, fd=fd, cf_timeout=idle)
    try:
        t0 = clock.now()
        ack = client.request(Opcode.READ_RAW, arg8=width, arg32=words)
        blocks = int(ack.signals["Value"])
        rx.rids.add(int(ack.signals["RequestId"]))
        _drain(clock, rx, lambda: len(rx.blocks) == blocks, idle)
        resends = 0
        for k in range(blocks):
            for _ in range(attempts):
                if k in rx.blocks:
                    break
                resends += 1
                again = client.request(Opcode.READ_RAW_BLOCK, arg32=k)
                rx.rids.add(int(again.signals["RequestId"]))
                _drain(clock, rx, lambda k=k: k in rx.blocks, idle)
        missing = [k for k in range(blocks) if k not in rx.blocks]
        if missing:
            raise RawCollectionError(
                f"raw output incomplete: blocks {missing[:10]} of {blocks} missing after "
                f"{attempts} requests each ({'; '.join(rx.errors[-3:]) or 'no frames'})"
            )
        data = b"".join(rx.blocks[k].data for k in range(blocks))
        if len(data) * 8 != words * width:
            raise RawCollectionError(
                f"the device sent {len(data)} bytes for {words} words of {width} bits"
            )
        return RawCollection(
            data,
            width,
            words,
            blocks,
            int(ack.signals["RequestId"]),
            rx.last_block - t0,
            resends,
            list(rx.errors),
        )
    finally:
        rx.close()


def _drain(clock: Any, rx: RawReceiver, done: Any, idle: float) -> None:
    """Wait until ``done()`` or no raw frame has come for ``idle`` seconds."""
    while not done():
        start = clock.now()
        clock.wait(done, idle)
        rx.settle()
        if done() or rx.last_frame < start:  # nothing arrived in the last ``idle`` seconds
            return
