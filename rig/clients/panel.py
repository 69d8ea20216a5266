"""The jackpot panel client of :mod:`feltlab.rig.clients` and the SDK panel over CAN."""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import can

from feltlab.errors import DeviceError
from feltlab.rig.bus.transport import BusSpec, Node
from feltlab.rig.clients.base import DeviceClient
from feltlab.rig.clients.events import (
    SECURITY_REASONS,
)
from feltlab.rig.errors import (
    DeviceTimeout,
    ProtocolError,
    RigError,
    SecurityFault,
)
from feltlab.rig.protocol.codec import (
    Channel,
    Frame,
    Kind,
    Opcode,
    PrizeTablePayload,
)
from feltlab.rig.protocol.secoc import DeviceKey, FreshnessVerifier, MacWindow, Verified

log = logging.getLogger("feltlab.rig.clients")


class JackpotPanelClient(DeviceClient):
    """Client of a jackpot prize panel (Madness 21): arm a round for boxes, the button (a
    physical press is reported by the panel; :meth:`press` is the test-mode command), the
    result in cents, the display acknowledgement, and the declared prize table.

    ``key`` (:class:`feltlab.rig.protocol.secoc.DeviceKey`, from the profile with
    :func:`feltlab.rig.protocol.secoc.load_key`) makes the client verify every result (protocol 1.1,
    SecOC style); ``require_auth`` (default: when a key is given) refuses results without a
    valid MAC.  ``freshness`` is the last complete freshness value accepted from this panel
    (0 for a new panel; the lab keeps it between sessions); :attr:`freshness` reads it, and
    ``persist`` (e.g. :meth:`feltlab.rig.protocol.freshness.FreshnessStore.remember` of the
    key) is called with it in the thread that asks for a result, *before* :meth:`result`
    returns it: a result is never displayed ahead of the lab's state on disk (issue 41); an
    error it raises is :meth:`result`'s, and the result is not returned.
    A refused result raises :class:`SecurityFault` from the next :meth:`result` and is a
    ``security`` event.  Other keyword arguments are those of :class:`DeviceClient`.
    """

    kind = Kind.JACKPOT_PANEL
    kind_name = "jackpot"
    payload_channels = (Channel.PRIZE_TABLE, Channel.AUDIT)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC | Node,
        *,
        key: DeviceKey | None = None,
        require_auth: bool | None = None,
        freshness: int = 0,
        persist: Callable[[int], object] | None = None,
        **kw: Any,
    ) -> None:
        if key is not None and not isinstance(key, DeviceKey):
            raise TypeError("key must be a feltlab.rig.protocol.secoc.DeviceKey (see load_key)")
        self.require_auth = key is not None if require_auth is None else bool(require_auth)
        if self.require_auth and key is None:
            raise ValueError(
                "require_auth needs the panel's key: give key= (profile key or key_file)"
            )
        self._key = key
        self._freshness0 = freshness
        self._persist = persist
        super().__init__(bus, **kw)

    def _setup(self) -> None:
        self.round_id = -1
        self._results: list[Frame] = []
        self._seen_draws: set[int] = set()
        self._presses: list[Frame] = []
        self.last_result: dict[str, int] | None = None
        self.security_faults = 0
        self._verifier: FreshnessVerifier | None = None
        # the results waiting for their MAC, oldest first (a later result can overtake a
        # queued MAC on the bus: result, result, MAC, MAC), each with the round armed and that
        # round's accepted freshness values when it came (an ARM's acknowledgement can overtake
        # the MAC of a result sent before it, too)
        self._pending: MacWindow[tuple[Frame, int, set[int]]] | None = None
        if self._key is not None:
            self._verifier = FreshnessVerifier(
                self._key, self.codec.id_of("JackpotResult"), self._freshness0
            )
            self._pending = MacWindow(self._verifier)
        self._unauthenticated: list[Frame] = []
        self._refused: list[SecurityFault] = []
        self._round_fvs: set[int] = set()
        # repeats asked for: one per accepted result of the round at each STATUS (the panel
        # repeats them; they may come after the next round's ARM is acknowledged, which
        # overtakes them on the bus by arbitration)
        self._asked_repeats: Counter[int] = Counter()
        self._handlers["JackpotResult"] = self._on_result
        self._handlers["JackpotResultMac"] = self._on_mac
        self._handlers["JackpotButton"] = self._on_button

    @property
    def freshness(self) -> int:
        """The last complete freshness value accepted (0 before the first, or without key)."""
        return self._verifier.last if self._verifier is not None else 0

    def _on_result(self, f: Frame) -> None:
        if self._pending is not None:
            payload = bytes(self.codec.encode("JackpotResult", f.signals).data)
            came = (f, self.round_id, self._round_fvs)
            pushed = self._pending.add(came, payload, f.signals["DrawCounter"])
            if pushed is not None:
                self._lost_mac(pushed[0])
            return
        draw = f.signals["DrawCounter"]
        if draw not in self._seen_draws:  # repeats (after STATUS) are not new draws
            self._seen_draws.add(draw)
            self._results.append(f)

    def _lost_mac(self, f: Frame) -> None:
        """``f`` got no MAC (lost, or an unauthenticated panel)."""
        log.debug("panel 0x%03X: a result without its MAC", self.base)
        self._unauthenticated.append(f)

    def _unpaired(self) -> None:
        """Every result still waiting has waited a whole attempt: its MAC is lost."""
        if self._pending is not None:
            for f, _, _ in self._pending.drain():
                self._lost_mac(f)

    def _refuse(self, exc: SecurityFault, f: Frame) -> None:
        self.security_faults += 1
        self._refused.append(exc)
        self._emit(
            "security",
            reason=SECURITY_REASONS[exc.reason],
            draw_counter=f.signals["DrawCounter"],
            box=f.signals["Box"],
        )
        log.error("panel 0x%03X: %s", self.base, exc)

    def _on_mac(self, f: Frame) -> None:
        """Pair the MAC with the oldest pending result it verifies (:class:`MacWindow`):
        older pending results lost their MAC; a MAC verifying none is refused as forged."""
        if self._pending is None:
            return
        match = self._pending.match(int(f.signals["Mac"]).to_bytes(8, "little"))
        if match is None:
            log.debug("panel 0x%03X: a MAC without a result", self.base)
            return
        for lost, _, _ in match.lost:
            self._lost_mac(lost)
        (pending, round_id, round_fvs), verdict = match.result, match.outcome
        if not isinstance(verdict, Verified):
            self._refuse(verdict, pending)
            return
        if verdict.fresh and round_id >= 0 and (pending.signals["RoundTag"] != round_id & 0xFF):
            # authentic and newer than the last accepted, but of another round: a result the
            # host never accepted (its round was refused), sent again now (a stale replay)
            self._refuse(
                SecurityFault(
                    f"panel 0x{self.base:03X}: a result tagged for round "
                    f"{pending.signals['RoundTag']} arrived while round "
                    f"{round_id & 0xFF} is armed: refused as replayed",
                    "replayed",
                ),
                pending,
            )
            return
        if verdict.fresh:
            round_fvs.add(verdict.freshness)
            self._results.append(pending)
        elif self._asked_repeats[verdict.freshness] > 0:
            self._asked_repeats[verdict.freshness] -= 1  # a repeat asked for by a STATUS
        elif verdict.freshness not in round_fvs:
            self._refuse(
                SecurityFault(
                    f"panel 0x{self.base:03X}: a result of an earlier round (freshness "
                    f"{verdict.freshness}) was sent again: refused as replayed",
                    "replayed",
                ),
                pending,
            )
        # else: the panel repeated a result of this round (STATUS, retried PRESS)

    def request(self, opcode: int, arg8: int = 0, arg32: int = 0, **kw: Any) -> Frame:
        """:meth:`DeviceClient.request`; a STATUS also expects the panel to repeat this
        round's accepted results (each a repeat, not a replay, whenever it comes)."""
        if opcode == Opcode.STATUS:
            with self._cond:
                self._asked_repeats.update(self._round_fvs)
        return super().request(opcode, arg8, arg32, **kw)

    def _on_button(self, f: Frame) -> None:
        self._presses.append(f)

    def arm(self, round_id: int, boxes: Iterable[int]) -> None:
        """Arm the panel for ``round_id`` (0..2^32-1) and the winning ``boxes`` (1-255; one
        ARM per box).  Arming the same round again adds boxes.  Raises ValueError for a box
        outside 1-255 or no box."""
        wanted = [int(b) for b in boxes]
        if not wanted or not all(1 <= b <= 255 for b in wanted):
            raise ValueError(f"boxes {wanted} must be one or more numbers in 1-255")
        rid = round_id & 0xFFFFFFFF
        new_round = rid != self.round_id
        for i, b in enumerate(wanted):
            self.request(Opcode.ARM, b, rid)
            if i == 0 and new_round:
                # Only now forget the last round: the panel answers in order, so every
                # repeat of the last round's results it sent before this ARM (after a STATUS
                # or a retried PRESS) has arrived before the ARM's acknowledgement, and is
                # recognised as a repeat, not refused as a replay (a result is judged by
                # the round armed when it came, though its MAC may come after this
                # acknowledgement: the MAC's 29-bit id loses arbitration to it).
                with self._cond:
                    self._results.clear()
                    self._presses.clear()
                    self._round_fvs = set()
                    self._unauthenticated.clear()
                self.round_id = rid

    def press(self, box: int) -> None:
        """Press ``box``'s button through the test-mode PRESS command (rigs only; a real
        panel reports its own presses).  Raises DeviceRefused for a box not armed."""
        self.request(Opcode.PRESS, box)

    def wait_press(self, timeout: float | None = None) -> int:
        """The box of the next button press this round.  Raises DeviceTimeout."""
        f = self._wait(
            lambda: self._presses.pop(0) if self._presses else None,
            timeout if timeout is not None else self.timeout,
        )
        if f is None:
            raise DeviceTimeout(f"no button press on panel 0x{self.base:03X}")
        return int(f.signals["Box"])

    def result(self, box: int | None = None, *, timeout: float | None = None) -> int:
        """The prize in cents of the next draw of this round (of ``box`` if given).

        Waits ``timeout`` seconds (default: the client's) per attempt, asking the panel to
        repeat its result (STATUS) between attempts.  Raises DeviceTimeout, DeviceLost, and
        (with a key) :class:`SecurityFault` for a refused result: forged, replayed,
        reordered, or unauthenticated (only results without a MAC came, every attempt).
        """
        tag = self.round_id & 0xFF

        def mine(f: Frame) -> bool:
            s = f.signals
            return bool(s["RoundTag"] == tag and (box is None or s["Box"] == box))

        def pick() -> Frame | None:
            if self._refused:
                raise self._refused.pop(0)
            for i, f in enumerate(self._results):
                if mine(f):
                    return self._results.pop(i)
            return None

        wait = timeout if timeout is not None else self.timeout
        for attempt in range(self.retries + 1):
            f: Frame | None = self._wait(pick, wait)
            if f is not None:
                if self._persist is not None:  # on disk before it can be displayed
                    self._persist(self.freshness)
                self.last_result = dict(f.signals)
                return int(f.signals["PrizeCents"])
            with self._cond:
                self._unpaired()
            if attempt < self.retries:
                self.retransmissions += 1
                with contextlib.suppress(DeviceTimeout):
                    self.request(Opcode.STATUS)
        with self._cond:
            bare = [f for f in self._unauthenticated if mine(f)]
            if bare and self.require_auth:
                exc = SecurityFault(
                    f"panel 0x{self.base:03X} sent {len(bare)} result(s) for round "
                    f"{self.round_id} without a MAC; the profile requires authenticated "
                    "results: give the panel its key (profile key or key_file)",
                    "unauthenticated",
                )
                self._refuse(exc, bare[-1])
                self._refused.remove(exc)
                raise exc
        raise DeviceTimeout(
            f"panel 0x{self.base:03X} gave no result for round {self.round_id} "
            f"within {self.retries + 1} x {wait:.3f} s"
        )

    def display(self, cents: int) -> None:
        """Show ``cents`` on the panel's display; returns when the panel acknowledges.
        Raises DeviceRefused (Result FAULT) on a display failure (rule 16.12 applies)."""
        self.request(Opcode.DISPLAY, 0, cents)

    def prize_table(self) -> tuple[tuple[int, int], ...]:
        """The panel's declared prize table: (cents, weight) rows, over ISO-TP."""
        for attempt in range(self.retries + 1):
            data = self._read_payload(Channel.PRIZE_TABLE, Opcode.READ_PRIZE_TABLE)
            try:
                return PrizeTablePayload.decode(data).rows
            except ProtocolError:
                if attempt == self.retries:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


class CanJackpotPanel:
    """The SDK's jackpot panel interface (``feltlab.jackpot.JackpotPanel``) over CAN: each
    :meth:`press` arms the panel for the round and box (SDK box b is protocol box b + 1),
    presses the button (test-mode PRESS
    command: on a rig the presser is simulated), waits for the result in cents and has the
    panel display it.  Every rig failure surfaces as ``feltlab.errors.DeviceError`` (the
    engine applies rule 16.12)."""

    def __init__(self, client: JackpotPanelClient) -> None:
        self.client = client
        self.presses = 0

    def press(self, round_no: int, box: int, presser: str) -> int:

        self.presses += 1
        wire_box = box + 1  # the SDK numbers boxes from 0, the protocol from 1
        try:
            self.client.arm(round_no, [wire_box])
            self.client.press(wire_box)
            cents = self.client.result(wire_box)
            self.client.display(cents)
        except DeviceError:
            raise
        except RigError as exc:
            raise DeviceError(f"jackpot panel 0x{self.client.base:03X}: {exc}") from exc
        log.info("round %d box %d (%s): %d cents", round_no, box, presser, cents)
        return cents
