"""Capture every frame to a python-can log, and decode or replay a capture offline.

The format follows the file suffix: ``.blf`` (Vector binary logging format, the default),
``.asc`` (Vector ASCII) or ``.log`` (Linux candump).  Timestamps are seconds since the
epoch (BLF stores pre-1990 stamps as offsets, so the rig never writes those).  Decoding runs
the same decoders as the live clients: the DBC through :class:`feltlab.rig.protocol.codec.Codec`
and ISO-TP payloads through :class:`feltlab.rig.protocol.codec.IsoTpReassembler`.
"""

from __future__ import annotations

import functools
import hmac
import io
import math
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import can

from feltlab.inputs import open_regular, read_regular
from feltlab.rig.bus.writer import (
    FORMATS,
    JOURNAL_MAGIC,
    JOURNAL_SUFFIX,
    MAC_FIELD,
    chain_next,
    chain_start,
    journal_path,
)
from feltlab.rig.errors import ProtocolError, RigError
from feltlab.rig.protocol.codec import (
    EXT_SHIFT,
    ID_SPAN,
    PAYLOAD_CLASSES,
    Channel,
    Codec,
    IsoTpReassembler,
    load_database,
)

LATEST_STAMP = 253_402_300_799.0
"""The last second of 9999-12-31 in epoch seconds.  A frame stamped further from 0 than
this, or with a stamp that is not a finite number, comes from damage: no clock that stamps
CAN frames reaches it, and the platform's time functions cannot show it (``(1e300)`` in a
candump file was an OverflowError in ``capture decode``)."""


def stamp_in_range(stamp: float) -> bool:
    """True if ``stamp`` (seconds, epoch or relative) is a finite number within
    :data:`LATEST_STAMP` of 0."""
    return math.isfinite(stamp) and -LATEST_STAMP <= stamp <= LATEST_STAMP


MAX_JOURNAL_LINE = 200
"""The longest journal line feltlab writes is about 50 characters (a 64-byte CAN FD frame
would be 160): a longer line is damage, refused before it is parsed."""


def _journal_text(p: Path) -> str:
    raw = read_regular(p, "capture journal", MAX_JOURNAL_BYTES, error=RigError)
    if raw is None:
        raise RigError(f"capture journal {p} does not exist")
    try:
        return raw.split(b"\0", 1)[0].decode("ascii")
    except UnicodeDecodeError as exc:
        raise RigError(f"capture journal {p} is not readable ({exc})") from exc


MAX_JOURNAL_BYTES = 1 << 33
"""A journal over 8 GiB (some 150 million frames) is not one of feltlab's."""


def journal_owner(path: str | Path) -> dict[str, str] | None:
    """The ``key=value`` pairs of a journal's first line (:func:`journal_header`: the
    campaign id and part of a campaign's capture), or None when its first line is not a
    feltlab journal header (a journal from before the header, or another file).  Reads at
    most the first 512 bytes of a regular file; raises :class:`RigError` for anything else."""
    p = Path(path)
    with open_regular(p, "capture journal", RigError) as (f, _):
        head = f.read(512)
    line = head.split(b"\n", 1)[0].decode("ascii", "replace")
    if not line.startswith(JOURNAL_MAGIC):
        return None
    out: dict[str, str] = {}
    for pair in line[len(JOURNAL_MAGIC) :].split():
        k, _, v = pair.partition("=")
        out[k] = v
    return out


def read_journal(path: str | Path) -> list[can.Message]:
    """The frames of a journal: every complete line after its header (a line torn by a crash
    is dropped; a journal not closed ends in the NUL bytes of :class:`MappedJournal`'s
    unwritten rest).

    Raises :class:`RigError` for an unreadable journal (a FIFO or other non-regular file
    too), or a damaged line before the last (over :data:`MAX_JOURNAL_LINE` characters, a
    frame of more than 64 data bytes, a stamp that is not a finite number).
    """
    p = Path(path)
    return _journal_frames(p, _journal_text(p))


def _journal_frames(p: Path, text: str) -> list[can.Message]:
    """The frames of journal ``p``'s ``text`` (read_journal's rules, its errors)."""
    lines = text.split("\n")
    lines.pop()  # "" after the last newline, or the torn last line of a crash
    if lines and lines[0].startswith("#"):
        lines = lines[1:]
    lines = [line.split(MAC_FIELD, 1)[0] for line in lines]  # the chained MAC: verify_journal
    for i, line in enumerate(lines, 2):
        if len(line) > MAX_JOURNAL_LINE:
            raise RigError(
                f"capture journal {p} is damaged: line {i} is {len(line)} characters long, "
                "not a CAN frame"
            )
    try:
        msgs = list(can.CanutilsLogReader(io.StringIO("\n".join(lines) + "\n")))
    except (ValueError, IndexError) as exc:
        raise RigError(f"capture journal {p} is damaged ({exc})") from exc
    for m in msgs:
        if len(m.data) > 64 or not stamp_in_range(m.timestamp):
            raise RigError(
                f"capture journal {p} is damaged: a frame of {len(m.data)} bytes at "
                f"{m.timestamp} is not a CAN frame"
            )
    return msgs


