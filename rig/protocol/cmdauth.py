"""Protocol 2.3's command authentication (the security extension; docs/protocol.md,
"Authenticated commands"): a Command travels inside an **AuthCommand**, one CAN FD frame of
64 bytes on the 29-bit id ``(B + 1) << 18 | 0x0A17``, carrying the Command's 8 bytes, a
64-bit freshness value, the device id and the full HMAC-SHA256 tag (RFC 2104, FIPS 180-4;
the ``cryptography`` library's HMAC, never our own) over

    AuthVersion (1) || DataId (2, big-endian: the Command's 11-bit id B + 1)
    || DeviceId (4, big-endian) || Freshness (8, big-endian) || the Command's 8 bytes

in the manner of AUTOSAR SecOC, as the jackpot result is authenticated
(:mod:`feltlab.rig.protocol.secoc`) but with the whole tag and the whole freshness value on
the wire (CAN FD has the room).  The device keeps the last accepted freshness value in
non-volatile memory and acts on a command only if its tag verifies, its device id is its own
and its freshness is greater than the last accepted; otherwise it answers Ack
``AUTH_FAILED`` with the :class:`AuthRefusal` in ``Value`` and reports a Fault ``SECURITY``.
"""

from __future__ import annotations

import enum
import hmac
from collections import OrderedDict
from dataclasses import dataclass

import can
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as crypto_hmac

from feltlab.rig.protocol.codec import PROTOCOL_MAJOR, Codec

#: the one authentication scheme of protocol 2.3: HMAC-SHA256 with its full 32-byte tag
AUTH_VERSION = 1
#: bytes of the full tag
TAG_BYTES = 32
#: the shortest device key accepted (bytes), as for the jackpot panel's key
MIN_KEY_BYTES = 16
_FV_MAX = (1 << 64) - 1


class AuthRefusal(enum.IntEnum):
    """Why a device refused a command (the ``Value`` of its ``AUTH_FAILED`` Ack)."""

    UNAUTHENTICATED = 1  # a bare Command in security mode
    BAD_MAC = 2  # the tag does not verify (or is shorter than the full tag)
    REPLAYED = 3  # an AuthCommand accepted before, sent again
    REORDERED = 4  # authentic, but its freshness is not newer than the last accepted
    WRONG_DEVICE = 5  # authenticated for another device id
    BAD_VERSION = 6  # an AuthVersion the device does not speak


class AuthFailure(Exception):
    """A refused AuthCommand: :attr:`reason` is the :class:`AuthRefusal`."""

    def __init__(self, reason: AuthRefusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def command_tag(
    key: bytes,
    data_id: int,
    device_id: int,
    freshness: int,
    command: bytes,
    version: int = AUTH_VERSION,
) -> bytes:
    """The full HMAC-SHA256 tag (32 bytes) of ``command`` (the Command frame's 8 bytes) for
    ``device_id`` at ``freshness``; ``data_id`` is the Command's 11-bit arbitration id.

    Raises ValueError for a command that is not 8 bytes or a key shorter than 16 bytes."""
    if len(command) != 8:
        raise ValueError(f"a Command is 8 bytes, got {len(command)}")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"a command key is at least {MIN_KEY_BYTES} bytes")
    h = crypto_hmac.HMAC(key, hashes.SHA256())
    h.update(
        version.to_bytes(1, "big")
        + data_id.to_bytes(2, "big")
        + device_id.to_bytes(4, "big")
        + freshness.to_bytes(8, "big")
        + bytes(command)
    )
    return h.finalize()


def _tag_signals(tag: bytes) -> dict[str, int]:
    full = tag.ljust(TAG_BYTES, b"\0")
    return {f"Mac{i}": int.from_bytes(full[8 * i : 8 * i + 8], "little") for i in range(4)}


def tag_of(signals: dict[str, int]) -> bytes:
    """The 32 tag bytes of a decoded AuthCommand's ``Mac0..Mac3`` signals."""
    return b"".join(signals[f"Mac{i}"].to_bytes(8, "little") for i in range(4))


@dataclass(frozen=True)
class AuthCommand:
    """One authenticated command as sent: the Command's fields, its freshness, device id,
    scheme version, tag length (bytes) and tag."""

    request_id: int
    opcode: int
    arg8: int
    arg32: int
    freshness: int
    device_id: int
    tag: bytes
    version: int = AUTH_VERSION
    tag_length: int = TAG_BYTES
    protocol_major: int = PROTOCOL_MAJOR

    def command_signals(self) -> dict[str, int]:
        return {
            "RequestId": self.request_id,
            "Opcode": self.opcode,
            "ProtocolMajor": self.protocol_major,
            "Arg8": self.arg8,
            "Arg32": self.arg32,
        }

    def message(self, codec: Codec) -> can.Message:
        """The CAN FD frame (64 bytes, bit-rate switch) of this AuthCommand at ``codec``'s base."""
        m = codec.db.get_message_by_name("AuthCommand")
        signals = {
            **self.command_signals(),
            "Freshness": self.freshness,
            "DeviceId": self.device_id,
            "AuthVersion": self.version,
            "TagLength": self.tag_length,
            **_tag_signals(self.tag),
        }
        data = m.encode(signals, scaling=False, strict=True)
        return can.Message(
            arbitration_id=codec.id_of("AuthCommand"),
            data=data,
            is_extended_id=True,
            is_fd=True,
            bitrate_switch=True,
        )

    @classmethod
    def from_signals(cls, s: dict[str, int]) -> AuthCommand:
        """The AuthCommand of a decoded frame's signals."""
        return cls(
            s["RequestId"],
            s["Opcode"],
            s["Arg8"],
            s["Arg32"],
            s["Freshness"],
            s["DeviceId"],
            tag_of(s),
            s["AuthVersion"],
            s["TagLength"],
            s["ProtocolMajor"],
        )


