"""Issue 14, item 1: reception never dies.  Undecodable input on the bus (a udp_multicast
datagram that is no python-can message, line noise on an slcan line) and a listener that raises
are counted and recorded; python-can's Notifier thread keeps receiving (python-can #1039)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import can
import pytest

from feltlab.rig.bus.transport import DEFAULT_UDP_GROUP, Node


class _FlakyBus(can.BusABC):
    """Raises on its first two reads (as python-can's udp_multicast does on a foreign
    datagram), then yields its frames."""

    def __init__(self, frames: list[can.Message]) -> None:
        self.frames = list(frames)
        self.reads = 0
        super().__init__(channel="flaky")

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        self.reads += 1
        if self.reads <= 2:
            raise ValueError(f"unpack(b) received extra data (read {self.reads})")
        if self.frames:
            return self.frames.pop(0), False
        time.sleep(min(timeout or 0.0, 0.01))
        return None, False

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        pass


def _wait(cond: Any, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.005)
    return bool(cond())


def test_undecodable_input_is_counted_and_reception_goes_on() -> None:
    frame = can.Message(arbitration_id=0x100, data=b"\x01\x02", is_extended_id=False)
    node = Node(_FlakyBus([frame]))
    got: list[can.Message] = []
    node.add_listener(got.append)
    try:
        assert _wait(lambda: got)  # the frame after the garbage arrives
        assert got[0].arbitration_id == 0x100
        stats = node.stats()
        assert stats["rx_errors"] == 2 and stats["frames_received"] == 1
        assert "unpack(b) received extra data (read 1)" in stats["rx_error_examples"][0]
    finally:
        node.close()


def test_a_listener_that_raises_does_not_stop_the_others() -> None:
    frames = [
        can.Message(arbitration_id=0x100 + i, data=b"\x00", is_extended_id=False) for i in range(3)
    ]
    node = Node(_FlakyBus(frames))
    got: list[int] = []

    def broken(msg: can.Message) -> None:
        raise RuntimeError("a listener bug")

    node.add_listener(broken)
    node.add_listener(lambda m: got.append(m.arbitration_id))
    try:
        assert _wait(lambda: len(got) == 3)
        assert got == [0x100, 0x101, 0x102]
        assert node.stats()["listener_errors"] == 3
        node.remove_listener(broken)
        with pytest.raises(ValueError):
            node.remove_listener(broken)
    finally:
        node.close()


def test_a_foreign_datagram_on_the_udp_group_does_not_deafen_the_host() -> None:
    """A real udp_multicast group: a datagram that is no python-can message, then a frame from
    another node: the host receives the frame (before the fix its Notifier thread died)."""
    port = 43_000 + threading.get_ident() % 500
    spec = f"interface=udp_multicast,channel={DEFAULT_UDP_GROUP},port={port}"
    try:
        host = Node(spec)
    except Exception as exc:  # pragma: no cover - a machine without IPv6 multicast
        pytest.skip(f"no udp_multicast here: {exc}")
    other = Node(spec)
    got: list[can.Message] = []
    host.add_listener(got.append)
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
        for _ in range(3):
            sock.sendto(b"\xc1 line noise, not msgpack", (DEFAULT_UDP_GROUP, port, 0, 0))
        sock.close()
        assert _wait(lambda: host.stats()["rx_errors"] >= 1)
        other.send(can.Message(arbitration_id=0x123, data=b"\x07", is_extended_id=False))
        assert _wait(lambda: any(m.arbitration_id == 0x123 for m in got))
    finally:
        other.close()
        host.close()
