"""Every command as a script runs it: stdout piped (not a terminal), nothing cut, no stray
log line or progress bar, ``--json`` wherever a table is printed, and every hint a command
prints is a command that works (issue 18)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import load_profile

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FELTLAB = str(Path(sys.executable).with_name("feltlab"))
ANSI = re.compile(r"\x1b\[")
SPINNER = re.compile("[\u2800-\u28ff]")  # rich's braille spinner frames
# what a command may print on stderr that is not a log record: the live view's address
ALLOWED_STDERR = re.compile(r"^live view")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"  # a terminal type, but stdout and stderr are pipes
    return env


def run(args: list[str], cwd: Path, *, code: int = 0) -> subprocess.CompletedProcess[str]:
    """``feltlab ARGS`` with stdout and stderr piped; checks what any command must hold."""
    r = subprocess.run(
        [FELTLAB, *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    where = f"feltlab {shlex.join(args)}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert r.returncode == code, where
    assert "\u2026" not in r.stdout, "a cell or line was cut (…): " + where
    assert not ANSI.search(r.stdout + r.stderr), "colour codes in a pipe: " + where
    assert not SPINNER.search(r.stdout + r.stderr), "a spinner was left behind: " + where
    assert "\r" not in r.stdout + r.stderr, "a progress bar redrew itself: " + where
    stray = [ln for ln in r.stderr.splitlines() if ln.strip() and not ALLOWED_STDERR.match(ln)]
    assert not stray, "stray stderr lines: " + where
    return r


def run_json(args: list[str], cwd: Path, *, code: int = 0) -> object:
    r = run([*args, "--json"], cwd, code=code)
    return json.loads(r.stdout)


def test_core_commands_piped(tmp_path: Path) -> None:
    r = run(["info"], tmp_path)
    info = run_json(["info"], tmp_path)
    assert isinstance(info, dict)
    for p in info["plugins"]:  # the long plugin list is in full, not cut at 80 columns
        assert p["name"] in r.stdout
    assert info["core"]["flags"] in r.stdout

    r = run(["plugins"], tmp_path)
    data = run_json(["plugins"], tmp_path)
    assert isinstance(data, dict)
    for row in data["plugins"]:
        assert ", ".join(row["hooks"]) in r.stdout  # each row's hooks on one line
    for w in data["wagers"]:
        assert w["name"] in r.stdout

    r = run(["math", "perfect_pairs", "--decks", "6"], tmp_path)
    assert "perfect_pair" in r.stdout and "house edge" in r.stdout
    sheets = run_json(["math", "perfect_pairs", "--decks", "6"], tmp_path)
    assert isinstance(sheets, list | dict)

    r = run(["shuffle", "--shoes", "500", "--seed", "0x7"], tmp_path)
    assert "(seed 7)" in r.stdout
    sh = run_json(["shuffle", "--shoes", "500", "--seed", "7"], tmp_path)
    assert isinstance(sh, dict) and sh["all_permutations"] is True and sh["seed"] == 7

    run(["simulate", "--rounds", "20000", "--chunk", "10000"], tmp_path)
    sim = run_json(["simulate", "--rounds", "20000", "--chunk", "10000"], tmp_path)
    assert isinstance(sim, dict) and sim["rounds"] == 20000

    r = run(["play", "--rounds", "3"], tmp_path)
    assert r.stdout.startswith("feltlab play: rules nz, 3 rounds, seed 1")

    definition = str(ROOT / "examples" / "tournament.toml")
    run(["tournament", "run", definition], tmp_path)
    t = run_json(["tournament", "run", definition], tmp_path)
    assert isinstance(t, dict) and t["seed"] == 1

    r = run(["new", "wager", "lucky_felt", "--dir", str(tmp_path / "pkg")], tmp_path)
    assert (tmp_path / "pkg" / "pyproject.toml").is_file()


def test_rig_commands_piped(tmp_path: Path) -> None:
    camp = tmp_path / "c"
    # 30 shoes catch every named alternative of the bundled profile but the naive swap
    # (biased: ~260-300 shoes): INCONCLUSIVE, exit 3, the power table printed uncut
    cmd = ["certify", "shuffler", "--shoes", "30", "--seed", "4", "--out", str(camp)]
    r = run(cmd, tmp_path, code=3)
    assert "30 shoes catch biased with power" in r.stdout
    record = json.loads((camp / "record.json").read_text())
    for c in record["battery"]["checks"]:  # full check names, never battery.position_unif…
        assert f"battery.{c['name']}" in r.stdout
    for m in record["measurements"]:
        assert m["name"] in r.stdout
    out = run_json(
        ["certify", "shuffler", "--shoes", "30", "--seed", "4", "--out", str(tmp_path / "c2")],
        tmp_path,
        code=3,
    )
    assert isinstance(out, dict) and out["verdict"] == record["verdict"] == "INCONCLUSIVE"
    assert out["record"]["seed"] == 4

    r = run(["analyze", str(camp)], tmp_path, code=3)
    assert "verdict INCONCLUSIVE" in r.stdout
    a = run_json(["analyze", str(camp)], tmp_path, code=3)
    assert isinstance(a, dict) and a["verdict"] == "INCONCLUSIVE" and a["directory"] is None

    r = run(["view", str(camp)], tmp_path)
    assert "battery.position_uniformity" in r.stdout
    v = run_json(["view", str(camp)], tmp_path)
    assert isinstance(v, dict) and v["verdict"] == "INCONCLUSIVE"

    r = run(["capture", "decode", str(camp / "capture-001.blf")], tmp_path)
    assert "Heartbeat" in r.stdout
    r = run(["capture", "decode", str(camp / "capture-001.blf"), "--json"], tmp_path)
    assert all(json.loads(line)["base"] == 0x100 for line in r.stdout.splitlines())

    # the bundled profile names work wherever --profile is taken
    bus = f"interface=virtual,channel=feltlab-piped-{os.getpid()}"
    r = run(
        ["device", "run", "batch", "--bus", bus, "--profile", "batch6", "--duration", "0.3"],
        tmp_path,
    )
    assert r.stdout.splitlines()[0] == f"device batch at 0x100 on {bus} ready"
    r = run(
        ["capture", "record", str(tmp_path / "x.blf"), "--bus", bus, "--duration", "0.2"],
        tmp_path,
    )
    assert r.stdout.strip() == f"0 frames written to {tmp_path / 'x.blf'}"


def test_the_same_option_forms_everywhere(tmp_path: Path) -> None:
    """One definition of --profile and --bus: the same forms and the same one-line errors
    (exit 2 for every command's refusal, as docs/bad-input.md says; 1 is a verdict)."""
    bad_bus = "channel=x"
    (tmp_path / "x.blf").write_bytes(b"")  # analyze reads the profile before the capture
    for args, code in (
        (["device", "run", "batch", "--bus", bad_bus, "--duration", "0.1"], 2),
        (["capture", "record", str(tmp_path / "y.blf"), "--bus", bad_bus], 2),
        (["certify", "shuffler", "--bus", bad_bus, "--out", str(tmp_path / "z")], 2),
    ):
        r = subprocess.run([FELTLAB, *args], capture_output=True, text=True, env=_env())
        assert r.returncode == code, args
        assert r.stderr.count("\n") == 1, r.stderr
        assert "bus spec 'channel=x' names no interface" in r.stderr
    for args, code in (
        (["device", "run", "batch", "--bus", "interface=virtual,channel=v", "--profile", "no"], 2),
        (["certify", "shuffler", "--profile", "no", "--out", str(tmp_path / "z")], 2),
        (["analyze", str(tmp_path / "x.blf"), "--profile", "no"], 2),
    ):
        r = subprocess.run([FELTLAB, *args], capture_output=True, text=True, env=_env())
        assert r.returncode == code, args
        assert r.stderr.count("\n") == 1, r.stderr
        assert "device profile no does not exist; " in r.stderr
        assert "give a TOML file or a bundled profile name (batch6, continuous, jackpot)" in (
            r.stderr
        )
    assert not (tmp_path / "z").exists()


def test_the_hint_of_an_incomplete_campaign_is_a_command_that_works(tmp_path: Path) -> None:
    """``analyze`` of an interrupted campaign names the command that continues it; that
    command runs and completes the campaign."""
    out = tmp_path / "c"
    stop = threading.Event()

    class StopAt:
        n = 0

        def start(self, description: str, total: int | None) -> None:
            pass

        def advance(self, n: int = 1) -> None:
            self.n += n
            if self.n == 10:
                stop.set()

    run_campaign(
        CampaignOptions(load_profile(None, "batch"), out, size=25, seed=9),
        progress=StopAt(),
        stop=stop,
    )
    r = run(["analyze", str(out)], tmp_path, code=2)
    hints = re.findall(r"continue it with (feltlab [^\n;]+?)(?:\n|$)", r.stdout)
    assert hints == [f"feltlab certify shuffler --resume {out}"], r.stdout
    r = run(shlex.split(hints[0])[1:], tmp_path, code=3)  # 25 shoes: biased not caught
    assert "verdict INCONCLUSIVE" in r.stdout
    assert json.loads((out / "record.json").read_text())["collection"]["collected"] == 25
