"""The bus budget, checked when a station starts: the load each socket adds to its bus, from its
profile, summed over the sockets that share a bus; a bus that cannot carry its sockets is refused
with the figures.

A socket's load in bit/s is ``(frames per sample x samples per second + heartbeats per second)
x bits per frame``:

- frames per sample: the socket's ``frames_per_sample``, else the protocol's count for its
  kind's sample (docs/protocol.md): a shoe is its SHOE_PACKED payload in ISO-TP frames (``11 +
  ceil(52 decks x 9 / 8) + 4`` bytes: a first frame of 6 bytes and consecutive frames of 7;
  6 decks: 366 bytes, 53 frames) plus the host's flow control and the SHUFFLE and READ_SHOE
  commands with their acks (5); a deal is DEAL, its ack and the Card frame (3); a prize draw is
  the button press, its result, the result's MAC and the host's ack (4); plus a PING and its
  reply every ``ping_every`` samples;
- samples per second: ``1 / seconds_per_sample`` (the socket's key: the machine's mechanical
  pace, e.g. 22 s a deck for a Deck Mate 2), else the simulated device's declared pace in the
  profile's ``[simulation]`` (``shuffle_duration``, ``card_latency``, ``button_latency``);
- heartbeats: ``1 / [device] heartbeat_period``;
- bits per frame: an 8-byte classic data frame with an 11-bit id at its worst bit stuffing,
  135 bits (ISO 11898-1; :func:`feltlab.rig.protocol.bittime.frame_bits`).

A bus's capacity is its bitrate (the bus spec's ``bitrate=``, else the first socket's profile
``[device] bitrate``, else 500 kbit/s) times :data:`MAX_LOAD`.  Sockets on no bus (the simulated
device on an in-process bus of its own) share nothing and are not summed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from feltlab.rig.bus.transport import BusSpec
from feltlab.rig.errors import RigError
from feltlab.rig.protocol.bittime import frame_bits
from feltlab.rig.station.config import Socket, StationError

MAX_LOAD = 0.7
"""The largest share of a bus's bitrate a station may plan to use: arbitration delays grow
steeply past it, and the devices' own timing limits assume a bus that is not saturated."""
DEFAULT_BITRATE = 500_000
SIM_PACE_KEYS = ("shuffle_duration", "card_latency", "button_latency")
"""The profile's ``[simulation]`` keys that give a simulated device's seconds a sample."""
SAMPLE_FRAMES = {"shoes": None, "deals": 3.0, "draws": 4.0}
"""Frames a sample takes, by the kind's unit (None: computed from the decks, shoes)."""


def worst_frame_bits() -> int:
    """Bits an 8-byte classic CAN frame with an 11-bit id takes at its worst stuffing (135)."""
    return frame_bits(0x7FF, bytes(8), stuffing="worst")


def shoe_frames(decks: int) -> int:
    """ISO-TP frames of a SHOE_PACKED payload of ``decks`` decks (docs/protocol.md: 6 decks,
    366 bytes, 53 frames)."""
    size = 11 + math.ceil(52 * decks * 9 / 8) + 4
    return 1 + math.ceil((size - 6) / 7)


@dataclass(frozen=True)
class SocketLoad:
    """One socket's share of its bus: frames a sample, samples and frames a second, bit/s."""

    socket: str
    frames_per_sample: float
    samples_per_second: float
    frames_per_second: float
    bits_per_second: float


