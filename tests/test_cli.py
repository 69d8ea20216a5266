"""The ``feltlab`` command line through click's CliRunner (in process)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from feltlab import native
from feltlab.cli import main

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The throughput figures in the shuffle summary depend on the machine, not on the seed.
TIMING = re.compile(r"in [0-9.]+ s: [0-9,]+ shoes/s, [0-9.]+ ns/card")


def _invoke(args: list[str]) -> Result:
    # A wide, colourless terminal so rich neither wraps nor styles what the tests read.
    env = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TERM": "dumb"}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _text(result: Result) -> str:
    """The output with escape codes removed and whitespace (rich's wrapping) collapsed."""
    return " ".join(ANSI.sub("", result.output).split())


def test_version_is_the_project_version() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        version = tomllib.load(f)["project"]["version"]
    result = _invoke(["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"feltlab, version {version}"


def test_info_json() -> None:
    result = _invoke(["info", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["core"] == native.core_info()
    assert info["core"]["compiler"].strip()
    assert info["core"]["flags"].strip()
    assert "-O" in info["core"]["flags"]
    assert info["rngs"] == ["xoshiro256**", "chacha20"]
    assert isinstance(info["plugins"], list)
    for plugin in info["plugins"]:
        assert plugin["name"] and isinstance(plugin["hooks"], list)


def _shuffle(seed: int, rng: str | None = None) -> Result:
    args = ["shuffle", "--shoes", "1000", "--decks", "1", "--seed", str(seed)]
    if rng is not None:
        args += ["--rng", rng]
    result = _invoke(args)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("rng", [None, "chacha20"])
def test_shuffle_is_reproducible_and_valid(rng: str | None) -> None:
    first, again, other = _shuffle(3, rng), _shuffle(3, rng), _shuffle(4, rng)
    a, b, c = _text(first), _text(again), _text(other)

    name = rng or "xoshiro256**"
    assert f"1,000 1-deck shoes with {name} (seed 3)" in a
    assert "every shoe a permutation of the 52 cards: True" in a
    assert "every shoe a permutation of the 52 cards: True" in c
    assert TIMING.search(a), a

    # Three shoes shown by default, each its first 13 cards.
    shown = re.findall(r"shoe (\d+): ((?:\S+ ){13})\.\.\.", a)
    assert [i for i, _ in shown] == ["0", "1", "2"], a
    assert len({cards for _, cards in shown}) == 3

    # Same seed, same output (but for the machine's timing); another seed, other shoes.
    assert TIMING.sub("<timing>", a) == TIMING.sub("<timing>", b)
    assert TIMING.sub("<timing>", a).replace("(seed 3)", "(seed 4)") != TIMING.sub("<timing>", c)


def test_shuffle_shows_the_seeded_batch() -> None:
    """The printed cards are the first cards of the batch the core gives for that seed."""
    from feltlab.cards import card_str

    batch = native.shuffle_batch(native.make_rng("xoshiro256**", 3), 1000, 1, ids=True)
    text = _text(_shuffle(3))
    for i in range(3):
        head = " ".join(card_str(int(c)) for c in batch[i, :13])
        assert f"shoe {i}: {head} ..." in text


def test_bad_decks_is_a_usage_error() -> None:
    result = _invoke(["shuffle", "--decks", "9", "--shoes", "10"])
    assert result.exit_code == 2
    assert "--decks" in result.output
    assert "9" in result.output
