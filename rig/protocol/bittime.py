"""Bus timing of classic CAN frames (ISO 11898-1): the bits a frame occupies on the wire,
which the simulated bus advances its clock by (re-exported by
:mod:`feltlab.rig.protocol.codec`)."""

from __future__ import annotations

from feltlab.native import can_frame_bits_unchecked


def frame_bits(
    arbitration_id: int, data: bytes | bytearray, *, extended: bool = False, stuffing: str = "exact"
) -> int:
    """Bits a classic CAN data frame occupies on the wire, interframe space included
    (ISO 11898-1): 47 + 8n bits for an 11-bit id before stuffing (111 for 8 bytes), plus
    one stuff bit after every 5 equal bits in SOF..CRC: at most 24 for 8 bytes (135).

    ``stuffing``: ``"exact"`` (computes the CRC-15 and counts stuff bits, in the C core:
    ``fl_can_frame_bits``, about 0.5 us a frame), ``"worst"`` or ``"none"``.  Raises
    ValueError for more than 8 data bytes or an unknown ``stuffing``.
    """
    n = len(data)
    if stuffing == "exact" and n <= 8:  # the common case first: the simulated wire's hot path
        return can_frame_bits_unchecked(arbitration_id, extended, bytes(data), n)  # type: ignore[no-any-return]
    if n > 8:
        raise ValueError("classic CAN frames carry at most 8 data bytes")
    head = (39 if extended else 19) + 8 * n  # SOF..data
    fixed = 13  # CRC delimiter, ACK slot and delimiter, EOF (7), intermission (3)
    if stuffing == "none":
        return head + 15 + fixed
    if stuffing == "worst":
        stuffed = head + 15
        return stuffed + (stuffed - 1) // 4 + fixed
    raise ValueError("stuffing must be 'exact', 'worst' or 'none'")


def max_frames_per_second(bitrate: int, data_bytes: int = 8) -> float:
    """Upper bound on back-to-back frames/s at ``bitrate`` (bit/s) for frames of
    ``data_bytes`` bytes, assuming no stuff bits (a lower bound on frame length)."""
    return bitrate / (47 + 8 * data_bytes)


# ---------------------------------------------------------------- CAN FD (ISO 11898-1:2015)

#: the data lengths a CAN FD frame can carry (DLC 0..15); longer payloads are padded up.
FD_LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)


def fd_length(n: int) -> int:
    """The CAN FD data length that carries ``n`` bytes: ``n`` itself up to 8, else the next
    of 12, 16, 20, 24, 32, 48, 64.  Raises ValueError above 64."""
    for size in FD_LENGTHS:
        if size >= n:
            return size
    raise ValueError(f"a CAN FD frame carries at most 64 data bytes, not {n}")


def _dynamic_stuff_bits(bits: list[int], brs_at: int) -> tuple[int, int]:
    """Stuff bits inserted in ``bits`` (SOF .. last data bit, ISO 11898-1 10.5: a bit of the
    other level after five equal bits, the stuff bit counting in the next run): those in the
    arbitration phase (up to and including bit ``brs_at``, the BRS bit) and after it."""
    before = after = 0
    run, last = 0, -1
    for i, bit in enumerate(bits):
        if bit == last:
            run += 1
        else:
            run, last = 1, bit
        if run == 5:
            if i <= brs_at:
                before += 1
            else:
                after += 1
            run, last = 1, 1 - bit
    return before, after


