"""A vendor's device-kind plugin is imported only when its kind is asked for, and within a time
limit (issue 41): a plugin whose import blocks hung every ``certify`` and ``device`` command,
the built-in kinds' and ``--help`` included, since every kind was imported on the first lookup;
an entry point named like a built-in kind was skipped without a word.

The plugins are installed as pip installs them (a ``.dist-info`` folder with its
``entry_points.txt`` beside the package, found by ``importlib.metadata`` on the path), written
by hand into a folder only the subprocesses put on their path.  Each plugin's module touches a
marker file as its first statement, so a test sees whether it was imported at all (no test
depends on the machine's speed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from feltlab.rig.profiles import PROFILE_DIR

FELTLAB = Path(sys.executable).parent / "feltlab"
LIMIT = "1"  # seconds: $FELTLAB_KIND_IMPORT_SECONDS, so a blocked import costs 1 s, not 10

PLUGINS = {
    # dist name: (entry point line, module name, module source after the marker)
    "slow-rig": ("slow = slow_rig:KIND", "slow_rig", "import time\ntime.sleep(3600)\n"),
    "shadow-rig": ("batch = shadow_rig:KIND", "shadow_rig", "KIND = None\n"),
    "misnamed-rig": (
        "misnamed = misnamed_rig:MisnamedKind",
        "misnamed_rig",
        "from feltlab.rig.kinds.batch import BatchShufflerKind\n\n\n"
        "class MisnamedKind(BatchShufflerKind):\n"
        '    name = "other"\n    label = "misnamed shuffler"\n    base = 0x700\n'
        '    command = "misnamed"\n',
    ),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the three plugins above, installed as a wheel installs them."""
    root = tmp_path_factory.mktemp("kind-imports")
    for dist, (entry, module, source) in PLUGINS.items():
        info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[feltlab.rig.kinds]\n{entry}\n")
        (root / module).mkdir()
        marker = root / f"{module}.imported"
        (root / module / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n" + source)
    batch6 = (PROFILE_DIR / "batch6.toml").read_text()
    for kind in ("slow", "misnamed"):
        (root / f"{kind}.toml").write_text(batch6.replace('kind = "batch"', f'kind = "{kind}"'))
    return root


def _feltlab(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        PYTHONPATH=str(site),
        FELTLAB_KIND_IMPORT_SECONDS=LIMIT,
        FELTLAB_STATE_DIR=str(site / "state"),
        COLUMNS="200",
    )
    return subprocess.run(
        [str(FELTLAB), *args], cwd=site, env=env, capture_output=True, text=True, timeout=120
    )


def _imported(site: Path, module: str) -> bool:
    return (site / f"{module}.imported").exists()


def _warned_of_shadow(stderr: str) -> bool:
    return (
        "the device-kind plugin batch = shadow_rig:KIND (shadow-rig) is named like feltlab's "
        "built-in kind 'batch' and is not loaded" in stderr
    )


def test_built_in_kinds_import_no_plugin(site: Path) -> None:
    """The built-ins' commands and their help import no vendor's plugin; the entry point
    named like a built-in is named on each, never loaded."""
    for _, module, _ in PLUGINS.values():
        (site / f"{module}.imported").unlink(missing_ok=True)  # another test's import
    for args in (
        ["device", "run", "batch", "--bus", "interface=virtual,channel=k41", "--duration", "0.05"],
        ["certify", "shuffler", "--help"],
        ["certify", "jackpot-panel", "--help"],
        ["device", "run", "--help"],
    ):
        run = _feltlab(site, *args)
        assert run.returncode == 0, (args, run.stderr[-2000:])
        assert "Traceback" not in run.stderr
        assert _warned_of_shadow(run.stderr), run.stderr
        assert not any(_imported(site, m) for _, m, _ in PLUGINS.values()), args
    assert "slow" in run.stdout  # device run --help offers the installed kind, not imported


def test_a_kind_whose_import_blocks_is_named_in_one_line(site: Path) -> None:
    asked = _feltlab(site, "certify", "shuffler", "--profile", "slow.toml", "--shoes", "2")
    assert asked.returncode == 2, asked.stderr[-2000:]
    errors = [ln for ln in asked.stderr.splitlines() if ln.lower().startswith("error")]
    assert len(errors) == 1 and "Traceback" not in asked.stderr, asked.stderr
    assert (
        "device kind 'slow' is installed but unusable: slow_rig:KIND (slow-rig) did not finish "
        "importing within 1 s" in errors[0]
    )
    assert _imported(site, "slow_rig") and not _imported(site, "misnamed_rig")

    device = _feltlab(site, "device", "run", "slow", "--bus", "interface=virtual,channel=k")
    assert device.returncode == 2 and "Traceback" not in device.stderr
    assert "Invalid value for KIND: device kind 'slow' is installed but unusable" in (device.stderr)


def test_a_listing_imports_every_plugin_within_its_limit(site: Path) -> None:
    """``certify --help`` needs every kind's command: the blocked plugin is left out with a
    warning, the misnamed one named, and the built-ins' commands are listed."""
    listed = _feltlab(site, "certify", "--help")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "shuffler" in listed.stdout and "jackpot-panel" in listed.stdout
    assert "misnamed" not in listed.stdout
    warnings = listed.stderr.splitlines()
    assert any(
        "device kind 'slow' left out: slow_rig:KIND (slow-rig) did not finish importing "
        "within 1 s" in w
        for w in warnings
    ), listed.stderr
    assert any(
        "device kind 'misnamed' left out: the entry point 'misnamed' (misnamed_rig:MisnamedKind "
        "(misnamed-rig)) names a kind called 'other': name the entry point after its kind" in w
        for w in warnings
    ), listed.stderr
    assert _warned_of_shadow(listed.stderr)
    assert not _imported(site, "shadow_rig")