JOURNAL_HEAD_BYTES = 1 << 16
"""What :func:`first_frame` reads of a journal: its header line and many frame lines (each
under :data:`MAX_JOURNAL_LINE` characters and its MAC)."""


def first_frame(path: str | Path) -> can.Message | None:
    """The first frame of a capture in file order (None: the capture has none), as
    :func:`read_capture` gives it, but of a journal (named itself, or the journal of a
    ``.blf`` that is still there) only its first :data:`JOURNAL_HEAD_BYTES` bytes are read,
    not its whole text (122,000 lines in the demo's).  Raises :class:`RigError` as
    :func:`read_capture` does for damage within what it reads; damage past a journal's
    first :data:`JOURNAL_HEAD_BYTES` bytes is not seen here (the capture's full read, which
    every analysis makes, raises for it)."""
    p = Path(path)
    j = p if p.name.endswith(JOURNAL_SUFFIX) else None
    if j is None and p.suffix.lower() == ".blf" and journal_path(p).exists():
        j = journal_path(p)
    if j is None:
        closed = read_capture(p)
        try:
            return next(closed, None)
        finally:
            close = getattr(closed, "close", None)
            if close is not None:
                close()
    with open_regular(j, "capture journal", RigError) as (f, size):
        head = f.read(JOURNAL_HEAD_BYTES)
    text = head.split(b"\0", 1)[0]
    try:
        frames = _journal_frames(j, text.decode("ascii"))
    except UnicodeDecodeError as exc:
        raise RigError(f"capture journal {j} is not readable ({exc})") from exc
    if not frames and len(text) == JOURNAL_HEAD_BYTES < size:  # more may follow: read it all
        frames = read_journal(j)
    return frames[0] if frames else None


def verify_journal(path: str | Path, key: bytes) -> int:
    """Check every line of a campaign part's journal against its chained MAC under ``key``
    (:func:`feltlab.rig.bus.writer.chain_next`, seeded by its header line); returns the
    number of frame lines.  A line torn by a crash (no newline: the text ends there, or at
    the first NUL byte of the journal's unwritten rest) is dropped, as :func:`read_journal`
    drops it; every complete line must verify.

    Raises :class:`RigError` naming the first line that fails its MAC, or has none: an edit,
    a reordering, lines of another journal spliced in, or lines appended after a
    truncation."""
    p = Path(path)
    lines = _journal_text(p).split("\n")
    lines.pop()  # "" after the last newline, or a torn last line
    if not lines or not lines[0].startswith(JOURNAL_MAGIC):
        raise RigError(f"capture journal {p} has no header naming its campaign")
    prev = chain_start(key, lines[0])
    for i, line in enumerate(lines[1:], 2):
        body, sep, tag = line.partition(MAC_FIELD)
        if sep and hmac.compare_digest(tag, chain_next(key, prev, body).hex()):
            prev = bytes.fromhex(tag)
            continue
        raise RigError(
            f"capture journal {p}: line {i} fails its chained MAC: the journal was edited, "
            "reordered, spliced from another journal or appended to; it is not this "
            "campaign's part as collected"
        )
    return len(lines) - 1


def recover_capture(path: str | Path, *, remove_journal: bool = True) -> int | None:
    """Rebuild BLF ``path`` from its journal after a crash (kill -9, power loss): the BLF
    writer finalises its file only on close, the journal holds every frame written before
    the crash.  Writes a complete BLF (atomically replacing the unfinished one), removes the
    journal (unless ``remove_journal`` is False: a campaign records the part first) and
    returns the number of frames; None when there is no journal (the capture was closed
    cleanly)."""
    p = Path(path)
    j = journal_path(p)
    if not j.exists():
        return None
    msgs = read_journal(j)
    tmp = p.with_name(p.name + ".recovering.blf")
    try:
        writer = can.BLFWriter(str(tmp), compression_level=1)  # as the capture writes its BLF
        try:
            for m in msgs:
                writer.on_message_received(m)
        finally:
            writer.stop()
        os.replace(tmp, p)
    except BaseException:  # nothing half-written left behind; the journal is kept
        tmp.unlink(missing_ok=True)
        raise
    if remove_journal:
        j.unlink()
    return len(msgs)


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


#: the ISO-TP data channel at each id offset from a device's base (a dict: the decoder looks
#: one up for every frame of a transfer)
_CHANNEL_AT = {int(ch): ch for ch in Channel}


