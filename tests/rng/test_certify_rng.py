"""``feltlab certify rng``: the verdicts, the NOT RUN reasons, the standards, the written
certificate and the one-line errors.  Small calibrated samples: seeded generators, tests the
sequences' length allows (the full NIST sample of 1,000 x 10^6 ChaCha20 bits is
benchmarks/bench_rng.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab.cli import main
from feltlab.rig.certify.report import sha256_file
from feltlab.rig.certify.rng_certificate import certify_sequences
from feltlab.rig.certify.rng_power import ColumnLaw, column_power, plan_generator
from feltlab.rig.certify.standards import RNG_STANDARDS, get_standard
from feltlab.rig.rng.generators import chacha_bytes, parse_generator
from feltlab.rig.rng.sp800_22 import Params

SHORT_TESTS = (
    "frequency",
    "block_frequency",
    "cumulative_sums",
    "runs",
    "longest_run",
    "rank",
    "dft",
    "non_overlapping_template",
    "approximate_entropy",
)
"""The tests 2^16 bits a sequence can run (the others need 3.9e5 to 10^6)."""
N = 1 << 16


def certify(gen: str, m: int, seed: int = 3) -> dict[str, Any]:
    data = parse_generator(gen).sequences(m, N, seed)
    res = certify_sequences(data, N, {"name": gen}, {}, params=Params(tests=SHORT_TESTS))
    return res.record


def test_chacha20_passes_both_second_level_verdicts() -> None:
    rec = certify("chacha20", 60)
    rng = rec["rng"]
    assert rec["verdict"] == "PASS" and rng["failing"] == [] and rng["notes"] == []
    cols = rng["columns"]
    assert len(cols) == 157  # 148 templates, cusum's 2, the seven others' one each
    assert all(c["sequences"] == 60 and c["uniformity_ok"] is not None for c in cols)
    assert rng["threshold"] == pytest.approx(0.01 / (2 * len(cols)))


def test_glibc_low_bits_fail_naming_the_tests() -> None:
    # rand() & 0xff of the 31-bit LCG repeats every 2,048 bits: a spike in the spectrum,
    # repeated 32 x 32 matrices, too-regular runs and patterns
    rec = certify("glibc-rand-low", 4)
    assert rec["verdict"] == "FAIL"
    failing = set(rec["rng"]["failing_tests"])
    assert {"dft", "rank", "longest_run", "approximate_entropy"} <= failing
    by = {t["name"]: t for t in rec["rng"]["tests"]}
    assert by["dft"]["verdict"] == "FAIL" and by["dft"]["failing"] == [["", "proportion"]]
    assert by["frequency"]["verdict"] == "PASS"  # its bits are balanced: 1s and 0s alternate


def test_a_reused_key_fails_the_uniformity_of_the_p_values() -> None:
    # every sequence is the same keystream: each test's 60 p-values are one value
    rec = certify("reused-key", 60)
    assert rec["verdict"] == "FAIL"
    freq = next(t for t in rec["rng"]["tests"] if t["name"] == "frequency")
    assert ["", "uniformity"] in freq["failing"]
    col = next(c for c in rec["rng"]["columns"] if c["test"] == "frequency")
    assert sorted(col["histogram"]) == [0] * 9 + [60]


def test_a_stuck_bit_needs_three_sequences_at_this_level() -> None:
    # each 2^16-bit sequence fails the frequency test (z = 8); at the family-wise level over
    # 157 columns, 2 failing sequences of 2 are not yet significant (P = 2e-4 > 3.2e-5), 3 are
    two = certify("stuck-bit", 2)
    assert two["verdict"] == "INCONCLUSIVE" and two["rng"]["failing"] == []
    three = certify("stuck-bit", 3)
    assert three["verdict"] == "FAIL" and "frequency" in three["rng"]["failing_tests"]


def write_chacha(path: Path, nbytes: int, seed: int = 5) -> Path:
    path.write_bytes(chacha_bytes(seed, nbytes).tobytes())
    return path


def test_a_short_file_runs_what_it_can_and_says_not_run_with_the_length(tmp_path: Path) -> None:
    f = write_chacha(tmp_path / "raw.bin", 1250)  # 10^4 bits
    out = tmp_path / "cert"
    r = CliRunner().invoke(main, ["certify", "rng", str(f), "--out", str(out), "--json"])
    assert r.exit_code == 3, r.output
    rec = json.loads(r.stdout)["record"]
    assert rec["verdict"] == "INCONCLUSIVE"
    by = {t["name"]: t for t in rec["rng"]["tests"]}
    ran = {
        "frequency",
        "block_frequency",
        "cumulative_sums",
        "runs",
        "longest_run",
        "dft",
        "non_overlapping_template",
    }  # SP 800-22's minimum lengths allow these at 10^4
    assert {n for n, t in by.items() if t["verdict"] != "NOT RUN"} == ran
    needed = {n: t["bits_needed"] for n, t in by.items() if t["verdict"] == "NOT RUN"}
    assert needed == {
        "rank": 38_912,
        "overlapping_template": 1_000_000,
        "universal": 387_840,
        "approximate_entropy": 65_536,
        "random_excursions": 1_000_000,
        "random_excursions_variant": 1_000_000,
        "serial": 524_288,
        "linear_complexity": 1_000_000,
    }
    assert "has 10000" in by["universal"]["not_run"]
    assert rec["source"]["bytes_read"] == 1250 and rec["source"]["format"] == "bytes"
    # the certificate: record, report, JUnit, manifest with every file's SHA-256
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert set(manifest) == {"record.json", "report.html", "junit.xml"}
    assert manifest["record.json"] == sha256_file(out / "record.json")
    suite = ET.parse(out / "junit.xml").getroot()
    assert suite.get("tests") == "15" and suite.get("skipped") == "8"
    html = (out / "report.html").read_text()
    assert "NOT RUN" in html and "Proportion of passing sequences" in html


@pytest.mark.parametrize("source", ["file", "generator"])
def test_the_terminal_table_prints_to_its_verdict(tmp_path: Path, source: str) -> None:
    """Without --json the certificate prints its table, its size line and its verdict, and
    exits with the verdict's code: a raw-output record's ``source`` (a file of bits or a
    generator) was once printed as a shoe file's, a KeyError traceback with exit 1."""
    what = (
        [str(write_chacha(tmp_path / "raw.bin", 1250))]
        if source == "file"
        else ["--generator", "chacha20", "--seed", "1", "--sequences", "2", "--bits", "10000"]
    )
    out = tmp_path / "cert"
    r = CliRunner().invoke(main, ["certify", "rng", *what, "--out", str(out)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 3, r.output  # rank, universal, ... NOT RUN at 10^4 bits
    assert "sp800_22.rank" in r.stdout and "NOT RUN" in r.stdout
    many = "sequence" if source == "file" else "sequences"  # 1 of 10^4 bits, or 2
    assert f"{1 if source == 'file' else 2} {many} of 10,000 bits, alpha 0.01" in r.stdout
    assert f"verdict INCONCLUSIVE; report in {out}" in r.stdout
    assert "shoes from" not in r.stdout
    # feltlab view of the folder shows the same rows, not an empty "campaign None" line
    v = CliRunner().invoke(main, ["view", str(out)])
    assert v.exit_code == 0, v.output
    assert v.stdout.splitlines()[0] == (
        f"raw-output certificate in {out}: finished, {1 if source == 'file' else 2} {many} "
        "of 10,000 bits"
    )
    assert ": INCONCLUSIVE" in v.stdout
    assert "needs n >= 38912 bits" in v.stdout and "min proportion 1.0000" in v.stdout
    # feltlab analyze of it says what the folder is, not "no capture-NNN.blf"
    a = CliRunner().invoke(main, ["analyze", str(out)])
    assert a.exit_code == 2, a.output
    assert f"{out} is a raw-output certificate (feltlab certify rng)" in a.output
    # the standard it was judged under is said, not only its alpha
    s = CliRunner().invoke(
        main, ["certify", "rng", *what, "--standard", "comar", "--out", str(tmp_path / "s")]
    )
    assert s.exit_code == 3, s.output
    assert (
        "alpha 0.05 (family-wise over 155 p-value columns) under --standard comar (COMAR "
        "36.05.02.17 (Maryland, automated card shuffler); requires 8 of the 15 tests)"
    ) in s.stdout


def test_words_file_and_standard(tmp_path: Path) -> None:
    f = write_chacha(tmp_path / "w.bin", 4 * 2048)  # 2,048 32-bit words
    r = CliRunner().invoke(
        main,
        [
            "certify",
            "rng",
            str(f),
            "--format",
            "u32le",
            "--bits",
            "4096",
            "--standard",
            "pa810a",
            "--out",
            str(tmp_path / "c"),
            "--json",
        ],
    )
    rec = json.loads(r.stdout)["record"]
    assert rec["options"]["alpha"] == 0.05 and rec["rng"]["alpha"] == 0.05
    assert rec["options"]["sequences"] == 16 and rec["source"]["words_read"] == 2048
    assert rec["rng"]["standard"]["source"] == "58 Pa. Code 810a.5(c)"
    assert "Kolmogorov-Smirnov" in rec["rng"]["standard"]["not_covered"]
    assert r.exit_code == 3  # 4,096 bits: most required tests NOT RUN


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--generator", "chacha20", "--standard", "nevada"], "unknown standard 'nevada'"),
        (["--generator", "chacha20", "--standard", "gli", "--alpha", "0.05"], "not both"),
        (["--generator", "lcg"], "unknown generator 'lcg'"),
        (  # numpy's MemoryError (a traceback) before the bound
            ["--generator", "glibc-rand", "--sequences", "100000", "--bits", "1000000000"],
            "12,500,000,000,000 bytes, over the 2,147,483,648 a run draws; give fewer",
        ),
        ([], "give a FILE of raw output or --generator"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], message: str) -> None:
    r = CliRunner().invoke(main, ["certify", "rng", *args])
    assert r.exit_code == 2 and message in r.output
    assert "Traceback" not in r.output


def test_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    t = tmp_path / "t.txt"
    t.write_text("1 2 3\n4 five 6\n")
    r = CliRunner().invoke(
        main,
        [
            "certify",
            "rng",
            str(t),
            "--format",
            "text",
            "--range",
            "0:7",
            "--out",
            str(tmp_path / "a"),
        ],
    )
    assert r.exit_code == 2
    assert "line 2, column 3: 'five' is not a decimal integer" in r.output
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    r = CliRunner().invoke(main, ["certify", "rng", str(t), "--format", "text", "--range", "1:6"])
    assert r.exit_code == 2 and "holds 6 values, not a power of two" in r.output
    f = write_chacha(tmp_path / "raw.bin", 100)
    r = CliRunner().invoke(main, ["certify", "rng", str(f), "--sequences", "2", "--bits", "1000"])
    assert r.exit_code == 2
    assert "need 2,000 bits, it holds 800" in r.output and r.output.count("\n") == 1


def test_rng_standards_cite_their_sources_and_levels() -> None:
    assert {s.name: s.alpha for s in RNG_STANDARDS.values()} == {
        "25cfr547": 0.01,
        "pa810a": 0.05,
        "comar": 0.05,
        "gli": 0.01,
    }
    cfr = get_standard("25cfr547", "rng")
    assert cfr.source == "25 CFR 547.14(b)(2)" and "spectral" in cfr.tests
    assert "dft" in cfr.checks  # SP 800-22's spectral test serves the named spectral test
    assert get_standard("comar", "rng").checks == (  # the tests with a chi-square statistic
        "frequency",
        "block_frequency",
        "longest_run",
        "non_overlapping_template",
        "overlapping_template",
        "random_excursions",
        "serial",
        "linear_complexity",
    )
    assert get_standard("25cfr547").kind == "shuffler"  # the shuffler's profiles unchanged


def test_same_seed_same_record_figures() -> None:
    a = certify("chacha20", 20, seed=9)["rng"]["columns"]
    b = certify("chacha20", 20, seed=9)["rng"]["columns"]
    assert [c["histogram"] for c in a] == [c["histogram"] for c in b]
    assert np.isnan(a[0]["uniformity_p"])  # 20 < 55 sequences: not judged


def test_column_power_is_the_exact_binomial_rule() -> None:
    # every sequence fails (q = 0): two-sided P = 2 * 0.01^m against 0.01 / (2 * 157)
    law = ColumnLaw("frequency", "", 0.0, 0.0, 1.0)
    t = 0.01 / 314
    assert column_power(law, 2, 0.99, t) == 0.0  # 2e-4 > 3.2e-5: as the certificate found
    assert column_power(law, 3, 0.99, t) == pytest.approx(1.0)
    # a fair column never rejects more often than its level
    fair = ColumnLaw("frequency", "", 0.99, 0.0, 1.0)
    assert all(column_power(fair, m, 0.99, t) <= t for m in (10, 100, 1000))


def test_plan_says_enough_sequences_and_which_no_test_catches() -> None:
    params = Params(tests=SHORT_TESTS)
    stuck = plan_generator(parse_generator("stuck-bit"), N, params=params, simulated=20, seed=2)
    need = stuck.tests["frequency"]
    assert need is not None and 3 <= need <= 16  # never fewer than the exact 3
    data = parse_generator("stuck-bit").sequences(need, N, 77)
    res = certify_sequences(data, N, {"name": "stuck"}, {}, params=params)
    assert res.record["verdict"] == "FAIL"  # the planned size does catch it
    for name in ("mt19937", "chacha20"):
        p = plan_generator(parse_generator(name), N, params=params, simulated=20, seed=2)
        assert p.sequences_needed is None and p.caught_by is None, p.tests
    # a new user's trial: from 10 simulated sequences the ten bins' chi-square (1 expected a
    # bin) claimed the fair ChaCha20 caught at 512 by non_overlapping_template; the uniformity
    # law is taken only from 55 p-values on
    few = plan_generator(parse_generator("chacha20"), 65536, simulated=10, seed=0)
    assert few.sequences_needed is None, few.tests


def test_plan_simulates_a_reused_key_whole() -> None:
    # identical sequences: one frequency p-value repeated; its uniformity is judged from 55
    # sequences, the first size of the doubling 2, 4, ... 64 at or above it
    p = plan_generator(
        parse_generator("reused-key"), 4096, params=Params(tests=("frequency",)), seed=4
    )
    assert p.method.startswith("simulated whole") and p.tests == {"frequency": 64}


def test_plan_says_the_fair_generator_is_not_caught_as_it_should_be() -> None:
    """ChaCha20 is the control: '-' is the battery's right answer, not a flaw left to catch
    with "more bits or a larger --simulated sample" (what an uncaught flawed one is told)."""
    r = CliRunner().invoke(
        main,
        [
            *("certify", "plan", "-g", "chacha20", "-g", "stuck-bit", "--bits", "65536"),
            *("--simulated", "20", "--seed", "2"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "chacha20: fair, no test catches it, as it should" in r.stdout
    assert "more bits" not in r.stdout and "stuck-bit:" not in r.stdout  # stuck-bit caught
    j = CliRunner().invoke(
        main,
        ["certify", "plan", "-g", "chacha20", "--bits", "65536", "--simulated", "20", "--json"],
    )
    assert j.exit_code == 0, j.output
    assert '"fair": true' in j.stdout and '"sequences_needed": null' in j.stdout


def test_plan_command_refuses_mixed_options_and_unknown_generators() -> None:
    r = CliRunner().invoke(main, ["certify", "plan", "-g", "chacha20", "--decks", "6"])
    assert r.exit_code == 2 and "drop --alternative, --decks" in r.output
    r = CliRunner().invoke(main, ["certify", "plan", "-g", "rand48"])
    assert r.exit_code == 2 and "unknown generator 'rand48'" in r.output
    assert "Traceback" not in r.output


def test_the_same_words_as_text_and_as_u32be_give_the_same_certificate(tmp_path: Path) -> None:
    words = chacha_bytes(8, 4 * 4096).view(">u4")
    be = tmp_path / "w.bin"
    be.write_bytes(words.tobytes())
    txt = tmp_path / "w.txt"
    txt.write_text("\n".join(str(int(w)) for w in words) + "\n")
    common = ["--bits", "8192", "--sequences", "16", "--json"]
    a = CliRunner().invoke(
        main,
        ["certify", "rng", str(be), "--format", "u32be", "--out", str(tmp_path / "a"), *common],
    )
    b = CliRunner().invoke(
        main,
        [
            "certify",
            "rng",
            str(txt),
            "--format",
            "text",
            "--range",
            "0:4294967295",
            "--out",
            str(tmp_path / "b"),
            *common,
        ],
    )
    ra, rb = (json.loads(r.stdout)["record"]["rng"] for r in (a, b))
    assert [c["histogram"] for c in ra["columns"]] == [c["histogram"] for c in rb["columns"]]
    assert [c["passed"] for c in ra["columns"]] == [c["passed"] for c in rb["columns"]]


def test_a_used_out_is_refused_before_the_file_is_read(tmp_path: Path) -> None:
    out = tmp_path / "used"
    out.mkdir()
    (out / "x").write_text("x")
    r = CliRunner().invoke(
        main, ["certify", "rng", str(tmp_path / "missing.bin"), "--out", str(out)]
    )
    assert r.exit_code == 2 and "is not empty" in r.output  # not "does not exist"


@pytest.mark.parametrize("source", ["file", "generator"])
def test_console_output_names_the_bits_source(tmp_path: Path, source: str) -> None:
    """Without --json the console summary printed a shoe file's line for every rng record
    (KeyError 'cards': a traceback and exit 1, read as FAIL, after the certificate was
    written)."""
    f = write_chacha(tmp_path / "raw.bin", 250)
    args = [str(f)] if source == "file" else ["--generator", "chacha20", "--seed", "1"]
    r = CliRunner().invoke(
        main,
        [
            "certify",
            "rng",
            *args,
            "--sequences",
            "2",
            "--bits",
            "1000",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert r.exit_code == 3, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    want = (
        f"raw output {f} (bytes, sha256 "
        if source == "file"
        else ("bits from library generator chacha20")
    )
    assert want in r.output
    assert "verdict INCONCLUSIVE" in r.output
