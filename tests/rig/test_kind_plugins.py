"""Device kinds are plugins (docs/design.md, "How to add a device kind"): a vendor's kind in a
package of its own, installed with pip, is found through the ``feltlab.rig.kinds`` entry-point
group and certified by ``feltlab certify`` without feltlab naming it anywhere; a broken plugin is
named in a one-line error and leaves the other kinds working.

The packages are built with pip (normal build isolation, setuptools from the index or pip's
cache, as tests/test_packaging.py) into a folder that only the subprocesses put on their path,
so the test environment itself is left as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from feltlab.rig.profiles import PROFILE_DIR

FELTLAB = Path(sys.executable).parent / "feltlab"
PIP_TIMEOUT = 600  # seconds: a hung index fails the test instead of hanging CI

ACME_MODULE = '''\
"""Acme's shuffler: feltlab's batch shuffler protocol at base 0x500, its own command."""
from pathlib import Path

from feltlab.rig.kinds.batch import BatchShufflerKind


class AcmeKind(BatchShufflerKind):
    name = "acme"
    label = "Acme shuffler"
    base = 0x500
    profile = Path(__file__).with_name("acme.toml")
    command = "acme-shuffler"
    explore_weight = 0.0
'''

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1"

[project.entry-points."feltlab.rig.kinds"]
{entry}

[tool.setuptools.package-data]
{package} = ["*.toml"]
"""


def _package(root: Path, dist: str, package: str, entry: str, files: dict[str, str]) -> Path:
    src = root / dist
    (src / package).mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT.format(dist=dist, entry=entry, package=package))
    for name, text in files.items():
        (src / package / name).write_text(text)
    return src


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding two pip-installed vendor packages: acme-rig (a working kind) and
    broken-rig (an entry point whose module fails to import)."""
    root = tmp_path_factory.mktemp("vendor-kinds")
    batch6 = (PROFILE_DIR / "batch6.toml").read_text()
    profile = (
        batch6.replace('kind = "batch"', 'kind = "acme"', 1)
        .replace("base = 0x100", "base = 0x500", 1)
        .replace(
            'name = "feltlab simulated 6-deck batch shuffler (ChaCha20, Fisher-Yates)"',
            'name = "Acme 6-deck shuffler"',
            1,
        )
    )
    assert profile.count('"acme"') == 1 and "0x500" in profile and "Acme 6-deck" in profile
    acme = _package(
        root,
        "acme-rig",
        "acme_rig",
        'acme = "acme_rig:AcmeKind"',
        {"__init__.py": ACME_MODULE, "acme.toml": profile},
    )
    broken = _package(
        root,
        "broken-rig",
        "broken_rig",
        'broken = "broken_rig:KIND"',
        {"__init__.py": "raise ImportError('needs the acme-driver package')\n"},
    )
    target = root / "site"
    for src in (acme, broken):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--target",
                target,
                src,
            ],
            check=True,
            timeout=PIP_TIMEOUT,
            capture_output=True,
        )
    return target


def _feltlab(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run(
        [str(FELTLAB), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_pip_installed_kind_is_listed_and_certified(site: Path, tmp_path: Path) -> None:
    listed = _feltlab(site, "certify", "--help", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "acme-shuffler" in listed.stdout

    run = _feltlab(
        site,
        "certify",
        "acme-shuffler",
        "--shoes",
        "40",
        "--seed",
        "3",
        "--out",
        "acme",
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode in (0, 3), run.stdout[-2000:] + run.stderr[-2000:]
    rec = json.loads((tmp_path / "acme" / "record.json").read_text())
    assert rec["kind"] == "acme"
    assert rec["device"]["label"] == "Acme shuffler"
    assert rec["device"]["base"] == "0x500"
    assert rec["device"]["profile_name"] == "Acme 6-deck shuffler"
    assert rec["collection"]["collected"] == 40
    assert rec["verdict"] in ("PASS", "INCONCLUSIVE")
    assert rec["battery"]["checks"], "the batch battery ran on the vendor's shoes"


def test_a_broken_kind_plugin_is_named_and_the_others_still_work(
    site: Path, tmp_path: Path
) -> None:
    prof = tmp_path / "broken.toml"
    batch6 = (PROFILE_DIR / "batch6.toml").read_text()
    prof.write_text(batch6.replace('kind = "batch"', 'kind = "broken"', 1))
    run = _feltlab(
        site, "certify", "shuffler", "--profile", str(prof), "--shoes", "4", cwd=tmp_path
    )
    assert run.returncode == 2
    err = run.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "'broken' is installed but unusable" in err[0]
    assert "broken_rig:KIND (broken-rig) failed to load: ImportError" in err[0]
    assert "needs the acme-driver package" in err[0]

    ok = _feltlab(
        site, "certify", "shuffler", "--shoes", "20", "--seed", "1", "--json", cwd=tmp_path
    )
    assert ok.returncode in (0, 3), ok.stderr[-2000:]
    assert json.loads(ok.stdout)["record"]["kind"] == "batch"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"command": ""}, "a device kind's command must be a word, got ''"),
        ({"unit": ""}, "a device kind's unit must be a word, got ''"),
        ({"unit": "alpha"}, "unit 'alpha' is a certify option's name (--alpha)"),
        ({"unit": "help"}, "unit 'help' is a certify option's name (--help)"),
        ({"simulator": None}, "simulator must be a class, got None"),
    ],
)
def test_a_kind_that_would_break_the_command_line_is_refused(
    change: dict[str, object], says: str
) -> None:
    from feltlab.rig.errors import RigError
    from feltlab.rig.kinds.batch import BATCH

    with pytest.raises(RigError) as err:
        BATCH.with_settings(name="acme", **change)
    assert says in str(err.value)
