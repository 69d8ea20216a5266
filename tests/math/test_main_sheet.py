"""`feltlab math main` (the analyzer applied to Rules) against the C simulator, its JSON
shape, and the rule options shared by math, simulate and play."""

import json
from pathlib import Path
from statistics import NormalDist

import pytest
from click.testing import CliRunner

from feltlab import Rules
from feltlab.cli import main
from feltlab.math.main_wager import analyze_main, main_par_sheet
from feltlab.rules import PRESETS, DealerBlackjackTakes
from feltlab.simulation import run as sim

AGREEMENT = {name: Rules.preset(name) for name in sorted(PRESETS)} | {
    "vegas_s17_late": Rules.preset("vegas_s17", surrender="late"),
    "vegas_s17_early": Rules.preset("vegas_s17", surrender="early"),
    "nz_late": Rules.preset("nz", surrender="late"),
    "nz_takes_all": Rules.preset("nz", dealer_blackjack_takes=DealerBlackjackTakes.ALL),
    "nz_takes_busted": Rules.preset(
        "nz", dealer_blackjack_takes=DealerBlackjackTakes.ORIGINAL_AND_BUSTED
    ),
}


@pytest.mark.parametrize("name", sorted(AGREEMENT))
def test_fresh_shoe_simulation_agrees_with_the_exact_table_strategy(name: str) -> None:
    rules = AGREEMENT[name]
    exact = -analyze_main(rules, "table").ev
    # seeded: the same rounds every run; 8 million rounds give a standard error of ~0.04 pp.
    # The bound is family-wise over the cases (Bonferroni: 1% / cases, two-sided), so a
    # correct simulator passes them all for 99% of seeds; a 95% interval per case would fail
    # one of the 19 for most seeds (1 - 0.95^19 = 62%), which a change of random stream shows.
    z = float(NormalDist().inv_cdf(1 - 0.01 / (2 * len(AGREEMENT))))
    res = sim.simulate(rules, 8_000_000, seed=15, fresh_shoe=True, chunk_rounds=2_000_000)
    bound = z * res.half_width / NormalDist().inv_cdf(0.975)
    assert abs(res.house_edge - exact) <= bound, (name, exact, res.house_edge, bound)


