"""The feltlab rig protocol, version 2.2 (docs/protocol.md is the reference for device makers).

Single-frame messages are defined in the DBC file ``feltlab_v2.dbc`` (package data of
``feltlab.rig``) and encoded/decoded with cantools; frame ids in the DBC are given for base
``0x100``, and a device at base ``B`` uses ``B + (id - 0x100)``; the one 29-bit message
(JackpotResultMac, since 1.1) has the id ``(B + 7) << 18 | 0x05EC``.  Multi-frame payloads (LOAD,
SHOE, PRIZE_TABLE, AUDIT) travel over ISO-TP (ISO 15765-2, normal 11-bit addressing), each
ending with a CRC-32 (IEEE 802.3, as :func:`zlib.crc32`) of the bytes before it.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import can
import cantools
import numpy as np
import numpy.typing as npt

from feltlab.rig.errors import ProtocolError
from feltlab.rules import MAX_DECKS

PROTOCOL_MAJOR = 2
PROTOCOL_MINOR = 2
SECURITY_MINOR = 3
"""The minor version of protocol 2.3's security extension (command authentication, signed
firmware updates: :mod:`feltlab.rig.protocol.cmdauth`, :mod:`feltlab.rig.protocol.firmware`).
A device reports it in its heartbeat only while its security mode is on; without it the
device is a 2.2 device and its frames are 2.2's, byte for byte (docs/protocol.md)."""
DBC_FILE = "feltlab_v2.dbc"

PAYLOAD_RID_OFFSET = 3
"""Since protocol 2.0 byte 3 of every ISO-TP payload a device sends (SHOE, AUDIT,
PRIZE_TABLE) is the RequestId of the command it answers (docs/protocol.md)."""
DBC_BASE = 0x100
#: ids a device occupies from its base: 0x00-0x07 single frames, 0x08-0x0F ISO-TP pairs.
ID_SPAN = 0x10
UNKNOWN_DECK = 0xFF
#: a 29-bit id is ``(11-bit id of the message it belongs to) << EXT_SHIFT | tag``.
EXT_SHIFT = 18
EXT_TAG_MASK = (1 << EXT_SHIFT) - 1


class State(enum.IntEnum):
    BOOT = 0
    IDLE = 1
    BUSY = 2
    READY = 3
    FAULT = 4
    ARMED = 5
    DRAWN = 6


class Kind(enum.IntEnum):
    BATCH_SHUFFLER = 1
    CONTINUOUS_SHUFFLER = 2
    JACKPOT_PANEL = 3


class Opcode(enum.IntEnum):
    PING = 0x01
    STATUS = 0x02
    REBOOT = 0x03
    CLEAR_FAULT = 0x04
    READ_AUDIT = 0x05
    INSTALL_FIRMWARE = 0x06  # since 2.3: install the FIRMWARE payload last received
    FIRMWARE_VERSION = 0x07  # since 2.3: the installed firmware version
    SHUFFLE = 0x10
    READ_SHOE = 0x11
    READ_RAW = 0x12  # since 2.2: N raw generator words (feltlab.rig.protocol.rawout)
    READ_RAW_BLOCK = 0x13  # since 2.2: one raw block again, by number
    DEAL = 0x20
    INSERT = 0x21
    ARM = 0x30
    PRESS = 0x31
    DISPLAY = 0x32
    READ_PRIZE_TABLE = 0x33
    INJECT_FAULT = 0xF0


class Result(enum.IntEnum):
    OK = 0
    BUSY = 1
    BAD_ARGUMENT = 2
    BAD_STATE = 3
    UNSUPPORTED_VERSION = 4
    UNKNOWN_OPCODE = 5
    FAULT = 6
    EMPTY = 7
    AUTH_FAILED = 8  # since 2.3: a command refused by its authentication (Value: the reason)
    REJECTED = 9  # since 2.3: a firmware package refused (Value: the reason)


