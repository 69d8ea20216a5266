"""Misbehaving simulated devices for deterministic simulation testing (docs/certification.md,
"Deterministic simulation testing"): :func:`misbehaving_device` makes a subclass of a simulated
device kind (:mod:`feltlab.rig.devices`) with one :class:`Misbehaviour` of the hardening issue
(issue 14) or of the verdicts issue (issue 13): an absurd shuffle duration announced in the
acknowledgement, a shoe re-sent with different content, replies repeated or sent late, a
spontaneous reboot, a replayed jackpot result.  The device also keeps its ground truth (every
shoe it shuffled, by shoe number) for the explorer's invariants.  The chaos on the wire is
:mod:`feltlab.rig.bus.chaos`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from feltlab.rig.devices.base import SimDevice
from feltlab.rig.kinds import get_kind
from feltlab.rig.protocol.codec import Channel, Opcode, Result, ShoePayload, State

#: what a misbehaving device does (``at``: the shoe or draw it starts with, 1-based).
MISBEHAVIOURS = (
    "absurd_duration_lie",  # batch: announces an absurd shuffle duration, then is READY
    "absurd_duration_stall",  # batch: announces an absurd duration and never becomes READY
    "resend_shoe_changed",  # batch: sends the shoe again, same number, two cards swapped
    "repeat_replies",  # any: every Ack is sent twice
    "late_reply",  # batch: the READ_SHOE of one shoe is answered after the host's timeout
    "spontaneous_reboot",  # any: the device reboots by itself once
    "replay_result",  # jackpot: one result is replaced by an earlier signed one
    "reply_latency",  # batch: every command answered ``delay`` s late
)

#: 2^32 - 1 ms (about 49.7 days): the largest shuffle duration an Ack can announce.
ABSURD_MS = 0xFFFFFFFF


@dataclass(frozen=True)
class Misbehaviour:
    """One misbehaviour (:data:`MISBEHAVIOURS`) starting at sample ``at`` (1-based shoe or
    draw); ``delay`` (seconds) is how late a ``late_reply`` comes, or every reply of a
    ``reply_latency`` device."""

    name: str
    at: int = 1
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in MISBEHAVIOURS:
            raise ValueError(f"unknown misbehaviour {self.name!r}; choose {MISBEHAVIOURS}")


class GroundTruth:
    """What a simulated device really did: each shoe it shuffled (codes, decks) by shoe
    number, prize draws, reboots and how often it misbehaved."""

    def __init__(self) -> None:
        self.shoes: dict[int, tuple[bytes, bytes]] = {}
        self.devices = 0
        self.misbehaved = 0
        self.reboots = 0


def misbehaving_device(
    kind: str, truth: GroundTruth, misbehaviour: Misbehaviour | None
) -> type[SimDevice]:
    """A subclass of the simulated device of ``kind`` that records its ground truth in
    ``truth`` and applies ``misbehaviour`` (None: a well-behaved device)."""
    base_cls: Any = get_kind(kind).simulator
    mb = misbehaviour

    def init(self: Any, *args: Any, **kw: Any) -> None:
        base_cls.__init__(self, *args, **kw)
        truth.devices += 1
        self._mb_done = False
        self._mb_samples = 0

    def active(self: Any, sample: int) -> bool:
        return mb is not None and not self._mb_done and sample >= mb.at

    def ack(self: Any, rid: int, op: int, result: Result, value: int = 0) -> None:
        if (
            mb is not None
            and mb.name.startswith("absurd_duration")
            and op == Opcode.SHUFFLE
            and result == Result.OK
            and self._mb_pending
        ):
            value = ABSURD_MS
        base_cls._ack(self, rid, op, result, value)
        if mb is not None and mb.name == "repeat_replies" and self._mb_samples >= mb.at:
            truth.misbehaved += 1
            base_cls._ack(self, rid, op, result, value)

    ns: dict[str, Any] = {"__init__": init, "_mb_active": active, "_ack": ack}
    ns["_mb_pending"] = False

    extra = get_kind(kind).misbehave
    if extra is not None:
        ns.update(extra(base_cls, truth, mb))

    return type(f"Explore{base_cls.__name__}", (base_cls,), ns)


def batch_misbehaviour(
    base_cls: Any, truth: GroundTruth, mb: Misbehaviour | None
) -> dict[str, Any]:
    """The misbehaviours of a batch shuffler (the methods of its misbehaving subclass)."""

    def shuffle(self: Any, rid: int, op: int, cut: int) -> None:
        self._mb_samples = self.shoe_count + 1
        stall = False
        if mb is not None and mb.name.startswith("absurd_duration"):
            self._mb_pending = self._mb_active(self.shoe_count + 1)
            stall = self._mb_pending and mb.name == "absurd_duration_stall"
            if self._mb_pending:
                self._mb_done = True
                truth.misbehaved += 1
        if stall:  # announce, stay BUSY for good
            saved = self.timing
            self.timing = type(saved)(
                heartbeat_period=saved.heartbeat_period,
                shuffle_duration=ABSURD_MS / 1000.0,
                card_latency=saved.card_latency,
                button_latency=saved.button_latency,
                boot_time=saved.boot_time,
            )
            try:
                base_cls._shuffle(self, rid, op, cut)
            finally:
                self.timing = saved
        else:
            base_cls._shuffle(self, rid, op, cut)
        self._mb_pending = False
        sh = self.shoe
        if sh is not None:
            truth.shoes[int(sh.shoe_number)] = (bytes(sh.codes), bytes(sh.card_decks))
        if mb is not None and mb.name == "spontaneous_reboot" and self._mb_active(self.shoe_count):
            self._mb_done = True
            truth.misbehaved += 1
            truth.reboots += 1
            self._schedule(max(self.timing.shuffle_duration, 0.0) + 0.001, self._boot)

    def execute_kind(self: Any, rid: int, op: int, a8: int, a32: int) -> bool:
        handled: bool = base_cls._execute_kind(self, rid, op, a8, a32)
        if (
            mb is not None
            and mb.name == "resend_shoe_changed"
            and op == Opcode.READ_SHOE
            and self.shoe is not None
            and self.state == State.READY
            and self._mb_active(int(self.shoe.shoe_number))
        ):
            self._mb_done = True
            truth.misbehaved += 1
            sh = self.shoe
            codes, decks = sh.codes.copy(), sh.card_decks.copy()
            i, j = 0, len(codes) - 1  # swap the top and bottom cards: still a permutation
            codes[[i, j]], decks[[i, j]] = codes[[j, i]], decks[[j, i]]
            twin = ShoePayload(sh.shoe_number, sh.decks, sh.cut_position, codes, decks)
            self._channels[Channel.SHOE].send(twin.encode())
        return handled

    def on_command(self: Any, frame: Any) -> None:
        s = frame.signals
        if mb is not None and mb.name == "reply_latency" and self.state != State.BOOT:
            self._schedule(mb.delay, lambda: base_cls._on_command(self, frame))
            return
        if (
            mb is not None
            and mb.name == "late_reply"
            and s["Opcode"] == Opcode.READ_SHOE
            and self.shoe is not None
            and self._mb_active(int(self.shoe.shoe_number))
        ):
            self._mb_done = True
            truth.misbehaved += 1
            self._schedule(mb.delay, lambda: base_cls._on_command(self, frame))
            return
        base_cls._on_command(self, frame)

    return dict(_shuffle=shuffle, _execute_kind=execute_kind, _on_command=on_command)


def jackpot_misbehaviour(
    base_cls: Any, truth: GroundTruth, mb: Misbehaviour | None
) -> dict[str, Any]:
    """The misbehaviours of a jackpot prize panel (the methods of its misbehaving subclass)."""

    def press(self: Any, rid: int | None, box: int, source: int) -> None:
        self._mb_samples = self.draws + 1
        if mb is not None and self._mb_active(self.draws + 1):
            if mb.name == "replay_result" and len(self._signed) >= 2:
                self._mb_done = True
                truth.misbehaved += 1
                self.faults["replay_result"] = 1
            elif mb.name == "spontaneous_reboot":
                self._mb_done = True
                truth.misbehaved += 1
                truth.reboots += 1
                self._schedule(0.01, self._boot)
        base_cls._press(self, rid, box, source)

    return {"_press": press}


def continuous_misbehaviour(
    base_cls: Any, truth: GroundTruth, mb: Misbehaviour | None
) -> dict[str, Any]:
    """The misbehaviours of a continuous shuffler (the methods of its misbehaving subclass)."""

    def execute_kind_c(self: Any, rid: int, op: int, a8: int, a32: int) -> bool:
        if op == Opcode.DEAL:
            self._mb_samples = self.sequence + 1
            if (
                mb is not None
                and mb.name == "spontaneous_reboot"
                and self._mb_active(self.sequence + 1)
            ):
                self._mb_done = True
                truth.misbehaved += 1
                truth.reboots += 1
                self._schedule(0.01, self._boot)
        handled: bool = base_cls._execute_kind(self, rid, op, a8, a32)
        return handled

    return {"_execute_kind": execute_kind_c}


def shoe_bytes(codes: Any, decks: Any) -> tuple[bytes, bytes]:
    """A shoe's (codes, decks) as bytes, as :class:`GroundTruth` keeps them."""
    return (
        bytes(np.asarray(codes, dtype=np.uint8)),
        bytes(np.asarray(decks, dtype=np.uint8)),
    )


__all__ = [
    "ABSURD_MS",
    "MISBEHAVIOURS",
    "GroundTruth",
    "Misbehaviour",
    "batch_misbehaviour",
    "continuous_misbehaviour",
    "jackpot_misbehaviour",
    "misbehaving_device",
    "shoe_bytes",
]
