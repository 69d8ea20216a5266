"""The security pack against the simulated devices: the hardened reference device passes
every check, and each flawed device fails on its own check and on no other; the command
line's exit code, record, report and JUnit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.security.findings import CHECKS
from feltlab.rig.security.pack import run_pack
from feltlab.rig.security.targets import FLAWED_DEVICES, flaws_of, seeding_of, simulated_target

NOT_LEAKAGE = ("update", "keys", "commands", "probes", "seed")
#: the checks each device must fail (and it must pass every other)
FAILS = {
    "hardened": set(),
    "unsigned-update": {"update.tampered"},
    "rollback": {"update.rollback"},
    "any-device": {"update.other-device"},
    "shared-key": {"key.shared"},
    "truncated-mac": {"mac.truncated"},
    "unauthenticated": {"command.unauthenticated"},
    "replayable": {"command.replayed", "command.reordered"},
    "debug-port": {"probe.undeclared"},
    "leaking": set(),  # its flaws are on the bus: test_leaking_devices
    "timer-seeded": {"seed.predictable"},
    "mt19937": {"seed.predictable"},
}


def _failed(device: str, steps: tuple[str, ...], shuffles: int = 60) -> tuple[set[str], set[str]]:
    with simulated_target(flaws_of(device), seeding=seeding_of(device)) as target:
        res = run_pack(target, shuffles=shuffles, steps=steps)
    verdicts = {f.check.name: str(f.verdict) for f in res.findings}
    return {n for n, v in verdicts.items() if v == "FAIL"}, {
        n for n, v in verdicts.items() if v == "PASS"
    }


def test_every_flawed_device_is_listed() -> None:
    assert set(FAILS) == set(FLAWED_DEVICES)


@pytest.mark.parametrize("device", sorted(FAILS))
def test_each_device_fails_its_own_checks(device: str) -> None:
    failed, passed = _failed(device, NOT_LEAKAGE)
    assert failed == FAILS[device]
    assert failed | passed == set(CHECKS) - {"leak.bus", "leak.timing"}  # none NOT_RUN


@pytest.mark.parametrize(
    ("flaws", "fails"),
    [
        ("hardened", set()),
        ("leaking", {"leak.bus", "leak.timing"}),
    ],
)
def test_leaking_devices(flaws: str, fails: set[str]) -> None:
    """150 shuffles: the hardened device's bus tells nothing of the order; the leaking
    device's Status carries the top card (leak.bus) and its shuffle takes longer for a
    higher top rank (leak.timing)."""
    failed, passed = _failed(flaws, ("leakage",), shuffles=150)
    assert failed == fails and failed | passed == {"leak.bus", "leak.timing"}


def test_each_leak_is_caught_by_its_own_check() -> None:
    from feltlab.rig.devices.security import Flaw, FlawSet

    for flaw, check in ((Flaw.STATUS_CARD, "leak.bus"), (Flaw.ORDER_TIMING, "leak.timing")):
        with simulated_target(FlawSet(frozenset({flaw}))) as target:
            res = run_pack(target, shuffles=120, steps=("leakage",))
        assert {f.check.name for f in res.findings if str(f.verdict) == "FAIL"} == {check}


def test_certify_security_command(tmp_path: Path) -> None:
    out = tmp_path / "sec"
    r = CliRunner().invoke(
        main,
        [
            "certify",
            "security",
            "--device",
            "truncated-mac",
            "--shuffles",
            "30",
            "--standard",
            "comar",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 1, r.output
    # the faults the pack provokes are evidence, not warnings (80 lines buried the verdict)
    warned = [ln for ln in r.output.splitlines() if ln.startswith("feltlab: WARNING")]
    assert "fault SECURITY" not in r.output and len(warned) == 2, r.output  # the install reboot
    record = json.loads((out / "record.json").read_text())
    bad = [f for f in record["findings"] if f["verdict"] == "FAIL"]
    assert [f["check"] for f in bad] == ["mac.truncated"]
    assert bad[0]["cwe"].startswith("CWE-326") and bad[0]["remedy"]
    assert bad[0]["figures"]["command_tag_bits"] == 16
    assert record["standard"]["title"].startswith("COMAR 36.05.02.17")
    junit = (out / "junit.xml").read_text()
    assert 'tests="13" failures="1"' in junit and 'name="mac.truncated"><failure' in junit
    assert "mac.truncated" in (out / "report.html").read_text()
    # view names the pack's verdict and its failed check (it read "campaign None ... 0 of None")
    seen = CliRunner().invoke(main, ["view", str(out)], env={"COLUMNS": "300"})
    assert seen.exit_code == 0, seen.output
    head, title = seen.output.splitlines()[:2]
    assert head == f"security pack certificate in {out}: finished, FAIL"
    assert title.endswith("flaws: truncated-mac: FAIL"), title
    rows = [ln for ln in seen.output.splitlines() if "security.mac.truncated" in ln]
    assert len(rows) == 1 and "CWE-326" in rows[0] and rows[0].rstrip(" │").endswith("FAIL")
    redo = CliRunner().invoke(main, ["analyze", str(out)])
    assert redo.exit_code == 2 and redo.output.strip().splitlines() == [
        f"error: {out} is a feltlab certify security record, not a campaign (its checks talk "
        f"to the device and are not re-run from its capture): feltlab view {out} shows it; "
        "run feltlab certify security again to recompute it"
    ]


def test_certify_security_refuses_an_out_that_is_not_new(tmp_path: Path) -> None:
    """A finished campaign's folder as --out: its record was overwritten (found by a breaker);
    a file as --out was a traceback."""
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "record.json").write_text('{"verdict": "PASS"}')
    (tmp_path / "afile").write_text("x")
    for out, problem in (
        ("done", "is not empty: choose a new --out directory"),
        ("afile", "is a file, not a directory"),
    ):
        r = CliRunner().invoke(main, ["certify", "security", "--out", str(tmp_path / out)])
        assert r.exit_code == 2 and r.output.strip().splitlines() == [
            f"error: {tmp_path / out} {problem}"
            + ("" if out == "done" else ": give a new or empty directory")
        ], r.output
    assert (tmp_path / "done" / "record.json").read_text() == '{"verdict": "PASS"}'


def test_certify_security_refuses_an_unknown_device() -> None:
    r = CliRunner().invoke(main, ["certify", "security", "--device", "camera"])
    assert r.exit_code == 2
    assert "unknown simulated device 'camera'" in r.output


def test_a_bus_profile_is_read_and_its_errors_named(tmp_path: Path) -> None:
    from feltlab.rig.errors import ProfileError
    from feltlab.rig.security.targets import target_from_profile

    p = tmp_path / "dev.toml"
    p.write_text("[device]\nbase = 0x100\n")
    with pytest.raises(ProfileError, match=r"no \[security\] table"):
        target_from_profile(p, "virtual")
    p.write_text("[security]\nkey = '" + "00" * 32 + "'\n")
    with pytest.raises(ProfileError, match="give device_id"):
        target_from_profile(p, "virtual")
    p.write_text("[security]\ndevice_id = 17\nkey = '" + "00" * 32 + "'\nsecond_id = 18\n")
    t = target_from_profile(p, "virtual")
    assert (t.device_id, t.base, t.packages, t.second_base, t.second_id) == (
        17,
        0x100,
        None,
        None,
        18,
    )
    assert t.freshness_start > 1_700_000_000 * 10**6  # a timestamp freshness value
    # found by a breaker: each a one-line ProfileError before the bus is opened
    good = "[security]\ndevice_id = 17\nkey = '" + "00" * 32 + "'\n"
    for extra, problem in (
        ('base = "x"\n', r"base = 'x' must be a whole number in 0..0x7ff"),
        ("heartbeat_period = -1\n", "heartbeat_period = -1 must be seconds"),
        ("second_id = 0xFFFFFFFFFFFFFFFFFF\n", "second_id = .* must be a whole number"),
        ('package_next = "/dev/zero"\n', "package_next.*not a regular file|larger than"),
        ("[[predictability]]\ngenerator = 'mt19937'\n", r"\[predictability\] must be one table"),
    ):
        p.write_text(good + extra)
        with pytest.raises(ProfileError, match=problem):
            target_from_profile(p, "virtual")
    with pytest.raises(ProfileError, match=r"not a regular file|larger than"):
        target_from_profile("/dev/zero", "virtual")  # it filled the host's memory
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ProfileError, match="not a regular file"):
        target_from_profile(fifo, "virtual")  # it hung


@pytest.mark.parametrize(
    ("device", "generator", "bits", "cards"),
    [("timer-seeded", "msvc-rand", 20, 5), ("mt19937", "mt19937", 32, 7)],
)
def test_seeded_devices_are_predicted_from_their_own_shoe(
    device: str, generator: str, bits: int, cards: int
) -> None:
    """The pack's seed.predictable recovers the seed each device read off its timer (the
    ground truth, the device's last_seed) from the fewest cards carrying the space's bits
    + 8, and predicts the other cards of its 4-deck shoe, all right, with its CWEs."""
    with simulated_target(flaws_of(device), seeding=seeding_of(device)) as target:
        res = run_pack(target, steps=("seed",))
    (f,) = res.findings
    rec = f.figures["record"]
    assert str(f.verdict) == "FAIL" and f.check.cwe.startswith("CWE-339")
    assert (rec["declaration"]["generator"], rec["space"]["bits"]) == (generator, bits)
    got = rec["recovered"]
    assert got["from_cards"] == cards and got["predicted_correct"] == 208 - cards
    assert f.evidence[1].startswith("CWE: CWE-337") and "CWE-338" in f.evidence[1]
    assert f.evidence[0].startswith(f"FAIL: predictable: seed {got['seed']} recovered")


def test_a_wrong_or_missing_declaration_is_not_run() -> None:
    from dataclasses import replace

    from feltlab.rig.security.shuffler import Declaration

    with simulated_target(flaws_of("timer-seeded"), seeding=seeding_of("timer-seeded")) as t:
        t.predictability = replace(Declaration("java-random", 12, decks=4))
        (f,) = run_pack(t, steps=("seed",)).findings
        assert (
            str(f.verdict) == "NOT_RUN"
            and "INCONCLUSIVE: no seed of the declared" in (f.evidence[0])
        )
        t.predictability = None
        (f,) = run_pack(t, steps=("seed",)).findings
        assert str(f.verdict) == "NOT_RUN" and "[predictability] table" in f.evidence[0]
