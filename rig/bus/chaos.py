"""Seeded chaos for simulated campaigns (docs/certification.md, "Deterministic simulation
testing"): a misbehaving wire and misbehaving devices, each a pure function of its seed.

- :class:`WireChaos` sits on a :class:`feltlab.rig.bus.simbus.SimWire` (its ``chaos`` hook) and,
  frame by frame, loses, duplicates, delays (stale frames), reorders (a frame held back so
  that later ones overtake it), truncates or lengthens (a wrong DLC) and adds garbage frames
  on the device's arbitration ids, at the rates of a :class:`ChaosPlan`.
- :func:`misbehaving_device` makes a subclass of a simulated device kind
  (:mod:`feltlab.rig.devices`) with one :class:`Misbehaviour` of the hardening issue (issue 14)
  or of the verdicts issue (issue 13): an absurd shuffle duration announced in the
  acknowledgement, a shoe re-sent with different content, replies repeated or sent late, a
  spontaneous reboot, a replayed jackpot result.  The device also keeps its ground truth
  (every shoe it shuffled, by shoe number) for the explorer's invariants.

Randomness is Python's ``random.Random`` (Mersenne Twister) seeded by the caller: chaos only
decides which frames to disturb; the devices' own randomness stays ChaCha20.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import can
import numpy as np

from feltlab.rig.devices import DEVICE_KINDS, SimDevice
from feltlab.rig.protocol.codec import Channel, Opcode, Result, ShoePayload, State

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChaosPlan:
    """Per-frame probabilities of each disturbance (0..1), for frames sent after ``start``
    simulated seconds (so that the device can come online first), and the arbitration ids
    garbage frames are sent on (the device's).  ``delay_max`` (seconds) bounds the extra
    delay of a delayed frame; ``only_ids`` (when not empty) restricts the disturbances to
    frames on those ids."""

    drop: float = 0.0
    duplicate: float = 0.0
    delay: float = 0.0
    reorder: float = 0.0
    bad_dlc: float = 0.0
    garbage: float = 0.0
    delay_max: float = 0.05
    start: float = 0.3
    garbage_ids: tuple[int, ...] = ()
    only_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("drop", "duplicate", "delay", "reorder", "bad_dlc", "garbage"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"chaos {name} must be a probability in [0, 1], got {p}")
        if self.delay_max < 0 or self.start < 0:
            raise ValueError("chaos delay_max and start must be >= 0 seconds")

    @property
    def active(self) -> bool:
        return any(
            (self.drop, self.duplicate, self.delay, self.reorder, self.bad_dlc, self.garbage)
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["garbage_ids"] = [f"0x{i:03X}" for i in self.garbage_ids]
        d["only_ids"] = [f"0x{i:03X}" for i in self.only_ids]
        return d


class WireChaos:
    """The disturbances of a :class:`ChaosPlan` on one simulated wire, drawn from
    ``random.Random(seed)``; :attr:`counts` says how many of each it made."""

    def __init__(self, plan: ChaosPlan, seed: int, clock: Any) -> None:
        self.plan = plan
        self.rng = random.Random(seed)
        self.clock = clock
        self.counts: dict[str, int] = {}
        self._held: list[tuple[float, can.Message]] = []

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def deliveries(self, sender: Any, msg: can.Message, end: float) -> list[tuple[float, Any]]:
        """(simulated time, frame) of each delivery of ``msg``, whose last bit passes at
        ``end`` (the :class:`~feltlab.rig.bus.simbus.SimWire` hook)."""
        p, r = self.plan, self.rng
        out: list[tuple[float, can.Message]] = []
        if self._held:  # a held-back frame is overtaken by this one: deliver it after
            out.extend((end + 1e-6 * (k + 1), m) for k, (_, m) in enumerate(self._held))
            self._held = []
        eligible = self.clock.now() >= p.start and (
            not p.only_ids or msg.arbitration_id in p.only_ids
        )
        if not eligible:
            return [(end, msg), *out]
        mine: list[tuple[float, can.Message]] = []
        u = r.random()
        if u < p.drop:
            self._count("dropped")
        elif u < p.drop + p.reorder:
            self._count("reordered")
            self._held.append((end, msg))
        else:
            frame = msg
            if r.random() < p.bad_dlc:
                self._count("bad_dlc")
                frame = self._bad_dlc(msg)
            when = end
            if r.random() < p.delay:
                self._count("delayed")
                when = end + r.uniform(0.0, p.delay_max)
            mine.append((when, frame))
            if r.random() < p.duplicate:
                self._count("duplicated")
                mine.append((when + r.uniform(0.0, max(p.delay_max, 1e-4)), frame))
        if p.garbage_ids and r.random() < p.garbage:
            self._count("garbage")
            mine.append((end + r.uniform(0.0, 1e-3), self._garbage()))
        return mine + out

    def _bad_dlc(self, msg: can.Message) -> can.Message:
        data = bytes(msg.data)
        if len(data) > 1 and self.rng.random() < 0.6:
            data = data[: self.rng.randrange(0, len(data))]
        elif len(data) < 8:
            data = data + bytes(self.rng.randrange(256) for _ in range(8 - len(data)))
        else:
            data = data[:-1]
        return can.Message(
            arbitration_id=msg.arbitration_id, data=data, is_extended_id=msg.is_extended_id
        )

    def _garbage(self) -> can.Message:
        r = self.rng
        n = r.randrange(0, 9)
        return can.Message(
            arbitration_id=r.choice(self.plan.garbage_ids),
            data=bytes(r.randrange(256) for _ in range(n)),
            is_extended_id=False,
        )


# ===================================================================== misbehaving devices

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
    base_cls: Any = DEVICE_KINDS[kind]
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

    if kind == "batch":

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
            if (
                mb is not None
                and mb.name == "spontaneous_reboot"
                and self._mb_active(self.shoe_count)
            ):
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

        ns.update(_shuffle=shuffle, _execute_kind=execute_kind, _on_command=on_command)

    if kind == "jackpot":

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

        ns["_press"] = press

    if kind == "continuous":

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

        ns["_execute_kind"] = execute_kind_c

    return type(f"Explore{base_cls.__name__}", (base_cls,), ns)


def shoe_bytes(codes: Any, decks: Any) -> tuple[bytes, bytes]:
    """A shoe's (codes, decks) as bytes, as :class:`GroundTruth` keeps them."""
    return (
        bytes(np.asarray(codes, dtype=np.uint8)),
        bytes(np.asarray(decks, dtype=np.uint8)),
    )


Hook = Callable[[Any], None]

__all__ = [
    "ABSURD_MS",
    "MISBEHAVIOURS",
    "ChaosPlan",
    "GroundTruth",
    "Misbehaviour",
    "WireChaos",
    "misbehaving_device",
    "shoe_bytes",
]