def fd_frame_bits(
    arbitration_id: int,
    data: bytes | bytearray,
    *,
    extended: bool = False,
    stuffing: str = "exact",
) -> tuple[int, int]:
    """Bits a CAN FD data frame occupies on the wire as ``(nominal, data_phase)``: the bits
    sent at the nominal (arbitration) bitrate and those sent at the data bitrate when the
    frame switches bitrate (BRS set); interframe space included (ISO 11898-1:2015).

    Arbitration phase, nominal rate: SOF, the identifier (11 bits; or 11, SRR, IDE and 18),
    RRS, IDE (11-bit), FDF, res, BRS: 17 bits (36 extended), with their dynamic stuff bits;
    then, after the data phase, ACK slot and delimiter, EOF (7) and intermission (3): 12.
    Data phase: ESI, DLC (4), the data (``len(data)`` bytes, which must be a CAN FD length:
    :func:`fd_length`), their dynamic stuff bits, the stuff count (4), the CRC (17 bits up
    to 16 data bytes, 21 above) with its fixed stuff bits (one before the stuff count and
    one after every 4 bits: 6, or 7) and the CRC delimiter (the switch back happens at its
    sample point; the fraction of a bit either side of each switch is not modelled).

    ``stuffing``: ``"exact"`` (the frame's own dynamic stuff bits, counted bit by bit),
    ``"worst"`` (one per 4 bits after the first, the ISO bound) or ``"none"``.  A frame
    without bit-rate switch sends ``nominal + data_phase`` bits at the nominal rate.
    Raises ValueError for a length no CAN FD frame has or an unknown ``stuffing``.
    """
    n = len(data)
    if n not in FD_LENGTHS:
        raise ValueError(f"{n} data bytes: a CAN FD frame carries one of {FD_LENGTHS}")
    arb = 36 if extended else 17
    dyn = 5 + 8 * n  # ESI, DLC, data
    crc = 17 if n <= 16 else 21
    fixed_data = 4 + crc + (7 if n > 16 else 6) + 1  # stuff count, CRC, fixed stuff, delimiter
    if stuffing == "none":
        s_arb = s_dat = 0
    elif stuffing == "worst":
        s_arb = (arb - 1) // 4
        s_dat = (arb + dyn - 1) // 4 - s_arb
    elif stuffing == "exact":
        bits = _fd_header_bits(arbitration_id, n, extended) + [
            (byte >> (7 - k)) & 1 for byte in bytes(data) for k in range(8)
        ]
        s_arb, s_dat = _dynamic_stuff_bits(bits, arb - 1)
    else:
        raise ValueError("stuffing must be 'exact', 'worst' or 'none'")
    return arb + s_arb + 12, dyn + s_dat + fixed_data


def _fd_header_bits(arbitration_id: int, n: int, extended: bool) -> list[int]:
    """SOF .. DLC of a CAN FD data frame (ESI 0, error-active), most significant bit first."""
    dlc = FD_LENGTHS.index(n)
    out = [0]  # SOF
    if extended:
        base, ext = arbitration_id >> 18, arbitration_id & 0x3FFFF
        out += [(base >> (10 - k)) & 1 for k in range(11)] + [1, 1]  # SRR, IDE
        out += [(ext >> (17 - k)) & 1 for k in range(18)]
    else:
        out += [(arbitration_id >> (10 - k)) & 1 for k in range(11)] + [0]  # RRS
    out += [0, 1, 0, 1]  # extended: RRS, FDF, res, BRS; 11-bit: IDE, FDF, res, BRS
    out += [0] + [(dlc >> (3 - k)) & 1 for k in range(4)]  # ESI, DLC
    return out


def fd_frame_seconds(
    arbitration_id: int,
    data: bytes | bytearray,
    bitrate: int,
    data_bitrate: int,
    *,
    extended: bool = False,
    bitrate_switch: bool = True,
    stuffing: str = "exact",
) -> float:
    """Seconds a CAN FD frame occupies the wire: :func:`fd_frame_bits`'s nominal bits at
    ``bitrate`` and its data-phase bits at ``data_bitrate`` (bit/s; at ``bitrate`` when
    ``bitrate_switch`` is False)."""
    nominal, fast = fd_frame_bits(arbitration_id, data, extended=extended, stuffing=stuffing)
    if not bitrate_switch:
        return (nominal + fast) / bitrate
    return nominal / bitrate + fast / data_bitrate
