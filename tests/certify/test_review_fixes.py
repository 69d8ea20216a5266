"""Regression tests for the review of ``feltlab certify`` / ``analyze`` (one per item):
simulated devices on in-process virtual buses, small seeded samples."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import can
import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.bus.capture import decode_capture, format_record, read_capture, recover_capture
from feltlab.rig.bus.writer import CaptureWriter, journal_path
from feltlab.rig.certify import campaign as certify
from feltlab.rig.certify.analyze_continuous import gap_test, simulate_gaps
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.offline import analyze_path
from feltlab.rig.certify.power import estimate_power
from feltlab.rig.certify.profile import CampaignError, Profile, quick_profile
from feltlab.rig.certify.record import CampaignResult, missing_measurement
from feltlab.rig.certify.report import sha256_file
from feltlab.rig.cli import campaign_dir as cli_campaign_dir
from feltlab.rig.cli.analyze import analyze as analyze_cmd
from feltlab.rig.cli.capture import capture as capture_cmd
from feltlab.rig.cli.certify import certify as certify_cmd
from feltlab.rig.clients import describe_client_event
from feltlab.seeds import U64_MAX, child_seed

BIG_SEED = 2**62 - 5  # a fresh seed is 62 bits: seed * 7919 overflowed 64 bits


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def fast(kind: str = "batch", **device: Any) -> Profile:
    """The bundled profile, unpaced and with fewer replicates (quick_profile)."""
    return quick_profile(kind, null_replicates=19, **device)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> CampaignResult:
    """A finished 6-shoe campaign (riffle:k=4, a big seed)."""
    out = tmp_path_factory.mktemp("small") / "campaign"
    return run_campaign(CampaignOptions(fast(), out, model="riffle:k=4", size=6, seed=BIG_SEED))


def _snapshot(d: Path) -> dict[str, tuple[str, int]]:
    return {p.name: (sha256_file(p), p.stat().st_mtime_ns) for p in sorted(d.iterdir())}


# 1 ---------------------------------------------------------------- derived seeds


def test_child_seeds_are_64_bit_for_any_campaign_seed() -> None:
    for seed in (0, BIG_SEED, U64_MAX):
        kids = {child_seed(seed, "gap-null", i) for i in range(50)}
        assert len(kids) == 50 and all(0 <= k <= U64_MAX for k in kids)
    assert child_seed(1, "a", 0) == child_seed(1, "a", 0) != child_seed(2, "a", 0)


@pytest.mark.parametrize("seed", [BIG_SEED, U64_MAX])
def test_continuous_null_and_power_accept_any_seed(seed: int) -> None:
    gaps = simulate_gaps(52, 8, 300, 1)
    test = gap_test(gaps, n_cards=52, slots=8, deals=300, seed=seed, replicates=9)
    assert 0 < test.p_value <= 1
    power = estimate_power("riffle:k=1", 4, 52, replicates=2, seed=seed)
    assert 0 <= power["battery"] <= 1


def test_continuous_campaign_with_a_62_bit_seed_is_not_an_error(tmp_path: Path) -> None:
    res = run_campaign(CampaignOptions(fast("continuous"), tmp_path / "c", size=200, seed=BIG_SEED))
    assert not any("seed must be" in e for e in res.record["errors"]), res.record["errors"]
    names = {m["name"]: m for m in res.record["measurements"]}
    assert names["return_gap.p_value"]["verdict"] in ("PASS", "FAIL")


# 2 ------------------------------------------------------- analyze of an unfinished campaign


def test_analyze_of_an_incomplete_campaign_is_aborted(
    small: CampaignResult, tmp_path: Path
) -> None:
    d = tmp_path / "c4"
    d.mkdir()
    for p in small.directory.glob("capture-*.blf"):
        (d / p.name).write_bytes(p.read_bytes())
    state = json.loads((small.directory / "campaign.json").read_text())
    state["size"] = 2000
    (d / "campaign.json").write_text(json.dumps(state))
    res = analyze_path(d, None, out=tmp_path / "report")
    assert res.verdict is Verdict.ABORTED and res.exit_code == 2
    col = res.record["collection"]
    assert (col["requested"], col["collected"], col["complete"]) == (2000, 6, False)
    assert any("6 of the 2000 shoes" in e for e in res.record["errors"])
    run = CliRunner().invoke(analyze_cmd, [str(d)])
    assert run.exit_code == 2 and "ABORTED" in run.output


# 3 ---------------------------------------------------------------- the device's name


def test_simulated_model_is_named_in_record_title_and_report(
    small: CampaignResult,
) -> None:
    rec = small.record
    assert "riffle:k=4" in rec["device"]["name"] and "Fisher-Yates" not in rec["device"]["name"]
    html = (small.directory / "report.html").read_text()
    h1 = html.split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert "riffle:k=4" in h1
    for text in ("Device under test", "in-process virtual bus", "Software", "cantools"):
        assert text in html
    assert str(BIG_SEED) in html and str(rec["seeds"]["device_parts"][0]) in html


def test_a_device_on_the_bus_is_named_by_its_heartbeat(tmp_path: Path) -> None:
    from feltlab.rig.devices import make_device

    spec = f"interface=virtual,channel=review-{os.getpid()}-{time.monotonic_ns()}"
    prof = fast()
    dev = make_device("batch", spec, prof.device_options(simulated=True), seed=3).start()
    try:
        res = run_campaign(CampaignOptions(prof, tmp_path / "c", bus=spec, size=3, seed=1))
    finally:
        dev.stop()
    name = res.record["device"]["name"]
    assert name == f"batch shuffler at 0x{prof.base:03X} on {spec}"
    assert res.record["device"]["simulated"] is False
    assert "feltlab simulated" not in (res.directory / "report.html").read_text().split("</h1>")[0]


# 4 ---------------------------------------------------------------- resume of a finished campaign


def test_resume_refuses_a_finished_campaign_and_leaves_it_untouched(
    small: CampaignResult,
) -> None:
    before = _snapshot(small.directory)
    run = CliRunner().invoke(certify_cmd, ["shuffler", "--resume", str(small.directory)])
    assert run.exit_code == 2
    assert "campaign complete" in run.output and "feltlab analyze" in run.output
    assert _snapshot(small.directory) == before


def test_resume_of_a_finished_campaign_is_refused_from_its_record(
    small: CampaignResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: a 2,000-shoe campaign took 21 s to refuse, decoding its whole capture; a
    record that says complete over the parts check_parts proved refuses at once, and a record
    that says less (or is damaged) still has the capture counted."""
    from feltlab.rig.certify import record as record_module

    def decoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("the capture was decoded")

    out = tmp_path / "c"
    shutil.copytree(small.directory, out)
    with monkeypatch.context() as m:
        m.setattr(record_module, "read_campaign_capture", decoding)
        run = CliRunner().invoke(certify_cmd, ["shuffler", "--resume", str(out)])
    assert run.exit_code == 2 and "campaign complete" in run.output, run.output
    rec = json.loads((out / "record.json").read_text())
    rec["collection"]["complete"] = False  # the record does not say so: the capture counts
    (out / "record.json").write_text(json.dumps(rec))
    run = CliRunner().invoke(certify_cmd, ["shuffler", "--resume", str(out)])
    assert run.exit_code == 2 and "campaign complete" in run.output, run.output


