"""``feltlab certify``'s campaign commands and a campaign's phases (issue 38): every campaign
command is generated from the registered kinds that name it, feltlab's own as a vendor's (a
kind's unit is its size option, its fields its options); a campaign refuses bad options
before its folder is made, and a resume takes its options from the campaign's own record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.certify.campaign import recorded_campaign, resume_campaign, run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import CampaignError, quick_profile
from feltlab.rig.kinds import DeviceKind, get_kind, register_kind, unregister_kind

KIND_OPTIONS = ("--model", "--faults", "--standard", "--from")


def _run(*args: str) -> tuple[int, str]:
    """The exit code and output (its whitespace runs as one space: help wraps its lines)."""
    res = CliRunner().invoke(main, list(args))
    assert "Traceback" not in res.output
    return res.exit_code, " ".join(res.output.split())


def test_each_command_takes_the_size_option_and_options_its_kinds_declare() -> None:
    code, out = _run("certify", "shuffler", "--help")
    assert code == 0
    assert "Shoes to collect (batch shuffler; default: the profile's)" in out
    assert "Deals to collect (continuous shuffler; default: the profile's)" in out
    assert all(o in out for o in KIND_OPTIONS)
    code, out = _run("certify", "jackpot-panel", "--help")
    assert code == 0 and "Draws to collect (jackpot prize panel" in out
    assert not [o for o in (*KIND_OPTIONS, "--shoes", "--deals") if o in out]


@pytest.fixture
def roller() -> Iterator[DeviceKind]:
    """A kind registered at run time that names ``certify shuffler``, with a unit of its
    own and no shuffle model, fault campaign or shoes."""
    settings = {"name": "roller", "label": "card roller", "base": 0x600, "unit": "rolls"}
    continuous = get_kind("continuous")
    kind = register_kind(continuous.with_settings(**settings))
    yield kind
    unregister_kind("roller")


def test_a_kind_naming_a_command_adds_its_size_option(roller: DeviceKind) -> None:
    code, out = _run("certify", "shuffler", "--help")
    assert code == 0 and "Rolls to collect (card roller; default: the profile's)" in out
    code, out = _run("certify", "shuffler", "--shoes", "4", "--rolls", "4")
    assert code == 2
    assert "give --shoes (a batch shuffler) or --rolls (a card roller)" in out
    code, out = _run("certify", "shuffler", "--rolls", "4")  # the default profile: batch
    assert code == 2 and "--rolls does not apply to a batch shuffler" in out


def test_resume_refuses_the_kinds_own_size_option(tmp_path: Path) -> None:
    code, out = _run("certify", "jackpot-panel", "--resume", str(tmp_path), "--draws", "9")
    assert code == 2 and "drop --draws" in out


@pytest.mark.parametrize(
    ("change", "says"),
    [({"alpha": 1.5}, "alpha must be in (0, 1), got 1.5"), ({"size": 1}, "at least 2, got 1")],
)
def test_bad_options_are_refused_before_the_folder_is_made(
    tmp_path: Path, change: dict[str, float], says: str
) -> None:
    out = tmp_path / "c"
    with pytest.raises(CampaignError, match=says.replace("(", r"\(").replace(")", r"\)")):
        run_campaign(CampaignOptions(quick_profile("batch"), out, **change))  # type: ignore[arg-type]
    assert not out.exists()


def test_a_resume_takes_its_options_from_the_campaigns_record(tmp_path: Path) -> None:
    out = tmp_path / "c"
    first = run_campaign(CampaignOptions(quick_profile("continuous"), out, size=30, seed=9))
    recorded = recorded_campaign(out).opts
    assert (recorded.size, recorded.seed, recorded.alpha) == (30, 9, 0.01)
    assert (recorded.bus, recorded.model, recorded.clock, recorded.faults) == (
        None,
        None,
        "sim",
        None,
    )
    assert recorded.profile.to_dict() == first.record["profile"]
    (out / "record.json").unlink()  # unfinished again: every sample collected, no record
    again = resume_campaign(out)
    assert again.record["kind"] == "continuous"  # not a placeholder batch profile's
    assert again.record["profile"] == first.record["profile"]
    assert again.record["collection"]["collected"] == 30  # all in its first part
    assert again.record["collection"]["this_part"] == {"requested": 0, "collected": 0}
    assert again.record["measurements"] == first.record["measurements"]
    assert again.verdict is first.verdict