class CaptureDecoder:
    """Decodes frames of any device on the bus (each occupies 16 ids from a base aligned to
    0x10), or only of ``bases`` when given; ``errors``: a list that each malformed frame of
    those devices is described into (its id, stamp, bytes and what is wrong)."""

    def __init__(
        self,
        bases: Iterable[int] | None = None,
        errors: list[str] | None = None,
        *,
        lost_transfers: bool = False,
    ) -> None:
        self.bases = set(bases) if bases is not None else None
        #: when given, a line per frame that breaks the protocol (a 7-byte Fault frame...)
        self.errors = errors
        #: with ``lost_transfers`` (``capture decode``), an ISO-TP transfer that lost a frame
        #: is a record of its own (an error naming the payload), not dropped without a word
        self.lost_transfers = lost_transfers
        #: transfers that lost a frame (a consecutive frame out of sequence)
        self.lost = 0
        self._codecs: dict[int, Codec] = {}
        self._isotp: dict[tuple[int, Channel], IsoTpReassembler] = {}
        self.unknown = 0

    def unfinished(self) -> int:
        """Transfers begun and not complete: at the end of a capture, each lost its last
        frames."""
        return sum(re.pending for re in self._isotp.values())

    def _codec(self, base: int) -> Codec:
        codec = self._codecs.get(base)
        if codec is None:
            codec = self._codecs[base] = Codec(base)
        return codec

    def reassembler(self, base: int, channel: Channel) -> IsoTpReassembler:
        """The ISO-TP reassembler of the device at ``base``'s ``channel`` (made on first use):
        a caller may hand it the quiet consecutive frames of a transfer itself
        (:meth:`IsoTpReassembler.absorb`: what :meth:`feed` does with them), and every other
        frame to :meth:`feed`."""
        re = self._isotp.get((base, channel))
        if re is None:
            re = self._isotp[(base, channel)] = IsoTpReassembler()
        return re

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
            ch = _CHANNEL_AT[off]
            re = self.reassembler(base, ch)
            before = re.errors
            payload = re.feed(msg.data)
            if re.errors > before:
                self.lost += 1
                if self.lost_transfers:
                    return DecodedRecord(
                        msg.timestamp,
                        base,
                        "payload",
                        ch.name,
                        {},
                        None,
                        f"{ch.name} transfer lost a frame (ISO-TP sequence broken at "
                        f"0x{msg.arbitration_id:03X}): its payload is dropped",
                    )
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
            if self.errors is not None:
                self.errors.append(
                    f"id 0x{msg.arbitration_id:03X} at {float(msg.timestamp):.6f} s "
                    f"({len(msg.data)} bytes {bytes(msg.data).hex()}): {exc}"
                )
            return DecodedRecord(msg.timestamp, base, "frame", "?", {}, None, str(exc))
        if frame is None:
            self.unknown += 1
            return None
        return DecodedRecord(msg.timestamp, base, "frame", frame.name, frame.signals)


def check_blf_complete(path: Path) -> None:
    """Raise :class:`RigError` when the BLF file at ``path`` is shorter than the size its
    header declares (a file cut short by a copy or a full disk: its last frames are lost).
    A BLF writer stores the file size in the header when it closes the file."""
    try:
        with can.BLFReader(str(path)) as reader:
            declared = int(reader.file_size)
    except Exception as exc:  # python-can raises BLFParseError, struct.error, ...
        raise RigError(
            f"capture file {path} is not a readable BLF capture ({type(exc).__name__}: {exc})"
        ) from exc
    actual = path.stat().st_size
    if declared and actual < declared:
        raise RigError(
            f"capture file {path} is truncated: its header declares {declared} bytes, the file "
            f"has {actual}; restore the whole file (or analyse the campaign folder, whose "
            "journal may hold the frames)"
        )


def closed_blf_frames(path: Path) -> int | None:
    """The frames (objects) a BLF's header declares when the file is whole as its writer
    closed it: the header's file size, stored at close, equal to the file's; None for an
    empty, unfinished (streamed and never closed) or unreadable file."""
    try:
        size = path.stat().st_size
        if size == 0:
            return None
        with can.BLFReader(str(path)) as reader:
            declared, count = int(reader.file_size), int(reader.object_count)
    except Exception:  # python-can raises BLFParseError, struct.error, ...
        return None
    return count if declared == size else None


MAX_BLF_RATIO = 64
"""The most a BLF container may inflate relative to its compressed bytes: CAN traffic
compresses 3-5 times at zlib level 1 (measured on the rig's captures); one frame copied
millions of times inflates hundreds of times (a decompression bomb)."""
MAX_BLF_CONTAINER = 16 * 1024 * 1024
"""The largest BLF container accepted, uncompressed (writers use 128 KiB)."""


