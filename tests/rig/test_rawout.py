"""Raw generator output through the rig (protocol 2.2, issue 39 item 5): the DBC names the
raw channel and its opcodes, the CAN FD frame-time model, ISO-TP on 64-byte frames checked
against can-isotp, and a simulated device's raw output collected over CAN FD in simulated
time, with lost and corrupted blocks asked for again, read back from the capture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import can
import cantools
import isotp
import numpy as np
import pytest

from feltlab import native
from feltlab.rig.certify.rawout import collect_simulated, raw_from_capture, read_record
from feltlab.rig.devices.rawout import ChaChaSource, StuckBitSource
from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.bittime import fd_frame_bits, fd_frame_seconds, fd_length
from feltlab.rig.protocol.codec import (
    PROTOCOL_MAJOR,
    PROTOCOL_MINOR,
    Codec,
    Opcode,
    PayloadType,
    dbc_path,
)
from feltlab.rig.protocol.rawout import (
    RAW_BLOCK_BYTES,
    IsoTpReassembler,
    RawBlock,
    isotp_frames,
    raw_block_frames,
    raw_channel_ids,
    transfer_seconds,
)

NIST_BYTES = 1000 * 10**6 // 8  # the NIST sample: 1,000 sequences of 10^6 bits, 125 MB


# ---------------------------------------------------------------- the protocol and the DBC


def test_version_and_opcodes() -> None:
    assert (PROTOCOL_MAJOR, PROTOCOL_MINOR) == (2, 2)
    assert (Opcode.READ_RAW, Opcode.READ_RAW_BLOCK, PayloadType.RAW_BLOCK) == (0x12, 0x13, 0x06)


def test_cantools_names_the_raw_messages() -> None:
    db: Any = cantools.database.load_file(dbc_path())
    assert db.version == "feltlab-rig-protocol 2.2"
    data_id, fc_id = raw_channel_ids(0x100)
    assert (data_id, fc_id) == (0x10A << 18 | 0x0DA7, 0x10B << 18 | 0x0DA7)
    raw = db.get_message_by_frame_id(data_id)
    flow = db.get_message_by_frame_id(fc_id)
    assert (raw.name, flow.name) == ("IsoTpRaw", "IsoTpRawFlow")
    assert raw.is_fd and raw.is_extended_frame and raw.length == 64
    # a first frame of a full block (4090 bytes), a consecutive frame, the host's flow control
    frames = isotp_frames(RawBlock(32, 7, 0, 1, bytes(RAW_BLOCK_BYTES)).encode(2))
    assert db.decode_message(data_id, frames[0]) == {"PciType": "FIRST_FRAME", "FfLength": 4090}
    assert db.decode_message(data_id, frames[1]) == {
        "PciType": "CONSECUTIVE_FRAME",
        "SequenceNumber": 1,
    }
    fc = db.decode_message(fc_id, b"\x30\x00\x00" + bytes(61))
    assert fc == {
        "PciType": "FLOW_CONTROL",
        "FlowStatus": "CONTINUE",
        "BlockSize": 0,
        "SeparationTime": 0,
    }
    command = Codec(0x100).encode(
        "Command",
        {"RequestId": 9, "Opcode": Opcode.READ_RAW, "ProtocolMajor": 2, "Arg8": 32, "Arg32": 10**6},
    )
    # the cantools command line names the new opcodes too (candump log format)
    line = f"(0.0) vcan0 {command.arbitration_id:03X}#{bytes(command.data).hex().upper()}\n"
    out = subprocess.run(
        [sys.executable, "-m", "cantools", "decode", dbc_path()],
        input=line,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "Opcode: READ_RAW," in out and "Arg32: 1000000" in out
    # and a CAN FD frame of the raw channel in candump's FD form (##, flags 1: BRS)
    fd_line = f"(0.0) vcan0 {data_id:08X}##1{frames[0].hex().upper()}\n"
    out = subprocess.run(
        [sys.executable, "-m", "cantools", "decode", dbc_path()],
        input=fd_line, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "IsoTpRaw(" in out and "PciType: FIRST_FRAME" in out and "FfLength: 4090" in out


def test_raw_block_round_trip_and_refusals() -> None:
    block = RawBlock(32, 5, 2, 3, bytes(range(16)))
    payload = block.encode(2)
    assert payload[:4] == bytes([2, 0x06, 32, 5]) and len(payload) == 14 + 16 + 4
    assert RawBlock.decode(payload, 2) == block
    bad = bytearray(payload)
    bad[20] ^= 1
    with pytest.raises(ProtocolError, match="CRC"):
        RawBlock.decode(bytes(bad), 2)
    with pytest.raises(ProtocolError, match="protocol 2, expected 3"):
        RawBlock.decode(payload, 3)


# ---------------------------------------------------------------- CAN FD frame time


def test_fd_lengths() -> None:
    assert [fd_length(n) for n in (0, 8, 9, 13, 17, 21, 25, 33, 49, 64)] == [
        0,
        8,
        12,
        16,
        20,
        24,
        32,
        48,
        64,
        64,
    ]
    with pytest.raises(ValueError):
        fd_length(65)
    with pytest.raises(ValueError, match="CAN FD frame carries one of"):
        fd_frame_bits(0x100, bytes(9))


def test_fd_frame_bits_by_hand() -> None:
    # 64 bytes, 11-bit id, no stuff bits: nominal SOF, id 11, RRS, IDE, FDF, res, BRS (17)
    # + ACK slot, ACK delimiter, EOF 7, intermission 3 (12) = 29; data phase ESI, DLC 4,
    # 512 data bits, stuff count 4, CRC-21, 7 fixed stuff bits, CRC delimiter = 550
    assert fd_frame_bits(0x10A, bytes(64), stuffing="none") == (29, 550)
    # the ISO bound, one stuff bit per 4 bits after the first: 16 // 4 = 4 in the 17
    # arbitration bits, 533 // 4 - 4 = 129 in the data phase
    assert fd_frame_bits(0x10A, bytes(64), stuffing="worst") == (33, 679)
    # 29-bit id: SOF, 11, SRR, IDE, 18, RRS, FDF, res, BRS = 36 arbitration bits
    assert fd_frame_bits(0x4280DA7, bytes(64), extended=True, stuffing="none") == (48, 550)
    # id 0, no data: SOF + 11 id + RRS + IDE are 14 dominant bits: stuff bits after the 5th
    # and (the stuff bit starting a new run) the 10th; then FDF 1, res 0, BRS 1, ESI 0 and
    # DLC 0000 are five dominant bits: one more, in the data phase. CRC-17: 4 + 17 + 6 + 1.
    assert fd_frame_bits(0, b"") == (17 + 2 + 12, 5 + 1 + 4 + 17 + 6 + 1)
    # seconds: nominal bits at 500 kbit/s, data-phase bits at 2 Mbit/s
    assert fd_frame_seconds(0x10A, bytes(64), 500_000, 2_000_000, stuffing="none") == (
        pytest.approx(29 / 500_000 + 550 / 2_000_000, rel=1e-12)
    )
    # without bit-rate switch every bit goes at the nominal rate
    assert fd_frame_seconds(
        0x10A, bytes(64), 500_000, 2_000_000, bitrate_switch=False, stuffing="none"
    ) == pytest.approx(579 / 500_000, rel=1e-12)


def test_fd_exact_stuffing_lies_between_the_bounds() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        data = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
        exact = fd_frame_bits(0x10A, data)
        assert exact >= (29, 550) and sum(exact) <= 33 + 679


def test_raw_block_frames() -> None:
    # a full block is a 4090-byte payload: a first frame of 62 bytes, 64 consecutive frames
    # of 63 (the last 59 bytes + PCI, padded to 64), and the host's 3-byte flow control
    assert raw_block_frames(RAW_BLOCK_BYTES, 64) == [64] * 65 + [3]
    # classic: 4090 = 6 + 583 * 7 + 3: the last consecutive frame is PCI + 3 bytes
    assert raw_block_frames(RAW_BLOCK_BYTES, 8) == [8] * 584 + [4, 3]


def _hand_fd_seconds(extended: bool) -> float:
    """The NIST sample's bus time from the frame counts and the hand bit counts above."""
    arb = 36 if extended else 17
    frame64 = (arb + 12) / 500_000 + 550 / 2_000_000
    # flow control, 3 bytes: data phase 5 + 24 + 4 + 17 + 6 + 1
    fc = (arb + 12) / 500_000 + 57 / 2_000_000
    full, rest = divmod(NIST_BYTES, RAW_BLOCK_BYTES)
    # the last block: 1816 + 18 = 1834 bytes = 62 + 28 * 63 + 8: 29 frames of 64 bytes and
    # one of 9 (8 + PCI) padded to 12: data phase 5 + 96 + 4 + 17 + 6 + 1 (CRC-17)
    last = 29 * frame64 + (arb + 12) / 500_000 + 129 / 2_000_000 + fc
    assert rest == 1816
    return full * (65 * frame64 + fc) + last


