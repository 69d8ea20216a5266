"""``feltlab certify predict``: a small seed recovered exactly and the rest of the shoe
predicted, a wrong declaration finding nothing and saying so, an infeasible space reported
with its search time and never searched, the identifying cards' bits, the command's exit
codes and one-line refusals (rig/security/predict.py, rig/cli/predict.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.errors import DeclarationError
from feltlab.rig.security.predict import MARGIN_BITS, plan_cards, predictability
from feltlab.rig.security.shuffler import (
    Declaration,
    information_bits,
    library_shoe,
    load_declaration,
)
from feltlab.shoe_files import write_shoe_file


def test_information_of_six_cards_of_one_deck() -> None:
    # the 33.8 bits: log2(52 * 51 * 50 * 49 * 48 * 47), whatever the six cards
    codes = np.arange(52, dtype=np.uint8)
    bits = information_bits(codes, [0, 1, 2, 3, 4, 5], 1)
    assert bits == pytest.approx(math.log2(52 * 51 * 50 * 49 * 48 * 47), abs=1e-12)
    # six decks: the first card of a code 6 times in 312 is log2(52) bits, a repeat costs more
    six = np.zeros(312, np.uint8)
    assert information_bits(six, [0], 6) == pytest.approx(math.log2(52))
    assert information_bits(six, [0, 1], 6) == pytest.approx(math.log2(52) + math.log2(311 / 5))


def test_twenty_bit_seed_recovered_and_rest_predicted() -> None:
    decl = Declaration("msvc-rand", 20, seed_source="timer-ms")
    seed = 0xABCDE
    codes = (library_shoe(decl, seed) % 52).astype(np.uint8)
    rec = predictability(decl, codes, workers=2)
    assert rec["verdict"] == "FAIL" and rec["exit_code"] == 1
    got = rec["recovered"]
    assert got["seed"] == seed
    k = rec["cards"]["count"]
    # the fewest cards in settle order (a down shuffle: the shoe's last card first) carrying
    # 20 + MARGIN_BITS bits
    order = list(range(311, -1, -1))
    assert rec["cards"]["positions"] == order[:k]
    assert information_bits(codes, order[:k], 6) >= 20 + MARGIN_BITS
    assert information_bits(codes, order[: k - 1], 6) < 20 + MARGIN_BITS
    assert got["predicted_cards"] == 312 - k and got["predicted_correct"] == 312 - k
    assert got["shoe"] == codes.tolist()
    assert rec["search"]["searched"] >= seed - 0 and rec["search"]["stopped"] == "found"
    assert rec["space"]["meaning"] == "1,048,576 milliseconds since power-up (17.5 minutes)"
    assert rec["summary"].startswith(f"FAIL: predictable: seed {seed} recovered from {k} cards")


def test_mt19937_seed_from_the_first_dealt_cards() -> None:
    # a player's view: only the first dealt cards, an up shuffle with rejection, 16 bits
    decl = Declaration("mt19937", 16, direction="up", scaling="rejection", decks=2)
    seed = 40_000
    codes = (library_shoe(decl, seed) % 52).astype(np.uint8)
    rec = predictability(decl, codes, order="dealt", workers=2)
    assert rec["recovered"]["seed"] == seed
    assert rec["cards"]["positions"] == list(range(rec["cards"]["count"]))
    assert rec["recovered"]["predicted_correct"] == 104 - rec["cards"]["count"]


def test_wrong_generator_finds_nothing_and_says_so() -> None:
    shoe = (library_shoe(Declaration("msvc-rand", 16), 1234) % 52).astype(np.uint8)
    rec = predictability(Declaration("java-random", 16), shoe, workers=2)
    assert rec["verdict"] == "INCONCLUSIVE" and rec["exit_code"] == 3
    assert rec["recovered"] is None
    assert rec["search"]["searched"] == 1 << 16 and rec["search"]["stopped"] == "exhausted"
    assert "no seed of the declared 65,536 deals this shoe" in rec["summary"]
    # the right generator, the wrong direction: nothing either
    rec = predictability(Declaration("msvc-rand", 16, direction="up"), shoe, workers=2)
    assert rec["verdict"] == "INCONCLUSIVE"


def test_128_bit_chacha20_is_infeasible_and_never_searched() -> None:
    decl = Declaration("chacha20", 128, seed_source="entropy")
    shoe = (library_shoe(decl, 99) % 52).astype(np.uint8)
    rec = predictability(decl, shoe, workers=2)
    assert rec["verdict"] == "PASS" and rec["exit_code"] == 0
    assert rec["recovered"] is None and rec["search"]["stopped"] == "infeasible"
    # timed on seeds from 0 without looking at a match (seed 99 among them)
    assert rec["search"]["false_candidates"] == 0
    rate = rec["search"]["rate_per_second"]
    assert rate > 0
    assert rec["search"]["full_search_seconds"] == pytest.approx(2.0**128 / rate, rel=1e-3)
    assert rec["summary"].startswith("PASS: infeasible at ")
    assert "years" in rec["summary"]


def test_space_over_the_bound_is_not_searched() -> None:
    decl = Declaration("msvc-rand", 32)
    shoe = (library_shoe(decl, (1 << 32) - 5) % 52).astype(np.uint8)
    rec = predictability(decl, shoe, workers=2, max_seconds=0.01)
    assert rec["verdict"] == "PASS" and rec["search"]["stopped"] == "infeasible"
    assert rec["search"]["searched"] < 1 << 32


@pytest.mark.parametrize("bound", [math.nan, math.inf, -1.0])
def test_a_bound_that_is_not_a_finite_number_of_seconds_is_refused(bound: float) -> None:
    # a NaN bound compared false with every search time: the search ran to the end
    decl = Declaration("msvc-rand", 32)
    shoe = (library_shoe(decl, 5) % 52).astype(np.uint8)
    with pytest.raises(ValueError, match=r"feasibility bound .* s is not a finite number"):
        predictability(decl, shoe, workers=1, max_seconds=bound)


def test_plan_uses_all_cards_when_none_suffice() -> None:
    decl = Declaration("chacha20", 256)
    codes = np.arange(52, dtype=np.uint8)
    plan = plan_cards(Declaration("chacha20", 256, decks=1), codes, "settled")
    assert len(plan.positions) == 52 and decl.cards == 312


def test_declaration_refusals(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="unknown generator 'rand48'"):
        Declaration("rand48", 20)
    with pytest.raises(DeclarationError, match="no seed_bits declared"):
        load_declaration(None, {"generator": "mt19937"})
    with pytest.raises(DeclarationError, match=r"not within 0\.\.2\^8 - 1"):
        load_declaration(None, {"generator": "mt19937", "seed_bits": 8, "seed_range": "0:300"})
    prof = tmp_path / "p.toml"
    prof.write_text('[predictability]\ngenerator = "glibc-rand"\nseed_bits = 12\nwidth = 3\n')
    with pytest.raises(DeclarationError, match="unknown \\[predictability\\] key\\(s\\) width"):
        load_declaration(prof, {})
    prof.write_text('[predictability]\ngenerator = "glibc-rand"\nseed_bits = "12"\n')
    with pytest.raises(DeclarationError, match="seed_bits = '12' must be an integer"):
        load_declaration(prof, {})
    prof.write_text('[predictability]\ngenerator = "glibc-rand"\nseed_bits = 12\n')
    decl = load_declaration(prof, {"scaling": "rejection"})
    assert (decl.generator, decl.seed_bits, decl.scaling) == ("glibc-rand", 12, "rejection")


def _invoke(args: list[str]) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["certify", "predict", *args])
    return r.exit_code, r.stdout, r.stderr


def test_command_on_a_shoe_file(tmp_path: Path) -> None:
    decl = Declaration("glibc-rand", 18, direction="up", scaling="multiply-shift")
    shoe = library_shoe(decl, 200_001)
    f = tmp_path / "shoes.csv"
    other = library_shoe(decl, 5)
    write_shoe_file(f, [np.stack([other, shoe])], decks=6)
    args = [str(f), "--shoe", "2", "--generator", "glibc-rand", "--seed-bits", "18"]
    args += ["--direction", "up", "--scaling", "multiply-shift", "--out", str(tmp_path / "o")]
    code, out, _ = _invoke(args)
    assert code == 1, out
    assert out.startswith("FAIL: predictable: seed 200001 recovered from ")
    rec = json.loads((tmp_path / "o" / "record.json").read_text())
    assert rec["source"]["shoe"] == 2 and rec["recovered"]["seed"] == 200_001
    seen = CliRunner().invoke(main, ["view", str(tmp_path / "o")], env={"COLUMNS": "300"})
    assert seen.exit_code == 0, seen.output
    assert seen.output.startswith(f"predictability check in {tmp_path / 'o'}: finished, FAIL\n")
    (row,) = [ln for ln in seen.output.splitlines() if "predictability " in ln and "seed" in ln]
    assert "seed 200001 recovered" in row and row.rstrip(" │").endswith("FAIL")
    redo = CliRunner().invoke(main, ["analyze", str(tmp_path / "o")])
    assert redo.exit_code == 2 and "is a feltlab certify predict record, not a campaign" in (
        redo.output
    )
    # report.html and junit.xml beside the record, like every campaign's
    junit = (tmp_path / "o" / "junit.xml").read_text()
    assert 'tests="1" errors="0" failures="1" skipped="0"' in junit
    case = '<testcase classname="feltlab.predict" name="predictability"><failure message="CWE-337'
    assert case in junit
    html = (tmp_path / "o" / "report.html").read_text()
    assert "recovered: seed 200001 from " in html and "CWE-339: Small Space" in html


def test_command_reports_an_inconclusive_state_recovery(tmp_path: Path) -> None:
    f = tmp_path / "words.txt"
    f.write_text("\n".join(str(i * 7919) for i in range(700)))  # not MT19937's outputs
    code, out, _ = _invoke(["--outputs", str(f), "--out", str(tmp_path / "o")])
    assert code == 3 and out.startswith("INCONCLUSIVE: the outputs after the first 624")
    junit = (tmp_path / "o" / "junit.xml").read_text()
    assert '<testcase classname="feltlab.predict" name="mt19937-state"><skipped message=' in junit
    assert "first wrong prediction: output 624" in (tmp_path / "o" / "report.html").read_text()


def test_command_exit_codes_and_refusals(tmp_path: Path) -> None:
    base = ["--generator", "msvc-rand", "--seed-bits", "12"]
    code, out, _ = _invoke(["--simulate", "77", *base, "--out", str(tmp_path / "a"), "--json"])
    assert code == 1 and json.loads(out)["recovered"]["seed"] == 77
    code, _, err = _invoke(["--simulate", "77", "--generator", "rand48", "--seed-bits", "12"])
    assert code == 2 and err.strip().splitlines() == [
        "error: unknown generator 'rand48'; choose one of glibc-rand, msvc-rand, "
        "java-random, mt19937, xorshift128+, chacha20"
    ]
    code, _, err = _invoke(["--simulate", "77", "--generator", "msvc-rand"])
    assert code == 2 and "no seed_bits declared" in err
    one = tmp_path / "one.csv"
    one.write_text("1,2,3\n")
    code, _, err = _invoke([str(one), *base])
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    code, _, err = _invoke(base)
    assert code == 2 and "give a shoe FILE, --simulate SEED or --outputs FILE" in err
    shoe = tmp_path / "s.csv"
    write_shoe_file(shoe, [np.stack([np.arange(312), np.arange(312)])], decks=6)
    code, _, err = _invoke([str(shoe), "--shoe", "3", *base])
    assert code == 2 and "--shoe 3" in err and "holds 2 shoe(s)" in err
    code, _, err = _invoke([str(shoe), *base, "--decks", "2"])
    assert code == 2 and "declare --decks 6" in err


def test_seed_wider_than_the_generator_keeps_is_searched_at_its_width() -> None:
    # MT19937's init_genrand keeps 32 bits of a seed, glibc's TYPE_0 31, Java's 48
    assert Declaration("mt19937", 64).space == 1 << 32
    assert Declaration("glibc-rand", 40).space == 1 << 31
    assert Declaration("java-random", 64).describe()["effective_seed_bits"] == 48
    assert Declaration("chacha20", 128).space == 1 << 128
    decl = Declaration("mt19937", 64, seed_source="entropy")
    codes = (library_shoe(decl, (1 << 40) + 77) % 52).astype(np.uint8)
    rec = predictability(decl, codes, workers=2)
    assert rec["recovered"]["seed"] == 77 and rec["space"]["effective_seed_bits"] == 32


def test_command_reads_the_profiles_declaration(tmp_path: Path) -> None:
    prof = tmp_path / "shuffler.toml"
    prof.write_text(
        "[predictability]\n"
        'generator = "xorshift128+"\nseed_bits = 14\nseed_source = "counter"\n'
        'direction = "up"\nscaling = "rejection"\ndecks = 2\n'
    )
    args = ["--profile", str(prof), "--simulate", "9999", "--cards", "dealt"]
    code, out, _ = _invoke([*args, "--out", str(tmp_path / "o"), "--json"])
    rec = json.loads(out)
    assert code == 1 and rec["recovered"]["seed"] == 9999
    assert rec["declaration"]["decks"] == 2 and rec["cards"]["order"] == "dealt"
    assert rec["space"]["meaning"] == "16,384 shuffles counted"
    prof.write_text("[predictability\n")
    code, _, err = _invoke(["--profile", str(prof), "--simulate", "1"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(prof) in err
