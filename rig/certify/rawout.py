"""Raw generator output collected through the rig into a campaign folder, and read back from
its capture (docs/rng.md "Raw output over the bus").

:func:`collect_simulated` starts a simulated batch shuffler and a host on one simulated bus
(CAN FD with bit-rate switch, or classic CAN), collects ``words`` raw words in simulated time
(:func:`feltlab.rig.clients.rawout.collect_raw`), and writes to the folder: ``capture.blf``
(every frame, the FD frames as FD frames), ``raw.bin`` (the words, most significant byte
first: the raw file ``feltlab certify rng`` reads) and ``raw.json`` (the collection's record:
words, width, bytes, blocks, resends, bus time, bitrates, the bus-time model's bounds and the
SHA-256 of ``raw.bin``).  :func:`raw_from_capture` decodes the words back from a capture's
ISO-TP payloads, so an analysis re-runs from the capture alone.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import can
import numpy as np

from feltlab.rig.clients.rawout import collect_raw
from feltlab.rig.clients.shufflers import BatchShufflerClient
from feltlab.rig.clock import SimClock
from feltlab.rig.devices.base import Timing
from feltlab.rig.devices.rawout import ChaChaSource, RawSource
from feltlab.rig.devices.shufflers import BatchShuffler
from feltlab.rig.errors import ProtocolError, RigError
from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, PROTOCOL_MINOR
from feltlab.rig.protocol.rawout import (
    IsoTpReassembler,
    RawBlock,
    raw_channel_ids,
    transfer_seconds,
)
from feltlab.rig.rng.sources import split_sequences

RAW_FILE = "raw.bin"
RAW_RECORD = "raw.json"
CAPTURE_FILE = "capture.blf"


def collect_simulated(
    out: str | Path,
    words: int,
    *,
    width: int = 32,
    seed: int = 1,
    bitrate: int = 500_000,
    data_bitrate: int | None = 2_000_000,
    source: RawSource | None = None,
    flaw: Callable[[RawSource], RawSource] | None = None,
    base: int = 0x100,
) -> dict[str, Any]:
    """Collect ``words`` raw words of ``width`` bits from a simulated batch shuffler (ChaCha20
    key ``seed``, or ``source``; ``flaw`` wraps the device's own stream in a declared flawed
    model, e.g. ``lambda s: StuckBitSource(s, 0)``) into folder ``out`` (created; files
    named above), on CAN FD at ``bitrate`` / ``data_bitrate`` (bit/s), or classic CAN at
    ``bitrate`` when ``data_bitrate`` is None.  Returns the record written to ``raw.json``.

    Raises :class:`feltlab.rig.clients.rawout.RawCollectionError` if a block cannot be
    collected, FileExistsError if ``out`` already holds a raw file.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / RAW_FILE).exists():
        raise FileExistsError(f"{folder / RAW_FILE} exists; choose a new --out folder")
    fd = data_bitrate is not None
    clock = SimClock()
    channel = f"feltlab-raw-{id(clock):x}"
    spec = f"interface=virtual,channel={channel},bitrate={bitrate}"
    from feltlab.rig.bus.simbus import sim_wire  # start-up: the simulated wire only for FD

    sim_wire(clock, channel, bitrate).data_bitrate = data_bitrate
    cpu0 = time.process_time()
    device = BatchShuffler(spec, seed=seed, clock=clock, timing=Timing(heartbeat_period=0.1))
    device.start()
    if flaw is not None:
        source = flaw(source if source is not None else ChaChaSource(device.rng))
    server = device.enable_raw_output(source, fd=fd)
    client = BatchShufflerClient(spec, clock=clock, capture=folder / CAPTURE_FILE, timeout=0.5)
    try:
        client.wait_online(2.0)
        got = collect_raw(client, words, width, fd=fd)
    finally:
        client.close()
        device.stop()
    cpu = time.process_time() - cpu0
    (folder / RAW_FILE).write_bytes(got.data)
    n_bytes = len(got.data)
    record = {
        "protocol": f"{PROTOCOL_MAJOR}.{PROTOCOL_MINOR}",
        "generator": server.generator,
        "words": got.words,
        "width": got.width,
        "bytes": n_bytes,
        "bits": n_bytes * 8,
        "byte_order": "most significant byte first",
        "blocks": got.blocks,
        "resends": got.resends,
        "transfer_errors": got.errors,
        "bus": {
            "fd": fd,
            "bitrate": bitrate,
            "data_bitrate": data_bitrate,
            "bus_seconds": got.bus_seconds,
            "model_seconds_no_stuffing": transfer_seconds(
                n_bytes, bitrate, data_bitrate, base=base, stuffing="none"
            ),
            "model_seconds_worst_stuffing": transfer_seconds(
                n_bytes, bitrate, data_bitrate, base=base, stuffing="worst"
            ),
        },
        "cpu_seconds": cpu,
        "capture": CAPTURE_FILE,
        "raw_file": RAW_FILE,
        "sha256": hashlib.sha256(got.data).hexdigest(),
    }
    (folder / RAW_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def bus_rates(device: dict[str, Any]) -> tuple[int, int | None]:
    """``(bitrate, data_bitrate)`` of a profile's ``[device]`` table: ``bitrate`` (default
    500 kbit/s), and with ``fd = true`` its ``data_bitrate`` (default 2 Mbit/s; None for
    classic CAN).  Raises RigError for a data bitrate below the nominal one, or one given
    without ``fd = true``."""
    bitrate = int(device.get("bitrate", 500_000))
    if not device.get("fd", False):
        if "data_bitrate" in device:
            raise RigError(
                "[device] data_bitrate is CAN FD's data phase: add fd = true, or remove it"
            )
        return bitrate, None
    data = int(device.get("data_bitrate", 2_000_000))
    if data < bitrate:
        raise RigError(
            f"[device] data_bitrate {data} is below the bitrate {bitrate}: CAN FD's data "
            "phase is at least as fast as its arbitration"
        )
    return bitrate, data


def raw_from_capture(path: str | Path, base: int = 0x100) -> bytes:
    """The raw words of the READ_RAW session in capture ``path`` (BLF, ASC or candump), as
    the host received them: the device's raw-channel frames reassembled into RAW_BLOCK
    payloads, each block checked (CRC-32) and taken once (a resent copy fills a block the
    stream lost), in block order.  Raises :class:`ProtocolError` when the capture holds no
    raw output, or a block is missing."""
    data_id, _ = raw_channel_ids(base)
    rx = IsoTpReassembler()
    blocks: dict[int, RawBlock] = {}
    total: int | None = None
    with can.LogReader(str(path)) as reader:
        for msg in reader:
            if msg.arbitration_id != data_id or not msg.is_extended_id or msg.is_rx is False:
                continue
            payload = rx.feed(bytes(msg.data))
            if payload is None:
                continue
            try:
                block = RawBlock.decode(payload, PROTOCOL_MAJOR)
            except ProtocolError:
                continue  # a corrupted copy: the host asked for it again
            if total is not None and block.blocks != total:  # a new session: keep the last
                blocks.clear()
            total = block.blocks
            blocks.setdefault(block.block, block)
    if total is None:
        raise ProtocolError(f"{path}: no raw output (RAW_BLOCK payloads) in the capture")
    missing = [k for k in range(total) if k not in blocks]
    if missing:
        raise ProtocolError(f"{path}: raw blocks {missing[:10]} of {total} missing")
    return b"".join(blocks[k].data for k in range(total))


def read_record(folder: str | Path) -> dict[str, Any]:
    """The ``raw.json`` record of a raw-output folder.  Raises RigError if absent."""
    path = Path(folder) / RAW_RECORD
    if not path.is_file():
        raise RigError(f"{folder}: no {RAW_RECORD}; collect raw output into it first")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def is_raw_collection(path: Path) -> bool:
    """True for the folder of a ``certify rng --device`` campaign (its ``raw.json``)."""
    return path.is_dir() and (path / RAW_RECORD).is_file() and (path / "record.json").is_file()


def analyze_collection(
    folder: Path, *, out: Path | None = None, alpha: float | None = None, progress: Any = None
) -> Any:
    """Re-run a ``certify rng --device`` campaign from its capture alone: the raw words
    decoded from ``capture.blf`` (:func:`raw_from_capture`), checked against the SHA-256 the
    collection recorded, split as the campaign split them, and certified again
    (:func:`feltlab.rig.certify.rng_certificate.certify_sequences`; its report into ``out``
    when given).  Raises RigError when the decoded words differ from those recorded."""

    from feltlab.rig.certify.rng_certificate import certify_sequences  # start-up

    collection = read_record(folder)
    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    data = raw_from_capture(folder / collection["capture"])
    digest = hashlib.sha256(data).hexdigest()
    if digest != collection["sha256"]:
        raise RigError(
            f"{folder}: the capture's raw words (sha256 {digest}) are not those collected "
            f"(sha256 {collection['sha256']}): the capture or raw.json was altered"
        )
    opts = record["options"]
    m, n = int(opts["sequences"]), int(opts["bits"])
    seqs = split_sequences(np.frombuffer(data, np.uint8), m, n)
    source = dict(record["source"], decoded_from=collection["capture"])
    standard = opts.get("standard") if alpha is None else None
    if progress is not None:
        progress.start(f"SP 800-22 on {m:,} x {n:,} bits from the capture", m)
    return certify_sequences(
        seqs,
        n,
        record["device"],
        source,
        alpha=alpha if alpha is not None or standard else opts.get("alpha"),
        standard=standard,
        seed=record.get("seed"),
        out=out,
    )
