"""The predictability check in a shuffler campaign (issue 40): examples/timer-seeded-shuffler.toml
PASSes the randomness battery at its planned 2000 shoes, yet its first shoe gives away its
seed (the device's milliseconds since boot) and the whole shoe: the campaign FAILs on the
named check, with its CWEs and evidence in the record, report.html and junit.xml.  A
profile declaring a 256-bit ChaCha20 key PASSes the check (the space reported infeasible)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from feltlab.cli import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "timer-seeded-shuffler.toml"


def test_timer_seeded_example_passes_the_battery_and_fails_predictability(
    tmp_path: Path,
) -> None:
    out = tmp_path / "camp"
    r = CliRunner().invoke(
        main, ["certify", "shuffler", "--profile", str(EXAMPLE), "--out", str(out)]
    )
    assert r.exit_code == 1, r.output
    rec = json.loads((out / "record.json").read_text())
    assert rec["battery"]["n_shoes"] == 2000 and rec["battery"]["verdict"] == "PASS"
    assert all(m["verdict"] != "FAIL" for m in rec["measurements"])
    pred = rec["predictability"]
    assert rec["verdict"] == "FAIL" and pred["verdict"] == "FAIL" and pred["shoe"] == 1
    # the record names the seeding as the device's shuffle (it said fisher-yates)
    assert rec["device"]["model"] == "seeding mt19937:timer-ms:20"
    # the first shoe's seed: 22 ms of simulated uptime (the campaign is deterministic)
    assert pred["recovered"]["seed"] == 22
    assert pred["recovered"]["from_cards"] == pred["cards"]["count"] == 5
    assert pred["recovered"]["predicted_correct"] == 307
    assert [c[:7] for c in pred["cwe"]] == ["CWE-337", "CWE-338", "CWE-339"]
    assert pred["evidence"][0] == pred["summary"]
    assert pred["space"]["meaning"] == "1,048,576 milliseconds since power-up (17.5 minutes)"
    junit = (out / "junit.xml").read_text()
    assert '<testcase classname="feltlab.certify" name="predictability"><failure' in junit
    html = (out / "report.html").read_text()
    assert "Predictability (seed search)" in html and "recovered: seed 22 from 5 cards" in html
    assert "predictability" in r.output and "seeding mt19937:timer-ms:20" in r.output
    seen = CliRunner().invoke(main, ["view", str(out)], env={"COLUMNS": "300"})
    (row,) = [ln for ln in seen.output.splitlines() if ln.startswith("│ predictability ")]
    assert "seed 22 recovered" in row and "CWE-337" in row and row.rstrip(" │").endswith("FAIL")


def test_a_256_bit_key_is_infeasible_in_a_campaign(tmp_path: Path) -> None:
    prof = tmp_path / "p.toml"
    text = EXAMPLE.read_text().replace('seeding = "mt19937:timer-ms:20"\n', "")
    text = text.replace(
        'generator = "mt19937"\nseed_bits = 20\nseed_source = "timer-ms"',
        'generator = "chacha20"\nseed_bits = 256\nseed_source = "entropy"',
    )
    prof.write_text(text)
    out = tmp_path / "camp"
    r = CliRunner().invoke(
        main,
        ["certify", "shuffler", "--profile", str(prof), "--shoes", "20", "--out", str(out)],
    )
    rec = json.loads((out / "record.json").read_text())
    pred = rec["predictability"]
    assert pred["verdict"] == "PASS", r.output
    assert pred["search"]["stopped"] == "infeasible" and pred["recovered"] is None
    assert pred["space"]["bits"] == 256.0
    assert pred["summary"].startswith("PASS: infeasible at ")
    assert 'name="predictability" />' in (out / "junit.xml").read_text()


def test_shoes_from_a_file_are_searched_and_a_bad_declaration_is_an_error(
    tmp_path: Path,
) -> None:
    """``--from FILE``: the file's first shoe (dealt codes, factory order) is searched; a
    declaration naming an unknown generator is refused before any work, in one line (it was
    an ERROR measurement after the battery: on a campaign, after days of collection)."""
    import numpy as np

    from feltlab.rig.security.shuffler import Declaration, library_shoe
    from feltlab.shoe_files import write_shoe_file

    decl = Declaration("mt19937", 20, decks=6)
    prof = tmp_path / "p.toml"  # one cheap alternative: the test is of the seed search
    prof.write_text(
        '[device]\nkind = "batch"\ndecks = 6\n[campaign]\npower_alternatives = ["riffle:k=7"]\n'
        'power_shoes = 40\n[predictability]\ngenerator = "mt19937"\nseed_bits = 20\n'
    )
    shoes = tmp_path / "shoes.csv"
    write_shoe_file(shoes, [np.stack([library_shoe(decl, s) for s in (123_456, 9, 10)])], decks=6)
    out = tmp_path / "a"
    args = ["certify", "shuffler", "--from", str(shoes), "--profile", str(prof)]
    r = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert r.exit_code == 1, r.output
    pred = json.loads((out / "record.json").read_text())["predictability"]
    assert pred["verdict"] == "FAIL" and pred["recovered"]["seed"] == 123_456
    bad = tmp_path / "bad.toml"
    bad.write_text(prof.read_text().replace('generator = "mt19937"', 'generator = "rand48"'))
    out = tmp_path / "b"
    r = CliRunner().invoke(main, [*args[:-1], str(bad), "--out", str(out)])
    assert r.exit_code == 2 and "unknown generator 'rand48'" in r.output, r.output
    assert not (out / "record.json").exists()


def test_model_with_a_seeded_profile_is_refused(tmp_path: Path) -> None:
    """--model would be silently replaced by the profile's seeding: refused in one line."""
    r = CliRunner().invoke(
        main,
        [
            "certify",
            "shuffler",
            "--profile",
            str(EXAMPLE),
            "--model",
            "riffle:k=7",
            "--shoes",
            "2",
            "--out",
            str(tmp_path / "m"),
        ],
    )
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "error: --model riffle:k=7 with a profile whose device is seeded "
        "('mt19937:timer-ms:20'): its shuffle is the seeding's; drop --model, or the "
        "profile's seeding"
    ]
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("[predictability]\ngenerator = 'rc4'\nseed_bits = 20\n", "unknown generator 'rc4'"),
        ("[[predictability]]\ngenerator = 'mt19937'\n", r"\[predictability\] must be one table"),
    ],
)
def test_a_bad_declaration_is_refused_before_any_shoe(
    tmp_path: Path, table: str, problem: str
) -> None:
    """A typo in [predictability] was found after the whole collection (days on a real
    machine), as an ERROR with a traceback (found by a breaker): now refused at once."""
    prof = tmp_path / "p.toml"
    text = EXAMPLE.read_text()
    start = text.index("\n[predictability]") + 1
    end = text.index("\n\n", start) + 2
    prof.write_text(text[:start] + text[end:] + table)
    out = tmp_path / "camp"
    r = CliRunner().invoke(
        main, ["certify", "shuffler", "--profile", str(prof), "--shoes", "4", "--out", str(out)]
    )
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    (line,) = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert re.search(problem, line), line
    assert not out.exists() or not any(out.glob("capture-*"))
