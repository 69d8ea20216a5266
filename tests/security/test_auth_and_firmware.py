"""Protocol 2.3's security extension: the AuthCommand's tag (a reference vector, and the
standard library's HMAC as an independent cross-check of ``cryptography``'s), the device's
verifier (each refusal's reason), firmware packages (Ed25519, CRC, tampering) and the flaw
set's named points."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from feltlab.rig.devices.security import Flaw, FlawSet, SimVendor
from feltlab.rig.errors import ProtocolError
from feltlab.rig.protocol.cmdauth import (
    AuthCommand,
    AuthFailure,
    AuthRefusal,
    CommandSigner,
    CommandVerifier,
    command_tag,
)
from feltlab.rig.protocol.codec import Codec, Opcode, Result, dbc_path
from feltlab.rig.protocol.firmware import FirmwarePackage, Scheme

KEY = bytes(range(32))
DEVICE = 0x0F3A0001


def test_command_tag_reference_vector() -> None:
    """docs/protocol.md's vector: key 00..1f, DataId 0x101, device 0x0F3A0001, FV 2^32 + 7,
    SHUFFLE with RequestId 42; the same bytes through the standard library's HMAC."""
    cmd = bytes((0x2A, 0x10, 0x02, 0, 0, 0, 0, 0))
    tag = command_tag(KEY, 0x101, DEVICE, 0x0000000100000007, cmd)
    assert tag.hex() == "a47125f1643a2c2ab0f01eebf05bdcae6efe9e774ff7496ecbd09752a8df0d4f"
    msg = bytes.fromhex("01 0101 0f3a0001 0000000100000007") + cmd
    assert tag == hmac.new(KEY, msg, hashlib.sha256).digest()


def test_the_auth_command_frame_round_trips_through_the_dbc() -> None:
    codec = Codec(0x230)
    signer = CommandSigner(codec, KEY, DEVICE)
    cmd = signer.sign(Opcode.SHUFFLE, 0, 123, request_id=9)
    msg = cmd.message(codec)
    assert (msg.arbitration_id, msg.is_fd, msg.is_extended_id, len(msg.data)) == (
        (0x231 << 18) | 0x0A17,
        True,
        True,
        64,
    )
    frame = codec.decode(msg)
    assert frame is not None and frame.name == "AuthCommand"
    assert AuthCommand.from_signals(frame.signals) == cmd


def _verify_all(verifier: CommandVerifier, cmds: list[AuthCommand]) -> list[str]:
    out = []
    for c in cmds:
        try:
            verifier.verify(c)
            out.append("ok")
        except AuthFailure as exc:
            out.append(exc.reason.name)
    return out


def test_the_verifier_names_each_refusal() -> None:
    codec = Codec(0x100)
    signer = CommandSigner(codec, KEY, DEVICE)
    a, b, c = (signer.sign(Opcode.PING, request_id=i) for i in (1, 2, 3))
    other = CommandSigner(codec, KEY, DEVICE + 1).sign(Opcode.PING, freshness=10)
    wrong = AuthCommand(4, Opcode.PING, 0, 0, 11, DEVICE, bytes(32))
    short = AuthCommand(
        5,
        Opcode.PING,
        0,
        0,
        12,
        DEVICE,
        signer.sign(Opcode.PING, request_id=5, freshness=12).tag[:2] + bytes(30),
        tag_length=2,
    )
    got = _verify_all(CommandVerifier(codec, KEY, DEVICE), [a, c, c, b, other, wrong, short])
    assert got == ["ok", "ok", "REPLAYED", "REORDERED", "WRONG_DEVICE", "BAD_MAC", "BAD_MAC"]
    # the flawed verifiers: two tag bytes, no freshness
    assert _verify_all(CommandVerifier(codec, KEY, DEVICE, tag_bytes=2), [short]) == ["ok"]
    lax = CommandVerifier(codec, KEY, DEVICE, check_freshness=False)
    assert _verify_all(lax, [c, c, b]) == ["ok", "ok", "ok"]
    assert int(AuthRefusal.UNAUTHENTICATED) == 1  # the Ack Value of docs/protocol.md


def test_firmware_packages_sign_verify_and_refuse_tampering() -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    pkg = FirmwarePackage(DEVICE, 4, b"image" * 20).signed(key)
    assert len(pkg.tag) == 64 and pkg.verify_signature(key.public_key())
    back = FirmwarePackage.decode(pkg.encode())
    assert back == pkg and back.verify_signature(key.public_key())
    changed = FirmwarePackage(DEVICE, 5, pkg.image, Scheme.ED25519, pkg.tag)  # version bumped
    assert not changed.verify_signature(key.public_key())
    other = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    assert not pkg.verify_signature(other.public_key())
    raw = bytearray(pkg.encode())
    raw[20] ^= 1
    with pytest.raises(ProtocolError, match="CRC"):
        FirmwarePackage.decode(bytes(raw))
    maced = FirmwarePackage(DEVICE, 4, b"x").maced(KEY, 2)
    assert maced.scheme == Scheme.HMAC_SHA256 and len(maced.tag) == 2


def test_the_vendor_derives_a_key_per_device_unless_shared() -> None:
    v = SimVendor(1)
    assert v.device_key(1) != v.device_key(2)
    shared = FlawSet(frozenset({Flaw.SHARED_KEY}))
    assert v.device_key(1, shared) == v.device_key(2, shared)


def test_the_flaw_points_change_nothing_without_their_flaw() -> None:
    codes = np.array([44, 3, 7], dtype=np.uint8)  # the top card is a king (rank 11)
    none = FlawSet()
    assert none.shuffle_duration(0.2, codes) == 0.2 and none.status_cards(208, codes) == 208
    leaky = FlawSet.of(["order-timing", "status-card"])
    assert leaky.shuffle_duration(0.2, codes) == pytest.approx(0.211)
    assert leaky.status_cards(208, codes) == 208 | (45 << 9)
    with pytest.raises(ValueError, match="unknown flaw 'camera'"):
        FlawSet.of(["camera"])


def test_cantools_decode_names_the_new_messages() -> None:
    """``python -m cantools decode`` on a candump log names the AuthCommand (CAN FD) and an
    Ack refusing AUTH_FAILED (docs/protocol.md)."""
    codec = Codec(0x100)
    auth = CommandSigner(codec, KEY, DEVICE).sign(Opcode.SHUFFLE, request_id=42).message(codec)
    ack = codec.encode(
        "Ack",
        {"RequestId": 42, "Opcode": 0x10, "Result": Result.AUTH_FAILED, "State": 1, "Value": 2},
    )
    log = (
        f"(1.0) vcan0 {auth.arbitration_id:08X}##1{auth.data.hex().upper()}\n"
        f"(1.1) vcan0 {ack.arbitration_id:03X}#{ack.data.hex().upper()}\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "cantools", "decode", "--no-strict", dbc_path()],
        input=log,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "AuthCommand(" in out and "Opcode: SHUFFLE" in out and "DeviceId: 255459329" in out
    assert "Result: AUTH_FAILED" in out


def test_a_panel_in_security_mode_acts_only_on_authenticated_commands() -> None:
    """The panel's commands too (issue 40): a bare ARM is refused AUTH_FAILED and the panel
    stays IDLE; the same ARM authenticated arms it; its heartbeat says minor 3."""
    from feltlab.rig.clients.panel import JackpotPanelClient
    from feltlab.rig.clock import SimClock
    from feltlab.rig.devices import JackpotPanel
    from feltlab.rig.devices.security import SecurityConfig
    from feltlab.rig.errors import DeviceRefused
    from feltlab.rig.protocol.codec import State

    clock = SimClock()
    spec = "interface=virtual,channel=sec-panel,bitrate=500000"
    vendor = SimVendor(3)
    panel = JackpotPanel(spec, clock=clock, seed=1, test_mode=False).start()
    client = JackpotPanelClient(spec, clock=clock, timeout=0.1, retries=0)
    try:
        panel.enable_security(SecurityConfig.simulated(vendor, DEVICE))
        assert client.wait_online(1.0).signals["ProtocolMinor"] == 3
        with pytest.raises(DeviceRefused, match="AUTH_FAILED"):
            client.request(Opcode.ARM, 1, 7)
        assert int(panel.state) == State.IDLE
        client.authenticate = CommandSigner(client.codec, vendor.device_key(DEVICE), DEVICE).wrap
        client.request(Opcode.ARM, 1, 7)
        assert int(panel.state) == State.ARMED
    finally:
        client.close()
        panel.stop()