def test_nist_sample_bus_time_fd_against_classic() -> None:
    fd = transfer_seconds(NIST_BYTES, 500_000, 2_000_000, stuffing="none")
    assert fd == pytest.approx(_hand_fd_seconds(extended=True), rel=1e-9)
    # the raw channel's 29-bit ids: 12.4 minutes (no stuff bits) to 15.1 (the ISO bound) at
    # 500 kbit/s / 2 Mbit/s; 11-bit ids would make it 11.1 (the "about 11")
    assert round(fd / 60, 1) == 12.4
    fd11 = transfer_seconds(NIST_BYTES, 500_000, 2_000_000, stuffing="none", extended=False)
    assert fd11 == pytest.approx(_hand_fd_seconds(extended=False), rel=1e-9)
    assert round(fd11 / 60, 1) == 11.1
    worst = transfer_seconds(NIST_BYTES, 500_000, 2_000_000, stuffing="worst")
    assert round(worst / 60, 1) == 15.1
    classic = transfer_seconds(NIST_BYTES, 500_000, stuffing="none")
    classic_worst = transfer_seconds(NIST_BYTES, 500_000, stuffing="worst")
    # classic CAN at 500 kbit/s, 7 bytes a frame: 78.5 to 95.8 minutes (11-bit ids: 66.4 to
    # 80.9, about 74 midway): more than six times the FD time either way
    assert (round(classic / 60, 1), round(classic_worst / 60, 1)) == (78.5, 95.8)
    classic11 = transfer_seconds(NIST_BYTES, 500_000, stuffing="none", extended=False)
    assert round(classic11 / 60, 1) == 66.5
    assert classic / fd > 6 and classic_worst / worst > 6


