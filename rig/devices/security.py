"""A simulated device's security mode (protocol 2.3, docs/protocol.md and docs/security.md):
authenticated commands (:mod:`feltlab.rig.protocol.cmdauth`), signed firmware updates over
the LOAD channel (:mod:`feltlab.rig.protocol.firmware`), and the **declared flaw set** the
device consults at named points, so a flawed device is a hardened one with flaws declared,
never a subclass overriding private methods.

The flaws (:class:`Flaw`; each a Deck Mate 2 finding, IOActive, Black Hat 2023) and the point
that consults each:

==================  =======================  ============================================
flaw                point                    effect
==================  =======================  ============================================
unauthenticated     ``auth.required``        a bare Command is acted on
no-freshness        ``auth.freshness``       a replayed or reordered AuthCommand is acted on
truncated-mac       ``auth.tag``             2 tag bytes compared (commands and MAC'd packages)
shared-key          ``provision.key``        one key in every device (not derived per device)
unsigned-update     ``update.signature``     the package's signature is not checked
rollback            ``update.version``       an older package is installed
any-device          ``update.device``        another device's package is installed
status-card         ``status.cards``         Status ``Cards`` bits 9-15 carry the top card + 1
order-timing        ``shuffle.duration``     the shuffle takes 1 ms more per rank of the top card
debug-port          ``debug.uds``            UDS requests on 0x7E0 are answered on 0x7E8
==================  =======================  ============================================

:class:`SimVendor` is the simulated vendor: its Ed25519 signing key and its master secret,
from which each device's command key is derived (HKDF-SHA256, RFC 5869) unless the model has
the ``shared-key`` flaw.  Test keys only: derived from a public seed.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import can
import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.cmdauth import (
    TAG_BYTES,
    AuthCommand,
    AuthFailure,
    AuthRefusal,
    CommandVerifier,
)
from feltlab.rig.protocol.codec import (
    SECURITY_MINOR,
    Channel,
    Codec,
    FaultCode,
    Frame,
    Opcode,
    PayloadType,
    Result,
    Severity,
    State,
)
from feltlab.rig.protocol.firmware import FirmwarePackage, FirmwareRefusal, Scheme, package_mac

log = logging.getLogger("feltlab.rig.devices")

#: bytes a truncated-MAC device compares (a 16-bit tag)
TRUNCATED_TAG_BYTES = 2
#: the UDS (ISO 14229) request and response ids a debug-port device answers on
UDS_REQUEST_ID, UDS_RESPONSE_ID = 0x7E0, 0x7E8


class Flaw(enum.StrEnum):
    UNAUTHENTICATED = "unauthenticated"
    NO_FRESHNESS = "no-freshness"
    TRUNCATED_MAC = "truncated-mac"
    SHARED_KEY = "shared-key"
    UNSIGNED_UPDATE = "unsigned-update"
    ROLLBACK = "rollback"
    ANY_DEVICE = "any-device"
    STATUS_CARD = "status-card"
    ORDER_TIMING = "order-timing"
    DEBUG_PORT = "debug-port"


@dataclass(frozen=True)
class FlawSet:
    """The flaws a simulated device declares (empty: a hardened device).  Its methods are
    the named points a device consults."""

    flaws: frozenset[Flaw] = frozenset()

    @classmethod
    def of(cls, names: Iterable[str]) -> FlawSet:
        """The set of the named flaws.  Raises ValueError naming an unknown one."""
        out = set()
        for n in names:
            try:
                out.add(Flaw(n))
            except ValueError:
                known = ", ".join(f.value for f in Flaw)
                raise ValueError(f"unknown flaw {n!r}; choose from {known}") from None
        return cls(frozenset(out))

    def __contains__(self, flaw: object) -> bool:
        return flaw in self.flaws

    def __bool__(self) -> bool:
        return bool(self.flaws)

    def names(self) -> list[str]:
        return sorted(f.value for f in self.flaws)

    def shuffle_duration(self, seconds: float, codes: np.ndarray) -> float:
        """``shuffle.duration``: the shuffle's duration (s) for the shoe ``codes`` (top first)."""
        if Flaw.ORDER_TIMING in self.flaws and codes.size:
            return seconds + 0.001 * (int(codes[0]) // 4)
        return seconds

    def status_cards(self, cards: int, codes: np.ndarray | None) -> int:
        """``status.cards``: the Status frame's ``Cards`` value given the shoe ``codes``."""
        if Flaw.STATUS_CARD in self.flaws and codes is not None and codes.size:
            return (cards & 0x1FF) | ((int(codes[0]) + 1) << 9)
        return cards


NO_FLAWS = FlawSet()


@dataclass(frozen=True)
class SimVendor:
    """A simulated vendor (test keys from a public ``seed``): its Ed25519 signing key and the
    master secret its device keys derive from."""

    seed: int = 0
    _master: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(b"feltlab-sim-vendor:" + str(self.seed).encode()).digest()
        object.__setattr__(self, "_master", digest)

    @property
    def signing_key(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(
            hashlib.sha256(b"ed25519:" + self._master).digest()
        )

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.signing_key.public_key()

    def device_key(self, device_id: int, flaws: FlawSet = NO_FLAWS) -> bytes:
        """The command key provisioned in ``device_id`` (``provision.key``): HKDF-SHA256 of the
        master secret with the device id as info; with ``shared-key`` the same key in all."""
        if Flaw.SHARED_KEY in flaws:
            return hashlib.sha256(b"shared:" + self._master).digest()
        return HKDF(
            algorithm=hashes.SHA256(),
            length=32,
            salt=None,
            info=b"feltlab command key:" + device_id.to_bytes(4, "big"),
        ).derive(self._master)

    def package(
        self, device_id: int, version: int, image: bytes, flaws: FlawSet = NO_FLAWS
    ) -> FirmwarePackage:
        """The package the vendor issues for ``device_id``: Ed25519-signed; MAC'd under the
        device key (2-byte tag with ``truncated-mac``) for a model that uses symmetric keys."""
        pkg = FirmwarePackage(device_id, version, image)
        if Flaw.TRUNCATED_MAC in flaws or Flaw.SHARED_KEY in flaws:
            tag = TRUNCATED_TAG_BYTES if Flaw.TRUNCATED_MAC in flaws else TAG_BYTES
            return pkg.maced(self.device_key(device_id, flaws), tag)
        return pkg.signed(self.signing_key)


@dataclass(frozen=True)
class SecurityConfig:
    """A device's security mode: its ``device_id``, command ``key``, the vendor's public key,
    its installed ``firmware_version`` and its declared ``flaws``."""

    device_id: int
    key: bytes = field(repr=False)
    vendor_key: Ed25519PublicKey = field(repr=False)
    firmware_version: int = 1
    flaws: FlawSet = NO_FLAWS

    @classmethod
    def simulated(
        cls, vendor: SimVendor, device_id: int, flaws: FlawSet = NO_FLAWS, firmware_version: int = 1
    ) -> SecurityConfig:
        """The configuration ``vendor`` provisions in device ``device_id``."""
        return cls(
            device_id,
            vendor.device_key(device_id, flaws),
            vendor.public_key,
            firmware_version,
            flaws,
        )


class DeviceSecurity:
    """The security mode of one simulated device, driven by the device through callbacks:
    ``ack(rid, op, result, value)``, ``fault(code, severity, detail)``, ``run(frame)`` (act
    on an admitted Command), ``state()``, ``send(msg)`` and ``listen(fn, arbitration_id)``."""

    def __init__(
        self,
        codec: Codec,
        config: SecurityConfig,
        *,
        ack: Callable[[int, int, Result, int], None],
        fault: Callable[[FaultCode, Severity, int], None],
        run: Callable[[Frame], None],
        state: Callable[[], State],
        send: Callable[[can.Message], Any],
        listen: Callable[[Callable[[can.Message], None], int], None],
        shoe: Callable[[], np.ndarray | None],
    ) -> None:
        self.codec = codec
        self.config = config
        self.flaws = config.flaws
        self.minor = SECURITY_MINOR
        self.installed = config.firmware_version
        self.verifier = CommandVerifier(
            codec,
            config.key,
            config.device_id,
            tag_bytes=TRUNCATED_TAG_BYTES if Flaw.TRUNCATED_MAC in self.flaws else TAG_BYTES,
            check_freshness=Flaw.NO_FRESHNESS not in self.flaws,
        )
        self.refused: dict[str, int] = {}
        self._pending: bytes | None = None
        self._ack, self._fault, self._run, self._state = ack, fault, run, state
        self._send, self._shoe = send, shoe
        listen(self._on_auth_frame, codec.id_of("AuthCommand"))
        if Flaw.DEBUG_PORT in self.flaws:
            listen(self._on_uds, UDS_REQUEST_ID)

    # ------------------------------------------------------------ commands
    def admit_plain(self, rid: int, op: int) -> bool:
        """``auth.required``: may a bare Command be acted on?  Refuses it (Ack AUTH_FAILED,
        Fault SECURITY) unless the device is ``unauthenticated``."""
        if Flaw.UNAUTHENTICATED in self.flaws:
            return True
        self._refuse(rid, op, AuthRefusal.UNAUTHENTICATED, "unauthenticated")
        return False

    def _refuse(self, rid: int, op: int, reason: int, name: str) -> None:
        self.refused[name] = self.refused.get(name, 0) + 1
        self._ack(rid, op, Result.AUTH_FAILED, reason)
        self._fault(FaultCode.SECURITY, Severity.WARNING, reason | (op & 0xFF) << 8)

    def _on_auth_frame(self, msg: can.Message) -> None:
        if self._state() == State.BOOT:
            return
        frame = self.codec.decode(msg)
        if frame is None or frame.name != "AuthCommand":
            return
        cmd = AuthCommand.from_signals(frame.signals)
        try:
            self.verifier.verify(cmd)
        except AuthFailure as exc:
            log.info("security: command 0x%02X refused: %s", cmd.opcode, exc)
            self._refuse(cmd.request_id, cmd.opcode, int(exc.reason), exc.reason.name.lower())
            return
        self._run(Frame("Command", cmd.command_signals(), frame.timestamp, msg.arbitration_id))

    # ------------------------------------------------------------ firmware
    def on_payload(self, channel: Channel, data: bytes) -> bool:
        """Take a FIRMWARE payload arriving on the LOAD channel; False for any other."""
        if channel != Channel.LOAD or len(data) < 2 or data[1] != PayloadType.FIRMWARE:
            return False
        self._pending = bytes(data)
        return True

    def execute(self, rid: int, op: int, a8: int, a32: int) -> bool:
        """INSTALL_FIRMWARE and FIRMWARE_VERSION; False for another opcode."""
        if op == Opcode.FIRMWARE_VERSION:
            self._ack(rid, op, Result.OK, self.installed)
            return True
        if op != Opcode.INSTALL_FIRMWARE:
            return False
        pending, self._pending = self._pending, None
        refusal = self._check_package(pending)
        if refusal is None:
            assert pending is not None
            self.installed = FirmwarePackage.decode(pending).version
            self._ack(rid, op, Result.OK, self.installed)
        else:
            self.refused[f"firmware {refusal.name.lower()}"] = 1 + self.refused.get(
                f"firmware {refusal.name.lower()}", 0
            )
            self._ack(rid, op, Result.REJECTED, int(refusal))
            self._fault(FaultCode.SECURITY, Severity.WARNING, int(refusal) | op << 8)
        return True

    def _check_package(self, data: bytes | None) -> FirmwareRefusal | None:
        """The checks in a hardened order: signature first (no oracle on the rest)."""
        if data is None:
            return FirmwareRefusal.NO_PACKAGE
        try:
            pkg = FirmwarePackage.decode(data)
        except ProtocolError:  # a malformed payload is refused, never a crash
            return FirmwareRefusal.MALFORMED
        flaws = self.flaws
        if Flaw.UNSIGNED_UPDATE not in flaws:
            if pkg.scheme == Scheme.HMAC_SHA256:
                if Flaw.TRUNCATED_MAC not in flaws and Flaw.SHARED_KEY not in flaws:
                    return FirmwareRefusal.SCHEME_REFUSED
                n = TRUNCATED_TAG_BYTES if Flaw.TRUNCATED_MAC in flaws else TAG_BYTES
                want = package_mac(self.config.key, _unsigned(pkg).signed_body())
                if len(pkg.tag) < n or not hmac.compare_digest(pkg.tag[:n], want[:n]):
                    return FirmwareRefusal.BAD_SIGNATURE
            elif not pkg.verify_signature(self.config.vendor_key):
                return FirmwareRefusal.BAD_SIGNATURE
        if Flaw.ANY_DEVICE not in flaws and pkg.device_id != self.config.device_id:
            return FirmwareRefusal.WRONG_DEVICE
        if Flaw.ROLLBACK not in flaws and pkg.version <= self.installed:
            return FirmwareRefusal.NOT_NEWER
        return None

    # ------------------------------------------------------------ debug port
    def _on_uds(self, msg: can.Message) -> None:
        """``debug.uds``: a forgotten diagnostic service.  ReadMemoryByAddress (0x23) answers
        the shoe's first six cards; TesterPresent (0x3E) a positive response."""
        data = bytes(msg.data)
        if len(data) < 2 or msg.is_extended_id:
            return
        sid = data[1]
        if sid == 0x3E:
            out = bytes((2, 0x7E, 0))
        elif sid == 0x23:
            codes = self._shoe()
            head = bytes(int(c) for c in codes[:6]) if codes is not None else b""
            out = bytes((1 + len(head), 0x63)) + head
        else:
            out = bytes((3, 0x7F, sid, 0x11))  # serviceNotSupported
        self._send(can.Message(arbitration_id=UDS_RESPONSE_ID, data=out, is_extended_id=False))


def _unsigned(pkg: FirmwarePackage) -> FirmwarePackage:
    return FirmwarePackage(pkg.device_id, pkg.version, pkg.image, pkg.scheme)


__all__ = [
    "NO_FLAWS",
    "TRUNCATED_TAG_BYTES",
    "UDS_REQUEST_ID",
    "UDS_RESPONSE_ID",
    "DeviceSecurity",
    "Flaw",
    "FlawSet",
    "SecurityConfig",
    "SimVendor",
]
