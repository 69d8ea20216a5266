"""Bad input found by trying to break feltlab: each is one clear line naming the problem and
the fix, exit code 2 (a usage error), and no campaign is started or changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab import native
from feltlab.cli import main
from feltlab.core_rules import simulator_rules
from feltlab.math.strategy_tables import strategy_tables
from feltlab.rules import Rules


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    assert "Traceback" not in res.output
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def batch_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("c") / "batch"
    code, out = _run("certify", "shuffler", "--shoes", "4", "--seed", "2", "--out", str(d))
    assert code == 3, out  # 4 shoes: INCONCLUSIVE (dof 0 and too few for the power)
    return d


def test_a_size_option_of_another_kind_is_refused() -> None:
    code, out = _run("certify", "shuffler", "--deals", "100")
    assert code == 2 and "--deals does not apply to a batch shuffler" in out
    assert "give --shoes" in out


def test_resume_refuses_options_that_would_change_the_campaign(batch_campaign: Path) -> None:
    before = (batch_campaign / "record.json").read_bytes()
    code, out = _run("certify", "shuffler", "--resume", str(batch_campaign), "--shoes", "9")
    assert code == 2 and "drop --shoes" in out
    code, out = _run("certify", "jackpot-panel", "--resume", str(batch_campaign))
    assert code == 2 and "continue it with feltlab certify shuffler --resume" in out
    assert (batch_campaign / "record.json").read_bytes() == before


def test_analyze_refuses_a_profile_of_another_kind(batch_campaign: Path) -> None:
    code, out = _run("analyze", str(batch_campaign), "--profile", "jackpot")
    assert code == 2 and "holds a batch campaign: give a batch profile" in out


@pytest.mark.parametrize("cmd", [["simulate", "--rounds", "10"], ["math", "main"]])
def test_blackjack_odds_beyond_the_cores_range_are_one_error(cmd: list[str]) -> None:
    code, out = _run(*cmd, "--blackjack-pays", "1001:1")
    assert code == 2 and "must each be 1..1000" in out


def test_a_prize_beyond_the_panels_range_is_refused_by_math(tmp_path: Path) -> None:
    p = tmp_path / "panel.toml"
    p.write_text('[device]\nkind = "jackpot"\nprize_table = [[99999999999999999999, 1]]\n')
    code, out = _run("math", "madness21", "--profile", str(p))
    assert code != 0 and "cents in 1..1000000000000" in out


def test_explore_indexes_stay_within_64_bits() -> None:
    code, out = _run("certify", "explore", "--replay", "99999999999999999999999:1")
    assert code == 2 and "each 0..18446744073709551615" in out
    code, out = _run("certify", "explore", "--campaigns", "3", "--first", str(2**64 - 1))
    assert code == 2 and "past 2**64 - 1" in out


def test_a_round_that_could_overflow_the_simulators_cents_is_refused() -> None:
    # 1000:1 on a 10**8-cent stake could pay 10**11 cents: beyond int32 (it wrapped before)
    r = Rules.preset("nz").replace(blackjack_pays=(1000, 1))
    sr = simulator_rules(r, strategy_tables(r))
    from dataclasses import replace

    with pytest.raises(ValueError, match="beyond the simulator's int32 cents"):
        native.simulate_rounds(native.Xoshiro256StarStar(1), replace(sr, stake=10**8), 10)


def test_simulate_refuses_a_cutting_card_too_deep_before_any_work() -> None:
    """One deck at vegas_s17's penetration leaves 13 cards behind the cutting card: the
    simulator needs 26, and the error names --penetration (it once blamed --scheduler)."""
    code, out = _run("simulate", "--rules", "vegas_s17", "--decks", "1", "--rounds", "10")
    assert code == 2 and "Invalid value for --penetration" in out and "scheduler" not in out
    assert "the cutting card 13 cards from the back of 1 deck" in out
    assert "give --penetration 0.5 or less, or --fresh-shoe" in out
    code, out = _run(
        "simulate", "--rules", "vegas_s17", "--decks", "1", "--penetration", "0.5", "--rounds", "10"
    )
    assert code == 0, out


def test_simulate_refuses_an_unwritable_trace_before_simulating(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_dir" / "t.npz"
    code, out = _run("simulate", "--rounds", "10", "--trace", str(missing))
    assert code == 2 and "Invalid value for --trace" in out and "is not a writable directory" in out
    assert "house edge" not in out  # refused before the run


def test_a_scheduler_address_dask_cannot_parse_names_scheduler() -> None:
    """The address is named by its own error (SchedulerError), not guessed from any
    ValueError raised while a scheduler was given."""
    pytest.importorskip("dask.distributed")
    code, out = _run("simulate", "--rounds", "1000", "--scheduler", "tcp://")
    assert code == 2 and "Invalid value for --scheduler: 'tcp://' is not a Dask scheduler" in out
    assert "write e.g. tcp://host:8786, or local" in out