# ---------------------------------------------------------------- ISO-TP on CAN FD


def _isotp_logic(**params: Any) -> tuple[Any, list[bytes]]:
    sent: list[bytes] = []
    inbox: list[isotp.CanMessage] = []
    address = isotp.Address(isotp.AddressingMode.Normal_29bits, txid=0x1, rxid=0x2)
    logic = isotp.TransportLayerLogic(
        rxfn=lambda timeout: inbox.pop(0) if inbox else None,
        txfn=lambda msg: sent.append(bytes(msg.data)),
        address=address,
        params={"can_fd": True, "tx_data_length": 64, "max_frame_size": 4095, **params},
    )
    logic.inbox = inbox  # type: ignore[attr-defined]
    return logic, sent


@pytest.mark.parametrize("size", [5, 40, 62, 63, 200, 2234, 4090])
def test_isotp_frames_match_can_isotp(size: int) -> None:
    payload = bytes((i * 37 + 11) & 0xFF for i in range(size))
    logic, sent = _isotp_logic()
    logic.send(payload)
    logic.process()
    if len(sent) == 1 and sent[0][0] >> 4 == 1:  # a first frame: give it flow control
        logic.inbox.append(
            isotp.CanMessage(arbitration_id=0x2, data=b"\x30\x00\x00", extended_id=True, is_fd=True)
        )
        for _ in range(200):
            logic.process()
    assert sent == isotp_frames(payload)
    # and can-isotp's receiver reassembles our frames; ours reassembles them too
    rx, _ = _isotp_logic()
    for frame in isotp_frames(payload):
        rx.inbox.append(
            isotp.CanMessage(arbitration_id=0x2, data=frame, extended_id=True, is_fd=True)
        )
        rx.process()
    assert rx.recv() == payload
    ours = IsoTpReassembler()
    got = [ours.feed(f) for f in isotp_frames(payload)]
    assert got[-1] == payload and not ours.errors


def test_reassembler_refuses_a_gap() -> None:
    frames = isotp_frames(bytes(500))
    ours = IsoTpReassembler()
    assert [ours.feed(f) for f in frames[:2] + frames[3:]] == [None] * (len(frames) - 1)
    # 8 frames (62 + 6 x 63 + 60 bytes): the gap ends the transfer, and its 4 later frames
    # are refused, never appended
    assert (
        ours.errors
        == ["consecutive frame 3, expected 2"] + ["a consecutive frame without a first frame"] * 4
    )


# ---------------------------------------------------------------- collection in simulated time


def _chacha_words(seed: int, n_bytes: int) -> bytes:
    """The ChaCha20 keystream as 32-bit outputs (little-endian), written MSB first."""
    stream = native.ChaCha20(seed).keystream(n_bytes)
    return np.frombuffer(stream, "<u4").astype(">u4").tobytes()