# 5 ---------------------------------------------------------------- the missing-shoes count


def test_missing_count_when_the_device_stops_early() -> None:
    m = missing_measurement("batch", 2000, 153, "collection stopped", failed=["153: device lost"])
    assert (m.value, m.verdict) == (1847.0, Verdict.FAIL)
    m = missing_measurement("batch", 2000, 153, "collection stopped: lost")
    assert (m.value, m.verdict) == (1847.0, Verdict.ERROR)
    assert m.detail["reason"] == "collection stopped: lost"


def test_missing_count_when_the_bus_cannot_be_opened(tmp_path: Path) -> None:
    bus = "interface=socketcan,channel=feltlabnone0"
    res = run_campaign(
        CampaignOptions(fast(), tmp_path / "c", bus=bus, model="fisher-yates", size=5, seed=1)
    )
    assert res.verdict is Verdict.ERROR
    m = {m["name"]: m for m in res.record["measurements"]}["collection.shoes_missing"]
    assert (m["value"], m["verdict"]) == (5.0, "ERROR")
    assert res.record["collection"]["requested"] == 5
    assert res.record["collection"]["collected"] == 0


# 6 ---------------------------------------------------------------- a second Ctrl-C


def _frames(n: int) -> list[can.Message]:
    from feltlab.rig.protocol.codec import Codec

    codec = Codec(0x100)
    msg = codec.db.get_message_by_name("Command")
    proto = codec.encode("Command", {sig.name: 0 for sig in msg.signals} | {"Opcode": 1})
    t0 = time.time()
    return [
        can.Message(
            timestamp=t0 + i * 0.001,
            arbitration_id=proto.arbitration_id,
            is_extended_id=False,
            data=proto.data,
        )
        for i in range(n)
    ]