class FaultCode(enum.IntEnum):
    NONE = 0
    PROTOCOL_VERSION = 1
    JAM = 2
    CARD_COUNT = 3
    RNG = 4
    BUTTON = 5
    DISPLAY = 6
    LOAD_CRC = 7
    REBOOTED = 8
    INJECTED = 9
    SECURITY = 10  # since 2.3: a refused command or package (Detail: reason | opcode << 8)


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    FATAL = 3


class Channel(enum.IntEnum):
    """ISO-TP channels: the value is the offset of the data direction's id from the base;
    flow control goes the other way on offset + 1."""

    LOAD = 0x08  # host -> device
    SHOE = 0x0A  # device -> host
    PRIZE_TABLE = 0x0C  # device -> host
    AUDIT = 0x0E  # device -> host


#: channels whose data flows from host to device (the others flow device to host).
HOST_TO_DEVICE = frozenset({Channel.LOAD})
#: single-frame messages sent by the host (every other message is sent by the device).
HOST_MESSAGES = frozenset({"Command"})


@cache
def load_database() -> Any:
    """The protocol's DBC as a ``cantools.database.can.Database`` (read once, cached).

    Raises ``FileNotFoundError`` if the package data is missing (a broken install).
    """
    text = resources.files("feltlab.rig.protocol").joinpath(DBC_FILE).read_text(encoding="utf-8")
    return cantools.database.load_string(text, database_format="dbc")


def dbc_path() -> str:
    """Filesystem path of the shipped DBC file (for ``cantools dump`` and CAN tools)."""
    return str(resources.files("feltlab.rig.protocol").joinpath(DBC_FILE))


class Frame(NamedTuple):
    """One decoded single-frame message: the DBC message name, its signals (raw integers),
    the frame's timestamp (seconds since the epoch) and arbitration id."""

    name: str
    signals: dict[str, int]
    timestamp: float
    arbitration_id: int


def check_base(base: int) -> int:
    """Validate a device base id: a multiple of 0x10 in 0x010..0x7F0 (11-bit ids).

    Raises :class:`ProtocolError` otherwise.
    """
    if (
        isinstance(base, bool)
        or not isinstance(base, int)
        or base % ID_SPAN
        or not (ID_SPAN <= base <= 0x7FF - ID_SPAN + 1)
    ):
        raise ProtocolError(
            f"base id {base!r} must be a multiple of 0x10 in 0x010..0x7F0 (11-bit CAN ids)"
        )
    return base


