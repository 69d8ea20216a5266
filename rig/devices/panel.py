"""The simulated jackpot prize panel of :mod:`feltlab.rig.devices`."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

import can
import numpy as np

from feltlab.rig.bus.transport import BusSpec
from feltlab.rig.devices.base import DEFAULT_PRIZE_TABLE, SimDevice
from feltlab.rig.protocol.codec import (
    Channel,
    FaultCode,
    Kind,
    Opcode,
    PrizeTablePayload,
    Result,
    Severity,
    State,
)
from feltlab.rig.protocol.secoc import DeviceKey, authenticator

log = logging.getLogger("feltlab.rig.devices")


class JackpotPanel(SimDevice):
    """A jackpot prize panel: a declared weighted ``prize_table`` of (cents, weight), ChaCha20
    draws (probability weight / total), a button per box, and a display.  ARM (Arg32 round id,
    Arg8 box 1-255; ARM again with the same round id adds a box), the button (:meth:`press`,
    or the PRESS test
    command), JackpotResult after ``button_latency``, DISPLAY (Arg32 cents) acknowledged.

    With a ``key`` (:class:`feltlab.rig.protocol.secoc.DeviceKey`) every JackpotResult is
    followed by its JackpotResultMac (protocol 1.1, SecOC style): the complete 64-bit freshness
    value is the draw count, kept across reboots (non-volatile; ``draws`` is its value at power-on),
    and DrawCounter is its low 16 bits.

    Raises ValueError for an empty table, a negative prize or a zero total weight.
    """

    kind = Kind.JACKPOT_PANEL
    kind_name = "jackpot"
    tx_channels = (Channel.PRIZE_TABLE, Channel.AUDIT)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        prize_table: Sequence[tuple[int, int]] = DEFAULT_PRIZE_TABLE,
        key: DeviceKey | None = None,
        draws: int = 0,
        **kw: Any,
    ) -> None:
        if key is not None and not isinstance(key, DeviceKey):
            raise TypeError("key must be a feltlab.rig.protocol.secoc.DeviceKey (see load_key)")
        self.key = key
        rows = tuple((int(c), int(w)) for c, w in prize_table)
        if not rows or any(c < 0 or w < 0 for c, w in rows) or sum(w for _, w in rows) == 0:
            raise ValueError("prize_table needs rows of (cents >= 0, weight >= 0), total > 0")
        if any(c >= 1 << 32 or w >= 1 << 32 for c, w in rows):
            raise ValueError("prizes and weights must fit 32 bits")
        self.prize_table = rows
        self._cum = np.cumsum([w for _, w in rows])
        super().__init__(bus, **kw)
        if not 0 <= draws < 1 << 63:
            raise ValueError("draws (the panel's non-volatile draw count) must be >= 0")
        self.draws = int(draws)  # the complete freshness value: survives reboots
        self.presses = 0
        self._signed: deque[tuple[dict[str, int], int | None]] = deque(maxlen=16)
        self._held: tuple[dict[str, int], int | None] | None = None

    def _reset(self) -> None:
        self.round_id = 0
        self.armed_boxes: set[int] = set()
        self.pressed_boxes: set[int] = set()
        self.last_results: list[tuple[dict[str, int], int | None]] = []

    def _sign(self, result: dict[str, int]) -> int | None:
        """The JackpotResultMac ``Mac`` signal of ``result`` (None without a key)."""
        if self.key is None:
            return None
        payload = self.codec.encode("JackpotResult", result).data
        mac = authenticator(self.key, self.codec.id_of("JackpotResult"), payload, self.draws)
        return int.from_bytes(mac, "little")

    def _send_result(self, result: dict[str, int], mac: int | None) -> None:
        self._send("JackpotResult", result)
        if mac is not None:
            self._send("JackpotResultMac", {"Mac": mac})

    def press(self, box: int) -> None:
        """The physical button of ``box`` (1-255) is pressed (thread-safe)."""
        self._post(lambda: self._press(None, box, source=0))

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.draws & 0xFFFF,
                "CutPosition": 0,
                "Cards": 0,
                "Decks": 0,
                "RequestId": rid,
            },
        )
        if self.state == State.DRAWN:
            for res, mac in self.last_results:
                self._send_result(res, mac)

    @property
    def signed_count(self) -> int:
        """The results signed since the device started."""
        return len(self._signed)

    def _press(self, rid: int | None, box: int, source: int) -> None:
        self.plan.pressing(self, self.draws + 1)
        op = int(Opcode.PRESS)
        if "button" in self.faults:
            self._fault(FaultCode.BUTTON, Severity.ERROR, box)
            if rid is not None:
                self._ack(rid, op, Result.FAULT, int(FaultCode.BUTTON))
            return
        if self.state not in (State.ARMED, State.DRAWN) or box not in self.armed_boxes:
            if rid is not None:
                self._ack(rid, op, Result.BAD_ARGUMENT if box == 0 else Result.BAD_STATE)
            return
        if box in self.pressed_boxes:
            if rid is not None:
                self._ack(rid, op, Result.BAD_STATE, box)
            return
        self.pressed_boxes.add(box)
        self.presses += 1
        if rid is not None:
            self._ack(rid, op, Result.OK, box)
        self._send(
            "JackpotButton",
            {
                "Box": box,
                "Source": source,
                "RoundId": self.round_id,
                "PressCount": self.presses & 0xFFFF,
            },
        )
        draw = int(self.rng.integers(int(self._cum[-1]))[0])
        row = int(np.searchsorted(self._cum, draw, side="right"))
        self.draws += 1
        result = {
            "PrizeCents": self.prize_table[row][0],
            "DrawCounter": self.draws & 0xFFFF,
            "RoundTag": self.round_id & 0xFF,
            "Box": box,
        }
        self.state = State.DRAWN
        mac = self._sign(result)
        self.last_results.append((result, mac))
        self._signed.append((result, mac))
        if self.faults.pop("drop_result", None) is not None:
            return
        out: list[tuple[dict[str, int], int | None]] = [(result, mac)]
        forged = self.faults.pop("forge_result", None)
        if forged is not None:  # altered after signing: the MAC no longer verifies
            cents = forged or max(c for c, _ in self.prize_table)
            if cents == result["PrizeCents"]:
                cents ^= 1
            out = [({**result, "PrizeCents": cents}, mac)]
        back = self.faults.pop("replay_result", None)
        if back is not None and len(self._signed) > max(1, back):
            out = [self._signed[-1 - max(1, back)]]
        if self.faults.pop("reorder_results", None) is not None:
            self._held, out = out[0], []
        elif self._held is not None:
            out.append(self._held)
            self._held = None
        replies = self._collect

        def send_result() -> None:
            self._collect = replies
            try:
                for res, m in out:
                    self._send_result(res, m)
            finally:
                self._collect = None

        if self.timing.button_latency > 0:
            self._schedule(self.timing.button_latency, send_result)
        else:
            send_result()

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.ARM:
            if a8 == 0:
                self._ack(rid, op, Result.BAD_ARGUMENT)
                return True
            if a32 != self.round_id or self.state == State.IDLE:
                self.round_id, self.armed_boxes, self.pressed_boxes = a32, set(), set()
                self.last_results = []
                self._held = None
            self.armed_boxes.add(a8)
            self.state = State.ARMED
            self._ack(rid, op, Result.OK, a32)
            return True
        if op == Opcode.PRESS:
            if not self.test_mode:
                return False
            self._press(rid, a8, source=1)
            return True
        if op == Opcode.DISPLAY:
            if "display" in self.faults:
                self._ack(rid, op, Result.FAULT, int(FaultCode.DISPLAY))
                self._fault(FaultCode.DISPLAY, Severity.ERROR, a32)
                return True
            if self.pressed_boxes >= self.armed_boxes:
                self.state = State.IDLE
            self._ack(rid, op, Result.OK, a32)
            return True
        if op == Opcode.READ_PRIZE_TABLE:
            payload = PrizeTablePayload(self.prize_table, rid).encode()
            self._ack(rid, op, Result.OK, len(payload))
            self._send_payload(Channel.PRIZE_TABLE, payload)
            return True
        return False