def test_an_unfinished_blf_is_read_from_its_journal_and_rebuilt_with_epoch_stamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "capture-001.blf"
    w = CaptureWriter(path)
    frames = _frames(300)
    for m in frames:
        w.on_message_received(m)

    def interrupted(kept: object) -> bool:  # the second Ctrl-C lands while the BLF is written
        raise KeyboardInterrupt

    monkeypatch.setattr(w, "_write_kept", interrupted)
    with pytest.raises(KeyboardInterrupt):
        w.stop()
    assert journal_path(path).exists()
    got = list(read_capture(path))
    assert len(got) == 300 and got[0].timestamp == pytest.approx(frames[0].timestamp, abs=1e-6)
    rec = next(decode_capture(path))
    line = format_record(rec)
    assert line.startswith(time.strftime("%H:%M:%S", time.localtime(frames[0].timestamp)))
    assert recover_capture(path) == 300 and not journal_path(path).exists()
    rebuilt = list(can.BLFReader(str(path)))
    assert len(rebuilt) == 300 and rebuilt[0].timestamp == pytest.approx(
        frames[0].timestamp, abs=1e-6
    )


def test_a_second_ctrl_c_says_what_it_leaves_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(certify, "run_campaign", interrupted)
    out = tmp_path / "c"
    run = CliRunner().invoke(certify_cmd, ["shuffler", "--out", str(out), "--shoes", "2"])
    assert run.exit_code == 2
    assert "journal" in run.output and f"--resume {out}" in run.output


# 7 ---------------------------------------------------------------- analyze --out


def test_analyze_without_out_says_nothing_was_written(small: CampaignResult) -> None:
    before = _snapshot(small.directory)
    run = CliRunner().invoke(analyze_cmd, [str(small.directory)])
    assert "no report written" in run.output and "report in" not in run.output
    assert run.exit_code == small.exit_code
    assert _snapshot(small.directory) == before


def test_analyze_refuses_to_overwrite_the_campaign_folder(small: CampaignResult) -> None:
    before = _snapshot(small.directory)
    run = CliRunner().invoke(analyze_cmd, [str(small.directory), "--out", str(small.directory)])
    assert run.exit_code == 2 and "is not a new or empty directory" in run.output
    assert _snapshot(small.directory) == before


# 8 ---------------------------------------------------------------- seed ranges


@pytest.mark.parametrize("seed", ["-3", "99999999999999999999999"])
def test_bad_seeds_are_refused_before_collection(tmp_path: Path, seed: str) -> None:
    out = tmp_path / "c"
    run = CliRunner().invoke(certify_cmd, ["shuffler", "--seed", seed, "--out", str(out)])
    assert run.exit_code == 2 and "is not in the range 0<=x<=" in run.output
    assert not out.exists()
    with pytest.raises(CampaignError, match="seed must be in"):
        run_campaign(CampaignOptions(fast(), out, size=2, seed=int(seed)))
    assert not out.exists()


# 9 ---------------------------------------------------------------- one-line errors


def test_out_that_is_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    f = tmp_path / "passwd"
    f.write_text("x\n")
    run = CliRunner().invoke(certify_cmd, ["shuffler", "--out", str(f), "--shoes", "2"])
    assert run.exit_code == 2 and "is a file, not a directory" in run.output
    assert run.exception is None or isinstance(run.exception, SystemExit)


# 10 ---------------------------------------------------------------- default folder names


def test_default_campaign_folders_never_collide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    monkeypatch.setattr(cli_campaign_dir.time, "time", lambda: 1_700_000_000.25)  # type: ignore[attr-defined]
    a = cli_campaign_dir.new_campaign_dir("batch")
    b = cli_campaign_dir.new_campaign_dir("batch")
    assert a != b and a.is_dir() and b.is_dir()
    assert a.name.endswith("-250000") and b.name == a.name + "-1"


# 11 ---------------------------------------------------------------- help


def test_help_describes_alpha_seed_and_models() -> None:
    text = CliRunner().invoke(certify_cmd, ["shuffler", "--help"]).output
    for phrase in ("riffle:k=N", "shelf:m=N[,passes=P]", "stuck", "biased", "0.01", "0<x<1"):
        assert phrase in text
    text = CliRunner().invoke(analyze_cmd, ["--help"]).output
    assert "0<x<1" in text and "0.01" in text and "new or empty" in text


# 12 ---------------------------------------------------------------- panel faults and tiny sizes


def test_injected_faults_read_as_labelled_lines() -> None:
    line = describe_client_event(
        "fault", {"code": 6, "severity": 2, "active": 1, "detail": 0}, "display"
    )
    assert "fault DISPLAY raised (severity ERROR" in line
    assert "injected by the campaign" in line and "{" not in line


