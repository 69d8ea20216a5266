"""Writing a capture: the :class:`CaptureWriter` listener, its crash-safe journal
(:class:`MappedJournal`, candump text through a shared memory map) and a BLF written from the
frames it kept when the capture closes (re-exported by :mod:`feltlab.rig.bus.capture`)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Any

import can
import numpy as np
from can.io import blf
from can.util import channel2int

from feltlab.rig.bus.forked import Forked
from feltlab.rig.errors import RigError
from feltlab.rig.killpoints import reach

FORMATS = {".blf": "BLF", ".asc": "ASC", ".log": "candump"}

JOURNAL_SUFFIX = ".journal.log"
"""The crash-safe sidecar of a BLF capture: ``capture-001.blf`` -> ``capture-001.journal.log``."""


def journal_path(path: str | Path) -> Path:
    """The journal (candump text, one line per frame, in the OS when written) of BLF ``path``."""
    p = Path(path)
    return p.with_name(p.name[: -len(p.suffix)] + JOURNAL_SUFFIX)


OPENING_SUFFIX = ".opening"
"""A journal's temporary name until its header is written (``capture-001.journal.log.opening``):
one left by a kill -9 holds no frame, and ``--resume`` removes it."""

JOURNAL_MAGIC = "# feltlab-journal 1"
"""The first line of every journal; a campaign's part adds ``campaign=<id> part=<n>`` to it,
so the journal names its campaign from its first line (``--resume`` refuses one that does not
name this campaign and part)."""


def journal_header(owner: dict[str, Any] | None) -> str:
    """The journal's first line: :data:`JOURNAL_MAGIC` and ``key=value`` pairs of ``owner``
    (values without spaces)."""
    pairs = "".join(f" {k}={v}" for k, v in sorted((owner or {}).items()))
    if any(c.isspace() for c in pairs.replace(" ", "")):
        raise ValueError("journal owner values must not hold whitespace")
    return JOURNAL_MAGIC + pairs + "\n"


MAC_FIELD = " mac="
"""What precedes a journal line's chained MAC (32 hex digits) at its end: the line before
it is plain candump text (docs/certification.md, "Crash safety: the capture journal")."""


def chain_start(key: bytes, header: str) -> bytes:
    """The chain's value before the first frame: a MAC of the journal's header line (which
    names the campaign and part), so a journal's lines verify only under its own header."""
    return hmac.digest(key, b"feltlab-journal-chain:v1\0" + header.encode("ascii"), "sha256")[:16]


def chain_next(key: bytes, prev: bytes, line: str) -> bytes:
    """The chained MAC of journal ``line`` (candump text, no newline) after ``prev``: the
    first 128 bits of HMAC-SHA256(key, prev || line)."""
    return hmac.digest(key, prev + line.encode("ascii"), "sha256")[:16]


class ChainMac:
    """:func:`chain_next` under one key, its HMAC-SHA256 (RFC 2104) started from the key's
    inner and outer SHA-256 states, computed once: ``H((K ^ opad) || H((K ^ ipad) || m))``
    with each pad's block already hashed, two SHA-256 compressions a short line instead of
    four (``hmac.digest`` derives both pads again at every call).  The same 128 bits as
    :func:`chain_next` (tests/rig/test_wire_runs.py)."""

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # RFC 2104: a key longer than the block is hashed first
            key = hashlib.sha256(key).digest()
        block = key.ljust(64, b"\0")
        self._inner = hashlib.sha256(bytes(k ^ 0x36 for k in block))
        self._outer = hashlib.sha256(bytes(k ^ 0x5C for k in block))

    def next(self, prev: bytes, line: bytes) -> bytes:
        """The chained MAC of journal line ``line`` (ASCII bytes, no newline) after ``prev``."""
        inner = self._inner.copy()
        inner.update(prev)
        inner.update(line)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()[:16]

    def lines(self, prev: bytes, bodies: list[str]) -> tuple[str, bytes]:
        """Journal lines of candump ``bodies`` (no newline), each with its chained MAC after
        the one before (the first after ``prev``): the text, and the last MAC."""
        out = []
        new_inner, new_outer = self._inner.copy, self._outer.copy
        for body in bodies:
            inner = new_inner()
            inner.update(prev)
            inner.update(body.encode("ascii"))
            outer = new_outer()
            outer.update(inner.digest())
            prev = outer.digest()[:16]
            out.append(f"{body}{MAC_FIELD}{prev.hex()}\n")
        return "".join(out), prev


