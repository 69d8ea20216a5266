"""The security pack's checks by name, each with its CWE (MITRE's Common Weakness
Enumeration), the Deck Mate 2 finding it re-runs (IOActive, Black Hat 2023; CVE-2025-34500,
CVE-2025-34503), its remedy and the regulations that name its requirement; and a
:class:`Finding`: one check's verdict with its evidence."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

DECK_MATE = "IOActive, Deck Mate 2 (Black Hat USA 2023; CVE-2025-34500, CVE-2025-34503)"


class Verdict(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    NOT_RUN = "NOT_RUN"


@dataclass(frozen=True)
class Check:
    """One named check: ``name`` (``area.what``), ``title``, ``cwe`` (``CWE-n: title``), the
    Deck Mate 2 ``finding`` it re-runs, the ``remedy`` and the ``standards`` naming it."""

    name: str
    title: str
    cwe: str
    finding: str
    remedy: str
    standards: tuple[str, ...] = ()


_COMAR = (
    'COMAR 36.05.02.17 (Maryland): an automated card shuffler "may not provide any information"'
)

CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check(
            "update.tampered",
            "A tampered firmware package is refused",
            "CWE-347: Improper Verification of Cryptographic Signature",
            "firmware update packages were not signature-checked",
            "verify the vendor's Ed25519 (or ECDSA) signature over the whole package before "
            "reading anything else in it; refuse on failure",
        ),
        Check(
            "update.rollback",
            "An older package, or the installed one again, is refused",
            "CWE-1328: Security Version Number Mutable to Older Versions",
            "firmware update path without anti-rollback (an old, vulnerable image re-installed)",
            "keep the installed version in non-volatile memory; install only a greater one",
        ),
        Check(
            "update.other-device",
            "A package signed for another device is refused",
            "CWE-345: Insufficient Verification of Data Authenticity",
            "firmware packages not bound to the device they were issued for",
            "sign the device id into the package and compare it with the device's own",
        ),
        Check(
            "mac.truncated",
            "No authenticator is accepted on a tag short enough to forge by trying",
            "CWE-326: Inadequate Encryption Strength",
            "a truncated HMAC",
            "compare the full HMAC-SHA256 tag (256 bits; never fewer than 128) in constant "
            "time, or sign packages with Ed25519",
        ),
        Check(
            "key.shared",
            "Each device has a key of its own",
            "CWE-321: Use of Hard-coded Cryptographic Key",
            "one hard-coded AES key shared by every device",
            "derive each device's key from a vendor secret and the device id (HKDF, RFC 5869) "
            "at provisioning; sign firmware with an asymmetric key kept by the vendor",
        ),
        Check(
            "command.unauthenticated",
            "Every command sent without authentication is refused and reported",
            "CWE-306: Missing Authentication for Critical Function",
            "unauthenticated control interfaces",
            "act only on authenticated commands (protocol 2.3's AuthCommand); answer a bare "
            "Command AUTH_FAILED and report it",
            (_COMAR,),
        ),
        Check(
            "command.forged",
            "Every command with a wrong MAC is refused and reported",
            "CWE-345: Insufficient Verification of Data Authenticity",
            "unauthenticated control interfaces",
            "verify the full tag in constant time before acting",
        ),
        Check(
            "command.replayed",
            "Every authenticated command sent again is refused and reported",
            "CWE-294: Authentication Bypass by Capture-replay",
            "unauthenticated control interfaces (captured commands replayed)",
            "keep the last accepted freshness value in non-volatile memory; act only on a "
            "greater one",
        ),
        Check(
            "command.reordered",
            "Every authenticated command older than one accepted is refused and reported",
            "CWE-294: Authentication Bypass by Capture-replay",
            "unauthenticated control interfaces (commands held back and sent later)",
            "refuse a freshness value not greater than the last accepted",
        ),
        Check(
            "seed.predictable",
            "The dealt cards do not identify the generator's seed",
            "CWE-339: Small Space of Random Values (with CWE-337: Predictable Seed in "
            "PRNG, and CWE-338: Use of Cryptographically Weak PRNG)",
            "a generator seeded from a timer",
            "seed a cryptographic generator (ChaCha20, AES-CTR DRBG: SP 800-90A) with at "
            "least 128 bits from a hardware entropy source, never a timer, clock or counter",
            (_COMAR,),
        ),
        Check(
            "leak.bus",
            "Nothing on the bus outside the declared shoe report tells the dealt order",
            "CWE-200: Exposure of Sensitive Information to an Unauthorized Actor",
            "a camera whose data revealed the deck order",
            "send no card, and nothing computed from the order, outside the declared "
            "certification-mode shoe report",
            (_COMAR,),
        ),
        Check(
            "leak.timing",
            "The shuffle's duration does not depend on the dealt order",
            "CWE-208: Observable Timing Discrepancy",
            "a camera whose data revealed the deck order (here: the order in a duration)",
            "make the shuffle's duration, and when its frames are sent, independent of the "
            "order (pad to a fixed cycle)",
            (_COMAR,),
        ),
        Check(
            "probe.undeclared",
            "Undeclared ids, diagnostic and debug requests get no answer",
            "CWE-1191: On-Chip Debug and Test Interface With Improper Access Control",
            "unauthenticated control interfaces (an undocumented service left on)",
            "remove diagnostic and debug services from production firmware, or put them "
            "behind the same authentication",
            (_COMAR,),
        ),
    )
}


@dataclass
class Finding:
    """One check's outcome: its :class:`Verdict`, the ``evidence`` (lines a reader can
    verify in the record and capture) and ``figures`` (numbers, JSON-ready)."""

    check: Check
    verdict: Verdict
    evidence: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        c = self.check
        return {
            "check": c.name,
            "title": c.title,
            "verdict": str(self.verdict),
            "cwe": c.cwe,
            "deck_mate_finding": c.finding,
            "remedy": c.remedy,
            "standards": list(c.standards),
            "evidence": list(self.evidence),
            "figures": self.figures,
        }


def finding(name: str, failed: bool, evidence: list[str], **figures: Any) -> Finding:
    """The :class:`Finding` of check ``name``: FAIL if ``failed`` else PASS."""
    return Finding(CHECKS[name], Verdict.FAIL if failed else Verdict.PASS, evidence, figures)


def not_run(name: str, why: str) -> Finding:
    """Check ``name`` not run, and why (what the profile must give to run it)."""
    return Finding(CHECKS[name], Verdict.NOT_RUN, [why])


__all__ = ["CHECKS", "DECK_MATE", "Check", "Finding", "Verdict", "finding", "not_run"]
