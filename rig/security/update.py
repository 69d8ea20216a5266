"""The firmware-update and key checks of the security pack (docs/security.md): a tampered
package, an older one or the installed one replayed, another device's package, an
authenticator short enough to forge by trying (packages and commands), and a key shared by
every device (from two devices' packages, and live on a second device)."""

from __future__ import annotations

import hmac
import math

from feltlab.rig.protocol.cmdauth import TAG_BYTES, AuthCommand, CommandSigner
from feltlab.rig.protocol.codec import Codec, Opcode, Result
from feltlab.rig.protocol.firmware import FirmwarePackage, FirmwareRefusal, Scheme, package_mac
from feltlab.rig.security.findings import Finding, finding, not_run
from feltlab.rig.security.host import LabHost

#: a forgery expected sooner than this (s) at the measured attempt rate fails mac.truncated
FORGERY_FLOOR_S = 365.25 * 86400 * 100
#: a tag shorter than this (bits) fails mac.truncated whatever the rate
MIN_TAG_BITS = 128


def _refusal(value: int) -> str:
    try:
        return FirmwareRefusal(value).name
    except ValueError:
        return str(value)


def _try_package(host: LabHost, pkg: bytes, label: str) -> tuple[bool, str]:
    """Send ``pkg`` and INSTALL it: (installed?, one evidence line)."""
    before = host.firmware_version()
    host.send_package(pkg)
    result, value = host.install()
    after = host.firmware_version()
    if result == Result.OK:
        return True, f"{label}: INSTALLED (version {before} -> {after})"
    if result == Result.REJECTED:
        return False, f"{label}: refused {_refusal(value)} (version stays {after})"
    return (
        after != before,
        f"{label}: Ack result {result} value {value} (version {before} -> {after})",
    )


