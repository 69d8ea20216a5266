"""Each row of docs/bad-input.md: the command, its exit code and its message, no traceback."""

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pytest import TempPathFactory

from feltlab.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "bad-input.md"
EXAMPLE = ROOT / "examples" / "tournament.toml"


def _rows() -> list[Any]:
    rows = []
    for line in DOC.read_text().splitlines():
        m = re.match(r"^\| (.+?) \| `(.+?)` \| (\d) \| `(.+)` \|$", line)
        if m:
            rows.append(pytest.param(m[2], int(m[3]), m[4].replace("\\`", "`"), id=m[1]))
    return rows


ROWS = _rows()


def test_the_table_is_read() -> None:
    assert len(ROWS) >= 25


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad")
    (d / "garbage.blf").write_bytes(b"this is not a BLF capture\n" * 3)
    (d / "bad.toml").write_text("decks = = 3\n")
    text = EXAMPLE.read_text()
    definition = tomllib.loads(text)
    three = re.sub(r"(?m)^min_players\s*=.*$", "min_players = 3", text)
    assert three != text, "examples/tournament.toml has no min_players line to break"
    (d / "three.toml").write_text(three)
    wmin = definition["wagers"]["minimum"]
    maxed = re.sub(r"(?m)^maximum\s*=.*$", f"maximum = {max(wmin - 1, 0)}", text, count=1)
    (d / "max_below_min.toml").write_text(maxed)
    from importlib.resources import files

    prof = (files("feltlab.rig.certify") / "profiles" / "batch6.toml").read_text()
    (d / "profile.toml").write_text(re.sub(r"(?m)^decks\s*=.*$", "decks = 3", prof))
    (d / "latin1.toml").write_bytes(
        '[device]\nkind = "batch"\nname = "Bj\u00f6rn"\n'.encode("latin-1")
    )
    (d / "campaign5.toml").write_text('campaign = 5\n[device]\nkind = "batch"\n')
    (d / "simulation5.toml").write_text('simulation = 5\n[device]\nkind = "batch"\n')
    (d / "nokey.toml").write_text('[device]\nkind = "jackpot"\nauthenticate = true\n')
    (d / "empty.asc").write_text("")
    (d / "garbage.asc").write_text("this is not\nan ASC capture\n")
    (d / "tournament.toml").write_text(text)
    (d / "utf16.toml").write_bytes(text.encode("utf-16"))
    bots = re.sub(r"(?m)^bots\s*=.*$", "bots = 100000000", text)
    assert bots != text, "examples/tournament.toml has no bots line to break"
    (d / "many_bots.toml").write_text(bots)
    (d / "heartbeat.toml").write_text(
        re.sub(r"(?m)^heartbeat_period\s*=.*$", "heartbeat_period = 65.535", prof)
    )
    (d / "nan.toml").write_text(
        re.sub(r"(?m)^shuffle_cycle_max\s*=.*$", "shuffle_cycle_max = nan", prof)
    )
    (d / "replicates.toml").write_text(
        re.sub(r"(?m)^power_shoes\s*=.*$", "power_shoes = 1e10", prof)
    )
    (d / "binary.key").write_bytes(bytes(range(200, 240)))
    (d / "hexless.toml").write_text(
        '[device]\nkind = "jackpot"\nauthenticate = true\nkey_file = "binary.key"\n'
    )
    (d / "badstate").mkdir()
    (d / "badstate" / "campaign.json").write_text("[1, 2, 3]")
    (d / "badstate" / "capture-001.blf").write_bytes(b"not a capture")
    return d


@pytest.mark.parametrize(("command", "code", "phrase"), ROWS)
def test_bad_input_row(scratch: Path, command: str, code: int, phrase: str) -> None:
    args = shlex.split(command.replace("{tmp}", str(scratch)))
    result = CliRunner().invoke(main, args)
    out = result.output + (result.stderr if result.stderr_bytes else "")
    assert "Traceback" not in out
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{command!r} raised {result.exception!r}") from result.exception
    assert result.exit_code == code, out
    assert phrase in out, out
