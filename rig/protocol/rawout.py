"""Raw generator output over the bus (protocol 2.2, docs/protocol.md "Raw output"): the
READ_RAW and READ_RAW_BLOCK commands, the RAW_BLOCK payload that carries a block of words,
the raw channel's ids, ISO-TP framing on CAN FD (ISO 15765-2:2016: 64-byte frames) and the
bus time of a raw transfer from the frame-time model (:mod:`feltlab.rig.protocol.bittime`).

A device asked for ``N`` words of ``width`` bits streams them in blocks of
:data:`RAW_BLOCK_BYTES` bytes (the last one shorter), each an ISO-TP payload numbered
``block`` of ``blocks``; a block lost, cut short or failing its CRC-32 is asked for again
by number (READ_RAW_BLOCK), never skipped.  Words are sent most significant byte first, so
the concatenated blocks are the raw file a collection tool writes (bytes, MSB first).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.bittime import fd_frame_seconds, fd_length, frame_bits

#: the raw channel's 29-bit ids are ``(B + 0xA) << 18 | RAW_TAG`` (device to host, data) and
#: ``(B + 0xB) << 18 | RAW_TAG`` (host to device, flow control): their 11-bit prefixes are
#: the SHOE channel's, so raw blocks arbitrate just behind shoes and every single frame.
RAW_TAG = 0x0DA7
#: word widths a device may declare (bits)
RAW_WIDTHS = (8, 16, 32, 64)
#: data bytes in a full block: a multiple of 8 (whole words of every width) that keeps the
#: payload (18 bytes of header and CRC around it) within ISO-TP's classic 4095 bytes
RAW_BLOCK_BYTES = 4072
RAW_PAYLOAD_TYPE = 0x06
_HEAD = struct.Struct("<BBBBIIH")  # version, type, width, request_id, block, blocks, count
#: the padding byte of CAN FD frames longer than their content (can-isotp's default)
FD_PADDING = 0xCC


def raw_channel_ids(base: int) -> tuple[int, int]:
    """``(data_id, flow_control_id)``, 29-bit, of the raw channel of a device at ``base``."""
    return ((base + 0xA) << 18) | RAW_TAG, ((base + 0xB) << 18) | RAW_TAG


def words_per_block(width: int) -> int:
    """Words of ``width`` bits in a full block.  Raises ProtocolError for another width."""
    check_width(width)
    return RAW_BLOCK_BYTES * 8 // width


def check_width(width: int) -> int:
    """``width`` if it is one of :data:`RAW_WIDTHS`; else ProtocolError naming them."""
    if width not in RAW_WIDTHS:
        raise ProtocolError(f"raw word width {width} bits: choose one of {RAW_WIDTHS}")
    return width


def block_count(words: int, width: int) -> int:
    """Blocks that carry ``words`` words of ``width`` bits (at least 1 word)."""
    if words < 1:
        raise ProtocolError(f"asked for {words} raw words: at least 1")
    per = words_per_block(width)
    return -(-words // per)


@dataclass(frozen=True)
class RawBlock:
    """One RAW_BLOCK payload: block ``block`` (0-based) of ``blocks``, answering request
    ``request_id``, ``data`` the words of ``width`` bits, each most significant byte first.

    Layout (little-endian integers): ``version(1) 0x06(1) width(1) request_id(1) block(4)
    blocks(4) count(2) data(count * width / 8) CRC32(4)`` (docs/protocol.md)."""

    width: int
    request_id: int
    block: int
    blocks: int
    data: bytes

    def encode(self, version: int) -> bytes:
        count = len(self.data) * 8 // self.width
        head = _HEAD.pack(
            version, RAW_PAYLOAD_TYPE, self.width, self.request_id, self.block, self.blocks, count
        )
        body = head + self.data
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def decode(cls, payload: bytes, version: int) -> RawBlock:
        """The block in ``payload``.  Raises ProtocolError for another version or type, a bad
        width, a length that disagrees with the count, or a CRC mismatch."""
        if len(payload) < _HEAD.size + 4:
            raise ProtocolError(f"RAW_BLOCK payload of {len(payload)} bytes is too short")
        body, (crc,) = payload[:-4], struct.unpack("<I", payload[-4:])
        if zlib.crc32(body) != crc:
            raise ProtocolError("RAW_BLOCK CRC-32 mismatch")
        ver, kind, width, rid, block, blocks, count = _HEAD.unpack_from(body)
        if ver != version:
            raise ProtocolError(f"RAW_BLOCK of protocol {ver}, expected {version}")
        if kind != RAW_PAYLOAD_TYPE:
            raise ProtocolError(f"payload type 0x{kind:02X} is not RAW_BLOCK (0x06)")
        check_width(width)
        data = body[_HEAD.size :]
        if len(data) * 8 != count * width:
            raise ProtocolError(f"RAW_BLOCK says {count} words, carries {len(data)} bytes")
        if block >= blocks:
            raise ProtocolError(f"RAW_BLOCK {block} of {blocks}")
        return cls(width, rid, block, blocks, bytes(data))


# ---------------------------------------------------------------- ISO-TP on CAN FD


def isotp_frames(payload: bytes, frame_bytes: int = 64) -> list[bytes]:
    """The ISO-TP (ISO 15765-2:2016) frames of ``payload`` with ``frame_bytes``-byte frames
    (8: classic CAN; 64: CAN FD), as can-isotp sends them with ``tx_data_length`` =
    ``frame_bytes``, no other padding: a single frame when it fits (CAN FD: escape length
    byte above 7), else a first frame (12-bit length up to 4095, else the 32-bit escape)
    and consecutive frames; a CAN FD frame whose content is no valid length is padded with
    :data:`FD_PADDING` up to the next.  Raises ValueError for an empty payload."""
    n = len(payload)
    if n == 0:
        raise ValueError("an ISO-TP payload has at least 1 byte")
    pad = frame_bytes > 8
    if n <= 7:
        return [_pad(bytes([n]) + payload, pad)]
    if pad and n <= frame_bytes - 2:
        return [_pad(bytes([0, n]) + payload, pad)]
    head = bytes([0x10 | n >> 8, n & 0xFF]) if n <= 4095 else b"\x10\x00" + n.to_bytes(4, "big")
    first = frame_bytes - len(head)
    frames = [head + payload[:first]]
    seq, pos = 1, first
    while pos < n:
        chunk = payload[pos : pos + frame_bytes - 1]
        frames.append(_pad(bytes([0x20 | seq]) + chunk, pad))
        seq, pos = (seq + 1) & 0x0F, pos + len(chunk)
    return frames


def _pad(frame: bytes, pad: bool) -> bytes:
    if not pad or len(frame) <= 8:
        return frame
    return frame + bytes([FD_PADDING]) * (fd_length(len(frame)) - len(frame))


class IsoTpReassembler:
    """The receiving side of ISO-TP for one id, classic or CAN FD frames alike, without
    timers (the caller's): :meth:`feed` each frame's data; it returns a payload when one
    completes.  A consecutive frame out of sequence, or a frame before a first frame, ends
    the transfer in progress and is listed in :attr:`errors` (the payload is lost, never
    patched)."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self._buf = bytearray()
        self._size = 0
        self._seq = 0
        self._active = False

    @property
    def active(self) -> bool:
        """True while a multi-frame payload is in progress."""
        return self._active

    def abandon(self, reason: str) -> None:
        """Drop the payload in progress (e.g. N_Cr passed), noting ``reason``."""
        if self._active:
            self.errors.append(reason)
        self._active = False

    def feed(self, data: bytes) -> bytes | None:
        if not data:
            return None
        pci = data[0] >> 4
        if pci == 0:
            self.abandon("a single frame interrupted a transfer")
            n = data[0] & 0x0F
            if n == 0 and len(data) > 8:
                return bytes(data[2 : 2 + data[1]])
            return bytes(data[1 : 1 + n]) if n else None
        if pci == 1:
            self.abandon("a first frame interrupted a transfer")
            size = (data[0] & 0x0F) << 8 | data[1]
            start = 2
            if size == 0:
                size, start = int.from_bytes(data[2:6], "big"), 6
            self._buf = bytearray(data[start:])
            self._size, self._seq, self._active = size, 1, True
            return None
        if pci == 2:
            if not self._active:
                self.errors.append("a consecutive frame without a first frame")
                return None
            if data[0] & 0x0F != self._seq:
                self.abandon(f"consecutive frame {data[0] & 0x0F}, expected {self._seq}")
                return None
            self._buf += data[1:]
            self._seq = (self._seq + 1) & 0x0F
            if len(self._buf) >= self._size:
                self._active = False
                return bytes(self._buf[: self._size])
        return None  # flow control: the sender's business


# ---------------------------------------------------------------- bus time


def raw_block_frames(block_bytes: int, frame_bytes: int) -> list[int]:
    """Data lengths of the frames of one RAW_BLOCK of ``block_bytes`` word bytes, flow
    control included (3 bytes, as the rig's host sends it)."""
    payload = _HEAD.size + block_bytes + 4
    frames = isotp_frames(bytes(payload), frame_bytes)
    return [len(f) for f in frames] + ([3] if len(frames) > 1 else [])


def transfer_seconds(
    n_bytes: int,
    bitrate: int,
    data_bitrate: int | None = None,
    *,
    base: int = 0x100,
    stuffing: str = "none",
    extended: bool = True,
) -> float:
    """Bus seconds to move ``n_bytes`` of raw words in RAW_BLOCKs, from the frame-time model:
    CAN FD 64-byte frames with bit-rate switch at ``data_bitrate`` (arbitration and flow
    control at ``bitrate``), or classic 8-byte frames at ``bitrate`` when ``data_bitrate``
    is None; ``stuffing`` ``"none"`` (a lower bound) or ``"worst"`` (the ISO upper bound) for
    every frame (data-dependent ``"exact"`` bits: :func:`frames_seconds` on the frames sent).
    ``extended``: the raw channel's 29-bit ids (False: what 11-bit ids would take).
    The READ_RAW command and its Ack (two frames) are not counted.  Raises ValueError for
    another ``stuffing``."""
    if stuffing not in ("none", "worst"):
        raise ValueError("stuffing must be 'none' or 'worst' (exact bits need the data)")
    full, rest = divmod(n_bytes, RAW_BLOCK_BYTES)
    total = 0.0
    for count, size in ((full, RAW_BLOCK_BYTES), (1 if rest else 0, rest)):
        if count:
            total += count * _block_seconds(size, bitrate, data_bitrate, base, stuffing, extended)
    return total


def _block_seconds(
    size: int, bitrate: int, data_bitrate: int | None, base: int, stuffing: str, extended: bool
) -> float:
    data_id, fc_id = raw_channel_ids(base) if extended else (base + 0xA, base + 0xB)
    fd = data_bitrate is not None
    lengths = raw_block_frames(size, 64 if fd else 8)
    out = 0.0
    for i, n in enumerate(lengths):
        aid = fc_id if (i == len(lengths) - 1 and len(lengths) > 1) else data_id
        if fd:
            out += fd_frame_seconds(
                aid,
                bytes(n),
                bitrate,
                data_bitrate or bitrate,
                extended=extended,
                stuffing=stuffing,
            )
        else:
            out += frame_bits(aid, bytes(n), extended=extended, stuffing=stuffing) / bitrate
    return out


def frames_seconds(
    frames: Iterable[tuple[int, bytes, bool, bool]], bitrate: int, data_bitrate: int
) -> float:
    """Bus seconds of ``frames`` ``(arbitration_id, data, extended, is_fd)`` back to back,
    stuff bits exact: what the simulated wire takes for them."""
    total = 0.0
    for aid, data, ext, fd in frames:
        if fd:
            total += fd_frame_seconds(aid, data, bitrate, data_bitrate, extended=ext)
        else:
            total += frame_bits(aid, data, extended=ext) / bitrate
    return total


def iter_blocks(words: bytes, width: int) -> Iterator[bytes]:
    """``words`` (bytes, MSB first) cut into the data of successive blocks."""
    check_width(width)
    for start in range(0, len(words), RAW_BLOCK_BYTES):
        yield words[start : start + RAW_BLOCK_BYTES]
