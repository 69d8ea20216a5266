"""Capture every frame to a python-can log, and decode or replay a capture offline.

The format follows the file suffix: ``.blf`` (Vector binary logging format, the default),
``.asc`` (Vector ASCII) or ``.log`` (Linux candump).  Timestamps are seconds since the
epoch (BLF stores pre-1990 stamps as offsets, so the rig never writes those).  Decoding runs
the same decoders as the live clients: the DBC through :class:`feltlab.rig.protocol.Codec`
and ISO-TP payloads through :class:`feltlab.rig.protocol.IsoTpReassembler`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import can

from feltlab.rig.errors import ProtocolError, RigError
from feltlab.rig.protocol import (
    DBC_BASE,
    EXT_SHIFT,
    ID_SPAN,
    PAYLOAD_CLASSES,
    Channel,
    Codec,
    IsoTpReassembler,
)

FORMATS = {".blf": "BLF", ".asc": "ASC", ".log": "candump"}


class CaptureWriter:
    """A thread-safe listener writing every frame it is given to ``path``.

    Raises :class:`RigError` for a suffix other than .blf, .asc or .log.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() not in FORMATS:
            raise RigError(
                f"capture file {self.path} must end in .blf, .asc or .log (candump); "
                "BLF is the default"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer: Any = can.Logger(str(self.path))
        self._lock = threading.Lock()
        self.frames = 0
        self._stopped = False

    def on_message_received(self, msg: can.Message) -> None:
        with self._lock:
            if self._stopped:
                return
            if msg.timestamp < 631152000.0:
                msg.timestamp = time.time()
            # BLF and ASC store numeric channels only: keep the frame, drop the label
            copy = can.Message(
                timestamp=msg.timestamp,
                arbitration_id=msg.arbitration_id,
                is_extended_id=msg.is_extended_id,
                is_remote_frame=msg.is_remote_frame,
                is_error_frame=msg.is_error_frame,
                dlc=msg.dlc,
                data=msg.data,
                is_rx=msg.is_rx,
                channel=0,
            )
            self._writer.on_message_received(copy)
            self.frames += 1

    def stop(self) -> None:
        with self._lock:
            if not self._stopped:
                self._stopped = True
                self._writer.stop()


@dataclass(frozen=True)
class DecodedRecord:
    """One decoded item of a capture: a single-frame message (``kind == "frame"``, fields
    are its DBC signals) or a reassembled ISO-TP payload (``kind == "payload"``, ``value``
    the decoded payload object, or None with ``error`` set when it failed its checks)."""

    timestamp: float
    base: int
    kind: str
    name: str
    fields: dict[str, int]
    value: Any = None
    error: str | None = None


class CaptureDecoder:
    """Decodes frames of any device on the bus (each occupies 16 ids from a base aligned to
    0x10), or only of ``bases`` when given."""

    def __init__(self, bases: Iterable[int] | None = None) -> None:
        self.bases = set(bases) if bases is not None else None
        self._codecs: dict[int, Codec] = {}
        self._isotp: dict[tuple[int, Channel], IsoTpReassembler] = {}
        self.unknown = 0

    def _codec(self, base: int) -> Codec:
        codec = self._codecs.get(base)
        if codec is None:
            codec = self._codecs[base] = Codec(base)
        return codec

    def feed(self, msg: can.Message) -> DecodedRecord | None:
        """The record ``msg`` completes, or None (a flow-control frame, part of a payload, or
        a frame outside the protocol)."""
        if msg.is_error_frame:
            self.unknown += 1
            return None
        if msg.is_extended_id:  # JackpotResultMac (1.1): (11-bit id << 18) | tag
            base = (msg.arbitration_id >> EXT_SHIFT) & 0x7FF & ~(ID_SPAN - 1)
            if (self.bases is not None and base not in self.bases) or base == 0:
                self.unknown += 1
                return None
            return self._frame(base, msg)
        base = msg.arbitration_id & ~(ID_SPAN - 1)
        if (self.bases is not None and base not in self.bases) or base == 0:
            self.unknown += 1
            return None
        off = msg.arbitration_id - base
        if off >= Channel.LOAD:
            if off % 2:  # flow control
                return None
            ch = Channel(off)
            re = self._isotp.setdefault((base, ch), IsoTpReassembler())
            payload = re.feed(msg.data)
            if payload is None:
                return None
            try:
                value = PAYLOAD_CLASSES[ch].decode(payload)
            except ProtocolError as exc:
                return DecodedRecord(msg.timestamp, base, "payload", ch.name, {}, None, str(exc))
            return DecodedRecord(msg.timestamp, base, "payload", ch.name, {}, value)
        return self._frame(base, msg)

    def _frame(self, base: int, msg: can.Message) -> DecodedRecord | None:
        try:
            frame = self._codec(base).decode(msg)
        except ProtocolError as exc:
            return DecodedRecord(msg.timestamp, base, "frame", "?", {}, None, str(exc))
        if frame is None:
            self.unknown += 1
            return None
        return DecodedRecord(msg.timestamp, base, "frame", frame.name, frame.signals)


def read_capture(path: str | Path) -> Iterator[can.Message]:
    """The frames of a capture file, in order, through ``can.LogReader``.

    Raises :class:`RigError` if the file is missing, or is not a readable capture of its
    format (frames read before the damage are yielded first).
    """
    p = Path(path)
    if not p.exists():
        raise RigError(f"capture file {p} does not exist")
    try:
        yield from can.LogReader(str(p))
    except Exception as exc:  # python-can's readers raise struct.error, zlib.error, ...
        fmt = FORMATS.get(p.suffix.lower(), p.suffix)
        raise RigError(
            f"capture file {p} is not a readable {fmt} capture ({type(exc).__name__}: {exc}); "
            "it is damaged or not a capture"
        ) from exc


def decode_capture(path: str | Path, bases: Iterable[int] | None = None) -> Iterator[DecodedRecord]:
    """Every decoded record of a capture, in order (see :class:`CaptureDecoder`)."""
    dec = CaptureDecoder(bases)
    for msg in read_capture(path):
        rec = dec.feed(msg)
        if rec is not None:
            yield rec


def replay(path: str | Path, listener: Any) -> int:
    """Feed every frame of a capture to ``listener`` (a callable or a ``can.Listener``, e.g.
    a client's ``on_message``), as the live Notifier would; returns the frame count."""
    fn = getattr(listener, "on_message_received", listener)
    n = 0
    for msg in read_capture(path):
        fn(msg)
        n += 1
    return n


def format_record(rec: DecodedRecord) -> str:
    """One human-readable line for ``feltlab capture decode``."""
    stamp = time.strftime("%H:%M:%S", time.localtime(rec.timestamp))
    frac = f"{rec.timestamp % 1:.6f}"[1:]
    head = f"{stamp}{frac} 0x{rec.base:03X} {rec.name}"
    if rec.error:
        return f"{head} ERROR {rec.error}"
    if rec.kind == "frame":
        return head + " " + " ".join(f"{k}={v}" for k, v in rec.fields.items())
    v = rec.value
    if hasattr(v, "codes"):
        extra = f" cards={len(v.codes)}"
        if hasattr(v, "shoe_number"):
            extra += f" shoe={v.shoe_number} cut={v.cut_position}"
        return head + extra
    if hasattr(v, "rows"):
        return head + " rows=" + ";".join(f"{c}c:{w}" for c, w in v.rows)
    if hasattr(v, "entries"):
        return head + f" boot={v.boot_count} entries={len(v.entries)}"
    return head


__all__ = [
    "DBC_BASE",
    "FORMATS",
    "CaptureDecoder",
    "CaptureWriter",
    "DecodedRecord",
    "decode_capture",
    "format_record",
    "read_capture",
    "replay",
]
