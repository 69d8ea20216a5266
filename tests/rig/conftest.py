"""Fixtures for the rig tests: unique bus names, an isolated environment, thread checks."""

from __future__ import annotations

import itertools
import os
import random
import threading
import time

import pytest

_counter = itertools.count()


@pytest.fixture(autouse=True)
def _no_can_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    """A developer's CAN_* variables or ~/.canrc must not leak into the tests."""
    for key in list(os.environ):
        if key.startswith("CAN_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture
def vbus() -> str:
    """A virtual bus spec no other test uses."""
    return f"interface=virtual,channel=rig-{os.getpid()}-{next(_counter)}"


@pytest.fixture
def udp_spec() -> str:
    """An interface-local IPv6 multicast bus on a random port (isolated from other runs)."""
    group = f"ff11::4645:{random.randint(1, 0xFFFF):x}"
    return f"interface=udp_multicast,channel={group},port={random.randint(20000, 60000)}"


def wait_threads_gone(before: set[threading.Thread], timeout: float = 3.0) -> list[str]:
    """Names of threads started since ``before`` still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not left or time.monotonic() > deadline:
            return [t.name for t in left]
        time.sleep(0.02)
