"""Fixtures shared by the test folders: an environment free of a developer's CAN settings and
unique virtual bus names.  Folders that talk CAN opt in with an autouse fixture of their own."""

from __future__ import annotations

import ast
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import matplotlib
import pytest
from xdist.scheduler import LoadScopeScheduling

from feltlab.rig.kinds import DeviceKind, get_kind, register_kind

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
def replace_kind() -> Iterator[Callable[..., DeviceKind]]:
    """``replace_kind(name, **settings)`` registers a copy of the registered device kind
    ``name`` with ``settings`` changed (``simulator=Lagging``), ``replace_kind(name, kind)``
    registers ``kind`` (a subclass's instance) in its place: through the public registry
    (docs/design.md, "How to add a device kind"), the original put back afterwards."""
    saved: dict[str, DeviceKind] = {}

    def swap(name: str, replacement: DeviceKind | None = None, **settings: object) -> DeviceKind:
        kind = get_kind(name)
        saved.setdefault(name, kind)
        new = replacement if replacement is not None else kind.with_settings(**settings)
        return register_kind(new, replace_existing=True)

    yield swap
    for kind in saved.values():
        register_kind(kind, replace_existing=True)


@pytest.fixture
def vbus(request: pytest.FixtureRequest) -> str:
    """A virtual bus spec no other test uses."""
    folder = request.path.parent.name
    return f"interface=virtual,channel={folder}-{os.getpid()}-{next(_counter)}"


@pytest.fixture(autouse=True, scope="session")
def _feltlab_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Computed tables (feltlab.cache) go to a folder of this session, never a developer's
    ~/.cache; subprocesses inherit it.  Under pytest-xdist the workers share one folder (beside
    their own temporary folders), so that a table is computed once per run, not once per worker:
    feltlab.cache writes each file whole (a temporary file, then ``os.replace``)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "feltlab-cache"
        shared.mkdir(exist_ok=True)
        os.environ["FELTLAB_CACHE_DIR"] = str(shared)
    else:
        os.environ["FELTLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("feltlab-cache"))


@pytest.fixture(autouse=True, scope="session")
def _feltlab_lab_key(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The lab key that binds campaigns' parts (feltlab.rig.certify.binding) is one of this
    session, never a developer's: campaigns made in module fixtures and resumed or analysed
    by tests (in other HOMEs) share it; subprocesses inherit it."""
    os.environ["FELTLAB_LAB_KEY"] = str(tmp_path_factory.mktemp("feltlab-lab") / "lab.key")


def _module_shares_fixtures(path: Path) -> bool:
    """Whether the test module at ``path`` declares a fixture built once per module, class or
    package (a campaign, a corpus, an installed plugin): read from its source, since the xdist
    controller that asks has not imported it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(
            k.arg == "scope"
            and isinstance(k.value, ast.Constant)
            and k.value.value in ("module", "class", "package")
            for k in node.keywords
        ):
            return True
    return False


class _SharedFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """``make test``'s scheduler (``-n auto --dist loadgroup``): every test is a unit of its own,
    except that the tests of a module declaring a module-scoped fixture stay together on one worker,
    so that the fixture is built once, not once per worker.  (xdist's own loadgroup reads
    ``xdist_group`` marks from node ids that pytest 9.2 no longer lets it rename: pytest-xdist
    issue 1386.)  Units go out in collection order, which :func:`pytest_collection_modifyitems`
    starts with the long tests, so that no worker is left with one at the end."""

    def _split_scope(self, nodeid: str) -> str:
        if "@" in nodeid.rsplit("]", 1)[-1]:  # an xdist_group mark, where xdist can name it
            return nodeid.rsplit("@", 1)[-1]
        module = nodeid.split("::", 1)[0]
        if module not in _shares:
            _shares[module] = _module_shares_fixtures(self.config.rootpath / module)
        return module if _shares[module] else nodeid


_shares: dict[str, bool] = {}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Our scheduler for ``--dist loadgroup`` (``make test``); xdist's own for the others."""
    if config.getoption("dist") != "loadgroup":
        return None
    return _SharedFixtureScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the long tests (marked ``slow``) first, so that the scheduler hands them
    out before the short ones; a plain ``pytest`` run keeps the collection order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable
