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