class Codec:
    """Encode and decode the single-frame messages of one device at base id ``base``.

    Every encode goes through cantools with ``strict=True`` (a signal out of range raises
    ``cantools.database.EncodeError``); decode returns None for a frame outside this device's
    single-frame ids (ISO-TP frames included).

    Both are memoized (cantools is pure in them): an encode's bytes by the message and its
    signals, a decode's signals by the message and the frame's bytes (a fresh dict each
    time), up to :attr:`MEMO` of each (then forgotten and started again).  A campaign's
    commands, acks and status frames repeat with the request id's 255 values: most cost a
    dictionary look-up instead of cantools' checks and bit packing.
    """

    #: entries each memo holds before it is cleared
    MEMO = 4096

    def __init__(self, base: int) -> None:
        self.base = check_base(base)
        self.db = load_database()
        self._by_offset: dict[int, Any] = {}
        self._by_ext: dict[tuple[int, int], Any] = {}
        self._by_name: dict[str, tuple[Any, int]] = {}
        self._encoded: dict[tuple[Any, ...], bytes] = {}
        self._decoded: dict[tuple[int, bytes], dict[str, int]] = {}
        for m in self.db.messages:
            if m.is_extended_frame:
                off, tag = (m.frame_id >> EXT_SHIFT) - DBC_BASE, m.frame_id & EXT_TAG_MASK
                self._by_name[m.name] = (m, ((self.base + off) << EXT_SHIFT) | tag)
                if not m.name.startswith("IsoTp"):  # the raw channel (2.2) is ISO-TP
                    self._by_ext[(off, tag)] = m
                continue
            off = m.frame_id - DBC_BASE
            self._by_name[m.name] = (m, self.base + off)
            if off < Channel.LOAD:
                self._by_offset[off] = m

    def id_of(self, name: str) -> int:
        """Arbitration id of message ``name`` for this device."""
        return int(self._by_name[name][1])

    def channel_ids(self, channel: Channel) -> tuple[int, int]:
        """``(data_id, flow_control_id)`` of an ISO-TP channel for this device."""
        return self.base + int(channel), self.base + int(channel) + 1

    def encode(self, name: str, signals: dict[str, int], *, strict: bool = True) -> can.Message:
        """A ``can.Message`` (classic CAN; 11-bit id, 29-bit for JackpotResultMac) carrying
        message ``name``.

        Raises ``KeyError`` for an unknown name, ``cantools.database.EncodeError`` for a missing
        or out-of-range signal (with ``strict``).
        """
        m, arb = self._by_name[name]
        try:
            key: tuple[Any, ...] | None = (name, strict, *signals.items())
            data = self._encoded.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable value: not memoized
            key = data = None
        if data is None:
            data = m.encode(signals, scaling=False, strict=strict)
            if key is not None:
                if len(self._encoded) >= self.MEMO:
                    self._encoded.clear()
                self._encoded[key] = data
        # python-can's positional order (timestamp, arbitration_id, is_extended_id, ...,
        # data at 8th): half the cost of keywords
        return can.Message(0.0, arb, m.is_extended_frame, False, False, None, None, data)

    def decode(self, msg: can.Message) -> Frame | None:
        """The :class:`Frame` in ``msg``, or None if it is not one of this device's
        single-frame messages.  Raises :class:`ProtocolError` for a short frame."""
        if msg.is_error_frame or msg.is_remote_frame:
            return None
        arb = msg.arbitration_id
        if msg.is_extended_id:
            m = self._by_ext.get(((arb >> EXT_SHIFT) - self.base, arb & EXT_TAG_MASK))
        else:
            m = self._by_offset.get(arb - self.base)
        if m is None:
            return None
        data = bytes(msg.data)
        key = (id(m), data)
        sig = self._decoded.get(key)
        if sig is None:
            try:
                sig = m.decode(data, decode_choices=False, scaling=False)
            except Exception as exc:  # cantools raises DecodeError for a truncated frame
                raise ProtocolError(f"{m.name} frame 0x{arb:03X}: {exc}") from exc
            if len(self._decoded) >= self.MEMO:
                self._decoded.clear()
            self._decoded[key] = sig
        return Frame(m.name, dict(sig), msg.timestamp, msg.arbitration_id)


# ---------------------------------------------------------------- ISO-TP payloads

_HDR = struct.Struct("<BB")


class PayloadType(enum.IntEnum):
    LOAD = 0x01
    SHOE = 0x02
    PRIZE_TABLE = 0x03
    AUDIT = 0x04
    SHOE_PACKED = 0x05  # since 2.1: the SHOE channel's bit-packed layout
    RAW_BLOCK = 0x06  # since 2.2: raw generator words on the raw channel
    FIRMWARE = 0x07  # since 2.3: a firmware package on the LOAD channel


#: READ_SHOE ``Arg8`` bit 0 (since 2.1): the host asks for a SHOE_PACKED payload; a 2.0 device
#: ignores the bit and answers a SHOE payload, which the host accepts as well.
READ_SHOE_PACKED = 0x01