def tamper(pkg: FirmwarePackage) -> bytes:
    """The package's payload with one image byte changed (the tag kept)."""
    image = bytearray(pkg.image)
    image[len(image) // 2] ^= 0x5A
    return FirmwarePackage(pkg.device_id, pkg.version, bytes(image), pkg.scheme, pkg.tag).encode()


def update_checks(host: LabHost) -> list[Finding]:
    """update.tampered, update.other-device, update.rollback, in that order, then the
    vendor's valid package as the control (the path works), then that package again."""
    pk = host.target.packages
    if pk is None:
        why = "no vendor packages declared ([security] packages in the profile)"
        return [
            not_run(n, why) for n in ("update.tampered", "update.other-device", "update.rollback")
        ]
    start = host.firmware_version()
    bad, ev_t = _try_package(
        host, tamper(pk.next), f"package v{pk.next.version} with one image byte changed"
    )
    other, ev_o = _try_package(
        host,
        pk.other.encode(),
        f"package v{pk.other.version} signed for device 0x{pk.other.device_id:08X}",
    )
    old, ev_r = _try_package(host, pk.older.encode(), f"older package v{pk.older.version}")
    works, ev_c = _try_package(
        host, pk.next.encode(), f"control: the vendor's package v{pk.next.version}"
    )
    again, ev_a = _try_package(host, pk.next.encode(), f"the package v{pk.next.version} again")
    control = f"{ev_c} (installed at start: v{start})"
    if not (works or bad or other or old or again):
        why = f"the device refused every package, the vendor's valid one too: {control}"
        names = ("update.tampered", "update.other-device", "update.rollback")
        return [not_run(n, why) for n in names]
    return [
        finding("update.tampered", bad, [ev_t, control], installed_at_start=start),
        finding("update.other-device", other, [ev_o, control]),
        finding("update.rollback", old or again, [ev_r, ev_a, control]),
    ]


def _attempt_seconds(host: LabHost, package: bool) -> float:
    """The bus time (s) of one forgery attempt: a package sent and installed, or one
    AuthCommand and its answer, measured on the clock."""
    took = 0.0
    if package and host.target.packages is not None:
        took = host.send_package(tamper(host.target.packages.next))
    return took + host.round_trip(Opcode.INSTALL_FIRMWARE if package else Opcode.PING)


def _forgery_line(bits: int, seconds: float, what: str) -> tuple[str, float]:
    tries = 2.0 ** (bits - 1)
    total = tries * seconds
    return (
        f"{what}: a {bits}-bit tag is forged in 2^{bits - 1} tries on average; at the measured "
        f"{seconds * 1000:.1f} ms a try that is {_human(total)}",
        total,
    )


def _human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    years = seconds / (365.25 * 86400)
    return f"{years:.3g} years" if years < 1e6 else f"10^{math.log10(years):.0f} years"


def truncated_check(host: LabHost) -> Finding:
    """mac.truncated: does the device act on a command whose tag matches in its first 2
    bytes only (the lab, holding the key, plays the lucky guess)?  And how long is the tag
    of the vendor's MAC'd package?  The time to forge each is stated at the measured rate."""
    evidence: list[str] = []
    failed = False
    figures: dict[str, float] = {}
    # commands: the correct tag's first 2 bytes, the rest zero, TagLength 2
    rid = host.rid()
    good = host.signer.sign(Opcode.PING, 0, 0, rid)
    short = AuthCommand(
        rid,
        good.opcode,
        0,
        0,
        good.freshness,
        good.device_id,
        good.tag[:2] + bytes(TAG_BYTES - 2),
        tag_length=2,
    )
    a = host.ack(host.exchange(short.message(host.codec)), rid)
    accepted = a is not None and a.signals["Result"] == Result.OK
    per_cmd = _attempt_seconds(host, package=False)
    bits = 16 if accepted else 8 * TAG_BYTES
    line, total = _forgery_line(bits, per_cmd, "command")
    figures["command_tag_bits"] = bits
    figures["command_forgery_seconds"] = total
    evidence.append(
        ("ACCEPTED" if accepted else "refused")
        + " a PING whose tag was right in its first 2 bytes only; "
        + line
    )
    failed |= accepted
    pk = host.target.packages
    if pk is not None:
        if pk.next.scheme == Scheme.HMAC_SHA256:
            pbits = 8 * len(pk.next.tag)
            per_pkg = _attempt_seconds(host, package=True)
            line, total = _forgery_line(pbits, per_pkg, "package")
            figures["package_tag_bits"] = pbits
            figures["package_forgery_seconds"] = total
            evidence.append(f"the vendor's packages carry a {pbits}-bit HMAC tag; " + line)
            failed |= pbits < MIN_TAG_BITS or total < FORGERY_FLOOR_S
        else:
            evidence.append(
                f"the vendor's packages are {pk.next.scheme.name}-signed ({len(pk.next.tag)} bytes)"
            )
    return finding("mac.truncated", failed, evidence, **figures)


def shared_key_check(host: LabHost) -> Finding:
    """key.shared: is the second device's package's MAC verified by the first device's key
    (two devices' packages), and does the second device act on a command authenticated for
    it under the first device's key?"""
    t = host.target
    if t.second_base is None or t.second_id is None:
        return not_run(
            "key.shared", "no second device declared ([security] second_base, second_id)"
        )
    evidence: list[str] = []
    shared = False
    pk = t.packages
    if pk is not None and pk.second is not None and pk.second.scheme == Scheme.HMAC_SHA256:
        body = FirmwarePackage(
            pk.second.device_id, pk.second.version, pk.second.image, Scheme.HMAC_SHA256
        ).signed_body()
        same = hmac.compare_digest(package_mac(t.key, body)[: len(pk.second.tag)], pk.second.tag)
        shared |= same
        evidence.append(
            f"device 0x{t.second_id:08X}'s package MAC "
            + (
                f"VERIFIES under device 0x{t.device_id:08X}'s key: one key in both"
                if same
                else "does not verify under the first device's key"
            )
        )
    elif pk is not None and pk.second is not None:
        evidence.append(f"packages are {pk.second.scheme.name}-signed: no device key in them")
    codec2 = Codec(t.second_base)
    signer2 = CommandSigner(codec2, t.key, t.second_id, last=t.freshness_start + (1 << 40))
    rid = host.rid()
    msg = signer2.sign(Opcode.PING, 0, 0, rid).message(codec2)
    a = host.ack(host.exchange(msg), rid, codec2)
    acted = a is not None and a.signals["Result"] == Result.OK
    shared |= acted
    evidence.append(
        f"a PING for device 0x{t.second_id:08X} (base 0x{t.second_base:03X}) authenticated under "
        f"device 0x{t.device_id:08X}'s key: "
        + (
            "ACTED ON: the second device holds the same key"
            if acted
            else f"refused ({'no answer' if a is None else Result(a.signals['Result']).name})"
        )
    )
    return finding("key.shared", shared, evidence)


__all__ = [
    "FORGERY_FLOOR_S",
    "MIN_TAG_BITS",
    "shared_key_check",
    "tamper",
    "truncated_check",
    "update_checks",
]