def command_bytes(codec: Codec, signals: dict[str, int]) -> bytes:
    """The 8 bytes of the Command frame with ``signals`` (RequestId, Opcode, ProtocolMajor,
    Arg8, Arg32), as the tag covers them."""
    return bytes(codec.encode("Command", signals).data)


class CommandSigner:
    """The host side: authenticates each command for ``device_id`` under ``key`` with the
    next freshness value (``last`` + 1; the lab keeps ``last`` between sessions as it keeps
    the jackpot panel's, :mod:`feltlab.rig.protocol.freshness`)."""

    def __init__(self, codec: Codec, key: bytes, device_id: int, last: int = 0) -> None:
        if not 0 <= last < _FV_MAX:
            raise ValueError("the last freshness value must fit 64 bits")
        self.codec = codec
        self._key = key
        self.device_id = device_id
        self.last = last

    def __repr__(self) -> str:
        return f"CommandSigner(device_id=0x{self.device_id:08X}, last={self.last})"

    def sign(
        self,
        opcode: int,
        arg8: int = 0,
        arg32: int = 0,
        request_id: int = 1,
        *,
        freshness: int | None = None,
    ) -> AuthCommand:
        """The AuthCommand of one command, at ``freshness`` (default: the next value)."""
        if freshness is None:
            self.last += 1
            freshness = self.last
        cmd = {
            "RequestId": request_id,
            "Opcode": int(opcode),
            "ProtocolMajor": PROTOCOL_MAJOR,
            "Arg8": arg8,
            "Arg32": arg32,
        }
        tag = command_tag(
            self._key,
            self.codec.base + 1,
            self.device_id,
            freshness,
            command_bytes(self.codec, cmd),
        )
        return AuthCommand(request_id, int(opcode), arg8, arg32, freshness, self.device_id, tag)

    def wrap(self, msg: can.Message) -> can.Message:
        """The AuthCommand frame of a plain Command frame ``msg`` (a client's hook: every
        send, retries included, is authenticated with a new freshness value)."""
        s = self.codec.decode(msg)
        if s is None or s.name != "Command":
            raise ValueError("only a Command frame is authenticated")
        c = s.signals
        return self.sign(c["Opcode"], c["Arg8"], c["Arg32"], c["RequestId"]).message(self.codec)


class CommandVerifier:
    """The device side: verifies AuthCommands for ``device_id`` under ``key``; ``last`` is
    the last accepted freshness value (non-volatile: a reboot keeps it).  ``tag_bytes``: the
    tag bytes compared (32: the full tag; a flawed device compares fewer)."""

    def __init__(
        self,
        codec: Codec,
        key: bytes,
        device_id: int,
        *,
        tag_bytes: int = TAG_BYTES,
        check_freshness: bool = True,
        history: int = 64,
    ) -> None:
        self.codec = codec
        self._key = key
        self.device_id = device_id
        self.tag_bytes = tag_bytes
        self.check_freshness = check_freshness
        self.last = 0
        self._seen: OrderedDict[int, bytes] = OrderedDict()
        self._history = history

    def __repr__(self) -> str:
        return f"CommandVerifier(device_id=0x{self.device_id:08X}, last={self.last})"

    def verify(self, cmd: AuthCommand) -> None:
        """Accept ``cmd`` (its freshness becomes the last accepted) or raise
        :class:`AuthFailure` with the reason: version, device id, tag (constant-time
        compare), then freshness."""
        if cmd.version != AUTH_VERSION:
            raise AuthFailure(AuthRefusal.BAD_VERSION, f"AuthVersion {cmd.version} unknown")
        if cmd.device_id != self.device_id:
            raise AuthFailure(
                AuthRefusal.WRONG_DEVICE,
                f"authenticated for device 0x{cmd.device_id:08X}, not 0x{self.device_id:08X}",
            )
        want = command_tag(
            self._key,
            self.codec.base + 1,
            cmd.device_id,
            cmd.freshness,
            command_bytes(self.codec, cmd.command_signals()),
            cmd.version,
        )
        n = self.tag_bytes
        if (n == TAG_BYTES and cmd.tag_length != TAG_BYTES) or not hmac.compare_digest(
            cmd.tag[:n], want[:n]
        ):
            raise AuthFailure(AuthRefusal.BAD_MAC, "the tag does not verify")
        if self.check_freshness and cmd.freshness <= self.last:
            if self._seen.get(cmd.freshness) == cmd.tag:
                raise AuthFailure(
                    AuthRefusal.REPLAYED, f"freshness {cmd.freshness} was accepted before"
                )
            raise AuthFailure(
                AuthRefusal.REORDERED,
                f"freshness {cmd.freshness} is not newer than the last accepted {self.last}",
            )
        self.last = max(self.last, cmd.freshness)
        self._seen[cmd.freshness] = cmd.tag
        while len(self._seen) > self._history:
            self._seen.popitem(last=False)


__all__ = [
    "AUTH_VERSION",
    "TAG_BYTES",
    "AuthCommand",
    "AuthFailure",
    "AuthRefusal",
    "CommandSigner",
    "CommandVerifier",
    "command_bytes",
    "command_tag",
    "tag_of",
]
