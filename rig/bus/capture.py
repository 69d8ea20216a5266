"""Capture every frame to a python-can log, and decode or replay a capture offline.

The format follows the file suffix: ``.blf`` (Vector binary logging format, the default),
``.asc`` (Vector ASCII) or ``.log`` (Linux candump).  Timestamps are seconds since the
epoch (BLF stores pre-1990 stamps as offsets, so the rig never writes those).  Decoding runs
the same decoders as the live clients: the DBC through :class:`feltlab.rig.protocol.codec.Codec`
and ISO-TP payloads through :class:`feltlab.rig.protocol.codec.IsoTpReassembler`.
"""

from __future__ import annotations

import functools
import io
import mmap
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import can

from feltlab.rig.errors import ProtocolError, RigError
from feltlab.rig.protocol.codec import (
    DBC_BASE,
    EXT_SHIFT,
    ID_SPAN,
    PAYLOAD_CLASSES,
    Channel,
    Codec,
    IsoTpReassembler,
)

FORMATS = {".blf": "BLF", ".asc": "ASC", ".log": "candump"}

JOURNAL_SUFFIX = ".journal.log"
"""The crash-safe sidecar of a BLF capture: ``capture-001.blf`` -> ``capture-001.journal.log``."""


def journal_path(path: str | Path) -> Path:
    """The journal (candump text, one line per frame, in the OS when written) of BLF ``path``."""
    p = Path(path)
    return p.with_name(p.name[: -len(p.suffix)] + JOURNAL_SUFFIX)


def _candump_line(msg: can.Message) -> str:
    ident = f"{msg.arbitration_id:08X}" if msg.is_extended_id else f"{msg.arbitration_id:03X}"
    body = "R" if msg.is_remote_frame else msg.data.hex().upper()
    return f"({msg.timestamp:.9f}) can0 {ident}#{body} {'R' if msg.is_rx else 'T'}\n"


class MappedJournal:
    """An append-only text file written through a shared memory map (``mmap``): each
    :meth:`write` lands in the operating system's page cache with no system call, so a
    process killed at any moment (kill -9) leaves every line it wrote in the file, as a
    file flushed per line does, at a fraction of the cost (one ``write`` system call per CAN
    frame took about a tenth of a simulated campaign's time).  The file grows in 4 MiB
    steps, each allocated on disk first (``posix_fallocate``: a full disk fails there, with
    ENOSPC, and not as a SIGBUS on a mapped page); the unwritten rest is NUL bytes, which
    :func:`read_journal` stops at; a clean :meth:`close` truncates it to what was written.
    Where a step cannot be allocated (a full disk, a filesystem without it) the journal goes
    on with one ``write`` a line, whose ``OSError`` the caller counts.  :meth:`sync` forces it
    to stable storage (msync, then fsync): what survives a power loss."""

    STEP = 1 << 22

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._map: mmap.mmap | None = None
        self._pos = 0
        self._grow(self.STEP)

    def _grow(self, size: int) -> None:
        try:
            os.posix_fallocate(self._fd, 0, size)
            if self._map is None:
                self._map = mmap.mmap(self._fd, size)
            else:
                self._map.resize(size)
        except (OSError, ValueError):  # no room (ENOSPC), or no fallocate here: plain writes
            if self._map is not None:
                self._map.close()
                self._map = None
            os.ftruncate(self._fd, self._pos)
            os.lseek(self._fd, self._pos, os.SEEK_SET)

    def write(self, text: str) -> None:
        """Append ``text`` (ASCII).  Raises OSError only when the disk refuses it."""
        data = text.encode("ascii")
        end = self._pos + len(data)
        if self._map is not None and end > len(self._map):
            self._grow(max(2 * len(self._map), end + self.STEP))
        if self._map is not None:
            self._map[self._pos : end] = data
        else:
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:  # no torn line left before the next one
                os.ftruncate(self._fd, self._pos)
                os.lseek(self._fd, self._pos, os.SEEK_SET)
                raise
        self._pos = end

    def sync(self) -> None:
        if self._map is not None:
            self._map.flush()
        os.fsync(self._fd)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        os.ftruncate(self._fd, self._pos)
        os.close(self._fd)