def socket_load(sock: Socket, prof: Any) -> SocketLoad:
    """The load ``sock`` (with its loaded profile ``prof``) puts on its bus.  Raises
    StationError when neither the socket nor the profile gives its pace."""
    camp, device, sim = prof.campaign, prof.device, prof.simulation
    per = sock.frames_per_sample
    if per is None:
        fixed = SAMPLE_FRAMES.get(sock.unit)
        if sock.unit == "shoes":
            fixed = shoe_frames(int(device.get("decks", 6))) + 5.0
        if fixed is None:
            raise StationError(
                f"socket {sock.name!r}: no frame count is known for a sample of {sock.unit}: "
                "give frames_per_sample"
            )
        per = fixed + 2.0 / max(1, int(camp.get("ping_every", 1) or 1))
    pace = sock.seconds_per_sample
    if pace is None:
        pace = next((float(sim[k]) for k in SIM_PACE_KEYS if sim.get(k)), None)
    if pace is None or pace <= 0:
        raise StationError(
            f"socket {sock.name!r}: its profile declares no pace: give seconds_per_sample "
            "(the machine's seconds a sample)"
        )
    rate = 1.0 / pace
    heartbeats = 1.0 / float(device.get("heartbeat_period", 0.1) or 0.1)
    fps = per * rate + heartbeats
    return SocketLoad(sock.name, per, rate, fps, fps * worst_frame_bits())


def bus_key(spec: str) -> tuple[str, str, int | None]:
    """A bus spec's identity ``(interface, channel[:port])`` and its ``bitrate=`` if given
    (:class:`feltlab.rig.bus.transport.BusSpec`; a udp_multicast bus is its group and port)."""
    bs = BusSpec.parse(spec)
    port = dict(bs.options).get("port")
    channel = str(bs.channel) + (f":{port}" if port is not None else "")
    return bs.interface, channel, bs.bitrate


@dataclass(frozen=True)
class BusBudget:
    """The planned load of one bus: its sockets' loads against its capacity."""

    bus: str
    bitrate: int
    loads: tuple[SocketLoad, ...]

    @property
    def bits_per_second(self) -> float:
        return sum(x.bits_per_second for x in self.loads)

    @property
    def share(self) -> float:
        return self.bits_per_second / self.bitrate

    def describe(self) -> str:
        parts = ", ".join(
            f"{x.socket} {x.frames_per_sample:g} frames x {x.samples_per_second:.4g}/s "
            f"= {x.bits_per_second / 1000:.1f} kbit/s"
            for x in self.loads
        )
        return (
            f"bus {self.bus}: {self.bits_per_second / 1000:.1f} kbit/s of "
            f"{self.bitrate / 1000:g} kbit/s ({100 * self.share:.2f}%; {parts})"
        )


def check_budget(sockets: tuple[Socket, ...], profiles: dict[str, Any]) -> list[BusBudget]:
    """Every shared bus's budget (sockets with a ``bus``), in first-use order.  Raises
    StationError with the figures when a bus would carry more than :data:`MAX_LOAD` of its
    bitrate."""
    groups: dict[tuple[str, str], list[Socket]] = {}
    rates: dict[tuple[str, str], int] = {}
    for s in sockets:
        if s.bus is None:
            continue
        try:
            interface, channel, rate = bus_key(s.bus)
        except (ValueError, RigError) as exc:
            raise StationError(f"socket {s.name!r}: bus {s.bus!r}: {exc}") from None
        key = (interface, channel)
        groups.setdefault(key, []).append(s)
        if key not in rates:
            dev = profiles[s.name].device
            rates[key] = rate or int(dev.get("bitrate") or DEFAULT_BITRATE)
    budgets = []
    for key, members in groups.items():
        loads = tuple(socket_load(s, profiles[s.name]) for s in members)
        budget = BusBudget(f"{key[0]}:{key[1]}", rates[key], loads)
        if budget.share > MAX_LOAD:
            raise StationError(
                f"{budget.describe()}: more than {100 * MAX_LOAD:g}% of the bus; move sockets "
                "to another bus or give the machines' real seconds_per_sample"
            )
        budgets.append(budget)
    return budgets


__all__ = [
    "MAX_LOAD",
    "BusBudget",
    "SocketLoad",
    "bus_key",
    "check_budget",
    "shoe_frames",
    "socket_load",
    "worst_frame_bits",
]
