"""Authenticated jackpot results in the manner of AUTOSAR SecOC (Specification of Secure
Onboard Communication): each JackpotResult is followed by a JackpotResultMac frame carrying
a 64-bit truncated HMAC-SHA256 over the data id, the result's 8 bytes and the complete 64-bit
freshness value; the 16-bit DrawCounter is the transmitted (truncated) freshness value.

The key of a device comes from its profile (``key`` hex digits, or ``key_file``) with a
``key_id``; the key itself is never logged, never in a ``repr`` and never in a capture or a
report (only the key id is).
"""

from __future__ import annotations

import hashlib
import hmac
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from feltlab.inputs import read_regular
from feltlab.rig.errors import DeviceKeyError, SecurityFault

#: bytes of the truncated authenticator (SecOCAuthInfoTxLength = 64 bits).
MAC_BYTES = 8
#: bits of the complete freshness value kept by both sides (SecOCFreshnessValueLength).
FRESHNESS_BITS = 64
#: bits of the freshness value transmitted (the DrawCounter; SecOCFreshnessValueTxLength).
TRUNCATED_BITS = 16
#: shortest key accepted (128 bits).
MIN_KEY_BYTES = 16
#: results a receiver keeps awaiting their MAC, oldest first.  A panel's JackpotResult (11-bit
#: id) wins arbitration over its own queued JackpotResultMac (29-bit id with the same 11-bit
#: prefix, ISO 11898-1), so two boxes pressed back to back reach the host as result, result,
#: MAC, MAC; 8 covers every box a round arms at once on a table of up to 7 boxes plus a
#: repeat, and bounds the MAC candidates tried (the forgery bound in :class:`MacWindow`).
MAC_WINDOW = 8
_TRUNC_MASK = (1 << TRUNCATED_BITS) - 1
_FV_MAX = (1 << FRESHNESS_BITS) - 1


@dataclass(frozen=True)
class DeviceKey:
    """A device's HMAC-SHA256 key and its public ``key_id``; ``repr`` shows the id only.

    ``path``: the key file it was read from (None for a key given inline), where the lab
    keeps the key's sealed freshness sidecar (:mod:`feltlab.rig.protocol.freshness`)."""

    key_id: str
    key: bytes = field(repr=False)
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.key_id, str) or not self.key_id.strip():
            raise DeviceKeyError("a device key needs a non-empty key_id (a name, not the key)")
        if not isinstance(self.key, bytes) or len(self.key) < MIN_KEY_BYTES:
            raise DeviceKeyError(
                f"key {self.key_id!r} is shorter than {MIN_KEY_BYTES} bytes: use a random "
                "key of 32 bytes (64 hex digits)"
            )

    def __repr__(self) -> str:
        return f"DeviceKey(key_id={self.key_id!r})"

    @property
    def fingerprint(self) -> str:
        """The key's identity: 32 hex digits of HMAC-SHA256(key, ``"feltlab-key-fingerprint:v1"``),
        a keyed hash that names the key without revealing it (whatever its ``key_id`` or
        file).  The lab's freshness state is kept under it (issue 41)."""
        return hmac.new(self.key, b"feltlab-key-fingerprint:v1", hashlib.sha256).hexdigest()[:32]

    __str__ = __repr__


KEY_FILE_LIMIT = 4096
"""The most bytes a key file may hold (hex text of a key, whitespace allowed): a FIFO, a device
such as ``/dev/zero`` or a larger file is refused before it is read."""


