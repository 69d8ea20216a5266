"""Protocol 2.3's firmware packages (the security extension; docs/protocol.md, "Firmware
update"): the FIRMWARE payload (type 0x07) travels host to device on the LOAD channel
(ISO-TP, ISO 15765-2); the authenticated command INSTALL_FIRMWARE installs it, or is answered
``REJECTED`` with a :class:`FirmwareRefusal`.

Layout after ``version(1) type(1)``, little-endian as every payload:
``scheme(1) device_id(4) fw_version(4) image_len(2) image tag_len(1) tag CRC32(4)``.  The
*signed body* is the bytes from ``scheme`` to the end of the image.  Schemes:

- ``ED25519`` (1): ``tag`` is the vendor's Ed25519 signature (RFC 8032, 64 bytes) of the
  signed body, made and checked with the ``cryptography`` library;
- ``HMAC_SHA256`` (2): ``tag`` is HMAC-SHA256 of the signed body under a device's symmetric
  key, ``tag_len`` bytes of it: the older scheme flawed devices use (a key in every device
  signs for every device; a short tag is forged by trying); a hardened device refuses it.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as crypto_hmac
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, PayloadType

_HEAD = struct.Struct("<BBBIIH")  # version, type, scheme, device id, fw version, image length
MAX_IMAGE = 3900
"""The largest image (bytes): the payload stays within ISO-TP's 4095 bytes."""


class Scheme(enum.IntEnum):
    ED25519 = 1
    HMAC_SHA256 = 2


class FirmwareRefusal(enum.IntEnum):
    """Why a device refused INSTALL_FIRMWARE (the ``Value`` of its ``REJECTED`` Ack)."""

    NO_PACKAGE = 1  # nothing received since the last install
    MALFORMED = 2  # not a FIRMWARE payload (CRC, lengths)
    BAD_SIGNATURE = 3  # the signature (or MAC) does not verify
    WRONG_DEVICE = 4  # signed for another device id
    NOT_NEWER = 5  # a version not greater than the installed one (a downgrade or replay)
    SCHEME_REFUSED = 6  # a scheme the device does not accept (a hardened device: MAC'd)


@dataclass(frozen=True)
class FirmwarePackage:
    """A firmware package: ``device_id`` it is for, ``version``, ``image`` bytes, ``scheme``
    and ``tag`` (signature or MAC)."""

    device_id: int
    version: int
    image: bytes
    scheme: Scheme = Scheme.ED25519
    tag: bytes = b""

    def __repr__(self) -> str:
        return (
            f"FirmwarePackage(device_id=0x{self.device_id:08X}, version={self.version}, "
            f"{len(self.image)} image bytes, {self.scheme.name}, tag {len(self.tag)} bytes)"
        )

    def signed_body(self) -> bytes:
        """The bytes the tag covers: scheme, device id, version, image length and image."""
        if len(self.image) > MAX_IMAGE:
            raise ProtocolError(f"a firmware image is at most {MAX_IMAGE} bytes")
        head = _HEAD.pack(0, 0, self.scheme, self.device_id, self.version, len(self.image))
        return head[2:] + self.image

    def encode(self) -> bytes:
        """The FIRMWARE payload (type 0x07)."""
        if len(self.tag) > 255:
            raise ProtocolError("a package tag is at most 255 bytes")
        body = (
            bytes((PROTOCOL_MAJOR, PayloadType.FIRMWARE))
            + self.signed_body()
            + bytes((len(self.tag),))
            + self.tag
        )
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def decode(cls, payload: bytes | bytearray) -> FirmwarePackage:
        """The package in a FIRMWARE payload.  Raises :class:`ProtocolError` for a bad CRC,
        version, type, scheme or length."""
        data = bytes(payload)
        if len(data) < _HEAD.size + 5:
            raise ProtocolError(f"FIRMWARE payload of {len(data)} bytes is too short")
        body, crc = data[:-4], struct.unpack("<I", data[-4:])[0]
        if zlib.crc32(body) != crc:
            raise ProtocolError("FIRMWARE payload CRC mismatch")
        ver, ptype, scheme, device_id, version, n = _HEAD.unpack_from(body)
        if ver != PROTOCOL_MAJOR or ptype != PayloadType.FIRMWARE:
            raise ProtocolError(f"not a FIRMWARE payload (version {ver}, type {ptype})")
        if scheme not in Scheme._value2member_map_:
            raise ProtocolError(f"unknown firmware scheme {scheme}")
        end = _HEAD.size + n
        if end + 1 > len(body) or end + 1 + body[end] != len(body):
            raise ProtocolError("FIRMWARE payload lengths do not add up")
        return cls(device_id, version, body[_HEAD.size : end], Scheme(scheme), body[end + 1 :])

    def signed(self, key: Ed25519PrivateKey) -> FirmwarePackage:
        """This package signed by the vendor's Ed25519 key (scheme ED25519)."""
        unsigned = FirmwarePackage(self.device_id, self.version, self.image, Scheme.ED25519)
        return FirmwarePackage(
            self.device_id,
            self.version,
            self.image,
            Scheme.ED25519,
            key.sign(unsigned.signed_body()),
        )

    def maced(self, key: bytes, tag_len: int = 32) -> FirmwarePackage:
        """This package MAC'd under a symmetric ``key`` with ``tag_len`` bytes of
        HMAC-SHA256 (scheme HMAC_SHA256)."""
        unsigned = FirmwarePackage(self.device_id, self.version, self.image, Scheme.HMAC_SHA256)
        return FirmwarePackage(
            self.device_id,
            self.version,
            self.image,
            Scheme.HMAC_SHA256,
            package_mac(key, unsigned.signed_body())[:tag_len],
        )

    def verify_signature(self, public: Ed25519PublicKey) -> bool:
        """True if the package is ED25519 and its signature verifies under ``public``."""
        if self.scheme != Scheme.ED25519:
            return False
        try:
            public.verify(self.tag, self.signed_body())
        except InvalidSignature:
            return False
        return True


def package_mac(key: bytes, body: bytes) -> bytes:
    """HMAC-SHA256 (32 bytes) of a package's signed body under ``key``."""
    h = crypto_hmac.HMAC(key, hashes.SHA256())
    h.update(body)
    return h.finalize()


__all__ = ["MAX_IMAGE", "FirmwarePackage", "FirmwareRefusal", "Scheme", "package_mac"]
