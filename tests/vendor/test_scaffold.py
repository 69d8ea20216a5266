"""`feltlab new wager`: the package it writes, what it refuses, and the vendor's whole first
ten minutes: install the package, run its tests, get its PAR sheet through the entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main

PIP_TIMEOUT = 300


def _new(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["new", "wager", *args])
    return result.exit_code, result.output


def test_new_wager_writes_the_package(tmp_path: Path) -> None:
    code, out = _new("red_queen", "--dir", str(tmp_path / "pkg"))
    assert code == 0, out
    root = tmp_path / "pkg"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "pyproject.toml",
        "src/feltlab_red_queen/__init__.py",
        "src/feltlab_red_queen/plugin.py",
        "src/feltlab_red_queen/py.typed",
        "tests/test_red_queen.py",
    ]
    toml = (root / "pyproject.toml").read_text()
    assert '[project.entry-points.feltlab]\nred_queen = "feltlab_red_queen.plugin"' in toml
    assert 'name = "feltlab-red-queen"' in toml
    plugin = (root / "src/feltlab_red_queen/plugin.py").read_text()
    assert "class RedQueen(WagerType):" in plugin and "@hookimpl" in plugin
    test = (root / "tests/test_red_queen.py").read_text()
    assert "class TestRedQueenConformance(WagerConformance):" in test
    assert "next: cd" in out
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select",
         "E,F,W,I,B,UP", "--line-length", "100", str(root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("7up", "not a Python identifier"),
        ("lucky-7", "not a Python identifier"),
        ("class", "not a Python identifier"),
        ("Lucky7", "use lower case"),
        ("perfect_pairs", "already installed"),
        ("lucky_ladies", "already installed"),  # the example package's, via its entry point
    ],
)
def test_new_wager_refuses_a_bad_name(tmp_path: Path, name: str, needle: str) -> None:
    code, out = _new(name, "--dir", str(tmp_path / "x"))
    assert code == 2 and needle in out, out
    assert not (tmp_path / "x").exists()


def test_new_wager_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, out = _new("lucky7", "--dir", str(tmp_path))
    assert code == 2 and "already exists and is not empty" in out, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _new("lucky7", "--dir", str(empty))[0] == 0


def _env() -> dict[str, str]:
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_USER", "PIP_TARGET", "PIP_PREFIX"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"PYTHONNOUSERSITE": "1", "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return env


@pytest.mark.slow
def test_generated_package_installs_tests_green_and_has_a_par_sheet(tmp_path: Path) -> None:
    """A fresh venv sees the project's feltlab through a .pth that adds this environment's
    site-packages as a site dir (so feltlab's editable install and entry points work without
    reinstalling it); the generated package is pip-installed into it for real."""
    code, out = _new("lucky7", "--dir", str(tmp_path / "feltlab-lucky7"))
    assert code == 0, out
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    parent = sysconfig.get_paths()["purelib"]
    Path(site, "feltlab_parent.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    env = _env()
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps",
         str(tmp_path / "feltlab-lucky7")],
        capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT, check=False,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    tests = subprocess.run(
        [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path / "feltlab-lucky7", capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "12 passed" in tests.stdout, tests.stdout  # 9 checks, PAR, protection, submission
    math = subprocess.run(
        [py, "-m", "feltlab.cli", "math", "lucky7", "--decks", "6", "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert math.returncode == 0, math.stderr
    (sheet,) = json.loads(math.stdout)
    assert sheet["wager"] == "lucky7" and sheet["decks"] == 6
    assert sheet["hit_frequency"]["exact"] == "77/311"
    plugins = subprocess.run(
        [py, "-m", "feltlab.cli", "plugins", "--json"],
        cwd=tmp_path, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    dists = {p["distribution"] for p in json.loads(plugins.stdout)["plugins"]}
    assert "feltlab-lucky7" in dists


pytest_plugins = ["pytester"]


def test_new_wager_decided_round_end_scaffolds_a_play_decided_wager(
    tmp_path: Path, pytester: pytest.Pytester
) -> None:
    """``--decided round-end``: a wager read from the round record, the dealer playing out;
    its generated tests (the conformance kit pointed at the module, as before installing it,
    and the exact PAR sheet) pass as written."""
    code, out = _new("dealer_bust", "--dir", str(tmp_path / "pkg"), "--decided", "round-end")
    assert code == 0, out
    root = tmp_path / "pkg"
    plugin = (root / "src/feltlab_dealer_bust/plugin.py").read_text()
    assert 'round_fields = ("dealer_bust",)' in plugin and "dealer_plays_out = True" in plugin
    assert "def classify_round(" in plugin and "decided = Decided.ROUND_END" in plugin
    test = (root / "tests/test_dealer_bust.py").read_text()
    test = test.replace(
        'wager = "dealer_bust"', 'wager = "dealer_bust"\n    plugin = "feltlab_dealer_bust.plugin"'
    )
    (pytester.path / "test_dealer_bust.py").write_text(test)
    pytester.syspathinsert(root / "src")
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    code, out = _new("dealer_bust", "--dir", str(tmp_path / "other"), "--decided", "later")
    assert code == 2 and "round-end" in out