def _key_bytes(text: str | bytes, where: str) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    stripped = b"".join(raw.split())
    try:
        return bytes.fromhex(stripped.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise DeviceKeyError(
            f"{where}: the key must be hex digits (e.g. 64 for a 32-byte key); a key file "
            "holds the key as hex text, never as raw bytes"
        ) from None


def load_key(profile: Mapping[str, Any], base_dir: str | Path | None = None) -> DeviceKey | None:
    """The key of a device profile's ``[device]`` table: ``key`` (hex digits) or
    ``key_file`` (a file of hex digits, never raw bytes; relative to ``base_dir``), named by
    ``key_id`` (default: the file name, or ``"profile"``).  None when neither is given.

    Raises :class:`DeviceKeyError` (naming the key id or file, never the key).
    """
    key = profile.get("key")
    key_file = profile.get("key_file")
    if key is None and key_file is None:
        return None
    if key is not None and key_file is not None:
        raise DeviceKeyError("give either key or key_file in the device profile, not both")
    if isinstance(key, DeviceKey):
        return key
    if key_file is not None:
        path = Path(str(key_file))
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        data = read_regular(path, "key file", KEY_FILE_LIMIT, DeviceKeyError)
        if data is None:
            raise DeviceKeyError(f"key file {path} does not exist; give the path of the key file")
        key_id = str(profile.get("key_id") or path.name)
        return DeviceKey(key_id, _key_bytes(data, f"key file {path}"), path.resolve())
    key_id = str(profile.get("key_id") or "profile")
    if not isinstance(key, str | bytes):
        raise DeviceKeyError(f"key {key_id!r}: give the key as a string of hex digits")
    return DeviceKey(key_id, _key_bytes(key, f"key {key_id!r}"))


def authenticator(
    key: DeviceKey | bytes, data_id: int, payload: bytes | bytearray, freshness: int
) -> bytes:
    """The truncated MAC (the first :data:`MAC_BYTES` bytes of HMAC-SHA256) over
    ``data_id`` (2 bytes, big-endian) || ``payload`` || ``freshness`` (8 bytes, big-endian):
    SecOC's DataToAuthenticator."""
    k = key.key if isinstance(key, DeviceKey) else key
    msg = data_id.to_bytes(2, "big") + bytes(payload) + freshness.to_bytes(8, "big")
    return hmac.new(k, msg, hashlib.sha256).digest()[:MAC_BYTES]


@dataclass(frozen=True)
class Verified:
    """A verified result: its complete freshness value, and ``fresh`` (False for a
    byte-identical repeat of a result accepted before)."""

    freshness: int
    fresh: bool


class FreshnessVerifier:
    """The receiver side: keeps the last accepted complete freshness value (``last``) and
    reconstructs each received one from its 16 transmitted bits as SecOC does (the smallest
    value greater than ``last`` whose low 16 bits match), then verifies the MAC.

    :meth:`verify` raises :class:`SecurityFault` with reason ``forged`` or ``reordered``, and
    returns ``Verified(fv, fresh=False)`` for a byte-identical repeat of an accepted result
    (the caller decides whether that is a retransmission or a replay).
    """

    def __init__(self, key: DeviceKey, data_id: int, last: int = 0, history: int = 1024) -> None:
        if not 0 <= last <= _FV_MAX:
            raise ValueError("the last accepted freshness value must fit 64 bits")
        self.key = key
        self.data_id = data_id
        self.last = last
        #: the value the lab had accepted before this session (feltlab.rig.protocol.freshness)
        self.start = last
        self._accepted: OrderedDict[int, bytes] = OrderedDict()
        self._history = history

    def verify(self, payload: bytes, truncated: int, mac: bytes) -> Verified:
        truncated &= _TRUNC_MASK
        last = self.last
        old = last - ((last - truncated) & _TRUNC_MASK)
        if old >= 1 and hmac.compare_digest(
            mac, authenticator(self.key, self.data_id, payload, old)
        ):
            if self._accepted.get(old) == bytes(payload) + bytes(mac):
                return Verified(old, fresh=False)
            if old <= self.start:
                raise SecurityFault(
                    f"jackpot result with freshness {old} is at or below the {self.start} "
                    "the lab accepted before this session: refused as a replay from an "
                    f"earlier session (key {self.key.key_id!r})",
                    "replayed",
                )
            raise SecurityFault(
                f"jackpot result with freshness {old} is older than the last accepted "
                f"({last}): refused as reordered (key {self.key.key_id!r})",
                "reordered",
            )
        new = last + 1 + ((truncated - last - 1) & _TRUNC_MASK)
        if new <= _FV_MAX and hmac.compare_digest(
            mac, authenticator(self.key, self.data_id, payload, new)
        ):
            self.last = new
            self._accepted[new] = bytes(payload) + bytes(mac)
            while len(self._accepted) > self._history:
                self._accepted.popitem(last=False)
            return Verified(new, fresh=True)
        raise SecurityFault(
            f"jackpot result (DrawCounter {truncated}) failed its MAC check with key "
            f"{self.key.key_id!r}: refused as forged (or the key or freshness is out of sync)",
            "forged",
        )


T = TypeVar("T")


@dataclass(frozen=True)
class MacMatch(Generic[T]):
    """What one JackpotResultMac frame did to a :class:`MacWindow`.

    ``result``: the pending result it authenticated (or, when it matched none, the oldest
    pending result, refused); ``outcome``: its :class:`Verified`, or the
    :class:`SecurityFault` that refuses it (``forged`` when the MAC matched no pending result;
    ``reordered`` or ``replayed`` when it authenticated an old freshness value); ``lost``: the
    pending results older than the matched one, whose own MAC never came (oldest first)."""

    result: T
    outcome: Verified | SecurityFault
    lost: tuple[T, ...] = ()


class MacWindow(Generic[T]):
    """The receiver's results awaiting their MAC, in arrival order (at most ``window``,
    :data:`MAC_WINDOW`), verified through ``verifier``.

    A JackpotResult and its JackpotResultMac are two frames (a secured PDU split in two), and
    the result of a later draw can overtake a queued MAC on the bus (arbitration), so a MAC is
    tried against the pending results oldest first (MACs of one panel share one id and keep
    their order): the first it verifies under (:meth:`FreshnessVerifier.verify`, which keeps
    the freshness checks: a reordered or replayed result is still refused) is its result, and
    the results older than that one lost their MAC.  A MAC that verifies under none is a
    forgery.  Trying several candidates opens no forgery path worth the name: the MAC has 64
    bits and each candidate is tried under at most 2 freshness values, so a guessed MAC passes
    with probability at most ``2 * window / 2**64`` (2^-59 for 8) per frame, and a candidate is
    only a result the receiver already holds (an attacker's own result needs its own MAC).
    """

    def __init__(self, verifier: FreshnessVerifier, window: int = MAC_WINDOW) -> None:
        if window < 1:
            raise ValueError("the MAC window must hold at least 1 result")
        self.verifier = verifier
        self.window = window
        self._pending: list[tuple[T, bytes, int]] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, result: T, payload: bytes, truncated: int) -> T | None:
        """Keep ``result`` (its 8 data bytes ``payload``, its DrawCounter ``truncated``)
        awaiting its MAC; returns the oldest pending result pushed out of a full window (its
        MAC counts as lost), else None."""
        self._pending.append((result, bytes(payload), int(truncated)))
        if len(self._pending) > self.window:
            return self._pending.pop(0)[0]
        return None

    def drain(self) -> list[T]:
        """Forget every pending result (their MAC is given up as lost), oldest first."""
        out = [r for r, _, _ in self._pending]
        self._pending.clear()
        return out

    def match(self, mac: bytes) -> MacMatch[T] | None:
        """Pair ``mac`` (:data:`MAC_BYTES` bytes) with a pending result as described above;
        None when no result is pending (a MAC without a result)."""
        first: SecurityFault | None = None
        for i, (result, payload, truncated) in enumerate(self._pending):
            try:
                outcome: Verified | SecurityFault = self.verifier.verify(payload, truncated, mac)
            except SecurityFault as exc:
                if exc.reason == "forged":
                    first = first or exc
                    continue
                outcome = exc  # authentic, but stale: reordered or replayed
            lost = tuple(r for r, _, _ in self._pending[:i])
            del self._pending[: i + 1]
            return MacMatch(result, outcome, lost)
        if first is None:
            return None
        return MacMatch(self._pending.pop(0)[0], first)


__all__ = [
    "FRESHNESS_BITS",
    "MAC_BYTES",
    "MAC_WINDOW",
    "TRUNCATED_BITS",
    "DeviceKey",
    "FreshnessVerifier",
    "MacMatch",
    "MacWindow",
    "Verified",
    "authenticator",
    "load_key",
]
