"""Misbehaving simulated devices for deterministic simulation testing (docs/certification.md,
"Deterministic simulation testing"): a :class:`MisbehaviourPlan` that a simulated device
consults at named points (its acknowledgements, each command, each sample it starts or ends)
applies one :class:`Misbehaviour` of the hardening issue (issue 14) or of the verdicts issue
(issue 13): an absurd shuffle duration announced in the acknowledgement, a shoe re-sent with
different content, replies repeated or sent late, a spontaneous reboot, a replayed jackpot
result.  The plan also keeps the device's ground truth (:class:`GroundTruth`: every shoe it
shuffled, by shoe number) for the explorer's invariants.

This module holds the points every simulator consults and the misbehaviours every kind has
(``repeat_replies``); a device kind's own misbehaviours are a subclass of
:class:`MisbehaviourPlan` in the kind's package (:meth:`feltlab.rig.kinds.base.DeviceKind.
misbehaviour`).  A device built without a plan consults one that does nothing.  The chaos on
the wire is :mod:`feltlab.rig.bus.chaos`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Misbehave(enum.StrEnum):
    """What a misbehaving device does (the kinds that have it in brackets)."""

    ABSURD_DURATION_LIE = "absurd_duration_lie"  # batch: announces an absurd duration, is READY
    ABSURD_DURATION_STALL = "absurd_duration_stall"  # batch: ... and never becomes READY
    RESEND_SHOE_CHANGED = "resend_shoe_changed"  # batch: the shoe again, two cards swapped
    REPEAT_REPLIES = "repeat_replies"  # any: every Ack is sent twice
    LATE_REPLY = "late_reply"  # batch: one READ_SHOE answered after the host's timeout
    SPONTANEOUS_REBOOT = "spontaneous_reboot"  # any: the device reboots by itself once
    REPLAY_RESULT = "replay_result"  # jackpot: one result replaced by an earlier signed one
    REPLY_LATENCY = "reply_latency"  # batch: every command answered ``delay`` s late


MISBEHAVIOURS = tuple(m.value for m in Misbehave)
"""The names of :class:`Misbehave`, in its order."""

ABSURD_MS = 0xFFFFFFFF
"""2^32 - 1 ms (about 49.7 days): the largest shuffle duration an Ack can announce."""


class Absurd(enum.Enum):
    """What a batch shuffler announces for one shuffle (:meth:`MisbehaviourPlan.
    shuffle_starts`): its true duration, an absurd one while being READY on time (``LIE``),
    or an absurd one it then takes (``STALL``)."""

    NO = "no"
    LIE = "lie"
    STALL = "stall"


@dataclass(frozen=True)
class Misbehaviour:
    """One misbehaviour (:class:`Misbehave`, or its name) starting at sample ``at`` (1-based
    shoe or draw); ``delay`` (seconds) is how late a ``late_reply`` comes, or every reply of
    a ``reply_latency`` device.  Raises ValueError for an unknown name."""

    name: Misbehave
    at: int = 1
    delay: float = 0.0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "name", Misbehave(self.name))
        except ValueError:
            raise ValueError(
                f"unknown misbehaviour {self.name!r}; choose {MISBEHAVIOURS}"
            ) from None


class GroundTruth:
    """What a simulated device really did: each shoe it shuffled (codes, decks) by shoe
    number, the devices started, reboots and how often it misbehaved."""

    def __init__(self) -> None:
        self.shoes: dict[int, tuple[bytes, bytes]] = {}
        self.devices = 0
        self.misbehaved = 0
        self.reboots = 0


class MisbehaviourPlan:
    """The misbehaviour a simulated device applies (``misbehaviour``, None: none) and the
    ground truth it records (``truth``), consulted by the device at the named points below.
    Every point does nothing here but ``repeat_replies`` (every kind has it); a kind's plan
    overrides the points of its own misbehaviours.  One plan serves the devices of a
    campaign one after another (one a collection part): :meth:`attach` starts each."""

    def __init__(
        self, misbehaviour: Misbehaviour | None = None, truth: GroundTruth | None = None
    ) -> None:
        self.misbehaviour = misbehaviour
        self.truth = truth if truth is not None else GroundTruth()
        self.done = False  # the once-only misbehaviour happened on this device
        self.samples = 0  # the sample (1-based) the device is at

    def is_(self, *which: Misbehave) -> bool:
        """The plan's misbehaviour is one of ``which``."""
        return self.misbehaviour is not None and self.misbehaviour.name in which

    def active(self, sample: int) -> bool:
        """The once-only misbehaviour is due at ``sample`` (1-based) and has not happened."""
        mb = self.misbehaviour
        return mb is not None and not self.done and sample >= mb.at

    def fire(self, *, reboot: bool = False) -> None:
        """The once-only misbehaviour happens now (a reboot: counted as one)."""
        self.done = True
        self.truth.misbehaved += 1
        if reboot:
            self.truth.reboots += 1

    # ---- the named points: every simulator
    def attach(self, device: Any) -> None:
        """A device of the campaign starts (its constructor)."""
        self.truth.devices += 1
        self.done = False
        self.samples = 0

    def ack_copies(self, device: Any) -> int:
        """How many times the device sends the Ack it is about to send (1: once)."""
        mb = self.misbehaviour
        if mb is not None and mb.name is Misbehave.REPEAT_REPLIES and self.samples >= mb.at:
            self.truth.misbehaved += 1
            return 2
        return 1

    def command_delay(self, device: Any, frame: Any) -> float | None:
        """Seconds after which the device handles the command ``frame`` (None: at once)."""
        return None

    # ---- the named points: a batch shuffler
    def shuffle_starts(self, device: Any, number: int) -> Absurd:
        """Shuffle ``number`` (1-based) starts: what the device announces (:class:`Absurd`)."""
        self.samples = number
        return Absurd.NO

    def shuffled(self, device: Any, shoe: Any) -> None:
        """The device shuffled ``shoe`` (a :class:`~feltlab.rig.protocol.codec.ShoePayload`,
        or None) and acknowledged it: its ground truth."""
        if shoe is not None:
            self.truth.shoes[int(shoe.shoe_number)] = (bytes(shoe.codes), bytes(shoe.card_decks))

    def shoe_read(self, device: Any, shoe: Any) -> None:
        """The device answered a READ_SHOE of ``shoe`` (a READY shoe)."""

    # ---- the named points: a continuous shuffler and a jackpot panel
    def dealing(self, device: Any, number: int) -> None:
        """A continuous shuffler deals card ``number`` (1-based)."""
        self.samples = number

    def pressing(self, device: Any, number: int) -> None:
        """A jackpot panel's button is pressed for draw ``number`` (1-based)."""
        self.samples = number
