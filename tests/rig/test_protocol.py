"""The protocol: the DBC (cantools), ISO-TP payloads, bus timing, bus specs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from feltlab.rig.bus.transport import BusSpec, WireClock
from feltlab.rig.errors import BusSpecError, ProtocolError
from feltlab.rig.protocol import bittime
from feltlab.rig.protocol import codec as p

from .can_reference import crc15, reference_frame_bits


def test_dbc_loads_and_is_versioned() -> None:
    db = p.load_database()
    assert db.version == f"feltlab-rig-protocol {p.PROTOCOL_MAJOR}.{p.PROTOCOL_MINOR}"
    names = {m.name for m in db.messages}
    assert {
        "Heartbeat",
        "Command",
        "Ack",
        "Status",
        "Fault",
        "Card",
        "JackpotButton",
        "JackpotResult",
    } <= names
    # classic 8-byte frames but for the authenticated command (2.3's security extension) and
    # the raw channel (2.2), CAN FD 64-byte frames
    assert [m.name for m in db.messages if m.length > 8 or m.is_fd] == [
        "AuthCommand",
        "IsoTpRaw",
        "IsoTpRawFlow",
    ]
    assert all(m.length <= 8 for m in db.messages if not m.is_fd)
    # 29-bit messages: the MAC frame authenticating a JackpotResult (1.1), the authenticated
    # command (2.3), the raw channel (2.2)
    assert [m.name for m in db.messages if m.is_extended_frame] == [
        "JackpotResultMac",
        "AuthCommand",
        "IsoTpRaw",
        "IsoTpRawFlow",
    ]


def test_dbc_loads_in_cantools_command_line() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cantools", "dump", p.dbc_path()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "Heartbeat" in out.stdout and "JackpotResult" in out.stdout


@pytest.mark.parametrize(
    "name",
    ["Heartbeat", "Command", "Ack", "Status", "Fault", "Card", "JackpotButton", "JackpotResult"],
)
@pytest.mark.parametrize("base", [0x100, 0x230, 0x7F0])
def test_every_message_round_trips(name: str, base: int) -> None:
    codec = p.Codec(base)
    m = codec.db.get_message_by_name(name)
    rng = np.random.default_rng(7)
    for fill in ("min", "max", "random"):
        sig = {}
        for s in m.signals:
            hi = (1 << s.length) - 1
            sig[s.name] = {"min": 0, "max": hi, "random": int(rng.integers(0, hi + 1))}[fill]
        msg = codec.encode(name, sig)
        assert msg.arbitration_id == base + (m.frame_id - p.DBC_BASE)
        frame = codec.decode(msg)
        assert frame is not None and frame.name == name and frame.signals == sig


def test_codec_ignores_other_devices_and_isotp_ids() -> None:
    codec = p.Codec(0x100)
    other = p.Codec(0x200).encode(
        "Heartbeat",
        dict.fromkeys(
            [
                "Counter",
                "State",
                "Kind",
                "ProtocolMajor",
                "ProtocolMinor",
                "PeriodMs",
                "ActiveFault",
                "BootCount",
            ],
            1,
        ),
    )
    assert codec.decode(other) is None
    import can

    assert (
        codec.decode(can.Message(arbitration_id=0x10A, data=b"\x10\x20", is_extended_id=False))
        is None
    )
    with pytest.raises(ProtocolError):
        codec.decode(can.Message(arbitration_id=0x100, data=b"\x01", is_extended_id=False))


def test_encode_refuses_out_of_range_signal() -> None:
    codec = p.Codec(0x100)
    with pytest.raises(Exception, match="RequestId"):
        codec.encode(
            "Command", {"RequestId": 256, "Opcode": 1, "ProtocolMajor": 1, "Arg8": 0, "Arg32": 0}
        )


@pytest.mark.parametrize("base", [0, 0x105, 0x800, -16, True])
def test_bad_base_refused(base: int) -> None:
    with pytest.raises(ProtocolError):
        p.check_base(base)


def test_payloads_round_trip_and_detect_corruption() -> None:
    codes = np.arange(312, dtype=np.uint16) % 52
    decks = np.arange(312) // 52
    shoe = p.ShoePayload(7, 6, 234, codes.astype(np.uint8), decks.astype(np.uint8))
    raw = shoe.encode()
    assert len(raw) == 10 + 2 * 312 + 4
    back = p.ShoePayload.decode(raw)
    assert back.shoe_number == 7 and back.cut_position == 234
    assert (back.ids() == np.arange(312)).all()
    bad = bytearray(raw)
    bad[50] ^= 1
    with pytest.raises(ProtocolError, match="CRC"):
        p.ShoePayload.decode(bytes(bad))
    with pytest.raises(ProtocolError, match="expected a LOAD"):
        p.LoadPayload.decode(raw)
    load = p.LoadPayload(1, 0, codes[:5].astype(np.uint8), np.full(5, 0xFF, np.uint8))
    assert (p.LoadPayload.decode(load.encode()).card_decks == 0xFF).all()
    table = p.PrizeTablePayload(((2500, 600), (1_000_000, 1)))
    assert p.PrizeTablePayload.decode(table.encode()) == table
    audit = p.AuditPayload(2, (p.AuditEntry(1, 10, 0x10, 5), p.AuditEntry(2, 20, 0x89, 1)))
    assert p.AuditPayload.decode(audit.encode()) == audit
    unknown = p.ShoePayload(1, 6, 0, np.zeros(3, np.uint8), np.full(3, 0xFF, np.uint8))
    with pytest.raises(ProtocolError, match="decks apart"):
        unknown.ids()


def test_payload_with_other_protocol_major_refused() -> None:
    raw = bytearray(p.PrizeTablePayload(((1, 1),)).encode()[:-4])
    raw[0] = p.PROTOCOL_MAJOR + 1
    import struct
    import zlib

    sealed = bytes(raw) + struct.pack("<I", zlib.crc32(bytes(raw)))
    with pytest.raises(ProtocolError, match=f"protocol major {p.PROTOCOL_MAJOR + 1}"):
        p.PrizeTablePayload.decode(sealed)


def test_isotp_reassembler() -> None:
    payload = bytes(range(20))
    frames = [bytes([0x10, 20]) + payload[:6]]
    rest = payload[6:]
    seq = 1
    while rest:
        frames.append(bytes([0x20 | seq]) + rest[:7])
        rest = rest[7:]
        seq = (seq + 1) & 0xF
    r = p.IsoTpReassembler()
    out = [r.feed(f) for f in frames]
    assert out[-1] == payload and all(o is None for o in out[:-1])
    assert r.feed(b"\x03abc") == b"abc"
    r2 = p.IsoTpReassembler()
    r2.feed(frames[0])
    assert r2.feed(frames[2]) is None and r2.errors == 1  # a lost frame is a sequence gap


def test_absorb_takes_what_feed_would_take_quietly_and_nothing_else() -> None:
    """absorb then feed is feed: the same payloads, errors and pending state, over transfers
    whose frames are lost, repeated, out of sequence, short, flow controls and new first
    frames (seeded)."""
    rng = np.random.default_rng(37)
    payload = bytes(rng.integers(0, 256, 40, dtype=np.uint8))
    good = [bytes([0x10, 40]) + payload[:6]]
    good += [bytes([0x20 | (i + 1) & 0xF]) + payload[6 + 7 * i : 13 + 7 * i] for i in range(5)]
    odd = [b"", b"\x30\x00\x00", b"\x03abc", b"\x21", b"\x25" + bytes(7), b"\x10\x00"]
    absorbed = 0
    for _ in range(300):
        frames = [good[i] for i in sorted(rng.integers(0, len(good), rng.integers(1, 14)))]
        for _ in range(rng.integers(0, 3)):
            frames.insert(int(rng.integers(0, len(frames) + 1)), odd[rng.integers(0, len(odd))])
        plain, quick = p.IsoTpReassembler(), p.IsoTpReassembler()
        for f in frames:
            took = quick.absorb(f)
            absorbed += took
            got = None if took else quick.feed(f)
            assert got == plain.feed(f)
            assert (quick.errors, quick.pending) == (plain.errors, plain.pending)
    assert absorbed > 150  # quiet frames of in-order runs were taken (210 with this seed)
    whole = p.IsoTpReassembler()
    assert not whole.absorb(good[0]) and whole.feed(good[0]) is None  # a first frame: feed's
    assert [whole.absorb(f) for f in good[1:5]] == [True] * 4
    assert not whole.absorb(good[5]) and whole.feed(good[5]) == payload  # the last: feed's


def test_frame_bits_bounds() -> None:
    assert bittime.frame_bits(0x100, bytes(8), stuffing="none") == 111
    assert bittime.frame_bits(0x100, bytes(8), stuffing="worst") == 135
    rng = np.random.default_rng(1)
    for _ in range(200):
        data = bytes(rng.integers(0, 256, 8, dtype=np.uint8))
        assert 111 <= bittime.frame_bits(int(rng.integers(0, 0x800)), data) <= 135
    assert bittime.frame_bits(0x000, bytes(8)) > 111  # long runs of zeros are stuffed
    assert bittime.frame_bits(0x100, b"", stuffing="none") == 47
    assert round(bittime.max_frames_per_second(500_000)) == 4505
    with pytest.raises(ValueError):
        bittime.frame_bits(1, bytes(9))


def test_frame_bits_matches_a_bit_by_bit_reference() -> None:
    """The C core's exact count equals an independent bit-level construction of the frame
    (ISO 11898-1 field order, CRC-15 0x4599, stuff bit after five equal bits), for standard
    and extended ids and every data length."""
    rng = np.random.default_rng(11)
    for _ in range(3000):
        n = int(rng.integers(0, 9))
        data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
        extended = bool(rng.integers(0, 2))
        ident = int(rng.integers(0, 1 << 29 if extended else 1 << 11))
        assert bittime.frame_bits(ident, data, extended=extended) == reference_frame_bits(
            ident, data, extended=extended
        )
    assert bittime.frame_bits(0x100, bytearray(8)) == bittime.frame_bits(0x100, bytes(8))


def test_frame_bits_hand_checked() -> None:
    # CRC-15/CAN's catalogued check value: 0x059E over the ASCII bytes "123456789".
    ascii_bits = [(byte >> (7 - i)) & 1 for byte in b"123456789" for i in range(8)]
    assert crc15(ascii_bits) == 0x059E
    # id 0, no data: SOF..DLC is 19 dominant bits and their CRC-15 is 0, so 34 zeros in a
    # row; a stuff bit (recessive) follows zeros 5, 10, ..., 30: 6 stuff bits; + 13 fixed.
    assert bittime.frame_bits(0x000, b"") == 34 + 6 + 13 == 53


def test_wire_clock_never_exceeds_the_bitrate() -> None:
    import time

    import can

    clock = WireClock(125_000)
    msg = can.Message(arbitration_id=0x10A, data=bytes(8), is_extended_id=False)
    t0 = time.monotonic()
    for _ in range(100):
        clock.reserve(msg)
    elapsed = time.monotonic() - t0
    assert elapsed >= clock.bits_sent / 125_000 - clock.slack
    assert clock.bits_sent >= 100 * 111


def test_bus_spec_parsing() -> None:
    s = BusSpec.parse("interface=udp_multicast,channel=ff11::1,port=43113,bitrate=500000")
    assert s.interface == "udp_multicast" and s.channel == "ff11::1" and s.bitrate == 500000
    assert dict(s.options) == {"port": 43113}
    assert BusSpec.parse(str(s)) == s
    for bad in (
        "channel=x",
        "interface=udp_multicast,channel=239.74.163.2",
        "interface=udp_multicast,channel=ff15::1",
        "interface=virtual,channel=x,bitrate=-1",
        "interface=virtual,channelx",
    ):
        with pytest.raises(BusSpecError):
            BusSpec.parse(bad)


def test_dbc_is_package_data() -> None:
    from importlib import resources

    assert resources.files("feltlab.rig.protocol").joinpath(p.DBC_FILE).is_file()


def _sealed(body: bytes) -> bytes:
    import struct
    import zlib

    return body + struct.pack("<I", zlib.crc32(body))


def test_the_packed_shoe_of_protocol_2_1_round_trips_and_refuses_what_it_cannot_be() -> None:
    """SHOE_PACKED (docs/protocol.md): 9 bits a card (deck * 52 + code), 366 bytes for 6
    decks, hand-checked on the first byte; 6 bits a card when the decks are unknown; a shoe
    with mixed deck knowledge falls back to the 2-byte layout; a bad width, a length that
    disagrees with the count, an id past deck 7 or a code past 51 is a ProtocolError."""
    codes = (np.arange(312) % 52).astype(np.uint8)
    decks = (np.arange(312) // 52).astype(np.uint8)
    shoe = p.ShoePayload(7, 6, 234, codes, decks, request_id=9, packed=True)
    raw = shoe.encode()
    assert len(raw) == 11 + (312 * 9 + 7) // 8 + 4 == 366
    assert raw[1] == p.PayloadType.SHOE_PACKED and raw[p.PAYLOAD_RID_OFFSET] == 9
    assert raw[10] == 9 and raw[11] == 0  # width; card 0 (id 0) then card 1 (id 1) ...
    assert raw[12] == 0b00000010  # id 1's low 7 bits after id 0's 9 zero bits: bit 9 set
    back = p.ShoePayload.decode(raw)
    assert back.packed and back.request_id == 9 and back.cut_position == 234
    assert (back.ids() == np.arange(312)).all()
    blind = p.ShoePayload(3, 6, 0, codes, np.full(312, 0xFF, np.uint8), packed=True).encode()
    assert len(blind) == 11 + 312 * 6 // 8 + 4 and blind[10] == 6
    assert (p.ShoePayload.decode(blind).card_decks == 0xFF).all()
    mixed = decks.copy()
    mixed[5] = 0xFF
    fallback = p.ShoePayload(3, 6, 0, codes, mixed, packed=True).encode()
    assert fallback[1] == p.PayloadType.SHOE and len(fallback) == 10 + 2 * 312 + 4
    head = bytes([2, p.PayloadType.SHOE_PACKED, 6, 1, 1, 0, 0, 0, 2, 0])
    for body, why in [
        (head + bytes([7, 0, 0]), "7 bits per card"),
        (head + bytes([9, 0, 0, 0, 0]), "length disagrees"),  # 2 cards need 3 bytes, not 4
        (head + bytes([9, 0xA0, 0xFF, 0x03]), "above 415"),  # ids 416 and 511
        (head + bytes([6, 0x3C, 0]), "above 51"),  # code 60
    ]:
        with pytest.raises(ProtocolError, match=why):
            p.ShoePayload.decode(_sealed(body))


def test_a_shoe_decoded_again_is_a_copy_of_the_first_decoding() -> None:
    """ShoePayload.decode remembers a payload's shoe by its bytes: decoded again (the
    campaign's analysis after its client), equal field for field, its arrays the caller's own."""
    codes = np.arange(312, dtype=np.uint8) % 52
    decks = (np.arange(312) // 52).astype(np.uint8)
    raw = p.ShoePayload(9, 6, 234, codes, decks, 17, packed=True).encode()
    first, again = p.ShoePayload.decode(raw), p.ShoePayload.decode(bytearray(raw))
    assert (again.shoe_number, again.cut_position, again.request_id) == (9, 234, 17)
    assert np.array_equal(again.codes, codes) and np.array_equal(again.card_decks, decks)
    assert again.codes is not first.codes and again.codes.flags.writeable
    first.codes[0] = 51  # the first caller's change reaches no later decoding
    assert p.ShoePayload.decode(raw).codes[0] == 0
    with pytest.raises(ProtocolError):
        p.ShoePayload.decode(raw[:-1])  # a refused payload is refused every time
    with pytest.raises(ProtocolError):
        p.ShoePayload.decode(raw[:-1])
