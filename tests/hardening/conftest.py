"""Fixtures for the hardening tests: unique virtual bus names, an isolated environment."""

from __future__ import annotations

import itertools
import os

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
    return f"interface=virtual,channel=hardening-{os.getpid()}-{next(_counter)}"
