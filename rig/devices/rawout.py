"""The raw-output mode of a simulated device (protocol 2.2, docs/protocol.md "Raw output"):
READ_RAW streams ``N`` words of the device's own generator as RAW_BLOCK payloads over
ISO-TP on the raw channel (CAN FD 64-byte frames with bit-rate switch on an FD bus, classic
8-byte frames otherwise); READ_RAW_BLOCK sends one block of that stream again.

The words come from a :class:`RawSource`: by default :class:`ChaChaSource`, the same
ChaCha20 keystream the device shuffles with (the session's bytes are taken from the stream,
which moves on past them, so no later shuffle reuses them), or a declared flawed model
(:class:`StuckBitSource`) for testing the battery through the rig.  A source is seekable,
so a block asked for again is the same bytes.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import can
import numpy as np

from feltlab import native
from feltlab.rig.clock import Clock, ScheduledCall
from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, Opcode, Result
from feltlab.rig.protocol.rawout import (
    RAW_BLOCK_BYTES,
    RAW_WIDTHS,
    RawBlock,
    block_count,
    isotp_frames,
    raw_channel_ids,
)

log = logging.getLogger(__name__)

#: N_Bs: the sender's wait for flow control after a first frame (s), as the rig's links
FC_TIMEOUT = 1.0


class RawSource(Protocol):
    """A seekable raw generator: ``read(offset, n)`` is the ``n`` bytes (words most
    significant byte first) from byte ``offset`` of the session's stream; ``start(n)`` opens
    a session of ``n`` bytes (taking them from the generator) and returns its name."""

    def start(self, n_bytes: int, width: int) -> str: ...

    def read(self, offset: int, n_bytes: int) -> bytes: ...


class ChaChaSource:
    """The device's own ChaCha20 (RFC 8439) keystream: words of ``width`` bits formed as the
    generator forms its outputs (little-endian from the keystream bytes, as
    :class:`feltlab.native.ChaCha20`'s 64-bit outputs), sent most significant byte first."""

    def __init__(self, rng: native.ChaCha20) -> None:
        self.rng = rng
        self._state: dict[str, Any] = {}
        self._width = 32

    def start(self, n_bytes: int, width: int) -> str:
        self._state = self.rng.getstate()
        self._width = width
        self._seek(self.rng, n_bytes)  # the stream moves past the session's bytes
        return "chacha20"

    def _seek(
        self, rng: native.ChaCha20, n_bytes: int, state: dict[str, Any] | None = None
    ) -> None:
        st = dict(state if state is not None else rng.getstate())
        pos = int(st["block"]) * 64 + int(st["offset"]) + n_bytes
        st["block"], st["offset"] = divmod(pos, 64)
        rng.setstate(st)

    def read(self, offset: int, n_bytes: int) -> bytes:
        gen = native.ChaCha20(0)
        self._seek(gen, offset, self._state)
        stream = gen.keystream(n_bytes)
        if self._width == 8:
            return stream
        kind = {16: "u2", 32: "u4", 64: "u8"}[self._width]
        return np.frombuffer(stream, "<" + kind).astype(">" + kind).tobytes()


class StuckBitSource:
    """A flawed generator model for testing: ``inner``'s words with bit ``bit`` (0 = least
    significant) of every ``width``-bit word stuck at 1.  Its law: that bit is 1 always,
    every other bit is ``inner``'s; the frequency test sees a bias of 1/(2 width)."""

    def __init__(self, inner: RawSource, bit: int) -> None:
        self.inner = inner
        self.bit = bit
        self._width = 32

    def start(self, n_bytes: int, width: int) -> str:
        if not 0 <= self.bit < width:
            raise ValueError(f"stuck bit {self.bit} outside a {width}-bit word")
        self._width = width
        return f"stuck-bit:{self.bit}({self.inner.start(n_bytes, width)})"

    def read(self, offset: int, n_bytes: int) -> bytes:
        words = bytearray(self.inner.read(offset, n_bytes))
        size = self._width // 8
        byte, mask = size - 1 - self.bit // 8, 1 << (self.bit % 8)
        for i in range(byte, len(words), size):
            words[i] |= mask
        return bytes(words)


class RawOutput:
    """The raw-output server of a simulated device at ``base``
    (:meth:`feltlab.rig.devices.base.SimDevice.enable_raw_output` makes it): answers
    READ_RAW (``Arg8`` the width in bits, 0 for 32; ``Arg32`` the words) with an Ack whose
    Value is the number of blocks, then streams the blocks; READ_RAW_BLOCK (``Arg32`` the
    block) with an Ack whose Value is the payload length, then that block.  ``ack(rid, op,
    result, value)`` sends an Ack, ``send(msg)`` a frame, ``listen(fn, id)`` receives the
    flow control; ``fd``: CAN FD frames with bit-rate switch.  The flow control's block size
    is honoured; its STmin is not (the rig's host sends 0)."""

    def __init__(
        self,
        base: int,
        clock: Clock,
        source: RawSource,
        *,
        ack: Callable[[int, int, Result, int], None],
        send: Callable[[can.Message], Any],
        listen: Callable[[Callable[[can.Message], None], int], None],
        fd: bool = True,
    ) -> None:
        self.clock = clock
        self.source = source
        self.fd = fd
        self._ack, self._listen = ack, listen
        #: sends one frame (a test may wrap it to lose or corrupt frames)
        self.transmit = send
        self.data_id, self.fc_id = raw_channel_ids(base)
        self.session: tuple[int, int, int, int] | None = None  # rid, width, words, blocks
        self.generator = ""
        self.errors: list[str] = []
        #: payloads to send: bytes, or (session, request id, block) built when its turn comes,
        #: so a long stream never holds more than one block in memory
        self._queue: deque[bytes | tuple[tuple[int, int, int, int], int, int]] = deque()
        self._frames: list[bytes] = []
        self._fc_timer: ScheduledCall | None = None
        self._listening = False

    def execute(self, rid: int, op: int, a8: int, a32: int) -> bool:
        """Handle a raw-output command; False for another opcode."""
        if op == Opcode.READ_RAW:
            width = a8 or 32
            if width not in RAW_WIDTHS or a32 == 0:
                self._ack(rid, op, Result.BAD_ARGUMENT, 0)
                return True
            blocks = block_count(a32, width)
            self.session = session = (rid, width, a32, blocks)
            self.generator = self.source.start(a32 * width // 8, width)
            self._ack(rid, op, Result.OK, blocks)
            self._queue.clear()  # a new session supersedes what is left of the last
            self._queue.extend((session, rid, k) for k in range(blocks))
            self._start()
            return True
        if op == Opcode.READ_RAW_BLOCK:
            if self.session is None:
                self._ack(rid, op, Result.BAD_STATE, 0)
            elif a32 >= self.session[3]:
                self._ack(rid, op, Result.BAD_ARGUMENT, self.session[3])
            else:
                payload = self._block(self.session, rid, a32)
                self._ack(rid, op, Result.OK, len(payload))
                self._queue.append(payload)
                self._start()
            return True
        return False

    def _block(self, session: tuple[int, int, int, int], rid: int, k: int) -> bytes:
        _, width, words, blocks = session
        total = words * width // 8
        start = k * RAW_BLOCK_BYTES
        data = self.source.read(start, min(RAW_BLOCK_BYTES, total - start))
        return RawBlock(width, rid, k, blocks, data).encode(PROTOCOL_MAJOR)

    # ------------------------------------------------------------ ISO-TP sender
    def _start(self) -> None:
        if not self._listening:
            self._listen(self._on_fc, self.fc_id)
            self._listening = True
        if not self._frames:
            self._next()

    def _tx(self, data: bytes) -> None:
        msg = can.Message(
            arbitration_id=self.data_id,
            data=data,
            is_extended_id=True,
            is_fd=self.fd,
            bitrate_switch=self.fd,
        )
        self.transmit(msg)

    def _next(self) -> None:
        while self._queue and not self._frames:
            item = self._queue.popleft()
            payload = item if isinstance(item, bytes) else self._block(*item)
            frames = isotp_frames(payload, 64 if self.fd else 8)
            self._tx(frames[0])
            if len(frames) > 1:
                self._frames = frames[1:]
                self._fc_timer = self.clock.call_later(FC_TIMEOUT, self._fc_timeout)

    def _fc_timeout(self) -> None:
        self._fc_timer = None
        if self._frames:
            self.errors.append("no flow control within N_Bs: the block is dropped")
            self._frames = []
            self._next()

    def _on_fc(self, msg: can.Message) -> None:
        data = bytes(msg.data)
        if not self._frames or not data or data[0] >> 4 != 3:
            return
        if data[0] & 0x0F != 0:  # WAIT or OVERFLOW: this simple sender gives the block up
            self.errors.append(f"flow status {data[0] & 0x0F}: the block is dropped")
            self._frames = []
        else:
            if self._fc_timer is not None:
                self._fc_timer.cancel()
                self._fc_timer = None
            blocksize = data[1] if len(data) > 1 else 0
            send, self._frames = (
                (self._frames[:blocksize], self._frames[blocksize:])
                if blocksize
                else (self._frames, [])
            )
            for frame in send:
                self._tx(frame)
            if self._frames:
                self._fc_timer = self.clock.call_later(FC_TIMEOUT, self._fc_timeout)
                return
        self._next()
