"""The ISO-TP sender of a simulated device, in simulated time (ISO 15765-2, normal 11-bit
addressing, classic CAN): the device's firmware side of a transfer the host receives with
can-isotp.

A simulated campaign moves about 100,000 consecutive frames; the host receives them through
can-isotp (:class:`feltlab.rig.bus.simbus.SimIsoTpChannel`), as it does from a real device.
The device's side needs none of can-isotp's generality (rate limiting, asymmetric addresses,
CAN FD, blocking sends) and was a sixth of a campaign's time in it, so the simulated device
sends through this small state machine instead, as a device's firmware has its own.  It
behaves as can-isotp's sender does with the rig's parameters (frames byte for byte and
instant for instant, so a capture is unchanged by the swap): single frame up to 7 bytes;
else a first frame, then consecutive frames as the receiver's flow control allows (block
size, STmin, WAIT), an error after N_Bs without flow control, or on OVERFLOW.  Payloads
queue and go one after another.  One difference is known: after a transfer ended by an
OVERFLOW, the next payload goes at once, where can-isotp sends it at its next timer wake-up.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from typing import Any

import can

from feltlab.rig.clock import ScheduledCall, SimClock

log = logging.getLogger(__name__)

#: can-isotp times out strictly after its timeout; the simulated channels wake this much later
TIMER_SLACK = 1e-6


def stmin_seconds(code: int) -> float | None:
    """STmin of a flow control frame in seconds: 0x00-0x7F ms, 0xF1-0xF9 100-900 us; None
    for a reserved value (ISO 15765-2 9.6.5.4)."""
    if 0 <= code <= 0x7F:
        return code / 1000
    if 0xF1 <= code <= 0xF9:
        return (code - 0xF0) / 10000
    return None


class SimIsoTpSender:
    """A send-only ISO-TP link on ``node`` (a simulated-time
    :class:`feltlab.rig.bus.transport.Node`): data frames on ``txid``, flow control read on
    ``rxid``; ``fc_timeout`` is N_Bs in seconds.  Errors (flow control timeout, OVERFLOW, a
    malformed or unexpected flow control frame) are listed in :attr:`errors` and end the
    transfer they hit, as can-isotp's do."""

    def __init__(
        self,
        name: str,
        node: Any,
        txid: int,
        rxid: int,
        *,
        fc_timeout: float = 1.0,
        **_ignored: Any,
    ) -> None:
        self.name = name
        self.node = node
        self.clock: SimClock = node.clock
        self.txid = txid
        self.rxid = rxid
        self.fc_timeout = max(1, int(fc_timeout * 1000)) / 1000  # whole ms, as can-isotp's
        self.errors: list[str] = []
        self._queue: deque[bytes] = deque()
        self._data = b""
        self._pos = 0  # bytes of the payload sent
        self._seq = 0
        self._state = "idle"  # idle, wait_fc, send_cf
        self._block = 0  # CFs sent in this block
        self._blocksize = 0
        self._stmin = 0.0
        self._fc_timer: ScheduledCall | None = None
        self._cf_timer: ScheduledCall | None = None
        self._last_cf = 0.0  # when the last consecutive frame went
        self._closed = False
        node.add_listener(self._on_frame, arbitration_id=rxid)

    # ------------------------------------------------------------ public
    def send(self, payload: bytes) -> None:
        """Queue ``payload`` (at most 4095 bytes); it goes when the transfers before it end."""
        if not 0 < len(payload) <= 4095:
            raise ValueError(f"ISO-TP payload of {len(payload)} bytes: 1..4095 allowed")
        if self._closed:
            self.errors.append("the link is closed: nothing sent")
            return
        self._queue.append(bytes(payload))
        if self._state == "idle":
            self._start_next()

    def transmitting(self) -> bool:
        return self._state != "idle" or bool(self._queue)

    def clear(self) -> None:
        self.errors.clear()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._end()
        with contextlib.suppress(ValueError):
            self.node.remove_listener(self._on_frame)

    # ------------------------------------------------------------ state machine
    def _tx(self, data: bytes) -> None:
        try:
            # python-can's positional order (timestamp, arbitration_id, is_extended_id,
            # is_remote_frame, is_error_frame, channel, dlc, data): half the cost of keywords
            self.node.bus.send(can.Message(0.0, self.txid, False, False, False, None, None, data))
        except can.CanError as exc:
            self._error(f"{type(exc).__name__}: {exc}", end=False)

    def _error(self, text: str, *, end: bool = True) -> None:
        self.errors.append(text)
        log.debug("ISO-TP %s: %s", self.name, text)
        if end:
            self._end()
            self._start_next()

    def _end(self) -> None:
        self._state = "idle"
        self._data = b""
        for timer in (self._fc_timer, self._cf_timer):
            if timer is not None:
                timer.cancel()
        self._fc_timer = self._cf_timer = None

    def _start_next(self) -> None:
        while self._state == "idle" and self._queue and not self._closed:
            data = self._queue.popleft()
            if len(data) <= 7:  # single frame
                self._tx(bytes([len(data)]) + data)
                continue
            self._data, self._pos, self._seq = data, 6, 1
            self._tx(bytes([0x10 | (len(data) >> 8), len(data) & 0xFF]) + data[:6])
            self._wait_fc()

    def _wait_fc(self) -> None:
        self._state = "wait_fc"
        if self._fc_timer is not None:
            self._fc_timer.cancel()
        self._fc_timer = self.clock.call_later(self.fc_timeout + TIMER_SLACK, self._on_fc_timeout)

    def _on_fc_timeout(self) -> None:
        self._fc_timer = None
        if self._state == "wait_fc":
            self._error("FlowControlTimeoutError: Reception of FlowControl timed out")

    def _on_frame(self, msg: can.Message) -> None:
        if msg.arbitration_id != self.rxid or msg.is_extended_id or self._closed:
            return
        data = bytes(msg.data)
        if not data:
            self._error("InvalidCanDataError: an empty frame on the flow control id", end=False)
            return
        if data[0] >> 4 != 3:
            return  # not flow control: this link only sends
        if len(data) < 3 or data[0] & 0x0F >= 3:
            self._error("InvalidCanDataError: malformed flow control frame", end=False)
            return
        status, blocksize, stmin = data[0] & 0x0F, data[1], stmin_seconds(data[2])
        if stmin is None:
            self._error("InvalidCanDataError: Invalid StMin received in Flow Control", end=False)
            return
        if status == 2:  # OVERFLOW
            text = "OverflowError: the receiver's flow control says OVERFLOW"
            self._error(text, end=self._state != "idle")
            return
        if self._state == "idle":
            self._error("UnexpectedFlowControlError: flow control while idle", end=False)
            return
        if status == 1:  # WAIT: can-isotp's wftmax is 0, so an error, and still waiting
            self._error("UnsupportedWaitFrameError: a WAIT flow control", end=False)
            return
        if self._fc_timer is not None:
            self._fc_timer.cancel()
            self._fc_timer = None
        self._blocksize = blocksize
        if self._state == "send_cf" and self._cf_timer is not None and stmin != self._stmin:
            # a new STmin mid-block counts from the last frame sent, as can-isotp's timer
            self._cf_timer.cancel()
            at = max(self.clock.now(), self._last_cf + stmin + TIMER_SLACK)
            self._cf_timer = self.clock.call_at(at, self._on_stmin)
        self._stmin = stmin
        if self._state == "wait_fc":
            self._block = 0
            self._state = "send_cf"
            self._cf_timer = None
            if stmin == 0:
                self._send_cfs()
            else:  # the first CF too waits STmin (strictly after it, as can-isotp)
                self._cf_timer = self.clock.call_later(stmin + TIMER_SLACK, self._on_stmin)

    def _on_stmin(self) -> None:
        self._cf_timer = None
        if self._state == "send_cf":
            self._send_cfs()

    def _send_cfs(self) -> None:
        """Consecutive frames: all of this block at once with STmin 0 (one run on the
        bus: :meth:`_send_block`), else one, then wait."""
        if self._stmin == 0 and self._state == "send_cf":
            send_run = getattr(self.node.bus, "send_run", None)
            if send_run is not None and self._send_block(send_run):
                return
        while self._state == "send_cf":
            chunk = self._data[self._pos : self._pos + 7]
            self._tx(bytes([0x20 | self._seq]) + chunk)
            self._last_cf = self.clock.now()
            self._pos += len(chunk)
            self._seq = (self._seq + 1) & 0x0F
            self._block += 1
            if self._pos >= len(self._data):
                self._end()
                self._start_next()
                return
            if self._blocksize and self._block >= self._blocksize:
                self._wait_fc()
                return
            if self._stmin:
                self._cf_timer = self.clock.call_later(self._stmin + TIMER_SLACK, self._on_stmin)
                return

    def _send_block(self, send_run: Any) -> bool:
        """:meth:`_send_cfs` with STmin 0: the frames up to the payload's or the block's end
        built at once and queued as one run (``RigBus.send_run``): the same frames in the
        same order at the same instant.  False, nothing sent, when the bus takes them one
        by one only."""
        data, pos, seq = self._data, self._pos, self._seq
        left = self._blocksize - self._block if self._blocksize else None
        frames: list[bytes] = []
        end = len(data)
        while pos < end and (left is None or len(frames) < left):
            frames.append(bytes([0x20 | seq]) + data[pos : pos + 7])
            pos += 7
            seq = (seq + 1) & 0x0F
        if not send_run(self.txid, frames):
            return False
        self._last_cf = self.clock.now()
        self._pos, self._seq = min(pos, end), seq
        self._block += len(frames)
        if self._pos >= end:
            self._end()
            self._start_next()
        else:  # the block's end: flow control awaited
            self._wait_fc()
        return True