def test_fd_collection_in_simulated_time(tmp_path: Path) -> None:
    words = 3 * 10**5 // 32  # three sequences of 10^5 bits
    record = collect_simulated(tmp_path, words, seed=21)
    raw = (tmp_path / "raw.bin").read_bytes()
    assert raw == _chacha_words(21, words * 4)  # the device's own ChaCha20 stream
    assert read_record(tmp_path) == json.loads((tmp_path / "raw.json").read_text())
    assert record["blocks"] == 10 and record["resends"] == 0 and record["bits"] == 3 * 10**5
    bus = record["bus"]
    # the bus time: between the model's bounds for the blocks, plus the READ_RAW and its Ack
    # (two classic frames, at most 2 x 135 bits) and heartbeats interleaved (3 within 0.3 s)
    assert bus["model_seconds_no_stuffing"] < bus["bus_seconds"]
    assert bus["bus_seconds"] < bus["model_seconds_worst_stuffing"] + 5 * 135 / 500_000
    assert raw_from_capture(tmp_path / "capture.blf") == raw
    with can.LogReader(str(tmp_path / "capture.blf")) as reader:
        raw_frames = [m for m in reader if m.arbitration_id == raw_channel_ids(0x100)[0]]
    # 37,500 bytes: 9 full blocks of 65 frames, and 852 bytes (a payload of 870 = 62 + 12 x
    # 63 + 52: 14 frames, the last 53 bytes padded to 64)
    assert len(raw_frames) == 9 * 65 + 14
    assert all(m.is_fd and m.bitrate_switch and len(m.data) == 64 for m in raw_frames)


def test_classic_collection_matches_fd(tmp_path: Path) -> None:
    words = 2000
    fd = collect_simulated(tmp_path / "fd", words, seed=4)
    classic = collect_simulated(tmp_path / "classic", words, seed=4, data_bitrate=None)
    assert (tmp_path / "fd" / "raw.bin").read_bytes() == (
        tmp_path / "classic" / "raw.bin"
    ).read_bytes()
    assert classic["bus"]["bus_seconds"] > 5 * fd["bus"]["bus_seconds"]


def test_lost_and_corrupted_blocks_are_asked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feltlab.rig.devices.base import SimDevice

    real = SimDevice.enable_raw_output
    hits = {"n": 0}

    def flaky(self: Any, *args: Any, **kw: Any) -> Any:
        server = real(self, *args, **kw)
        send = server.transmit

        def drop_or_flip(msg: can.Message) -> Any:
            hits["n"] += 1
            if hits["n"] == 70:  # a consecutive frame of block 1: lost
                return None
            if hits["n"] == 140:  # one of block 2: a bit flipped (CRC-32 catches it)
                msg.data = bytearray(msg.data)
                msg.data[10] ^= 0x01
            return send(msg)

        server.transmit = drop_or_flip
        return server

    monkeypatch.setattr(SimDevice, "enable_raw_output", flaky)
    record = collect_simulated(tmp_path, 4000, seed=8)
    assert record["resends"] == 2
    assert any("consecutive frame" in e for e in record["transfer_errors"])
    assert any("CRC" in e for e in record["transfer_errors"])
    raw = (tmp_path / "raw.bin").read_bytes()
    assert raw == _chacha_words(8, 16000)
    assert raw_from_capture(tmp_path / "capture.blf") == raw  # the resent copies fill the gaps


def test_stuck_bit_source() -> None:
    src = StuckBitSource(ChaChaSource(native.ChaCha20(2)), bit=0)
    assert src.start(4000, 32) == "stuck-bit:0(chacha20)"
    words = np.frombuffer(src.read(0, 4000), ">u4")
    assert np.all(words & 1) and np.mean(words >> 1 & 1) == pytest.approx(0.5, abs=0.06)
    assert src.read(400, 8) == src.read(0, 408)[400:]  # seekable: a resent block is the same


def test_refuses_an_existing_raw_file(tmp_path: Path) -> None:
    (tmp_path / "raw.bin").write_bytes(b"x")
    with pytest.raises(FileExistsError, match="choose a new --out"):
        collect_simulated(tmp_path, 10)


def test_capture_journal_keeps_fd_frames(tmp_path: Path) -> None:
    from feltlab.rig.bus.capture import read_journal
    from feltlab.rig.bus.writer import CaptureWriter, journal_path

    writer = CaptureWriter(tmp_path / "c.blf", journal=True)
    frame = can.Message(
        timestamp=1e9, arbitration_id=raw_channel_ids(0x100)[0], data=bytes(range(64)),
        is_extended_id=True, is_fd=True, bitrate_switch=True, is_rx=True,
    )  # fmt: skip
    writer.on_message_received(frame)
    [back] = read_journal(journal_path(tmp_path / "c.blf"))
    writer.stop()
    assert back.is_fd and back.bitrate_switch and bytes(back.data) == bytes(range(64))
    assert back.arbitration_id == frame.arbitration_id and back.is_extended_id
