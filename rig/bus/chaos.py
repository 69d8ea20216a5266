"""Seeded chaos on the simulated wire for simulated campaigns (docs/certification.md,
"Deterministic simulation testing"), a pure function of its seed; the misbehaving devices are
:mod:`feltlab.rig.devices.misbehaviour`.

- :class:`WireChaos` sits on a :class:`feltlab.rig.bus.simbus.SimWire` (its ``chaos`` hook) and,
  frame by frame, loses, duplicates, delays (stale frames), reorders (a frame held back so
  that later ones overtake it), truncates or lengthens (a wrong DLC) and adds garbage frames
  on the device's arbitration ids, at the rates of a :class:`ChaosPlan`.

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


Hook = Callable[[Any], None]

__all__ = [
    "ChaosPlan",
    "WireChaos",
]
