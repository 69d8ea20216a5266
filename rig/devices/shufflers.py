"""The simulated shufflers of :mod:`feltlab.rig.devices`: batch and continuous."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import can
import numpy as np

from feltlab import native
from feltlab.rig.bus.transport import BusSpec
from feltlab.rig.devices.base import SimDevice
from feltlab.rig.devices.misbehaviour import ABSURD_MS, Absurd
from feltlab.rig.devices.models import ShuffleModel, parse_model
from feltlab.rig.devices.seeding import Seeding, parse_seeding
from feltlab.rig.errors import RigError
from feltlab.rig.protocol.codec import (
    READ_SHOE_PACKED,
    UNKNOWN_DECK,
    Channel,
    FaultCode,
    Kind,
    LoadPayload,
    Opcode,
    Result,
    Severity,
    ShoePayload,
    State,
)
from feltlab.rules import ANY_MIN_DECKS, MAX_DECKS, MIN_DECKS

log = logging.getLogger("feltlab.rig.devices")


class BatchShuffler(SimDevice):
    """A batch shuffler of ``decks`` (4-8) decks applying ``model`` (see
    :mod:`feltlab.rig.devices.models`): LOAD an input order (default: new-deck order), SHUFFLE
    (Arg32 = cutting-card position, 0 = ``penetration`` of the shoe), READ_SHOE over ISO-TP.  With
    ``reports_decks=False`` the device sends deck index 0xFF (it cannot tell decks apart).
    ``seeding`` (``GENERATOR:SOURCE:BITS``, :mod:`feltlab.rig.devices.seeding`): instead of
    the model, each shoe a Fisher-Yates shuffle by a generator reseeded at each SHUFFLE from a
    timer, a clock, a counter or a few bits of entropy (a predictable shuffler, issue 40).

    Raises ValueError for decks outside 4..8 or a bad seeding, :class:`ModelError` for a bad
    model.
    """

    kind = Kind.BATCH_SHUFFLER
    kind_name = "batch"
    tx_channels = (Channel.SHOE, Channel.AUDIT)
    rx_channels = (Channel.LOAD,)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        decks: int = 6,
        model: str | ShuffleModel = "fisher-yates",
        reports_decks: bool = True,
        penetration: float = 0.75,
        seeding: str | Seeding | None = None,
        **kw: Any,
    ) -> None:
        if not MIN_DECKS <= decks <= MAX_DECKS:
            raise ValueError(f"a batch shuffler holds {MIN_DECKS}-{MAX_DECKS} decks, got {decks}")
        if not 0.0 < penetration < 1.0:
            raise ValueError("penetration must be a fraction in (0, 1)")
        self.decks = decks
        if isinstance(model, str):
            model = parse_model(model)
        elif not isinstance(model, ShuffleModel):
            raise ValueError(
                f"model must be a shuffle model's name (e.g. riffle:k=7), got "
                f"{type(model).__name__} {model!r}"
            )
        model.check_fits(decks * 52)  # a model that cannot shuffle this shoe: refused now
        self.model = model
        #: the model's C-core stream, for the device's life: a stateful model (lcg, reboot)
        #: keeps its state across shoes here
        self.model_stream = self.model.stream()
        self.reports_decks = reports_decks
        self.penetration = penetration
        self.seeding = parse_seeding(seeding) if isinstance(seeding, str) else seeding
        #: the seed of the last shoe of a seeded device (the ground truth of issue 40's tests)
        self.last_seed: int | None = None
        super().__init__(bus, **kw)
        self.shoe_count = 0
        self.shoe: ShoePayload | None = None

    def _reset(self) -> None:
        self.booted_at = self.clock.now()  # a timer-seeded device's timer starts here
        ids = native.new_shoe(self.decks, ids=True)
        self.in_codes = (ids % 52).astype(np.uint8)
        self.in_decks = (ids // 52).astype(np.uint8)
        self.shoe = None

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.shoe_count & 0xFFFF,
                "CutPosition": self.shoe.cut_position if self.shoe else 0,
                "Cards": self.flaws.status_cards(
                    int(self.in_codes.size), self.shoe.codes if self.shoe else None
                ),
                "Decks": self.decks,
                "RequestId": rid,
            },
        )

    def _shoe_codes(self) -> np.ndarray | None:
        return self.shoe.codes if self.shoe is not None else None

    def _on_payload(self, channel: Channel, data: bytes) -> None:
        try:
            load = LoadPayload.decode(data)
        except RigError as exc:
            log.info("batch: LOAD refused: %s", exc)
            self._fault(FaultCode.LOAD_CRC, Severity.WARNING, len(data), active=False)
            return
        self.in_codes, self.in_decks = load.codes, load.card_decks
        self._status()

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.SHUFFLE:
            if self.state == State.BUSY:
                self._ack(rid, op, Result.BUSY)
            elif self.state == State.FAULT:
                self._ack(rid, op, Result.FAULT, int(self.active_fault))
            elif "jam" in self.faults:
                self.faults.pop("jam")
                self.state = State.FAULT
                self._ack(rid, op, Result.FAULT, int(FaultCode.JAM))
                self._fault(FaultCode.JAM, Severity.ERROR, self.shoe_count)
            else:
                self._shuffle(rid, op, a32)
            return True
        if op == Opcode.READ_SHOE:
            if self.shoe is None or self.state != State.READY:
                self._ack(rid, op, Result.BAD_STATE)
            elif a32 and a32 & 0xFFFF != self.shoe.shoe_number:
                self._ack(rid, op, Result.BAD_ARGUMENT, self.shoe.shoe_number)
            else:
                packed = bool(a8 & READ_SHOE_PACKED)  # protocol 2.1
                payload = replace(self.shoe, request_id=rid, packed=packed).encode()
                self._ack(rid, op, Result.OK, len(payload))
                self._send_payload(Channel.SHOE, payload)
            if self.shoe is not None and self.state == State.READY:
                self.plan.shoe_read(self, self.shoe)
            return True
        return False

    def send_shoe(self, shoe: ShoePayload) -> None:
        """Send ``shoe`` on the shoe channel, unasked (a misbehaviour plan's re-sent shoe)."""
        self._channels[Channel.SHOE].send(shoe.encode())

    def _shuffle(self, rid: int, op: int, cut: int) -> None:
        absurd = self.plan.shuffle_starts(self, self.shoe_count + 1)
        duration = ABSURD_MS / 1000.0 if absurd is Absurd.STALL else self.timing.shuffle_duration
        n = self.in_codes.size
        if self.seeding is not None:
            now = self.clock.now()
            self.last_seed = self.seeding.seed(
                now - self.booted_at, now, self.shoe_count + 1, self.rng
            )
            perm = self.seeding.permutation(self.last_seed, n)
        else:
            perm = self.model.apply(np.arange(n, dtype=np.uint16), self.rng, self.model_stream)
        codes = self.in_codes[perm]
        decks = self.in_decks[perm] if self.reports_decks else np.full(perm.size, UNKNOWN_DECK)
        if cut == 0 or cut > perm.size:
            cut = round(perm.size * self.penetration)
        self.shoe_count += 1
        self.shoe = ShoePayload(
            self.shoe_count & 0xFFFF,
            self.decks,
            cut,
            codes.astype(np.uint8),
            decks.astype(np.uint8),
        )
        self.state = State.BUSY
        if absurd is not Absurd.STALL:  # a leaking device's order-dependent time (issue 40)
            duration = self.flaws.shuffle_duration(duration, codes)
        announced = ABSURD_MS if absurd is not Absurd.NO else round(duration * 1000)
        self._ack(rid, op, Result.OK, announced)

        def done() -> None:
            self.state = State.READY
            self._status(rid)

        if duration > 0:
            self._schedule(duration, done)
        else:
            done()
        self.plan.shuffled(self, self.shoe)


class ContinuousShuffler(SimDevice):
    """A continuous shuffler with ``slots`` slots: returned cards go into a random slot at a
    random depth; DEAL takes the first card of a random non-empty slot and answers with a Card
    frame after ``card_latency``; INSERT (Arg8 code, Arg32 deck) or LOAD mode 1 returns cards.
    Starts loaded with ``decks`` decks (1-8).  ``buffer`` (cards, default 0): an INSERTed card
    waits in a first-in first-out buffer and enters the slots when ``buffer`` later cards have
    been inserted (the buffer of :mod:`feltlab.rig.certify.csm_model`; LOAD mode 0 empties it)."""

    kind = Kind.CONTINUOUS_SHUFFLER
    kind_name = "continuous"
    tx_channels = (Channel.AUDIT,)
    rx_channels = (Channel.LOAD,)

    def __init__(
        self,
        bus: str | BusSpec | can.BusABC,
        *,
        decks: int = 6,
        slots: int = 38,
        buffer: int = 0,
        **kw: Any,
    ) -> None:
        if not ANY_MIN_DECKS <= decks <= MAX_DECKS:
            raise ValueError(f"decks must be {ANY_MIN_DECKS}..{MAX_DECKS}, got {decks}")
        if not 1 <= slots <= 255:
            raise ValueError(f"slots must be 1..255, got {slots}")
        if not 0 <= buffer < decks * 52:
            raise ValueError(f"buffer must be 0..{decks * 52 - 1} cards, got {buffer}")
        self.decks = decks
        self.n_slots = slots
        self.buffer_size = buffer
        self.buffer: deque[tuple[int, int]] = deque()
        super().__init__(bus, **kw)
        self.sequence = 0

    def _reset(self) -> None:
        self.slots: list[list[tuple[int, int]]] = [[] for _ in range(self.n_slots)]
        self.buffer.clear()
        ids = native.new_shoe(self.decks, ids=True)
        self._insert(ids % 52, ids // 52)

    @property
    def cards(self) -> int:
        """The cards in the machine: its slots and its buffer."""
        return sum(len(s) for s in self.slots) + len(self.buffer)

    def _return(self, code: int, deck: int) -> None:
        """An INSERTed card: through the buffer (the oldest enters once it is over-full)."""
        self.buffer.append((code, deck))
        if len(self.buffer) > self.buffer_size:
            old_code, old_deck = self.buffer.popleft()
            self._insert([old_code], [old_deck])

    def _insert(self, codes: Sequence[int] | np.ndarray, decks: Sequence[int] | np.ndarray) -> None:
        n = len(codes)
        if n == 0:
            return
        which = self.rng.integers(self.n_slots, n)
        depth = self.rng.random_raw(n)
        for i in range(n):
            slot = self.slots[int(which[i])]
            slot.insert(int(depth[i]) % (len(slot) + 1), (int(codes[i]), int(decks[i])))

    def _status(self, rid: int = 0) -> None:
        self._send(
            "Status",
            {
                "State": int(self.state),
                "Kind": int(self.kind),
                "ShoeCount": self.sequence & 0xFFFF,
                "CutPosition": 0,
                "Cards": self.cards,
                "Decks": self.decks,
                "RequestId": rid,
            },
        )

    def _on_payload(self, channel: Channel, data: bytes) -> None:
        try:
            load = LoadPayload.decode(data)
        except RigError as exc:
            log.info("continuous: LOAD refused: %s", exc)
            self._fault(FaultCode.LOAD_CRC, Severity.WARNING, len(data), active=False)
            return
        if load.mode == 0:
            self.slots = [[] for _ in range(self.n_slots)]
            self.buffer.clear()
        self._insert(load.codes, load.card_decks)
        self._status()

    def _execute_kind(self, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.DEAL:
            self.plan.dealing(self, self.sequence + 1)
            nonempty = [i for i, s in enumerate(self.slots) if s]
            if not nonempty:
                self._ack(rid, op, Result.EMPTY)
                return True
            slot_no = nonempty[int(self.rng.integers(len(nonempty))[0])]
            code, deck = self.slots[slot_no].pop(0)
            self.sequence = (self.sequence + 1) & 0xFFFF
            signals = {
                "RequestId": rid,
                "Code": code,
                "Deck": deck,
                "Sequence": self.sequence,
                "Remaining": self.cards,
                "Slot": slot_no,
            }
            replies = self._collect
            if self.timing.card_latency > 0:

                def later() -> None:
                    self._collect = replies
                    try:
                        self._send("Card", signals)
                    finally:
                        self._collect = None

                self._schedule(self.timing.card_latency, later)
            else:
                self._send("Card", signals)
            return True
        if op == Opcode.INSERT:
            if a8 > 51:
                self._ack(rid, op, Result.BAD_ARGUMENT)
            else:
                self._return(a8, a32 & 0xFF)
                self._ack(rid, op, Result.OK, self.cards)
            return True
        return False
