"""Fixtures shared by the test folders: an environment free of a developer's CAN settings and
unique virtual bus names.  Folders that talk CAN opt in with an autouse fixture of their own."""

from __future__ import annotations

import itertools
import os

import matplotlib
import pytest

# the suite runs hundreds of campaigns in its processes: their reports draw in process, with
# matplotlib imported once (tests/certify/test_report.py covers the forked AheadWorker)
matplotlib.use("Agg")

_counter = itertools.count()


@pytest.fixture
def no_can_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's CAN_* variables or ~/.canrc must not leak into the tests."""
    for key in list(os.environ):
        if key.startswith("CAN_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    # the lab's panel freshness state (feltlab.rig.protocol.freshness) goes under that HOME
    monkeypatch.delenv("FELTLAB_STATE_DIR", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


@pytest.fixture
def vbus(request: pytest.FixtureRequest) -> str:
    """A virtual bus spec no other test uses."""
    folder = request.path.parent.name
    return f"interface=virtual,channel={folder}-{os.getpid()}-{next(_counter)}"


@pytest.fixture(autouse=True, scope="session")
def _feltlab_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Computed tables (feltlab.cache) go to a folder of this session, never a developer's
    ~/.cache; subprocesses inherit it."""
    os.environ["FELTLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("feltlab-cache"))


@pytest.fixture(autouse=True, scope="session")
def _feltlab_lab_key(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The lab key that binds campaigns' parts (feltlab.rig.certify.binding) is one of this
    session, never a developer's: campaigns made in module fixtures and resumed or analysed
    by tests (in other HOMEs) share it; subprocesses inherit it."""
    os.environ["FELTLAB_LAB_KEY"] = str(tmp_path_factory.mktemp("feltlab-lab") / "lab.key")
