"""Fixtures for the rig tests: unique bus names, an isolated environment, thread checks."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

import pytest


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """Every test here runs without a developer's CAN settings (tests/conftest.py)."""


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


RUN = [sys.executable, "-c", "from feltlab.cli import main; main()"]


def spawn_device(args: list[str]) -> subprocess.Popen[str]:
    """``feltlab <args>`` (e.g. ``device run ...``) in its own process, once it says ready."""
    proc = subprocess.Popen(RUN + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "device ... ready"; the process exits by --duration anyway
    assert "ready" in line, proc.stderr.read() if proc.stderr else line
    return proc


def stop_device(proc: subprocess.Popen[str]) -> str:
    """Stop a :func:`spawn_device` process (SIGTERM); returns what it printed."""
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    return out
