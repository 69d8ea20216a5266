"""The rooms and arrows of docs/design.md, checked on the source: imports run one way
(plugins -> sdk -> native; rig -> sdk, native), the SDK reaches plugins only through the plugin
manager's list of built-in modules, and no module of sdk/, plugins/ or native/ is over 600
lines (rig/ is being split into its stages and joins the size check when it is)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = {
    "sdk": "feltlab",
    "plugins": "feltlab.plugins",
    "rig": "feltlab.rig",
    "native": "feltlab.native",
}
MAX_LINES = 600


def _modules(room: str) -> list[Path]:
    return sorted(p for p in (ROOT / room).rglob("*.py") if "fuzz" not in p.parts)


def _imports(path: Path) -> set[str]:
    """Every module name imported by ``path`` (absolute imports; feltlab uses no others)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _room_of(name: str) -> str | None:
    """The room a ``feltlab...`` module name belongs to."""
    if name != "feltlab" and not name.startswith("feltlab."):
        return None
    for room, package in (("plugins", "feltlab.plugins"), ("rig", "feltlab.rig"),
                          ("native", "feltlab.native")):  # fmt: skip
        if name == package or name.startswith(package + "."):
            return room
    return "sdk"


ALLOWED = {"native": {"native"}, "sdk": {"sdk", "native"}, "plugins": {"plugins", "sdk", "native"},
           "rig": {"rig", "sdk", "native"}}  # fmt: skip


@pytest.mark.parametrize("room", ROOMS)
def test_imports_run_one_way(room: str) -> None:
    wrong = []
    for path in _modules(room):
        for name in _imports(path):
            target = _room_of(name)
            if target is not None and target not in ALLOWED[room]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not wrong, f"imports against the arrows of docs/design.md: {wrong}"


def test_sdk_reaches_plugins_only_through_the_plugin_manager() -> None:
    mentions = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _modules("sdk")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "feltlab.plugins" in line
    ]
    from feltlab.plugin_manager import BUILTIN_PLUGINS

    listed = (ROOT / "sdk" / "plugin_manager.py").read_text().splitlines()
    own = [f"sdk/plugin_manager.py:{i}" for i, line in enumerate(listed, 1)
           if line.strip().strip('",') in BUILTIN_PLUGINS]  # fmt: skip
    assert mentions == own and len(own) == len(BUILTIN_PLUGINS)


@pytest.mark.parametrize("room", ["sdk", "plugins", "native"])
def test_no_module_over_600_lines(room: str) -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules(room)
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}; split them along what they do"
