"""The rig's exception classes: each message names the problem and the fix."""

from __future__ import annotations

from feltlab.errors import DeviceError, FeltlabError


class RigError(FeltlabError):
    """Base of every error the rig raises on purpose."""


class BusSpecError(RigError, ValueError):
    """A bus specification (``interface=...,channel=...``) could not be parsed or opened."""


class ProtocolError(RigError):
    """A frame or an ISO-TP payload broke the protocol (docs/protocol.md): bad length, CRC,
    version or field value."""


class DeviceTimeout(RigError, DeviceError, TimeoutError):
    """A device did not answer within the timeout, after every retry (an SDK
    ``DeviceError``: the round engine applies rule 16.12)."""


class DeviceLost(RigError, DeviceError):
    """A device missed 3 heartbeat periods (or rebooted) and is considered lost."""


class DeviceRefused(RigError, DeviceError):
    """A device answered a command with an Ack whose Result is not OK; ``result`` holds it."""

    def __init__(self, message: str, result: int) -> None:
        super().__init__(message)
        self.result = result


class ProfileError(RigError, ValueError):
    """A device profile value has the wrong type or is out of range; the message names it."""


class ModelError(RigError, ValueError):
    """A device model name (``riffle:k=7``, ``shelf:m=10``, ...) is unknown or malformed."""


class SecurityFault(RigError, DeviceError):
    """A jackpot result failed its authentication (docs/protocol.md, "Authenticated jackpot
    results"): ``reason`` is ``forged`` (the MAC does not verify), ``replayed`` (a result
    already accepted, sent again in a later round), ``reordered`` (authentic, but older than
    a result already accepted), or ``unauthenticated`` (no MAC from a panel whose profile
    requires authentication).  An SDK ``DeviceError``: the round engine applies rule 16.12.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class DeviceKeyError(RigError, ValueError):
    """A device key (profile ``key``/``key_file``/``key_id``) is missing, unreadable or too
    short.  The message names the key id or file, never the key."""


class LimitExceeded(RigError, DeviceError):
    """The device announced or took more than a declared limit (a FAIL with the figure):
    ``what`` (e.g. ``"shuffle_cycle"``), ``value`` and ``limit`` in seconds."""

    def __init__(self, message: str, what: str, value: float, limit: float) -> None:
        super().__init__(message)
        self.what = what
        self.value = value
        self.limit = limit


class SourceError(RigError, ValueError):
    """Raw generator output could not be read as asked (docs/rng.md, "File formats"): a
    missing file, a malformed value (its line and column), a range that is not a power of
    two, or too few bits for the sequences asked."""


class DeclarationError(RigError, ValueError):
    """A seeded shuffler's declaration (``feltlab certify predict``: generator, seeding,
    shuffle) or its input is unknown, malformed or contradictory (docs/security.md)."""