def _candump_line(msg: can.Message) -> str:
    ident = f"{msg.arbitration_id:08X}" if msg.is_extended_id else f"{msg.arbitration_id:03X}"
    body = "R" if msg.is_remote_frame else msg.data.hex().upper()
    if msg.is_fd:  # candump's CAN FD form: ##, then the flags (BRS 1, ESI 2), then the data
        flags = (1 if msg.bitrate_switch else 0) | (2 if msg.error_state_indicator else 0)
        body = f"#{flags:X}{body}"
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

    @property
    def mapped(self) -> bool:
        """True while lines go through the memory map (False: one ``write`` a line, after a
        step the disk could not allocate)."""
        return self._map is not None

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


#: one frame as a capture keeps it: (timestamp, id, extended, remote, rx, dlc, data)
Kept = tuple[float, int, bool, bool, bool, int, bytes]


def _message(k: Kept, timestamp: float | None = None, data: bytes | None = None) -> can.Message:
    """The frame ``k`` (with another ``timestamp`` or ``data``: as read back)."""
    t, aid, ext, rtr, rx, dlc, kept_data = k
    # python-can's positional order (timestamp, arbitration_id, is_extended_id,
    # is_remote_frame, is_error_frame, channel, dlc, data, is_fd, is_rx): half the cost of
    # keywords, once for every frame of a campaign
    return can.Message(
        t if timestamp is None else timestamp,
        aid,
        ext,
        rtr,
        False,
        0,
        dlc,
        kept_data if data is None else data,
        False,
        rx,
    )


#: python-can's BLF object layouts that :meth:`KeptBLFWriter.add_kept` writes itself (its
#: struct formats: object header, its version-1 part, a classic CAN message)
_BLF_LAYOUT = ("<4sHHLL", "<LHHQ", "<HBBL8s")
_BLF_OBJECT = np.dtype(
    [
        ("signature", "S4"),
        ("header_size", "<u2"),
        ("header_version", "<u2"),
        ("object_size", "<u4"),
        ("object_type", "<u4"),
        ("flags", "<u4"),
        ("client_index", "<u2"),
        ("object_version", "<u2"),
        ("timestamp", "<u8"),
        ("channel", "<u2"),
        ("msg_flags", "u1"),
        ("dlc", "u1"),
        ("arbitration_id", "<u4"),
        ("data", "S8"),
    ]
)


