"""The shuffler clients of :mod:`feltlab.rig.clients`: batch and continuous."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feltlab.rig.bus.isotp_channel import TransferError
from feltlab.rig.clients.base import DeviceClient
from feltlab.rig.clients.events import (
    WAIT_CEILING,
)
from feltlab.rig.errors import (
    DeviceTimeout,
    LimitExceeded,
    ProtocolError,
    RigError,
)
from feltlab.rig.protocol.codec import (
    READ_SHOE_PACKED,
    UNKNOWN_DECK,
    Channel,
    Frame,
    Kind,
    LoadPayload,
    Opcode,
    ShoePayload,
    State,
)

log = logging.getLogger("feltlab.rig.clients")


@dataclass(frozen=True)
class Collection:
    """Shoes collected from a batch shuffler: the intact ones, and (index, reason) for each
    requested shoe that was not received."""

    shoes: tuple[ShoePayload, ...]
    missing: tuple[tuple[int, str], ...]

    def codes(self) -> npt.NDArray[np.uint8]:
        """``(n_shoes, n_cards)`` uint8 codes; raises ProtocolError if lengths differ."""
        lengths = {len(s.codes) for s in self.shoes}
        if len(lengths) > 1:
            raise ProtocolError(f"shoes of different lengths {sorted(lengths)}: a faulty device")
        if not self.shoes:
            return np.empty((0, 0), dtype=np.uint8)
        return np.stack([s.codes for s in self.shoes])

    def ids(self) -> npt.NDArray[np.uint16]:
        """``(n_shoes, n_cards)`` uint16 ids ``deck * 52 + code``."""
        if not self.shoes:
            return np.empty((0, 0), dtype=np.uint16)
        return np.stack([s.ids() for s in self.shoes])


class BatchShufflerClient(DeviceClient):
    """Client of a batch shuffler: load an input order, shuffle, read the shoe (ISO-TP)."""

    kind = Kind.BATCH_SHUFFLER
    kind_name = "batch"
    payload_channels = (Channel.SHOE, Channel.AUDIT)
    load_channel = True

    def load(self, codes: npt.ArrayLike, decks: npt.ArrayLike | None = None) -> None:
        """Load the input order (card codes top first; deck indexes, default 0xFF) over the
        ISO-TP LOAD channel; verified by the Status card count.  Raises TransferError."""
        c = np.asarray(codes, dtype=np.uint8)
        d = (
            np.full(c.size, UNKNOWN_DECK, np.uint8)
            if decks is None
            else np.asarray(decks, np.uint8)
        )
        n_decks = int(d[d != UNKNOWN_DECK].max() + 1) if (d != UNKNOWN_DECK).any() else 0
        self._send_load(LoadPayload(0, n_decks, c, d), c.size)

    def shuffle(self, cut_position: int = 0, *, timeout: float | None = None) -> int:
        """Shuffle the loaded cards; returns the shoe number when the device is READY.

        ``cut_position``: cards before the cutting card (0 = the device's penetration).
        Waits the announced shuffle duration plus ``timeout`` (default: the client's),
        polling STATUS.  Raises DeviceTimeout, DeviceRefused (e.g. a jam), DeviceLost.
        """
        ack = self.request(Opcode.SHUFFLE, arg32=cut_position, keep=True)
        rid = ack.signals["RequestId"]
        try:
            return self._await_ready(ack, rid, timeout)
        finally:
            self._done(rid)

    def _await_ready(self, ack: Frame, rid: int, timeout: float | None) -> int:
        duration = ack.signals["Value"] / 1000.0
        cap = min(self.limits.get("shuffle_cycle_max", WAIT_CEILING), WAIT_CEILING)
        if duration > cap:
            raise LimitExceeded(
                f"device 0x{self.base:03X} announced a {duration:.3f} s shuffle, beyond the "
                f"declared shuffle_cycle_max of {cap:.3f} s: not waited for",
                "shuffle_cycle",
                duration,
                cap,
            )
        budget = duration + (timeout if timeout is not None else self.timeout)
        deadline = self.clock.now() + budget

        def ready() -> Frame | None:
            st = self._statuses.get(rid)
            if st is not None and st.signals["State"] == State.READY:
                return st
            return None

        while True:
            st: Frame | None = self._wait(ready, max(0.0, min(budget, deadline - self.clock.now())))
            if st is not None:
                return int(st.signals["ShoeCount"])
            if self.clock.now() >= deadline:
                break
            s = self.status()  # the done-Status may have been lost: ask
            if s["State"] == State.READY:
                return int(s["ShoeCount"])
        raise DeviceTimeout(f"device 0x{self.base:03X} not READY {budget:.3f} s after SHUFFLE")

    def read_shoe(self, shoe_number: int = 0) -> ShoePayload:
        """The shuffled shoe over ISO-TP (READ_SHOE), retried after a transfer timeout or a
        CRC mismatch.  ``shoe_number`` (0 = latest) must match.  Raises TransferError with
        every attempt's reason."""
        reasons: list[str] = []
        for _ in range(self.retries + 1):
            try:
                data = self._read_payload(
                    Channel.SHOE, Opcode.READ_SHOE, shoe_number & 0xFFFF, READ_SHOE_PACKED
                )
                shoe = ShoePayload.decode(data)
            except (TransferError, ProtocolError) as exc:
                if not isinstance(exc, TransferError):  # received, but failed its CRC-32
                    with self._cond:
                        self._emit("payload_error", channel=int(Channel.SHOE))
                reasons.append(str(exc))
                self.transfer_retries += 1
                continue
            if shoe_number and shoe.shoe_number != shoe_number & 0xFFFF:
                reasons.append(f"got shoe {shoe.shoe_number}, asked {shoe_number}")
                continue
            return shoe
        raise TransferError(f"shoe {shoe_number} not received: " + " | ".join(reasons))

    def collect(self, n_shoes: int, *, cut_position: int = 0) -> Collection:
        """Shuffle and read ``n_shoes`` shoes; each is received intact or listed in
        ``missing`` with its reason (never silently dropped)."""
        shoes: list[ShoePayload] = []
        missing: list[tuple[int, str]] = []
        for i in range(n_shoes):
            try:
                number = self.shuffle(cut_position)
                shoes.append(self.read_shoe(number))
            except RigError as exc:
                missing.append((i, str(exc)))
        return Collection(tuple(shoes), tuple(missing))


@dataclass(frozen=True)
class DealtCard:
    """One card from a continuous shuffler: code, deck (0xFF unknown), the device's deal
    sequence number, cards remaining, and the slot it came from."""

    code: int
    deck: int
    sequence: int
    remaining: int
    slot: int


class ContinuousShufflerClient(DeviceClient):
    """Client of a continuous shuffler: load, deal one card, return cards."""

    kind = Kind.CONTINUOUS_SHUFFLER
    kind_name = "continuous"
    load_channel = True

    def _setup(self) -> None:
        self._cards: dict[int, Frame] = {}
        self._last_seq: int | None = None
        self._handlers["Card"] = self._on_card

    def _on_card(self, f: Frame) -> None:
        self._cards[f.signals["RequestId"]] = f

    def load(
        self, codes: npt.ArrayLike, decks: npt.ArrayLike | None = None, *, insert: bool = False
    ) -> None:
        """Replace the device's cards (or, with ``insert``, return these cards) over ISO-TP
        LOAD.  Raises TransferError."""
        c = np.asarray(codes, dtype=np.uint8)
        d = (
            np.full(c.size, UNKNOWN_DECK, np.uint8)
            if decks is None
            else np.asarray(decks, np.uint8)
        )
        before = self.status()["Cards"] if insert else 0
        self._send_load(
            LoadPayload(1 if insert else 0, 0, c, d), before + c.size, before if insert else None
        )

    def insert(self, code: int, deck: int = UNKNOWN_DECK) -> int:
        """Return one card (INSERT); returns the cards now in the device."""
        return int(self.request(Opcode.INSERT, code, deck).signals["Value"])

    def deal(self, *, timeout: float | None = None) -> DealtCard:
        """Deal one card.  Raises DeviceRefused (Result EMPTY) when the device is empty,
        DeviceTimeout after the retries."""
        with self._cond:
            self._cards.clear()
        f = self.request(Opcode.DEAL, reply=lambda rid: self._cards.get(rid), timeout=timeout)
        s = f.signals
        if self._last_seq is not None and s["Sequence"] != (self._last_seq + 1) & 0xFFFF:
            self._emit("sequence_gap", missed=(s["Sequence"] - self._last_seq - 1) & 0xFFFF)
        self._last_seq = s["Sequence"]
        return DealtCard(s["Code"], s["Deck"], s["Sequence"], s["Remaining"], s["Slot"])
