"""feltlab installs and imports from outside the checkout, as a wheel and as an editable install.

Each case makes a plain ``python -m venv`` in tmp_path, installs a copy of the checkout with the
venv's own pip (normal build isolation: setuptools and cffi come from the index or pip's cache),
then, from a working directory that is not the checkout, imports every subpackage, shuffles a
shoe and runs the ``feltlab`` console script.  The three cases share one venv holding
feltlab's dependencies (exactly ``[project] dependencies`` of pyproject.toml, installed once by
the venv's pip), and each uninstalls feltlab when done, so that the next starts from the same
venv without it: a dependency missing from pyproject.toml still fails the imports, and what
any case left behind would fail the next one's check that every module comes from its own
install, never pass it.  The copy holds the files git would commit
(tracked plus untracked-but-not-ignored), so no build output lands in the real checkout and a
file that exists only as ignored build output cannot make the test pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBPACKAGES = (
    "feltlab",
    "feltlab.math",
    "feltlab.simulation",
    "feltlab.cli",
    "feltlab.cli.render",
    "feltlab.plugins",
    "feltlab.rig",
    "feltlab.rig.cli",
    "feltlab.rig.bus",
    "feltlab.rig.protocol",
    "feltlab.rig.devices",
    "feltlab.rig.clients",
    "feltlab.rig.certify",
    "feltlab.rig.live",
    "feltlab.rig.explore",
    "feltlab.rig.kinds",
    "feltlab.native",
    "feltlab.native._core",
)
# The source folders must never be importable under their own names from an install.
SOURCE_FOLDERS = ("sdk", "plugins", "rig", "native")
PIP_TIMEOUT = 600  # seconds per pip call: a hung index fails the test instead of hanging CI
# pip byte-compiles every installed file (scipy's, matplotlib's) unless told not to: what the
# test checks is what imports, which Python compiles as it goes, not the .pyc pip would write
NO_COMPILE = "--no-compile"

PROBE = r"""
import importlib, importlib.util, json, sys
files = {n: importlib.import_module(n).__file__ for n in sys.argv[1].split(",")}
stray = [n for n in sys.argv[2].split(",") if importlib.util.find_spec(n) is not None]
import numpy as np
import feltlab
from feltlab import native
batch = native.shuffle_batch(native.Xoshiro256StarStar(7), 2, decks=6, ids=True)
single = native.new_shoe(6, ids=True)
native.shuffle(single, native.ChaCha20(7))
print(json.dumps({
    "files": files,
    "stray": stray,
    "version": feltlab.__version__,
    "core": native.core_info(),
    "batch_dtype": str(batch.dtype),
    "batch": batch.tolist(),
    "single": single.tolist(),
}))
"""


def _project_version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def _clean_env() -> dict[str, str]:
    """The environment without anything that would let the checkout or another venv leak in."""
    drop = {
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "VIRTUAL_ENV",
        "PIP_USER",
        "PIP_TARGET",
        "PIP_PREFIX",
        "PIP_REQUIRE_VIRTUALENV",
        "__PYVENV_LAUNCHER__",
    }
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_NO_INPUT"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list[str | Path], cwd: Path, timeout: float = PIP_TIMEOUT) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} (in {cwd}) exited {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
    )
    return proc.stdout


def _copy_checkout(dest: Path) -> Path:
    """Copy the files git would commit (tracked, plus untracked files not ignored) to dest."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the checkout's files")
    proc = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout: {proc.stderr.decode(errors='replace')}")
    copied = 0
    for raw in proc.stdout.split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        src = ROOT / rel
        if not src.is_file():  # deleted in the working tree but still in the index
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        copied += 1
    assert (dest / "pyproject.toml").is_file() and copied > 10, f"copied only {copied} files"
    assert not list((dest / "native").glob("_core*.so")), "a compiled module was copied"
    return dest


def _project_dependencies() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def _make_venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", path], cwd=path.parent, timeout=300)
    python = path / "bin" / "python"
    assert python.is_file(), f"no interpreter in the new venv {path}"
    return python


def _check_installed(venv: Path, workdir: Path, expected_root: Path, version: str) -> None:
    """Import every subpackage, shuffle, and run the console script, all from workdir."""
    python = venv / "bin" / "python"
    # -I: isolated mode, so neither the working directory nor PYTHON* variables reach sys.path.
    out = _run(
        [python, "-I", "-c", PROBE, ",".join(SUBPACKAGES), ",".join(SOURCE_FOLDERS)],
        cwd=workdir,
    )
    probe = json.loads(out)

    for name, file in probe["files"].items():
        assert file is not None, f"{name} imported as a namespace package, not from the install"
        assert Path(file).resolve().is_relative_to(expected_root.resolve()), (
            f"{name} came from {file}, not from {expected_root}"
        )
        assert not Path(file).resolve().is_relative_to(ROOT), f"{name} leaked from the checkout"
    core_file = Path(probe["files"]["feltlab.native._core"])
    assert core_file.suffix == ".so", f"feltlab.native._core is not compiled: {core_file}"
    assert probe["stray"] == [], f"source folders importable by their own names: {probe['stray']}"

    assert probe["version"] == version
    assert probe["core"]["version"] == version
    assert probe["core"]["compiler"] and probe["core"]["flags"]
    if os.environ.get("FELTLAB_NATIVE_ARCH") != "1":  # never in a build meant for others
        assert "-march=native" not in probe["core"]["flags"]

    ids = list(range(312))
    assert probe["batch_dtype"] == "uint16"
    assert len(probe["batch"]) == 2
    for shoe in [*probe["batch"], probe["single"]]:
        assert len(shoe) == 312
        assert sorted(shoe) == ids, "a shuffled 6-deck shoe is not a permutation of 0..311"
        assert shoe != ids, "the shoe came back in new-shoe order"
    assert probe["batch"][0] != probe["batch"][1], "two rows of a batch are identical"

    feltlab = venv / "bin" / "feltlab"
    assert feltlab.is_file(), "the feltlab console script was not installed"
    assert _run([feltlab, "--version"], cwd=workdir).strip() == f"feltlab, version {version}"
    info = json.loads(_run([feltlab, "info", "--json"], cwd=workdir))
    assert info["feltlab"] == version
    assert info["core"] == probe["core"]
    assert "xoshiro256**" in info["rngs"] and "chacha20" in info["rngs"]
    assert isinstance(info["plugins"], list)