class KeptBLFWriter(can.BLFWriter):
    """python-can's BLF writer, which also takes a list of kept classic frames at once
    (:meth:`add_kept`): the BLF written at close (:meth:`CaptureWriter.stop`)."""

    def add_kept(self, kept: list[Kept]) -> bool:
        """Add the classic frames ``kept`` all at once, as the same bytes as
        ``on_message_received`` of each (:func:`_message`) writes: each CAN_MESSAGE object
        (48 bytes: python-can's headers and ``CAN_MSG_STRUCT``, channel 0 stored as 1, the
        stamp in whole nanoseconds after the start truncated to the millisecond) built in one
        numpy array, the containers cut from the same byte stream at the same
        ``max_container_size`` (the demo's 122,000 frames: 0.41 s of CPU frame by frame,
        0.21 s at once, most of it the same zlib compression; load 11).  False, nothing
        written, when this python-can's BLF writer is not the one this copies (its struct
        formats or attributes differ): write frame by frame then.
        tests/rig/test_capture_readback.py compares the two, and the demo's SHA-256 is
        pinned in tests/rig/test_wire_runs.py."""
        formats = (
            getattr(getattr(blf, "OBJ_HEADER_BASE_STRUCT", None), "format", None),
            getattr(getattr(blf, "OBJ_HEADER_V1_STRUCT", None), "format", None),
            getattr(getattr(blf, "CAN_MSG_STRUCT", None), "format", None),
        )
        attrs = ("_buffer", "_buffer_size", "_flush", "max_container_size", "object_count")
        if formats != _BLF_LAYOUT or not all(hasattr(self, a) for a in attrs):
            return False
        if not kept:
            return True
        n = len(kept)
        stamps, aids, exts, rtrs, rxs, dlcs, datas = zip(*kept, strict=True)
        if self.start_timestamp is None:  # as BLFWriter._add_object: to the millisecond
            self.start_timestamp = int(stamps[0] * 1000) / 1000
        rel = ((np.array(stamps) - self.start_timestamp) * 1e9).astype(np.int64)  # int()
        objs = np.zeros(n, dtype=_BLF_OBJECT)
        header = blf.OBJ_HEADER_BASE_STRUCT.size + blf.OBJ_HEADER_V1_STRUCT.size
        objs["signature"] = b"LOBJ"
        objs["header_size"] = header
        objs["header_version"] = 1
        objs["object_size"] = header + blf.CAN_MSG_STRUCT.size
        objs["object_type"] = blf.CAN_MESSAGE
        objs["flags"] = blf.TIME_ONE_NANS
        objs["timestamp"] = np.maximum(rel, 0)
        channel = channel2int(0)
        objs["channel"] = self.channel if channel is None else channel + 1
        rtr = np.array(rtrs, dtype=bool)
        rx = np.array(rxs, dtype=bool)
        objs["msg_flags"] = np.where(rtr, blf.REMOTE_FLAG, 0) | np.where(rx, 0, blf.DIR)
        objs["dlc"] = np.array(dlcs, dtype=np.uint8)
        ext = np.where(np.array(exts, dtype=bool), np.uint32(blf.CAN_MSG_EXT), np.uint32(0))
        objs["arbitration_id"] = np.array(aids, dtype=np.uint32) | ext
        objs["data"] = np.array([bytes(d) for d in datas], dtype="S8")  # "8s": NUL-padded
        raw = memoryview(objs.tobytes())
        step = self.max_container_size
        for at in range(0, len(raw), step):  # each container the same slice of the stream
            part = raw[at : at + step]
            self._buffer.append(bytes(part))
            self._buffer_size += len(part)
            while self._buffer_size >= self.max_container_size:
                self._flush()
        self.object_count += n
        self.stop_timestamp = stamps[-1]
        return True


#: can.Message's attributes (its ``__slots__``) as :func:`_read_message` sets them
_MESSAGE_SLOTS = frozenset(
    (
        "__weakref__",
        "arbitration_id",
        "bitrate_switch",
        "channel",
        "data",
        "dlc",
        "error_state_indicator",
        "is_error_frame",
        "is_extended_id",
        "is_fd",
        "is_remote_frame",
        "is_rx",
        "timestamp",
    )
)


def _read_message(
    t: float, aid: int, ext: bool, rtr: bool, rx: bool, dlc: int, data: bytearray
) -> can.Message:
    """The classic data frame python-can's ``Message(t, aid, ext, rtr, False, 0, dlc, data,
    False, rx)`` makes (its ``__init__``'s assignments, without its argument handling: a
    remote frame's data is already empty, ``data`` already a bytearray), for the 122,000
    frames of a campaign's :meth:`CaptureWriter.frames_as_read` (half the constructor's cost;
    used only while can.Message's slots are :data:`_MESSAGE_SLOTS`)."""
    m: can.Message = _new_message(can.Message)
    m.timestamp = t
    m.arbitration_id = aid
    m.is_extended_id = ext
    m.is_remote_frame = rtr
    m.is_error_frame = False
    m.channel = 0
    m.is_fd = False
    m.is_rx = rx
    m.bitrate_switch = False
    m.error_state_indicator = False
    m.data = data
    m.dlc = dlc
    return m


_new_message = can.Message.__new__


def _blf_reader_start(start: float) -> float | None:
    """The start a BLF reader reads back from the header of a file whose writer started at
    ``start``: the header holds it as a SYSTEMTIME, to the millisecond (python-can's own
    conversions, ``can.io.blf``); None when python-can has no such functions."""

    to_sys = getattr(blf, "timestamp_to_systemtime", None)
    from_sys = getattr(blf, "systemtime_to_timestamp", None)
    if to_sys is None or from_sys is None:
        return None
    return float(from_sys(to_sys(start)))


