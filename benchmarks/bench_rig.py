"""The rig's throughput, loss and latency.

- ``frames/s virtual``: a sender blasts pre-encoded Card frames (8 bytes) on a virtual bus;
  a ContinuousShufflerClient decodes each one (Notifier thread -> cantools decode -> handler)
  and the time runs until the last is decoded.  Zero loss is asserted (target >= 20,000
  frames/s: more than two saturated 1 Mbit/s buses, ~8,800 frames/s each).
- ``frames/s udp_multicast``: the same over an interface-local IPv6 multicast group; udp
  drops frames in bursts, so the loss (from the frames' Sequence numbers) is measured, not
  asserted.
- ``round trip``: PING -> Ack latency percentiles per transport (virtual, udp_multicast,
  slcan through the simulated Lawicel adapter on a pty), device unpaced.

Run ``python benchmarks/bench_rig.py`` for a plain report, or through pytest-benchmark
(``make bench``); figures go to each benchmark's ``extra_info``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any

import numpy as np
import pytest

from feltlab.rig.bus.slcan_sim import SimulatedSlcanAdapter
from feltlab.rig.bus.transport import WireClock, open_bus
from feltlab.rig.clients import BatchShufflerClient, ContinuousShufflerClient
from feltlab.rig.devices import BatchShuffler, Timing
from feltlab.rig.protocol.codec import Codec

FRAMES = 50_000
UDP_FRAMES = 20_000
PINGS = 300


def _udp_spec() -> str:
    return (
        f"interface=udp_multicast,channel=ff11::4645:{random.randint(1, 0xFFFF):x},"
        f"port={random.randint(20000, 60000)}"
    )


def _virtual_spec() -> str:
    return f"interface=virtual,channel=bench-{os.getpid()}-{random.randint(0, 1 << 30)}"


def measure_frames(
    spec: str, n: int, *, settle: float = 1.0, bitrate: int | None = None
) -> dict[str, Any]:
    """Send ``n`` Card frames from a raw bus (as fast as possible, or paced to ``bitrate``
    bit/s); return frames/s decoded and the loss."""
    clock = WireClock(bitrate) if bitrate else None
    codec = Codec(0x200)
    frames = [
        codec.encode(
            "Card",
            {
                "RequestId": 0,
                "Code": i % 52,
                "Deck": 0,
                "Sequence": i & 0xFFFF,
                "Remaining": 0,
                "Slot": 0,
            },
        )
        for i in range(n)
    ]
    client = ContinuousShufflerClient(spec, timeout=1.0)
    seqs: list[int] = []
    client._handlers["Card"] = lambda f: seqs.append(f.signals["Sequence"])
    sender = open_bus(spec)
    try:
        time.sleep(0.05)
        t0 = time.perf_counter()
        for msg in frames:
            if clock is not None:
                clock.reserve(msg)
            sender.send(msg)
        t_sent = time.perf_counter()
        deadline = time.monotonic() + 30
        last, last_change = -1, time.monotonic()
        while client.counts.get("Card", 0) < n and time.monotonic() < deadline:
            got = client.counts.get("Card", 0)
            if got != last:
                last, last_change = got, time.monotonic()
            elif time.monotonic() - last_change > settle:
                break
            time.sleep(0.001)
        t_done = time.perf_counter()
        received = client.counts.get("Card", 0)
    finally:
        sender.shutdown()
        client.close()
    elapsed = t_done - t0 if received == n else (t_done - settle) - t0
    return {
        "frames": n,
        "received": received,
        "loss": (n - received) / n,
        "frames_per_s": received / max(elapsed, 1e-9),
        "send_frames_per_s": n / (t_sent - t0),
        "bitrate": bitrate,
        "reordered": int((np.diff(np.array(seqs, dtype=np.int64)) < 0).sum() > 0)
        if len(seqs) > 1 and n <= 0xFFFF
        else 0,
    }


def measure_round_trip(transport: str, pings: int = PINGS) -> dict[str, Any]:
    """PING round trips to a batch shuffler; latency percentiles in microseconds."""
    adapter = None
    if transport == "virtual":
        dev_spec = host_spec = _virtual_spec()
    elif transport == "udp_multicast":
        dev_spec = host_spec = _udp_spec()
    elif transport == "slcan":
        dev_spec = _virtual_spec()
        adapter = SimulatedSlcanAdapter(dev_spec)
        host_spec = f"interface=slcan,channel={adapter.port},bitrate=1000000"
    else:  # pragma: no cover
        raise ValueError(transport)
    dev = BatchShuffler(dev_spec, seed=1, pace=False, timing=Timing(heartbeat_period=0.5))
    dev.start()
    client = BatchShufflerClient(host_spec, timeout=1.0)
    try:
        client.wait_online(5.0)
        for _ in range(20):
            client.ping()
        rtt = np.array([client.ping() for _ in range(pings)]) * 1e6
    finally:
        client.close()
        dev.stop()
        if adapter is not None:
            adapter.close()
    return {
        "transport": transport,
        "pings": pings,
        "p50_us": float(np.percentile(rtt, 50)),
        "p90_us": float(np.percentile(rtt, 90)),
        "p99_us": float(np.percentile(rtt, 99)),
        "max_us": float(rtt.max()),
        "retransmissions": client.retransmissions,
    }


@pytest.mark.benchmark(group="rig frames")
def test_frames_per_second_virtual(benchmark: Any) -> None:
    result: dict[str, Any] = {}

    def run() -> None:
        result.update(measure_frames(_virtual_spec(), FRAMES))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    assert result["loss"] == 0.0


@pytest.mark.benchmark(group="rig frames")
def test_frames_per_second_udp_multicast(benchmark: Any) -> None:
    result: dict[str, Any] = {}

    def run() -> None:
        result.update(measure_frames(_udp_spec(), UDP_FRAMES, settle=0.5))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)


@pytest.mark.benchmark(group="rig frames")
def test_frames_per_second_udp_multicast_paced_1mbit(benchmark: Any) -> None:
    result: dict[str, Any] = {}

    def run() -> None:
        result.update(measure_frames(_udp_spec(), UDP_FRAMES, settle=0.5, bitrate=1_000_000))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)


@pytest.mark.benchmark(group="rig round trip")
@pytest.mark.parametrize("transport", ["virtual", "udp_multicast", "slcan"])
def test_round_trip(benchmark: Any, transport: str) -> None:
    result: dict[str, Any] = {}

    def run() -> None:
        result.update(measure_round_trip(transport))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)


def main() -> None:  # pragma: no cover - manual report
    v = measure_frames(_virtual_spec(), FRAMES)
    print(
        f"virtual: {v['frames_per_s']:,.0f} frames/s decoded, loss {v['loss']:.4%} "
        f"({v['received']:,}/{v['frames']:,}); sender {v['send_frames_per_s']:,.0f} frames/s"
    )
    u = measure_frames(_udp_spec(), UDP_FRAMES, settle=0.5)
    print(
        f"udp_multicast: {u['frames_per_s']:,.0f} frames/s decoded, loss {u['loss']:.4%} "
        f"({u['received']:,}/{u['frames']:,}); sender {u['send_frames_per_s']:,.0f} frames/s"
    )
    p = measure_frames(_udp_spec(), UDP_FRAMES, settle=0.5, bitrate=1_000_000)
    print(
        f"udp_multicast paced to 1 Mbit/s: {p['frames_per_s']:,.0f} frames/s decoded, "
        f"loss {p['loss']:.4%} ({p['received']:,}/{p['frames']:,})"
    )
    for t in ("virtual", "udp_multicast", "slcan"):
        r = measure_round_trip(t)
        print(
            f"round trip {t}: p50 {r['p50_us']:.0f} us, p90 {r['p90_us']:.0f} us, "
            f"p99 {r['p99_us']:.0f} us, max {r['max_us']:.0f} us ({r['pings']} pings)"
        )
    print(f"threads left: {[t.name for t in threading.enumerate()][1:]}")


if __name__ == "__main__":  # pragma: no cover
    main()