def _check_wheel_contents(wheel: Path, version: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = zf.read(entry_points).decode()
    assert wheel.name.startswith(f"feltlab-{version}-")
    for required in (
        "feltlab/__init__.py",
        "feltlab/py.typed",
        "feltlab/cli/__init__.py",
        "feltlab/cli/render/simulation.py",
        "feltlab/math/parsheet.py",
        "feltlab/simulation/run.py",
        "feltlab/rig/cli/certify.py",
        "feltlab/plugins/__init__.py",
        "feltlab/rig/__init__.py",
        "feltlab/rig/protocol/feltlab_v2.dbc",
        "feltlab/rig/cli/render/templates/report.html.j2",
        "feltlab/rig/certify/profiles/batch6.toml",
        "feltlab/rig/live/templates/index.html",
        "feltlab/rig/live/static/live.js",
        "feltlab/native/__init__.py",
        "feltlab/native/core.py",
        "feltlab/native/include/feltlab_core.h",
        "feltlab/engine/table.py",
        "feltlab/conformance/__init__.py",
        "feltlab/scaffold/templates/plugin_round_end.py.tmpl",
        "feltlab/scaffold/templates/pyproject.toml.tmpl",
        "feltlab/submission/certificate.py",
        "feltlab/cli/render/templates/certificate.html.j2",
        "feltlab/cli/render/templates/certificate.md.j2",
    ):
        assert required in names, f"{required} missing from {wheel.name}"
    assert any(n.startswith("feltlab/native/_core") and n.endswith(".so") for n in names)
    top = {n.split("/", 1)[0] for n in names}
    assert top <= {"feltlab", f"feltlab-{version}.dist-info"}, f"stray top-level entries: {top}"
    assert not [n for n in names if "/tests/" in n or n.endswith("test_core.c")]
    assert "feltlab = feltlab.cli:main" in scripts
    assert "batch = feltlab.rig.kinds.batch:BATCH" in scripts  # the device kinds' entry points


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain venv with feltlab's dependencies and no feltlab; each test that installs
    feltlab into it uninstalls it afterwards (made once: about 19 s of CPU a venv)."""
    path = tmp_path_factory.mktemp("packaging") / "venv"
    python = _make_venv(path)
    _run([python, "-m", "pip", "install", NO_COMPILE, *_project_dependencies()], cwd=path.parent)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["wheel", "editable", "editable-strict"])
def test_install_and_import_outside_checkout(mode: str, venv: Path, tmp_path: Path) -> None:
    version = _project_version()
    started = time.perf_counter()
    src = _copy_checkout(tmp_path / "src")
    python = venv / "bin" / "python"
    try:
        _install_and_check(mode, python, venv, src, version, tmp_path)
    finally:
        _run([python, "-m", "pip", "uninstall", "--yes", "feltlab"], cwd=tmp_path)
    elapsed = time.perf_counter() - started
    print(f"{mode} install and checks: {elapsed:.1f} s")


def _install_and_check(
    mode: str, python: Path, venv: Path, src: Path, version: str, tmp_path: Path
) -> None:
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()

    if mode == "wheel":
        wheelhouse = tmp_path / "wheelhouse"
        _run([python, "-m", "pip", "wheel", "--no-deps", "-w", wheelhouse, src], cwd=workdir)
        wheels = sorted(wheelhouse.glob("feltlab-*.whl"))
        assert len(wheels) == 1, f"expected one feltlab wheel, got {wheels}"
        _check_wheel_contents(wheels[0], version)
        _run([python, "-m", "pip", "install", NO_COMPILE, wheels[0]], cwd=workdir)
        site = Path(
            _run(
                [python, "-I", "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                cwd=workdir,
            ).strip()
        )
        expected_root = site
    else:
        strict = ["--config-settings", "editable_mode=strict"] if mode == "editable-strict" else []
        _run([python, "-m", "pip", "install", NO_COMPILE, "-e", src, *strict], cwd=workdir)
        # The editable build puts the compiled module into the copy's native/ (docs/design.md).
        assert list((src / "native").glob("_core*.so")), "no compiled module in the copy's native/"
        expected_root = src
        if strict:
            # make setup's mode: a static link tree that mypy, pyright and IDEs follow, and no
            # import-hook finder (which no static tool reads)
            site = Path(
                _run(
                    [python, "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    cwd=workdir,
                ).strip()
            )
            assert not list(site.glob("__editable___*finder.py")), "strict mode left a finder"
            trees = list((src / "build").glob("__editable__.feltlab-*/feltlab"))
            assert len(trees) == 1, f"expected one link tree under {src / 'build'}: {trees}"
            assert (trees[0] / "rig" / "plugin.py").resolve() == (src / "rig" / "plugin.py")

    _check_installed(venv, workdir, expected_root, version)