class CaptureWriter:
    """A thread-safe listener writing every frame it is given to ``path``.

    A BLF file is complete only once closed (python-can finalises its header and last
    container in ``stop``), so with ``journal`` (default for .blf) every frame is also
    appended to a candump text journal (:func:`journal_path`, a :class:`MappedJournal`), in
    the operating system's page cache as each frame is written: a process killed at any
    moment (kill -9) leaves every frame it had received in the journal.  :meth:`stop` writes
    the BLF, then removes the journal; a journal found next to a BLF means the capture was not
    closed, and :func:`feltlab.rig.bus.capture.read_capture` reads the journal instead
    (:func:`feltlab.rig.bus.capture.recover_capture` rebuilds the BLF from it).

    A BLF capture keeps its frames (up to :attr:`KEEP_LIMIT`) and writes the BLF from them
    when it closes: the same file as written frame by frame, without python-can's BLF writer
    on the path of every frame.  With :attr:`background` set, :meth:`stop` writes it in a
    forked process while the campaign analyses the frames (:meth:`frames_as_read`: exactly
    as the reader reads them back), and :meth:`wait` joins it.  A frame it cannot keep (an
    error or CAN FD frame, one past the limit) turns it into a writer frame by frame, the
    frames kept so far first.  Until closed, the file is empty.

    Raises :class:`RigError` for a suffix other than .blf, .asc or .log.
    """

    #: frames a BLF capture keeps (about 160 bytes each); past it, frame by frame
    KEEP_LIMIT = 500_000

    def __init__(
        self,
        path: str | Path,
        *,
        journal: bool | None = None,
        owner: dict[str, Any] | None = None,
        chain_key: bytes | None = None,
        keep_journal: bool = False,
    ) -> None:
        self.path = Path(path)
        #: keep the journal when the file is written (:meth:`stop`, :meth:`wait`) until
        #: :meth:`remove_journal`: a campaign records the closed part first, so that a kill
        #: -9 between the two leaves the journal, never an unrecorded part without one
        self.keep_journal = keep_journal
        if self.path.suffix.lower() not in FORMATS:
            raise RigError(
                f"capture file {self.path} must end in .blf, .asc or .log (candump); "
                "BLF is the default"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        blf = self.path.suffix.lower() == ".blf"
        if journal is None:
            journal = blf
        self._journal: Any = None
        header = journal_header(owner)
        if journal:
            # each frame's line reaches the OS (its page cache) when written; the journal is
            # made under a temporary name and renamed once its header is in it, so that a
            # kill -9 at any moment leaves no journal, or one naming its campaign and part
            final = journal_path(self.path)
            opening = final.with_name(final.name + OPENING_SUFFIX)
            self._journal = MappedJournal(opening)
            reach("journal-opened")
            try:
                self._journal.write(header)  # names its campaign (owner) first
                os.replace(opening, final)
            except BaseException:
                self._journal.close()
                opening.unlink(missing_ok=True)
                raise
            reach("journal-named")
        #: the key of each journal line's chained MAC (:func:`chain_next`), or None
        self._chain_key = chain_key if self._journal is not None else None
        self._chain = chain_start(self._chain_key, header[:-1]) if self._chain_key else b""
        self._mac = ChainMac(self._chain_key) if self._chain_key is not None else None
        self._writer: Any = None
        self._kept: list[Kept] | None = None
        if blf:
            self.path.write_bytes(b"")  # the part's file exists while it is open
            self._kept = []
        else:
            self._writer = can.Logger(str(self.path))
        reach("part-opened")
        #: write the BLF in a forked process at :meth:`stop` (:meth:`wait` joins it)
        self.background = False
        #: why the BLF could not be written when the capture closed (a full disk), or None;
        #: the journal is then kept, for ``--resume``
        self.failure: OSError | None = None
        self._scribe: Forked | None = None
        self._lock = threading.Lock()
        self.frames = 0
        #: frames the writer could not store (counted in the record, reception goes on)
        self.write_errors = 0
        self.write_error_examples: list[str] = []
        self._stopped = False

    def _error(self, text: str) -> None:
        self.write_errors += 1
        if len(self.write_error_examples) < 5:
            self.write_error_examples.append(text[:200])

    def _blf_writer(self, path: Path) -> Any:
        # zlib level 1: 1% larger than the default level, its containers a fifth faster to
        # write and read back
        return KeptBLFWriter(str(path), compression_level=1)

    def _stream(self) -> None:
        """From now on, frame by frame: the frames kept so far are written first (kept
        until the writer is open: an OSError here leaves them to :meth:`stop`)."""
        writer = self._blf_writer(self.path)
        kept, self._kept = self._kept or [], None
        self._writer = writer
        self._write_frames(writer, kept)

    def _write_frames(self, writer: Any, kept: list[Kept]) -> None:
        if isinstance(writer, KeptBLFWriter) and writer.add_kept(kept):
            return
        for k in kept:
            try:
                writer.on_message_received(_message(k))
            except Exception as exc:  # a frame the writer cannot encode: counted
                self._error(f"{type(exc).__name__}: {exc}")

    def on_message_received(self, msg: can.Message) -> None:
        with self._lock:
            if self._stopped:
                return
            if msg.timestamp < 631152000.0:
                msg.timestamp = time.time()
            kept = self._kept
            if (
                kept is not None
                and not msg.is_error_frame
                and not msg.is_fd
                and msg.dlc <= 8
                and len(msg.data) <= 8
                and 0 <= msg.arbitration_id < 1 << 29  # what a classic BLF object holds
                and len(kept) < self.KEEP_LIMIT
            ):  # the common case: the journal's line and the frame kept, no writer involved
                try:
                    self._journal_line(_candump_line(msg))
                except Exception as exc:  # the disk refused the line: counted, not fatal
                    self._error(f"{type(exc).__name__}: {exc}")
                    return
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
                self.frames += 1
                return
            # BLF and ASC store numeric channels only: the frame is written with channel 0 and
            # its label put back (listeners are called one at a time, so none sees the swap)
            label, msg.channel = msg.channel, 0
            try:
                self._journal_line(_candump_line(msg))
                if kept is not None:
                    self._stream()
                self._writer.on_message_received(msg)
            except Exception as exc:  # a frame the writer cannot encode: counted, not fatal
                self._error(f"{type(exc).__name__}: {exc}")
                return
            finally:
                msg.channel = label
            self.frames += 1

    def _journal_line(self, line: str) -> None:
        """Append candump ``line`` (newline-ended) to the journal, with its chained MAC when
        the part is bound to its campaign (:func:`chain_next`): every path a frame takes
        (a python-can message, the kept fast path, the simulated wire's raw delivery) writes
        through here, so none can leave a line unbound.  Called under :attr:`_lock`."""
        if self._journal is None:
            return
        if self._mac is not None:
            body = line[:-1]
            tag = self._mac.next(self._chain, body.encode("ascii"))  # chain_next, faster
            self._journal.write(f"{body}{MAC_FIELD}{tag.hex()}\n")
            self._chain = tag
        else:
            self._journal.write(line)

    def on_data(self, stamp: float, aid: int, data: bytes, ext: bool) -> None:
        """:meth:`on_message_received` of a received classic data frame by its fields (the
        simulated wire's raw delivery): the same journal line and kept frame, no python-can
        message built."""
        with self._lock:
            kept = self._kept
            simple = (
                kept is not None
                and len(data) <= 8
                and 0 <= aid < 1 << 29
                and len(kept) < self.KEEP_LIMIT
                and stamp >= 631152000.0
            )
            if simple and not self._stopped:
                assert kept is not None
                try:
                    ident = f"{aid:08X}" if ext else f"{aid:03X}"  # as _candump_line
                    self._journal_line(f"({stamp:.9f}) can0 {ident}#{data.hex().upper()} R\n")
                except Exception as exc:  # the disk refused the line: counted, not fatal
                    self._error(f"{type(exc).__name__}: {exc}")
                    return
                kept.append((stamp, aid, ext, False, True, len(data), data))
                self.frames += 1
                return
        if not simple:
            self.on_message_received(can.Message(stamp, aid, ext, False, False, 0, None, data))

    def run_quiet(self, aid: int, ext: bool, ends: list[float], datas: list[bytes]) -> int:
        """How many frames of a run of received data frames (:meth:`run_take`) this capture
        takes as :meth:`on_data` takes each (journal line and kept frame): all of them when
        it keeps frames and its journal is mapped (or absent), else none (one by one)."""
        kept = self._kept
        journal = self._journal
        if (
            kept is None
            or self._stopped
            or not 0 <= aid < 1 << 29
            or len(kept) + len(datas) > self.KEEP_LIMIT
            or (journal is not None and journal.mapped is False)
        ):
            return 0
        return len(datas)

    def run_take(
        self, aid: int, ext: bool, ends: list[float], stamps: list[float], datas: list[bytes]
    ) -> None:
        """:meth:`on_data` of each frame of a run (``stamps``: epoch seconds; ``datas``: at
        most 8 bytes each) that :meth:`run_quiet` accepted: the same journal lines (one
        write for the run, the chained MACs one after another) and kept frames."""
        with self._lock:
            kept = self._kept
            assert kept is not None
            ident = f"{aid:08X}" if ext else f"{aid:03X}"  # as _candump_line
            head = f") can0 {ident}#"
            bodies = [
                f"({stamp:.9f}{head}{data.hex().upper()} R"
                for stamp, data in zip(stamps, datas, strict=True)
            ]
            journal = self._journal
            if journal is not None:
                chain = self._chain
                if self._mac is None:
                    text = "\n".join(bodies) + "\n"
                else:  # chain_next of each line after the one before
                    text, chain = self._mac.lines(chain, bodies)
                try:
                    journal.write(text)
                except Exception as exc:  # the disk refused the lines: counted, not fatal
                    for _ in datas:
                        self._error(f"{type(exc).__name__}: {exc}")
                    return
                self._chain = chain
            kept.extend(
                [(t, aid, ext, False, True, len(d), d) for t, d in zip(stamps, datas, strict=True)]
            )
            self.frames += len(datas)

    def sync(self) -> None:
        """Force the journal to stable storage (fsync), e.g. after each collected sample,
        so that a power loss too keeps every sample completed so far."""
        with self._lock:
            if self._journal is not None and not self._stopped:
                self._journal.sync()

    def _write_kept(self, kept: list[Kept], parent: int | None = None) -> bool:
        """The BLF of ``kept``, written beside the file and renamed over it; False (the file
        as it was, the error counted, :attr:`failure` set) on an OSError.  ``parent``: the
        pid of the process this one writes for (a forked writer): if it has died meanwhile,
        the file is left alone (its journal is whole: ``--resume`` rebuilds it)."""
        tmp = self.path.with_name(self.path.name + ".writing")
        try:
            writer = self._blf_writer(tmp)
            try:
                self._write_frames(writer, kept)
            finally:
                writer.stop()
            if parent is not None and os.getppid() != parent:
                tmp.unlink()
                return False
            os.replace(tmp, self.path)
        except OSError as exc:  # a full disk: the BLF is unfinished, the journal kept
            self._error(f"writing the BLF: {exc}")
            self.failure = exc
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        except BaseException:  # Ctrl-C: the journal stays, --resume rebuilds the BLF
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return True

    def _end_journal(self, remove: bool) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if remove and not self.keep_journal:
            journal_path(self.path).unlink(missing_ok=True)

    def remove_journal(self) -> bool:
        """With :attr:`keep_journal`: remove the journal of this closed capture once its file
        is written (after :meth:`wait`), as :meth:`stop` does without it.  Returns False, the
        journal kept, when the file is not written (not closed, still being written, or
        :attr:`failure` set)."""
        with self._lock:
            if not self._stopped or self._scribe is not None or self.failure is not None:
                return False
            journal_path(self.path).unlink(missing_ok=True)
            return True

    def stop(self) -> None:
        """Close the capture: the BLF is finalised (with :attr:`background`, in a forked
        process: :meth:`wait`), then its journal removed (with :attr:`keep_journal`, by
        :meth:`remove_journal`)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            kept = self._kept
            if kept is None:  # frame by frame
                try:
                    self._writer.stop()
                except OSError as exc:  # a full disk: the BLF is unfinished, the journal kept
                    self._error(f"closing the BLF: {exc}")
                    self.failure = exc
                    self._end_journal(remove=False)
                    return
                self._end_journal(remove=True)
                return
            if self.background:
                parent = os.getpid()
                scribe = Forked(lambda: self._write_kept(kept, parent), lambda: False)
                if scribe.running:
                    self._scribe = scribe
                    self._end_journal(remove=False)  # removed once the file is written
                    return
            self._end_journal(remove=self._write_kept(kept))

    @property
    def pending(self) -> bool:
        """A BLF is being written in the background (:meth:`wait` for it)."""
        return self._scribe is not None

    def wait(self) -> None:
        """Wait for the BLF written in the background; if that process failed, write it
        here.  Then the journal is removed.  Returns at once when nothing is pending;
        :attr:`failure` tells whether the BLF was written."""
        with self._lock:
            scribe, self._scribe = self._scribe, None
            if scribe is None:
                return
            # written there, else here (which sets failure, as the forked writer cannot)
            if scribe.result() or self._write_kept(self._kept or []):
                self._end_journal(remove=True)

    def frames_as_read(self) -> list[can.Message] | None:
        """The frames of this closed BLF capture exactly as
        :func:`feltlab.rig.bus.capture.read_capture` reads them back (equal in every field,
        timestamps to the bit), without the file; None when this writer cannot vouch for
        that: not a BLF, not closed, a write error, or a frame it did not keep (an error or
        CAN FD frame, more than :attr:`KEEP_LIMIT` frames).

        BLF stores each timestamp as whole nanoseconds after the writer's start: its first
        frame's, truncated to the millisecond; the reader adds them to the start its header
        holds, a SYSTEMTIME to the millisecond.  tests/rig/test_capture_readback.py compares
        the two, and :meth:`read_back_agrees` checks the file once written."""
        with self._lock:
            kept = self._kept
            if kept is None or not self._stopped or self.write_errors:
                return None
            if not kept:
                return []
            start_w = int(kept[0][0] * 1000) / 1000  # as python-can's BLF writer
            start_r = _blf_reader_start(start_w)
            if start_r is None:
                return None
            pad = bytes(8)  # the reader's data: the frame's 8 stored bytes cut to its DLC
            stamps, aids, exts, rtrs, rxs, dlcs, datas = zip(*kept, strict=True)
            # the reader's stamps: whole nanoseconds after the writer's start (int():
            # toward zero, never below 0), added to the header's start; numpy's float64
            # arithmetic is Python's, element for element
            ns = np.maximum(((np.array(stamps) - start_w) * 1e9).astype(np.int64), 0)
            read = (ns / 1e9 + start_r).tolist()
            if frozenset(getattr(can.Message, "__slots__", ())) != _MESSAGE_SLOTS:
                # another python-can: its own constructor (positional, as _message says)
                return [
                    can.Message(t, a, e, r, False, 0, n, (d + pad)[:n], False, x)
                    for t, a, e, r, x, n, d in zip(
                        read, aids, exts, rtrs, rxs, dlcs, datas, strict=True
                    )
                ]
            frames = zip(read, aids, exts, rtrs, rxs, dlcs, datas, strict=True)
            return [
                _read_message(t, a, e, r, x, n, bytearray() if r else bytearray((d + pad)[:n]))
                for t, a, e, r, x, n, d in frames
            ]

    def read_back_agrees(self, frames: list[can.Message], check: int = 2000) -> bool:
        """True when the written file's first ``check`` frames are ``frames``'s, field for
        field (the timestamps' conversion checked on this very file), and the file holds as
        many frames as kept.  Call after :meth:`wait`."""
        fields = (
            "timestamp",
            "arbitration_id",
            "is_extended_id",
            "is_remote_frame",
            "is_error_frame",
            "is_rx",
            "dlc",
            "data",
            "channel",
        )
        try:
            with can.BLFReader(str(self.path)) as reader:
                if int(reader.object_count) < len(frames):
                    return False
                for i, got in enumerate(reader):
                    if i >= min(check, len(frames)):
                        break
                    want = frames[i]
                    if any(getattr(got, f) != getattr(want, f) for f in fields):
                        return False
        except Exception:  # unreadable: the caller reads the file and reports that
            return False
        return True
