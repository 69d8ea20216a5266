"""Issue 14, item 4: captures belong to their campaign.  Each part is recorded with its
campaign id, device seed and SHA-256; ``--resume`` and ``analyze`` refuse a foreign capture; a
truncated BLF is detected from its header when analysed as a file; ``capture record`` refuses to
overwrite."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.rig.certify import campaign as certify
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import CampaignOptions, analyze_path, run_campaign
from feltlab.rig.cli import capture as capture_cmd
from feltlab.rig.errors import RigError


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def fast() -> certify.Profile:
    return certify.quick_profile("batch", null_replicates=39)


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("own")
    a, b = root / "a", root / "b"
    run_campaign(CampaignOptions(fast(), a, size=12, seed=1))
    run_campaign(CampaignOptions(fast(), b, size=12, seed=2))
    return a, b


def test_each_part_is_recorded_with_its_campaign(two: tuple[Path, Path]) -> None:
    a, _ = two
    state = json.loads((a / "campaign.json").read_text())
    (part,) = state["parts"]
    assert part["part"] == 1 and part["file"] == "capture-001.blf"
    assert part["campaign_id"] == state["campaign_id"]
    assert part["device_seed"] == certify.part_seed(1, 1) and len(part["sha256"]) == 64


def test_analyze_refuses_a_foreign_capture(two: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = two
    mixed = tmp_path / "mixed"
    shutil.copytree(a, mixed)
    shutil.copy(b / "capture-001.blf", mixed / "capture-001.blf")
    with pytest.raises(certify.CampaignError, match="does not belong to campaign"):
        analyze_path(mixed, None, out=None)
    assert analyze_path(a, None, out=None).verdict is Verdict.PASS


def test_resume_refuses_a_foreign_capture(two: tuple[Path, Path], tmp_path: Path) -> None:
    _, b = two
    out = tmp_path / "c"
    stop = threading.Event()
    stop.set()  # interrupted at once: a part with a few frames, then resume
    run_campaign(CampaignOptions(fast(), out, size=12, seed=3), stop=stop)
    shutil.copy(b / "capture-001.blf", out / "capture-001.blf")
    with pytest.raises(certify.CampaignError, match="does not belong to campaign"):
        run_campaign(CampaignOptions(fast(), out), resume=True)


def test_a_truncated_blf_analysed_as_a_file_is_an_error(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two
    cut = tmp_path / "cut.blf"
    data = (a / "capture-001.blf").read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(RigError, match="is truncated: its header declares"):
        analyze_path(cut, None, out=None)


def test_capture_record_never_overwrites(tmp_path: Path) -> None:
    f = tmp_path / "x.blf"
    f.write_bytes(b"precious")
    res = CliRunner().invoke(
        capture_cmd, ["record", str(f), "--bus", "interface=virtual,channel=x", "--duration", "0"]
    )
    assert res.exit_code == 1 and "never overwrites" in res.output
    assert f.read_bytes() == b"precious"
