"""A simulated batch shuffler's ``seeding`` (rig/devices/seeding.py, issue 40): each shoe is
the C core's declared shuffle of the loaded order from a seed read off the declared source;
a timer-seeded device's seed is its milliseconds since boot; bad seedings refused in one
line, in the device and in a profile."""

from __future__ import annotations

import numpy as np
import pytest

from feltlab.native import ChaCha20
from feltlab.native.seedsearch import shuffle
from feltlab.rig.certify.profile_check import check_profile
from feltlab.rig.clients.shufflers import BatchShufflerClient
from feltlab.rig.clock import SimClock
from feltlab.rig.devices import BatchShuffler
from feltlab.rig.devices.seeding import Seeding, parse_seeding
from feltlab.rig.errors import ProfileError


def test_seeding_parsed_and_refused() -> None:
    s = parse_seeding("mt19937:timer-ms:32")
    assert (s.generator, s.source, s.bits, s.direction, s.scaling) == (
        "mt19937",
        "timer-ms",
        32,
        "down",
        "modulo",
    )
    assert str(parse_seeding("glibc-rand:counter:0x10:up:rejection")) == (
        "glibc-rand:counter:16:up:rejection"
    )
    assert s.declaration() == {
        "generator": "mt19937",
        "seed_bits": 32,
        "seed_source": "timer-ms",
        "direction": "down",
        "scaling": "modulo",
    }
    for text, msg in (
        ("mt19937:timer-ms", "give GENERATOR:SOURCE:BITS"),
        ("rand48:timer-ms:20", "unknown generator 'rand48'"),
        ("mt19937:uptime:20", "unknown source 'uptime'"),
        ("mt19937:timer-ms:65", "BITS must be 1..64, got 65"),
        ("mt19937:timer-ms:x", "BITS 'x' is not an integer"),
    ):
        with pytest.raises(ValueError, match=msg):
            parse_seeding(text)
    with pytest.raises(ProfileError, match=r"\[device\] seeding: unknown source 'uptime'"):
        check_profile("p.toml", {"device": {"seeding": "mt19937:uptime:20"}})


def test_each_source_gives_its_seed() -> None:
    rng = ChaCha20(1)
    want = int(ChaCha20(1).random_raw(1)[0]) & 0xFFF
    # 12.3456789 s since boot, 1000.9 s on the device clock, the 5000th shoe
    args = (12.3456789, 1000.9, 5000, rng)
    got = {
        src: Seeding("msvc-rand", src, 12).seed(*args)
        for src in ("timer-ms", "timer-us", "clock", "counter", "entropy")
    }
    assert got == {
        "timer-ms": 12345 & 0xFFF,
        "timer-us": 12345678 & 0xFFF,
        "clock": 1000,
        "counter": 5000 & 0xFFF,
        "entropy": want,
    }


def test_a_timer_seeded_device_deals_the_declared_shuffle_of_its_uptime(vbus: str) -> None:
    """Factory order LOADed, 2.5 s of uptime, one SHUFFLE: the seed is the milliseconds
    since boot at the shuffle (mod 2^20), the shoe the C core's shuffle of that seed."""
    clock = SimClock()
    dev = BatchShuffler(vbus, clock=clock, decks=4, seed=3, seeding="msvc-rand:timer-ms:20")
    dev.start()
    cl = BatchShufflerClient(vbus, timeout=0.3, clock=clock)
    try:
        cl.wait_online(2.0)
        ids = np.arange(208)
        cl.load(ids % 52, ids // 52)
        clock.sleep(2.5)
        before = clock.now() - dev.booted_at
        cl.shuffle()
        after = clock.now() - dev.booted_at
        shoe = cl.read_shoe()
        assert dev.last_seed is not None
        assert int(before * 1000) <= dev.last_seed <= int(after * 1000) < 1 << 20
        perm = shuffle("msvc-rand", "modulo", "down", dev.last_seed, 208)
        assert np.array_equal(shoe.codes, perm % 52)
        assert np.array_equal(shoe.card_decks, perm // 52)
    finally:
        cl.close()
        dev.stop()
