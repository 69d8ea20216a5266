"""A bit-by-bit reference of the classic CAN frame length (ISO 11898-1), written
independently of the C core's ``fl_can_frame_bits`` so the tests can compare the two."""

from __future__ import annotations


def _bits(value: int, width: int) -> list[int]:
    return [(value >> (width - 1 - i)) & 1 for i in range(width)]


def crc15(bits: list[int]) -> int:
    """CAN's CRC-15 (polynomial 0x4599) over a bit list, most significant first."""
    crc = 0
    for b in bits:
        nxt = b ^ ((crc >> 14) & 1)
        crc = (crc << 1) & 0x7FFF
        if nxt:
            crc ^= 0x4599
    return crc


def reference_frame_bits(arbitration_id: int, data: bytes, *, extended: bool = False) -> int:
    """Wire bits of a data frame, stuff bits counted, interframe space included."""
    if extended:
        ident = _bits(arbitration_id, 29)
        head = [0, *ident[:11], 1, 1, *ident[11:], 0, 0, 0]
    else:
        head = [0, *_bits(arbitration_id, 11), 0, 0, 0]
    head += _bits(len(data), 4)
    for byte in data:
        head += _bits(byte, 8)
    bits = head + _bits(crc15(head), 15)
    stuff, run_bit, run = 0, bits[0], 1
    for b in bits[1:]:
        if b == run_bit:
            run += 1
            if run == 5:
                stuff += 1
                run_bit, run = 1 - b, 1
        else:
            run_bit, run = b, 1
    return len(bits) + stuff + 13