def test_the_smallest_panel_campaign_measures_its_heartbeat(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="feltlab.rig.clients")
    res = run_campaign(CampaignOptions(fast("jackpot"), tmp_path / "c", size=2, seed=4))
    hb = {m["name"]: m for m in res.record["measurements"]}["heartbeat.period"]
    assert hb["verdict"] != "ERROR", hb
    faults = [r.getMessage() for r in caplog.records if "fault" in r.getMessage()]
    assert faults and all("injected by the campaign" in f for f in faults if "raised" in f)
    assert not any("{" in f for f in faults)


# 13 ---------------------------------------------------------------- capture decode


def test_capture_decode_names_values_and_survives_a_closed_pipe(
    small: CampaignResult,
) -> None:
    blf = small.directory / "capture-001.blf"
    run = CliRunner().invoke(capture_cmd, ["decode", str(blf)])
    assert run.exit_code == 0
    assert "Opcode=PING" in run.output and "State=READY" in run.output
    exe = Path(sys.executable).with_name("feltlab")
    proc = subprocess.run(
        f"'{exe}' capture decode '{blf}' | head -1",
        shell=True,
        capture_output=True,
        timeout=60,
    )
    assert proc.stdout.count(b"\n") == 1
    assert b"Error" not in proc.stderr and b"Broken pipe" not in proc.stderr, proc.stderr


def test_capture_decode_of_an_empty_capture_says_so(tmp_path: Path) -> None:
    f = tmp_path / "empty.asc"
    f.write_text("")
    run = CliRunner().invoke(capture_cmd, ["decode", str(f)])
    assert run.exit_code == 2 and "the capture holds no frame" in run.output


@pytest.mark.parametrize("stamp", ["1e300", "inf", "-1e300", "nan"])
def test_capture_decode_shows_a_stamp_outside_any_clock_and_analyze_refuses_it(
    tmp_path: Path, stamp: str
) -> None:
    # issue 41: (1e300) and (inf) in a candump file were an OverflowError traceback, exit 1
    f = tmp_path / "odd.log"
    f.write_text(f"(0.5) vcan0 10A#0100640000000000\n({stamp}) vcan0 10A#0100640001000000\n")
    run = CliRunner().invoke(capture_cmd, ["decode", str(f)])
    assert "Traceback" not in run.output, run.output
    shown = [ln for ln in run.output.splitlines() if "0x100" in ln]
    assert len(shown) == 2 and shown[1].startswith(f"(stamp {float(stamp)}) 0x100"), run.output
    res = CliRunner().invoke(main, ["analyze", str(f)])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "is not a CAN frame" in res.output and "up to the year 9999" in res.output


def test_the_mapped_journal_grows_past_its_step_and_keeps_every_line_unclosed(
    tmp_path: Path,
) -> None:
    """The journal is written through a shared map, pre-sized in 4 MiB steps: an unclosed
    one (a crash) reads every line written, the NUL rest ignored; a closed one is exactly the
    lines' bytes."""
    from feltlab.rig.bus.capture import read_journal
    from feltlab.rig.bus.writer import MappedJournal

    path = tmp_path / "capture-001.journal.log"
    journal = MappedJournal(path)
    line = "(1700000000.000000000) can0 123#0102030405060708 R\n"
    n = MappedJournal.STEP // len(line) + 1000  # past the first step: one resize
    for i in range(n):
        journal.write(line.replace("0102", f"{i % 65536:04X}"))
    journal.sync()
    assert path.stat().st_size > n * len(line)  # pre-sized: NUL bytes after the lines
    frames = read_journal(path)  # as after kill -9: never closed
    assert len(frames) == n
    assert bytes(frames[-1].data[:2]) == ((n - 1) % 65536).to_bytes(2, "big")
    journal.close()
    assert path.stat().st_size == n * len(line)
    assert len(read_journal(path)) == n


def test_analyze_refuses_an_out_folder_it_cannot_make_before_any_work(tmp_path: Path) -> None:
    """An --out that cannot be created was refused only after the whole analysis (4.8 s on a
    loaded machine, past the corpus's 10 s bound on two busy workers); a folder made for an
    analysis that then fails is removed again."""
    garbage = tmp_path / "garbage.blf"
    garbage.write_bytes(b"not a capture")
    run = CliRunner().invoke(analyze_cmd, [str(garbage), "--out", "/proc/feltlab-nope/r"])
    assert run.exit_code == 2 and "cannot create the directory /proc/feltlab-nope/r" in run.output
    made = tmp_path / "r"
    run = CliRunner().invoke(analyze_cmd, [str(garbage), "--out", str(made)])
    assert run.exit_code == 2 and "Traceback" not in run.output, run.output
    assert not made.exists()