def check_blf_bounded(path: Path) -> None:
    """Raise :class:`RigError` for a BLF whose containers inflate past
    :data:`MAX_BLF_RATIO` times their size or past :data:`MAX_BLF_CONTAINER` bytes (a
    decompression bomb: 3 MB that inflate to 3 GiB), before any frame is parsed.  Streams
    each container through ``zlib.decompressobj`` with a bounded output, one at a time."""
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return
        f.seek(struct.unpack_from("<4sL", head)[1])
        while True:
            obj = f.read(16)
            if len(obj) < 16:
                return
            sig, _hs, _hv, size, kind = struct.unpack("<4sHHLL", obj)
            if sig != b"LOBJ" or size < 16:
                return  # python-can's reader reports the damage
            if kind != 10:  # not a LOG_CONTAINER
                f.seek(size - 16 + size % 4, os.SEEK_CUR)
                continue
            body = f.read(size - 16)
            f.read(size % 4)
            if len(body) < 16:
                return
            method, declared = struct.unpack_from("<H6xL4x", body)
            if method != 2:  # not zlib: its size is its size
                continue
            packed = body[16:]
            room = min(MAX_BLF_CONTAINER, MAX_BLF_RATIO * max(len(packed), 1024))
            try:
                out = zlib.decompressobj().decompress(packed, room + 1)
            except zlib.error:
                return  # damage, reported by the reader
            if len(out) > room or declared > MAX_BLF_CONTAINER:
                raise RigError(
                    f"capture file {path} is a decompression bomb: a container of "
                    f"{len(packed)} bytes inflates past {room} bytes (more than "
                    f"{MAX_BLF_RATIO} times); not a capture of CAN traffic"
                )


def read_capture(path: str | Path) -> Iterator[can.Message]:
    """The frames of a capture file, in order, through ``can.LogReader``.

    Raises :class:`RigError` if the file is missing, or is not a readable capture of its
    format (frames read before the damage are yielded first).
    """
    p = Path(path)
    if p.name.endswith(JOURNAL_SUFFIX):  # a journal named itself (NUL-padded candump text)
        yield from read_journal(p)
        return
    j = journal_path(p) if p.suffix.lower() == ".blf" else None
    if j is not None and j.exists():  # the capture was never closed: its journal is whole
        yield from read_journal(j)
        return
    if not p.exists():
        raise RigError(f"capture file {p} does not exist")
    if not p.is_file():
        raise RigError(f"capture file {p} is not a regular file (a FIFO, device or folder)")
    if p.suffix.lower() == ".blf":
        check_blf_complete(p)
        check_blf_bounded(p)
    try:
        if p.suffix.lower() == ".asc":  # its header's date, not stamps from 0: epoch stamps
            reader: Iterable[can.Message] = can.ASCReader(str(p), relative_timestamp=False)
        else:
            reader = can.LogReader(str(p))
        for n, m in enumerate(reader, 1):
            if len(m.data) > 64:  # (a stamp outside any clock is the analysis' to refuse)
                raise RigError(
                    f"capture file {p}: frame {n} is not a CAN frame ({len(m.data)} data "
                    "bytes); the file is damaged or not a capture"
                )
            yield m
    except RigError:
        raise
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


@functools.lru_cache(maxsize=1)
def _choice_names() -> dict[str, dict[str, dict[int, str]]]:
    """The DBC's value names (``VAL_``): message -> signal -> value -> name."""
    out: dict[str, dict[str, dict[int, str]]] = {}
    for m in load_database().messages:
        for sig in m.signals:
            if sig.choices:
                names = {int(v): str(getattr(n, "name", n)) for v, n in sig.choices.items()}
                out.setdefault(m.name, {})[sig.name] = names
                out.setdefault("*", {}).setdefault(sig.name, names)  # Ack's Opcode, ...
    return out


def format_record(rec: DecodedRecord) -> str:
    """One human-readable line for ``feltlab capture decode``."""
    if stamp_in_range(rec.timestamp):
        stamp = time.strftime("%H:%M:%S", time.localtime(rec.timestamp))
        stamp += f"{rec.timestamp % 1:.6f}"[1:]
    else:  # shown as read, the frame kept: a damaged stamp is the analysis' to refuse
        stamp = f"(stamp {rec.timestamp})"
    head = f"{stamp} 0x{rec.base:03X} {rec.name}"
    if rec.error:
        return f"{head} ERROR {rec.error}"
    if rec.kind == "frame":
        table = _choice_names()
        names, shared = table.get(rec.name, {}), table.get("*", {})
        return (
            head
            + " "
            + " ".join(
                f"{k}={names.get(k, shared.get(k, {})).get(v, v)}" for k, v in rec.fields.items()
            )
        )
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
    "CaptureDecoder",
    "DecodedRecord",
    "closed_blf_frames",
    "decode_capture",
    "format_record",
    "read_capture",
    "read_journal",
    "recover_capture",
    "replay",
    "verify_journal",
]