def _seal(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def _open(
    payload: bytes | bytearray, want: PayloadType, also: PayloadType | None = None
) -> memoryview:
    if len(payload) < 6:
        raise ProtocolError(f"{want.name} payload of {len(payload)} bytes is too short")
    body = memoryview(bytes(payload))[:-4]
    (crc,) = struct.unpack_from("<I", payload, len(payload) - 4)
    if zlib.crc32(body) != crc:
        raise ProtocolError(f"{want.name} payload CRC-32 mismatch (corrupted in transit)")
    version, ptype = _HDR.unpack_from(body, 0)
    if version != PROTOCOL_MAJOR:
        raise ProtocolError(
            f"{want.name} payload has protocol major {version}; this host speaks {PROTOCOL_MAJOR}"
        )
    if ptype != want and ptype != also:
        raise ProtocolError(f"expected a {want.name} payload, got type 0x{ptype:02X}")
    return body


def _head(fmt: str, body: memoryview, want: PayloadType) -> tuple[int, ...]:
    """The fixed header of a payload; :class:`ProtocolError` if the body is too short."""
    size = struct.calcsize(fmt)
    if len(body) < size:
        raise ProtocolError(
            f"{want.name} payload body of {len(body)} bytes is shorter than its {size}-byte header"
        )
    return struct.unpack_from(fmt, body, 0)


def _cards_bytes(codes: npt.ArrayLike, decks: npt.ArrayLike) -> bytes:
    c = np.asarray(codes, dtype=np.uint8)
    d = np.asarray(decks, dtype=np.uint8)
    if c.shape != d.shape or c.ndim != 1:
        raise ValueError("codes and decks must be 1-D arrays of the same length")
    out = np.empty(2 * c.size, dtype=np.uint8)
    out[0::2] = c
    out[1::2] = d
    return out.tobytes()


def _cards_from(body: memoryview, offset: int, count: int, what: str) -> tuple[Any, Any]:
    if len(body) != offset + 2 * count:
        raise ProtocolError(f"{what} payload length disagrees with its card count {count}")
    raw = np.frombuffer(body, dtype=np.uint8, count=2 * count, offset=offset)
    codes = raw[0::2].copy()
    decks = raw[1::2].copy()
    if (codes > 51).any():
        raise ProtocolError(f"{what} payload holds a card code above 51")
    return codes, decks


@dataclass(frozen=True)
class LoadPayload:
    """LOAD: the input order given to a device.  ``mode`` 0 replaces the device's cards, 1
    inserts returned cards (continuous shuffler).  ``codes``/``decks`` are uint8 arrays; deck
    0xFF means unknown."""

    mode: int
    decks: int
    codes: npt.NDArray[np.uint8]
    card_decks: npt.NDArray[np.uint8]

    def encode(self) -> bytes:
        head = struct.pack(
            "<BBBBH", PROTOCOL_MAJOR, PayloadType.LOAD, self.mode, self.decks, len(self.codes)
        )
        return _seal(head + _cards_bytes(self.codes, self.card_decks))

    @classmethod
    def decode(cls, payload: bytes | bytearray) -> LoadPayload:
        """Raises :class:`ProtocolError` for a bad CRC, version, type or length."""
        body = _open(payload, PayloadType.LOAD)
        _, _, mode, decks, count = _head("<BBBBH", body, PayloadType.LOAD)
        codes, dk = _cards_from(body, 6, count, "LOAD")
        return cls(mode, decks, codes, dk)


def _pack_bits(values: npt.NDArray[np.uint16], width: int) -> bytes:
    """``values`` (each below ``2**width``) as one little-endian bit stream: value i fills bits
    ``i*width .. i*width+width-1``, least significant bit first; the last byte is zero-padded."""
    bits = (values[:, None] >> np.arange(width, dtype=np.uint16)) & 1
    return np.packbits(bits.astype(np.uint8).ravel(), bitorder="little").tobytes()


def _unpack_bits(raw: memoryview, count: int, width: int) -> npt.NDArray[np.uint16]:
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
    rows = bits[: count * width].reshape(count, width).astype(np.uint16)
    return rows @ (np.uint16(1) << np.arange(width, dtype=np.uint16))


_SHOE_HEAD = "<BBBBHHH"
_PACKED_HEAD = "<BBBBHHHB"
#: bits per card of a SHOE_PACKED payload: the physical id ``deck * 52 + code`` (deck 0..7),
#: or the code alone for a device that cannot tell decks apart (every deck 0xFF)
PACKED_WIDTH_ID = 9
PACKED_WIDTH_CODE = 6


@dataclass(frozen=True)
class ShoePayload:
    """SHOE: a shuffled shoe with the shoe number and the cutting card's position (cards
    before it; 0 when none was placed), and (since 2.0) the RequestId of the READ_SHOE it
    answers.  ``codes`` and ``card_decks`` are uint8 arrays of ``count`` cards, top first
    (deck 0xFF: unknown).

    Two layouts on the SHOE channel (docs/protocol.md, "ISO-TP payloads"): type 0x02, 2 bytes
    per card (code, deck), 638 bytes for 6 decks; and (since 2.1, ``packed=True``) type 0x05,
    9 bits per card (``deck * 52 + code``) or 6 (code only, every deck unknown), 366 bytes
    for 6 decks: 53 CAN frames instead of 92.  A shoe whose decks are known for some cards
    and not others has only the 2-byte layout, which ``encode`` then uses."""

    shoe_number: int
    decks: int
    cut_position: int
    codes: npt.NDArray[np.uint8]
    card_decks: npt.NDArray[np.uint8]
    request_id: int = 0
    packed: bool = False

    def _width(self) -> int | None:
        if (np.asarray(self.codes) > 51).any():
            raise ValueError("a card code above 51 cannot be encoded; codes are 0..51")
        unknown = np.asarray(self.card_decks) == UNKNOWN_DECK
        if unknown.all() and self.codes.size:
            return PACKED_WIDTH_CODE
        if unknown.any() or (np.asarray(self.card_decks) > 7).any():
            return None
        return PACKED_WIDTH_ID

    def encode(self) -> bytes:
        width = self._width() if self.packed else None
        fields = (
            PROTOCOL_MAJOR,
            PayloadType.SHOE if width is None else PayloadType.SHOE_PACKED,
            self.decks,
            self.request_id & 0xFF,
            self.shoe_number & 0xFFFF,
            self.cut_position,
            len(self.codes),
        )
        if width is None:
            cards = _cards_bytes(self.codes, self.card_decks)
            return _seal(struct.pack(_SHOE_HEAD, *fields) + cards)
        codes = np.asarray(self.codes, dtype=np.uint16)
        if width == PACKED_WIDTH_ID:
            values = np.asarray(self.card_decks, dtype=np.uint16) * 52 + codes
        else:
            values = codes
        return _seal(struct.pack(_PACKED_HEAD, *fields, width) + _pack_bits(values, width))

    @classmethod
    def decode(cls, payload: bytes | bytearray) -> ShoePayload:
        """Either layout.  Raises :class:`ProtocolError` for a bad CRC, version, type, width or
        length, or a card code above 51.

        The last :data:`SHOE_MEMO` payloads decoded in this process are remembered by their
        bytes (the decoding is a pure function of them): a campaign's analysis, which decodes
        again each shoe its client decoded during collection, gets a copy of that very shoe
        (fresh arrays: the caller may change its own)."""
        key = bytes(payload)
        shoe = _SHOES.get(key)
        if shoe is None:
            shoe = cls._decode(key)
            if len(_SHOES) >= SHOE_MEMO:
                _SHOES.clear()
            _SHOES[key] = shoe
        return replace(shoe, codes=shoe.codes.copy(), card_decks=shoe.card_decks.copy())

    @classmethod
    def _decode(cls, payload: bytes) -> ShoePayload:
        body = _open(payload, PayloadType.SHOE, PayloadType.SHOE_PACKED)
        if body[1] == PayloadType.SHOE:
            _, _, decks, rid, number, cut, count = _head(_SHOE_HEAD, body, PayloadType.SHOE)
            codes, dk = _cards_from(body, 10, count, "SHOE")
            return cls(number, decks, cut, codes, dk, rid)
        want = PayloadType.SHOE_PACKED
        _, _, decks, rid, number, cut, count, width = _head(_PACKED_HEAD, body, want)
        if width not in (PACKED_WIDTH_ID, PACKED_WIDTH_CODE):
            raise ProtocolError(f"SHOE_PACKED payload has {width} bits per card; 9 or 6 expected")
        if len(body) != 11 + (count * width + 7) // 8:
            raise ProtocolError(f"SHOE_PACKED payload length disagrees with its card count {count}")
        values = _unpack_bits(body[11:], count, width)
        if width == PACKED_WIDTH_CODE:
            codes, dk = values, np.full(count, UNKNOWN_DECK, dtype=np.uint8)
        else:
            if (values >= MAX_DECKS * 52).any():
                raise ProtocolError("SHOE_PACKED payload holds a card id above 415 (a deck past 7)")
            codes, dk = values % 52, values // 52
        if (codes > 51).any():
            raise ProtocolError("SHOE_PACKED payload holds a card code above 51")
        return cls(number, decks, cut, codes.astype(np.uint8), dk.astype(np.uint8), rid, True)

    def ids(self) -> npt.NDArray[np.uint16]:
        """Physical card ids ``deck * 52 + code`` (uint16); raises :class:`ProtocolError` if
        the device did not report deck indexes (0xFF)."""
        if (self.card_decks == UNKNOWN_DECK).any():
            raise ProtocolError("the device cannot tell decks apart (deck 0xFF); use codes")
        return self.card_decks.astype(np.uint16) * 52 + self.codes


SHOE_MEMO = 4096
"""How many decoded SHOE payloads :meth:`ShoePayload.decode` remembers (a 6-deck shoe: about
1 KB with its bytes; the demo's campaign decodes 2,000 twice)."""

_SHOES: dict[bytes, ShoePayload] = {}


@dataclass(frozen=True)
class PrizeTablePayload:
    """PRIZE_TABLE: rows of (prize in cents, weight), both uint32; a draw picks row i with
    probability weight_i / sum(weights); (since 2.0) the RequestId of the READ_PRIZE_TABLE it
    answers."""

    rows: tuple[tuple[int, int], ...]
    request_id: int = 0

    def encode(self) -> bytes:
        head = struct.pack(
            "<BBBBH",
            PROTOCOL_MAJOR,
            PayloadType.PRIZE_TABLE,
            0,
            self.request_id & 0xFF,
            len(self.rows),
        )
        return _seal(head + b"".join(struct.pack("<II", c, w) for c, w in self.rows))

    @classmethod
    def decode(cls, payload: bytes | bytearray) -> PrizeTablePayload:
        """Raises :class:`ProtocolError` for a bad CRC, version, type or length."""
        body = _open(payload, PayloadType.PRIZE_TABLE)
        (_, _, _, rid, n) = _head("<BBBBH", body, PayloadType.PRIZE_TABLE)
        if len(body) != 6 + 8 * n:
            raise ProtocolError("PRIZE_TABLE payload length disagrees with its row count")
        rows = tuple(struct.unpack_from("<II", body, 6 + 8 * i) for i in range(n))
        return cls(tuple((int(c), int(w)) for c, w in rows), rid)


_AUDIT_ENTRY = struct.Struct("<HIBI")


@dataclass(frozen=True)
class AuditEntry:
    """One audit record: sequence number, milliseconds since boot, event code (an
    :class:`Opcode` or 0x80 + :class:`FaultCode`), and a 32-bit value."""

    sequence: int
    uptime_ms: int
    event: int
    value: int


@dataclass(frozen=True)
class AuditPayload:
    """AUDIT: the device's most recent audit entries (at most 256) and its boot count;
    (since 2.0) the RequestId of the READ_AUDIT it answers."""

    boot_count: int
    entries: tuple[AuditEntry, ...]
    request_id: int = 0

    def encode(self) -> bytes:
        head = struct.pack(
            "<BBBBH",
            PROTOCOL_MAJOR,
            PayloadType.AUDIT,
            self.boot_count & 0xFF,
            self.request_id & 0xFF,
            len(self.entries),
        )
        body = b"".join(
            _AUDIT_ENTRY.pack(e.sequence & 0xFFFF, e.uptime_ms & 0xFFFFFFFF, e.event, e.value)
            for e in self.entries
        )
        return _seal(head + body)

    @classmethod
    def decode(cls, payload: bytes | bytearray) -> AuditPayload:
        """Raises :class:`ProtocolError` for a bad CRC, version, type or length."""
        body = _open(payload, PayloadType.AUDIT)
        _, _, boots, rid, n = _head("<BBBBH", body, PayloadType.AUDIT)
        if len(body) != 6 + _AUDIT_ENTRY.size * n:
            raise ProtocolError("AUDIT payload length disagrees with its entry count")
        entries = tuple(
            AuditEntry(*_AUDIT_ENTRY.unpack_from(body, 6 + _AUDIT_ENTRY.size * i)) for i in range(n)
        )
        return cls(boots, entries, rid)


PAYLOAD_CLASSES: dict[Channel, Any] = {
    Channel.LOAD: LoadPayload,
    Channel.SHOE: ShoePayload,
    Channel.PRIZE_TABLE: PrizeTablePayload,
    Channel.AUDIT: AuditPayload,
}


class IsoTpReassembler:
    """A passive ISO 15765-2 receiver for one data id (capture decoding and replay): feeds
    single, first and consecutive frames and returns the payload when complete.  Flow
    control is not needed to listen.  A sequence gap or an unexpected frame drops the
    partial payload and counts an error in ``errors``."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need = 0
        self._seq = 0
        self.errors = 0

    @property
    def pending(self) -> bool:
        """True while a multi-frame payload is begun and not complete (at the end of a
        capture: a transfer whose last frames are missing)."""
        return bool(self._need)

    def absorb(self, data: bytes | bytearray) -> bool:
        """Take ``data`` when it is a consecutive frame of the payload begun, in sequence,
        that does not complete it (what :meth:`feed` would do with it, returning None with
        no error): True; False, and nothing changed, for any other frame (then give it to
        :meth:`feed`).  The capture's decoding takes a SHOE transfer's 50 quiet frames so."""
        if not self._need or not data or data[0] != 0x20 | self._seq:
            return False
        if len(self._buf) + len(data) - 1 >= self._need:
            return False
        self._seq = (self._seq + 1) & 0x0F
        self._buf += data[1:]
        return True

    def feed(self, data: bytes | bytearray) -> bytes | None:
        """The complete payload when ``data`` finishes one, else None."""
        if not data:
            self.errors += 1
            return None
        pci = data[0] >> 4
        if pci == 0:  # single frame
            n = data[0] & 0x0F
            off = 1
            if n == 0 and len(data) > 1:  # CAN FD escape
                n, off = data[1], 2
            self._need = 0
            return bytes(data[off : off + n])
        if pci == 1:  # first frame
            n = ((data[0] & 0x0F) << 8) | data[1] if len(data) >= 2 else 0
            off = 2
            if n == 0 and len(data) >= 6:
                n = struct.unpack_from(">I", data, 2)[0]
                off = 6
            if n == 0:  # truncated first frame: drop it
                self.errors += 1
                self._need = 0
                return None
            if self._need:
                self.errors += 1
            self._buf = bytearray(data[off:])
            self._need = n
            self._seq = 1
            return None
        if pci == 2:  # consecutive frame
            if not self._need:
                return None
            if data[0] & 0x0F != self._seq:
                self.errors += 1
                self._need = 0
                return None
            self._seq = (self._seq + 1) & 0x0F
            self._buf += data[1:]
            if len(self._buf) >= self._need:
                n, self._need = self._need, 0
                return bytes(self._buf[:n])
            return None
        return None  # flow control