def read_journal(path: str | Path) -> list[can.Message]:
    """The frames of a journal: every complete line (a line torn by a crash is dropped; a
    journal not closed ends in the NUL bytes of :class:`MappedJournal`'s unwritten rest).

    Raises :class:`RigError` for an unreadable journal or a damaged line before the last.
    """
    p = Path(path)
    try:
        text = p.read_bytes().split(b"\0", 1)[0].decode("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise RigError(f"capture journal {p} is not readable ({exc})") from exc
    lines = text.split("\n")
    lines.pop()  # "" after the last newline, or the torn last line of a crash
    try:
        return list(can.CanutilsLogReader(io.StringIO("\n".join(lines) + "\n")))
    except (ValueError, IndexError) as exc:
        raise RigError(f"capture journal {p} is damaged ({exc})") from exc


def recover_capture(path: str | Path) -> int | None:
    """Rebuild BLF ``path`` from its journal after a crash (kill -9, power loss): the BLF
    writer finalises its file only on close, the journal holds every frame written before
    the crash.  Writes a complete BLF (atomically replacing the unfinished one), removes the
    journal and returns the number of frames; None when there is no journal (the capture was
    closed cleanly)."""
    p = Path(path)
    j = journal_path(p)
    if not j.exists():
        return None
    msgs = read_journal(j)
    tmp = p.with_name(p.name + ".recovering.blf")
    writer = can.BLFWriter(str(tmp))
    try:
        for m in msgs:
            writer.on_message_received(m)
    finally:
        writer.stop()
    os.replace(tmp, p)
    j.unlink()
    return len(msgs)


class CaptureWriter:
    """A thread-safe listener writing every frame it is given to ``path``.

    A BLF file is complete only once closed (python-can finalises its header and last
    container in ``stop``), so with ``journal`` (default for .blf) every frame is also
    appended to a candump text journal (:func:`journal_path`, a :class:`MappedJournal`), in
    the operating system's page cache as each frame is written: a process killed at any
    moment (kill -9) leaves every frame it had received in the journal.  :meth:`stop` closes
    the BLF, then removes the journal; a journal found next to a BLF means the capture was not
    closed, and :func:`read_capture` reads the journal instead (:func:`recover_capture`
    rebuilds the BLF from it).

    A BLF capture also keeps the frames it wrote (up to :attr:`KEEP_LIMIT`), so that the
    campaign that wrote it analyses them without parsing the file again:
    :meth:`frames_as_read` gives them exactly as :func:`read_capture` reads them back.

    Raises :class:`RigError` for a suffix other than .blf, .asc or .log.
    """

    #: frames a BLF capture keeps for :meth:`frames_as_read` (about 160 bytes each); a
    #: longer capture keeps none and is read back from its file
    KEEP_LIMIT = 500_000

    def __init__(self, path: str | Path, *, journal: bool | None = None) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() not in FORMATS:
            raise RigError(
                f"capture file {self.path} must end in .blf, .asc or .log (candump); "
                "BLF is the default"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if journal is None:
            journal = self.path.suffix.lower() == ".blf"
        self._journal: Any = None
        if journal:
            # each frame's line reaches the OS (its page cache) when written
            self._journal = MappedJournal(journal_path(self.path))
        # BLF: zlib level 1, 1% larger than the default level and its containers a fifth faster
        # to write and read back
        blf = self.path.suffix.lower() == ".blf"
        self._writer: Any = can.Logger(str(self.path), **({"compression_level": 1} if blf else {}))
        #: (timestamp, id, extended, remote, rx, dlc, data) of each frame written, or None:
        #: not kept (not BLF, past KEEP_LIMIT, an error or CAN FD frame, a write error)
        self._kept: list[tuple[float, int, bool, bool, bool, int, bytes]] | None = (
            [] if blf and isinstance(self._writer, can.BLFWriter) else None
        )
        self._closed_stat: tuple[int, int, int] | None = None
        self._lock = threading.Lock()
        self.frames = 0
        #: frames the writer could not store (counted in the record, reception goes on)
        self.write_errors = 0
        self.write_error_examples: list[str] = []
        self._stopped = False

    def on_message_received(self, msg: can.Message) -> None:
        with self._lock:
            if self._stopped:
                return
            if msg.timestamp < 631152000.0:
                msg.timestamp = time.time()
            # BLF and ASC store numeric channels only: the frame is written with channel 0 and
            # its label put back (listeners are called one at a time, so none sees the swap)
            label, msg.channel = msg.channel, 0
            try:
                if self._journal is not None:
                    self._journal.write(_candump_line(msg))
                self._writer.on_message_received(msg)
                kept = self._kept
                if kept is not None:
                    if msg.is_error_frame or msg.is_fd or len(kept) >= self.KEEP_LIMIT:
                        self._kept = None  # read back from the file instead
                    else:
                        kept.append(
                            (
                                msg.timestamp,
                                msg.arbitration_id,
                                msg.is_extended_id,
                                msg.is_remote_frame,
                                msg.is_rx,
                                msg.dlc,
                                bytes(msg.data),
                            )
                        )
            except Exception as exc:  # a frame the writer cannot encode: counted, not fatal
                self._kept = None
                self.write_errors += 1
                if len(self.write_error_examples) < 5:
                    self.write_error_examples.append(f"{type(exc).__name__}: {exc}"[:200])
                return
            finally:
                msg.channel = label
            self.frames += 1

    def sync(self) -> None:
        """Force the journal to stable storage (fsync), e.g. after each collected sample,
        so that a power loss too keeps every sample completed so far."""
        with self._lock:
            if self._journal is not None and not self._stopped:
                self._journal.sync()

    def stop(self) -> None:
        """Close the capture: the BLF is finalised, then its journal removed."""
        with self._lock:
            if not self._stopped:
                self._stopped = True
                try:
                    self._writer.stop()
                except OSError as exc:  # a full disk: the BLF is unfinished, the journal kept
                    self.write_errors += 1
                    if len(self.write_error_examples) < 5:
                        self.write_error_examples.append(f"closing the BLF: {exc}"[:200])
                    if self._journal is not None:
                        self._journal.close()
                    return
                if self._journal is not None:
                    self._journal.close()
                    journal_path(self.path).unlink(missing_ok=True)
                self._closed_stat = _stat(self.path)

    def frames_as_read(self) -> list[can.Message] | None:
        """The frames of this closed BLF capture exactly as :func:`read_capture` reads them
        back (equal in every field, timestamps to the bit), without parsing the file; None
        when this writer cannot vouch for that: not a BLF, not closed cleanly, a write error,
        an error or CAN FD frame, more than :attr:`KEEP_LIMIT` frames, or a file changed
        since it was closed.

        BLF stores each timestamp as whole nanoseconds after the file's first frame's,
        truncated to the millisecond (the writer's ``start_timestamp``), and the reader adds
        them to the start its header holds; both are read off python-can's own writer and
        reader, so the figures are the reader's (tests/rig/test_capture.py compares them)."""
        with self._lock:
            kept = self._kept
            if kept is None or not self._stopped or self.write_errors:
                return None
            if self._closed_stat is None or _stat(self.path) != self._closed_stat:
                return None
            start_w = getattr(self._writer, "start_timestamp", None)
            if not kept:
                return []
            if not isinstance(start_w, float):
                return None
            try:
                with can.BLFReader(str(self.path)) as header:  # reads the header only
                    start_r = float(header.start_timestamp)
            except Exception:  # unreadable: the caller reads the file and reports that
                return None
            pad = bytes(8)
            return [
                can.Message(
                    timestamp=max(int((t - start_w) * 1e9), 0) / 1e9 + start_r,
                    arbitration_id=aid,
                    is_extended_id=ext,
                    is_remote_frame=rtr,
                    is_rx=rx,
                    dlc=dlc,
                    data=(data + pad)[:dlc],
                    channel=0,
                )
                for t, aid, ext, rtr, rx, dlc, data in kept
            ]


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


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
            ch = _CHANNEL_AT[off]
            re = self._isotp.get((base, ch))
            if re is None:
                re = self._isotp[(base, ch)] = IsoTpReassembler()
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


def read_capture(path: str | Path) -> Iterator[can.Message]:
    """The frames of a capture file, in order, through ``can.LogReader``.

    Raises :class:`RigError` if the file is missing, or is not a readable capture of its
    format (frames read before the damage are yielded first).
    """
    p = Path(path)
    j = journal_path(p) if p.suffix.lower() == ".blf" else None
    if j is not None and j.exists():  # the capture was never closed: its journal is whole
        yield from read_journal(j)
        return
    if not p.exists():
        raise RigError(f"capture file {p} does not exist")
    if p.suffix.lower() == ".blf":
        check_blf_complete(p)
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


@functools.lru_cache(maxsize=1)
def _choice_names() -> dict[str, dict[str, dict[int, str]]]:
    """The DBC's value names (``VAL_``): message -> signal -> value -> name."""
    from feltlab.rig.protocol.codec import load_database

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
    stamp = time.strftime("%H:%M:%S", time.localtime(rec.timestamp))
    frac = f"{rec.timestamp % 1:.6f}"[1:]
    head = f"{stamp}{frac} 0x{rec.base:03X} {rec.name}"
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
    "DBC_BASE",
    "FORMATS",
    "CaptureDecoder",
    "CaptureWriter",
    "DecodedRecord",
    "decode_capture",
    "format_record",
    "journal_path",
    "read_capture",
    "read_journal",
    "recover_capture",
    "replay",
]
