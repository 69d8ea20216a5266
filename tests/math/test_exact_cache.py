"""The exact figure ``feltlab simulate`` prints beside a simulation, cached on disk
(feltlab.simulation.check.exact_table_figure): the same figure as the analyzer's, a key that
changes with every rule field and the analyzer's version, and a damaged file computed again,
never trusted."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from feltlab.math import main_wager
from feltlab.native import analyzer
from feltlab.rules import Rules
from feltlab.simulation import check

RULES = Rules.preset("vegas_s17")  # 0.1 s an analysis of its strategy tables
# one other valid value of every field of RULES (a field added to Rules fails the test
# below until it is listed here, so the key is known to cover it)
OTHER: dict[str, Any] = {
    "decks": 8,
    "deck_rule": "nz",
    "super_sevens": True,
    "dealer_hits_soft_17": True,
    "hole_card": "no_hole_card",
    "dealer_blackjack_takes": "all",
    "blackjack_pays": Fraction(6, 5),
    "double_on": "9-11",
    "double_after_split": False,
    "max_split_hands": 3,
    "resplit_aces": True,
    "split_aces_one_card": False,
    "surrender": "late",
    "insurance": False,
    "shuffler": "manual",
    "cutting_cards": 2,
    "cut_card_from_back": 100,
    "min_wager": 500,
    "max_wager": 100_000,
    "wager_unit": 50,
}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FELTLAB_CACHE_DIR", str(tmp_path))
    return tmp_path / "exact"


def _analyses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the analyzer's runs made through analyze_main."""
    calls: list[int] = []
    real = main_wager.analyze_main

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(main_wager, "analyze_main", counted)
    monkeypatch.setattr(check, "analyze_main", counted)  # its own name for it (imported at top)
    return calls


def test_cached_figure_is_the_analyzers_and_read_back(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = main_wager.analyze_main(RULES, "table")
    calls = _analyses(monkeypatch)
    assert check.exact_table_figure(RULES) == (a.ev, a.p_split_approx)
    assert len(calls) == 1 and len(list(cache_dir.glob("*.npy"))) == 1
    assert check.exact_table_figure(RULES) == (a.ev, a.p_split_approx)  # from the file
    assert len(calls) == 1


@pytest.mark.parametrize("damage", ["truncated", "altered", "empty", "other key"])
def test_a_damaged_cache_file_is_computed_again(
    damage: str, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = check.exact_table_figure(RULES)
    (path,) = cache_dir.glob("*.npy")
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[:-20])
    elif damage == "altered":  # one bit of the expectation's lowest byte: still a valid .npy
        i = len(raw) - 32 - 16
        path.write_bytes(raw[:i] + bytes([raw[i] ^ 1]) + raw[i + 1 :])
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a whole valid file of other rules stored under this key
        other = RULES.replace(dealer_hits_soft_17=True)
        check.exact_table_figure(other)
        path.write_bytes((cache_dir / f"{check.exact_figure_key(other)}.npy").read_bytes())
    calls = _analyses(monkeypatch)
    assert check.exact_table_figure(RULES) == expected
    assert len(calls) == 1  # not trusted: computed again
    assert check.exact_table_figure(RULES) == expected and len(calls) == 1  # and rewritten


def test_key_covers_every_rule_field_and_the_analyzers_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert set(OTHER) == {f.name for f in dataclasses.fields(Rules)}
    base = check.exact_figure_key(RULES)
    keys = {base}
    for name, value in OTHER.items():
        other = RULES.replace(**{name: value})
        assert getattr(other, name) != getattr(RULES, name), name
        keys.add(check.exact_figure_key(other))
    assert len(keys) == len(OTHER) + 1
    monkeypatch.setattr(analyzer, "ANALYZER_VERSION", analyzer.ANALYZER_VERSION + 1)
    assert check.exact_figure_key(RULES) != base