def test_simulate_cli_fresh_shoe_agrees_with_math_main_for_the_nz_preset() -> None:
    runner = CliRunner()
    out = runner.invoke(
        main, ["math", "main", "--rules", "nz", "--strategy", "table", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    sheet = json.loads(out.output)
    assert sheet["method"] == "exact"
    out = runner.invoke(
        main, ["simulate", "--rules", "nz", "--fresh-shoe", "--rounds", "3000000", "--json"]
    )
    assert out.exit_code == 0, out.output
    lo, hi = json.loads(out.output)["ci95"]
    assert lo <= sheet["house_edge"]["value"] <= hi


def test_main_sheet_json_has_the_par_sheet_shape_and_exact_figures() -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["math", "main", "--rules", "vegas_s17", "--format", "json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    # Farmer's CA v7.6: 6 decks S17 DAS, split to 4, no RSA, peek, CDZ-: -0.402870%
    assert abs(100 * d["house_edge"]["value"] - 0.402870) <= 1e-6
    assert d["return"]["value"] == -d["house_edge"]["value"]
    assert d["strategy"] == "cdz" and d["method"] == "exact"
    total = sum(o["probability"] for o in d["distribution"]["outcomes"])
    assert total == pytest.approx(1.0, abs=1e-12)
    assert 1.1 < d["std_dev"] < 1.2
    # insurance off a 6-deck shoe less the ace: 96 tens in 311 cards, paid 2 to 1
    assert d["insurance"]["return"] == pytest.approx(2 * 96 / 311 - 215 / 311, abs=1e-15)
    cells = {(c["cards"], c["up"]): c for c in d["chart"]}
    assert cells[("A-A", "6")]["action"] == "P"
    assert cells[("6-T", "T")]["action"] == "H"  # no surrender in vegas_s17
    assert cells[("5-6", "6")]["action"] == "D"
    assert cells[("A-T", "6")]["ev"] == pytest.approx(1.5, abs=1e-15)


def test_nz_game_house_edge_and_settlement_order() -> None:
    # what a dealer blackjack takes: original only < original and busted < all wagers
    edges = {
        takes: main_par_sheet(Rules.preset("nz", dealer_blackjack_takes=takes), "cdz").house_edge
        for takes in DealerBlackjackTakes
    }
    assert (
        edges[DealerBlackjackTakes.ORIGINAL]
        < edges[DealerBlackjackTakes.ORIGINAL_AND_BUSTED]
        < edges[DealerBlackjackTakes.ALL]
    )
    out = CliRunner().invoke(main, ["math", "main", "--rules", "nz"])
    assert out.exit_code == 0, out.output
    assert f"house edge {100 * edges[DealerBlackjackTakes.ORIGINAL]:.6f}% (exact)" in out.output


def test_every_rule_option_reaches_the_rules(tmp_path: Path) -> None:
    f = tmp_path / "house.toml"
    f.write_text('preset = "vegas_s17"\nmax_split_hands = 3\n')
    args = [
        "math", "main", "--rules", str(f), "--decks", "8", "--h17", "--double", "10-11",
        "--no-das", "--resplit-aces", "--hole-card", "none", "--dealer-blackjack-takes",
        "original-and-busted", "--surrender", "late", "--blackjack-pays", "6:5",
        "--penetration", "0.8", "--format", "json",
    ]  # fmt: skip
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    r = json.loads(out.output)["rules"]
    assert r["decks"] == 8 and r["dealer_hits_soft_17"] and r["double_on"] == "10-11"
    assert not r["double_after_split"] and r["resplit_aces"] and r["max_split_hands"] == 3
    assert r["hole_card"] == "no_hole_card"
    assert r["dealer_blackjack_takes"] == "original_and_busted"
    assert r["surrender"] == "late" and r["blackjack_pays"] == "6:5"
    assert r["cut_card_from_back"] == round(416 * 0.2)


@pytest.mark.parametrize(
    ("command", "args", "words"),
    [
        ("play", ["--hole-card", "peek", "--dealer-blackjack-takes", "all"], "only with no hole"),
        ("simulate", ["--split-hands", "2", "--resplit-aces"], "--resplit-aces needs"),
        ("math", ["main", "--split-hands", "1", "--das"], "--das needs splitting"),
        ("simulate", ["--blackjack-pays", "3-2"], "WIN:STAKE"),
        ("play", ["--penetration", "0.3"], "half way in from the back: give 0.5 or more"),
        ("simulate", ["--split-hands", "5"], "--split-hands 5: give 1 (no split) to 4"),
        (
            "simulate",
            ["--rules", "vegas_s17", "--decks", "9"],
            "--decks 9: the vegas_s17 rules take 1 to 8 decks",
        ),
        ("math", ["main", "--rules", "nope"], "neither a preset"),
        ("math", ["main", "--rules", "missing.toml"], "no rules file 'missing.toml'"),
        ("play", ["--surrender", "early", "--hole-card", "peek"], "early surrender under peek"),
        ("math", ["main", "--decks", "3"], "rule 3.3(a)"),
    ],
)
def test_inconsistent_rule_options_are_one_line_errors(
    command: str, args: list[str], words: str
) -> None:
    out = CliRunner().invoke(
        main, [command, *args, "--rounds", "1"] if command != "math" else [command, *args]
    )
    assert out.exit_code == 2, out.output
    error = [ln for ln in out.output.splitlines() if ln.startswith("Error:")]
    assert len(error) == 1 and words in error[0], out.output
    assert "Traceback" not in out.output
    # an option is refused in the option's words, never a Rules field's
    assert not any(
        f in error[0] for f in ("cut_card_from_back=", "max_split_hands=", "deck_rule='")
    )
