"""``feltlab certify shuffler --from FILE`` and ``feltlab analyze FILE``: shoes read from a
file (docs/certification.md, "Shoes from a file").  The fair file is written by a real
``feltlab shuffle --out`` process (the round trip); the flawed one from the library's shelf
shuffler model as a card reader would write it (card text, no decks)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from feltlab import native
from feltlab.rig.certify import battery, from_file
from feltlab.rig.certify.from_file import NOT_APPLICABLE, analyze_shoes, deck_ids
from feltlab.rig.certify.power import AlternativePower, CheckPower, PowerTable
from feltlab.rig.certify.profile import NoProgress, load_profile, quick_profile
from feltlab.rig.certify.record import verdict_summary
from feltlab.rig.certify.simulate import simulate_shoes
from feltlab.rig.cli.analyze import analyze as analyze_cmd
from feltlab.rig.cli.certify import certify as certify_cmd
from feltlab.shoe_files import ShoeFileError, read_shoe_file, write_shoe_file


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """No developer CAN settings (tests/conftest.py)."""


def _shuffle_out(path: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "feltlab.cli", "shuffle", "--out", str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def fair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """2,000 6-deck ChaCha20 shoes written by `feltlab shuffle --out shoes.csv`, certified
    (about 4 s: shared by the tests that read it)."""
    folder = tmp_path_factory.mktemp("fair")
    shoes = folder / "shoes.csv"
    _shuffle_out(shoes, "--decks", "6", "--shoes", "2000", "--rng", "chacha20", "--seed", "5")
    out = folder / "campaign"
    got = CliRunner().invoke(
        certify_cmd, ["shuffler", "--from", str(shoes), "--out", str(out), "--seed", "3"]
    )
    return shoes, out, got


def test_two_thousand_shuffled_shoes_from_a_csv_pass_with_the_power_table(
    fair: tuple[Path, Path, object],
) -> None:
    shoes, out, got = fair
    assert got.exit_code == 0, got.output  # type: ignore[attr-defined]
    record = json.loads((out / "record.json").read_text())
    assert record["verdict"] == "PASS"
    src = record["source"]
    assert src["path"] == str(shoes)
    assert src["sha256"] == hashlib.sha256(shoes.read_bytes()).hexdigest()
    assert (src["format"], src["shoes"], src["decks"], src["cards"]) == (
        "csv",
        2000,
        6,
        "card ids",
    )
    bat = record["battery"]
    assert (bat["n_shoes"], bat["n_cards"]) == (2000, 312)
    assert all(c["verdict"] == "PASS" for c in bat["checks"])
    power = bat["power"]
    assert power["caught"] is True and len(power["alternatives"]) == 13
    assert all(a["caught"] for a in power["alternatives"])
    # no device: the timing checks are not applicable, never PASS; no measurement claims one
    assert [n["name"] for n in record["not_applicable"]] == list(NOT_APPLICABLE)
    assert not any(m["name"].startswith(tuple(NOT_APPLICABLE)) for m in record["measurements"])
    assert record["device"]["bus"].startswith("none: shoes read from a file")
    assert record["clock"]["mode"] == "none"
    junit = ET.fromstring((out / "junit.xml").read_text())
    skipped = {
        tc.get("name"): tc.find("skipped").get("message")  # type: ignore[union-attr]
        for tc in junit
        if tc.find("skipped") is not None
    }
    assert set(skipped) == set(NOT_APPLICABLE)
    assert all(str(m).startswith("not applicable: ") for m in skipped.values())
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert manifest["shoes-source.csv"] == src["sha256"]  # the copy kept is the file read
    assert {"record.json", "report.html", "junit.xml", "campaign.json"} <= set(manifest)
    assert "Not applicable" in (out / "report.html").read_text()


def test_analyze_reruns_the_battery_from_the_campaign_folder(
    fair: tuple[Path, Path, object],
) -> None:
    shoes, out, _ = fair
    live = verdict_summary(json.loads((out / "record.json").read_text()))
    got = CliRunner().invoke(analyze_cmd, [str(out), "--json"])
    assert got.exit_code == 0, got.output
    record = json.loads(got.output)["record"]
    assert verdict_summary(record) == live
    assert record["analyzed_offline"] is True
    assert record["source"]["path"] == str(shoes)  # as given to certify, from campaign.json


def test_analyze_refuses_a_folder_whose_shoes_were_changed(
    fair: tuple[Path, Path, object], tmp_path: Path
) -> None:
    _, out, _ = fair
    copy = tmp_path / "changed"
    copy.mkdir()
    for f in out.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    rows = (copy / "shoes-source.csv").read_text().splitlines()
    (copy / "shoes-source.csv").write_text("\n".join([rows[1], rows[0], *rows[2:]]) + "\n")
    got = CliRunner().invoke(analyze_cmd, [str(copy)])
    assert got.exit_code == 2
    assert "not the one campaign.json recorded" in got.output
    # a change that also breaks a row is named as a change, not as the row's duplicate card
    bad = rows[0].split(",")
    (copy / "shoes-source.csv").write_text(
        "\n".join([",".join([bad[1], *bad[1:]]), *rows[1:]]) + "\n"
    )
    got = CliRunner().invoke(analyze_cmd, [str(copy)])
    assert got.exit_code == 2
    assert "the shoes were changed after certification" in got.output, got.output
    assert "duplicate card" not in got.output


def _one_alternative(folder: Path) -> Path:
    """The bundled batch profile with one named alternative (shelf:m=10) of 400 simulated
    shoes: a power table that costs little."""
    text = Path(str(load_profile(None, "batch").path)).read_text()
    text = re.sub(r"power_alternatives = \[[^\]]*\]", 'power_alternatives = ["shelf:m=10"]', text)
    text = re.sub(r"power_shoes = \d+", "power_shoes = 400", text)
    path = folder / "quick.toml"
    path.write_text(text)
    return path


def test_shelf_shuffled_shoes_read_by_a_card_reader_fail(tmp_path: Path) -> None:
    """100 shoes of the 10-shelf machine (shelf:m=10), 6 decks, as card text (no decks):
    over 200 seeds of the model the smallest Holm-adjusted p-value was at most 9.6e-9 (alpha
    0.01); at 60 shoes at most 1.4e-3, at 10 shoes the battery on codes misses it in most
    seeds (with the decks known, 2 shoes suffice: the power table's turning points)."""
    loaded = native.new_shoe(6, ids=True)
    ids = loaded[simulate_shoes("shelf:m=10", 100, 312, 11)]
    path = tmp_path / "shelf.csv"
    write_shoe_file(path, [ids], decks=6, cards="text")
    assert path.read_text().split(",", 1)[0][-1] in "CDHS"  # card text, no deck
    out = tmp_path / "campaign"
    quick = _one_alternative(tmp_path)  # the power table is not this test's subject
    args = ["shuffler", "--from", str(path), "--out", str(out), "--profile", str(quick)]
    got = CliRunner().invoke(certify_cmd, args)
    assert got.exit_code == 1, got.output
    record = json.loads((out / "record.json").read_text())
    assert record["verdict"] == "FAIL"
    assert record["source"]["cards"] == "card codes"
    failed = {c["name"] for c in record["battery"]["checks"] if c["verdict"] == "FAIL"}
    assert "adjacent_rank_pairs" in failed  # the check that reads the codes themselves
    assert record["battery"]["power"]["alternatives"][0]["model"] == "shelf:m=10"
    assert min(c["adjusted_p"] for c in record["battery"]["checks"]) < 1e-6
    again = CliRunner().invoke(analyze_cmd, [str(path), "--json", "--profile", str(quick)])
    assert again.exit_code == 1, again.output
    assert verdict_summary(json.loads(again.output)["record"]) == verdict_summary(record)


def test_an_alternative_no_code_file_catches_points_at_card_ids(tmp_path: Path) -> None:
    """The naive swap (biased) is caught by no size of a 6-deck card-code file at 2,000
    simulated shoes (docs/certification.md, "Decks a file does not give"); the note must not
    send the lab to feltlab certify plan, whose figures are card ids' (244 shoes there)."""
    table = from_file.power_table(load_profile(str(_one_alternative(tmp_path))), 6, 100, alpha=0.01)
    assert table.codes_only  # the table of a file of codes says so
    never = AlternativePower(
        "biased", 2000, 0.99, (CheckPower("position_uniformity", 0, 0, 1, None),)
    )
    on_codes = PowerTable(0.01, 0.99, 10, 2000, (never,), codes_only=True).sentences()[-1]
    assert on_codes.startswith("no sample size of this battery catches biased: on card codes;")
    assert "give card ids (feltlab certify plan's figures are for card ids)" in on_codes
    on_ids = PowerTable(0.01, 0.99, 10, 2000, (never,)).sentences()[-1]
    assert on_ids.endswith("catches biased: name alternatives it can catch (feltlab certify plan)")


def test_deck_labels_keep_the_codes_and_make_a_permutation_repeatable() -> None:
    rng = native.Xoshiro256StarStar(seed=2)
    shoes = native.shuffle_batch(rng, 400, decks=2)  # codes only
    shoes[7] = shoes[3]
    ids = deck_ids(shoes, 9)
    assert np.array_equal(ids % 52, shoes)
    assert (np.sort(ids, axis=1) == np.arange(104)).all()
    assert np.array_equal(ids[7], ids[3])  # a repeated row stays a repeated shoe
    assert np.array_equal(deck_ids(shoes, 9), ids) and not np.array_equal(deck_ids(shoes, 10), ids)
    # each copy's deck is a fair coin: deck 0 for the first ace of clubs in 400 rows
    first = np.array([ids[r][shoes[r] == 0][0] // 52 for r in range(400)])
    assert 150 <= int((first == 0).sum()) <= 250  # 400 * 1/2 +- 5 sd


def test_card_forms_read_alike(tmp_path: Path) -> None:
    rng = native.Xoshiro256StarStar(seed=4)
    ids = native.shuffle_batch(rng, 3, decks=2, ids=True)
    got = {}
    for name, cards in (("a.csv", "text"), ("b.jsonl", "codes"), ("c.npy", "codes")):
        write_shoe_file(tmp_path / name, [ids], decks=2, cards=cards)
        got[name] = read_shoe_file(tmp_path / name)
    for name in ("d.csv", "e.npy"):
        write_shoe_file(tmp_path / name, [ids], decks=2, cards="ids")
        got[name] = read_shoe_file(tmp_path / name)
        read_ids = got[name].ids
        assert read_ids is not None and np.array_equal(read_ids, ids)
    for f in got.values():
        assert np.array_equal(f.codes, ids % 52) and f.decks == 2
    (tmp_path / "mixed.csv").write_text(
        "# a card reader's file\nAS,TD,10H,0\n\n".replace(
            "AS,TD,10H,0", ",".join(["AS", "TD", "10H", "0"])
        )
    )
    assert read_shoe_file(tmp_path / "a.csv").ids is None


_DECK = [
    f"{r}{s}"
    for r in ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
    for s in "CDHS"
]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "unknown.csv",
            ",".join(_DECK) + "\n" + ",".join(["XS", *_DECK[1:]]) + "\n",
            "line 2, card 1: unknown card: 'XS' is not a card",
        ),
        (
            "dup.csv",
            ",".join(_DECK) + "\n" + ",".join(["AS", *_DECK[1:]]) + "\n",
            "line 2: duplicate card: AS (code 3) appears 2 times, more than 1 deck(s)",
        ),
        (
            "short.csv",
            ",".join(_DECK[:51]) + "\n" + ",".join(_DECK[:51]) + "\n",
            "line 1: wrong length: 51 cards is not 1 to 8 whole decks",
        ),
        (
            "mixed.csv",
            ",".join(_DECK) + "\n" + ",".join(_DECK * 2) + "\n",
            "line 2: mixed lengths: 104 cards, but the first shoe (line 1) has 52",
        ),
        (
            "code.jsonl",
            json.dumps(list(range(52))) + "\n" + json.dumps([52, *range(1, 52)]) + "\n",
            "line 2, card 1: unknown card: 52 (the file's cards are card codes 0..51)",
        ),
        (
            "ids.jsonl",
            json.dumps(list(range(104))) + "\n" + json.dumps([0, *range(103)]) + "\n",
            "line 2: duplicate card: card id 0 (AC of deck 0) appears 2 times, a file of card "
            "ids holds each id once a shoe",  # not "more than 2 deck(s) of 52 hold"
        ),
        (
            "semicolons.csv",
            ";".join(_DECK) + "\n" + ";".join(_DECK) + "\n",
            "line 1, card 1: unknown card: 'AC;AD;AH;AS;2C;2D;2H;2S;'... (159 characters) is not "
            "one card: separate a row's cards with commas",  # not the whole row, nor "header"
        ),
        (
            "obj.jsonl",
            json.dumps(list(range(52))) + "\n{}\n",
            "line 2: a shoe is a JSON array of cards, got dict",
        ),
        (
            "header.csv",
            ",".join(f"c{k}" for k in range(52)) + "\n" + ",".join(_DECK) + "\n",
            "line 1, card 1: unknown card: 'c0' is not a card: write rank then suit, e.g. 'AS', "
            "'10H', 'Q♣' (a shoe file has no header line: start it with #)",
        ),
        ("one.csv", ",".join(_DECK) + "\n", "1 shoe(s); the battery needs at least 2"),
        ("shoes.txt", "", "a shoe file ends in .csv, .jsonl, .ndjson, .npy"),
    ],
)
def test_a_malformed_row_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    for cmd, args in (
        (certify_cmd, ["shuffler", "--from", str(path), "--out", str(tmp_path / "c")]),
        (analyze_cmd, [str(path)]),
    )[: 1 if name.endswith(".txt") else 2]:  # analyze reads any other file as a capture
        got = CliRunner().invoke(cmd, args)
        assert got.exit_code == 2, got.output
        lines = got.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), got.output
        assert message in lines[0], lines[0]
        assert "Traceback" not in got.output
    assert not (tmp_path / "c").exists()  # refused before the folder is made


def test_a_malformed_npy_row_is_named(tmp_path: Path) -> None:
    good = np.tile(np.arange(52, dtype=np.int16), (3, 1))
    good[2, 5] = -1
    np.save(tmp_path / "bad.npy", good)
    with pytest.raises(ShoeFileError, match=r"bad.npy row 3, card 6: unknown card: -1"):
        read_shoe_file(tmp_path / "bad.npy")
    # not numpy's pickle advice ("load it unsafely using allow_pickle=") for a non-.npy file
    (tmp_path / "text.npy").write_text((",".join(_DECK) + "\n") * 2)
    with pytest.raises(ShoeFileError, match=r"text.npy: not a numpy .npy array \(it does not"):
        read_shoe_file(tmp_path / "text.npy")
    np.save(tmp_path / "flat.npy", np.arange(52))
    with pytest.raises(ShoeFileError, match=r"shape \(shoes, cards\)"):
        read_shoe_file(tmp_path / "flat.npy")


def test_from_refuses_device_options(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text((",".join(_DECK) + "\n") * 2)
    got = CliRunner().invoke(certify_cmd, ["shuffler", "--from", str(path), "--shoes", "10"])
    assert got.exit_code == 2
    assert "--shoes do(es) not apply to shoes from a file" in got.output


def test_fair_shoes_read_as_codes_keep_the_null_and_naive_labels_would_not(
    tmp_path: Path,
) -> None:
    """300 fair 6-deck shoes as card text: with the copies' decks drawn at random no check
    rejects (seeded; each check's p-value is uniform under the null); labelling the k-th copy
    of each code deck k instead (deterministic, not uniform) fails position uniformity at
    once, which is why the labels are drawn."""
    rng = native.Xoshiro256StarStar(seed=21)
    ids = native.shuffle_batch(rng, 300, decks=6, ids=True)
    path = tmp_path / "fair.csv"
    write_shoe_file(path, [ids], decks=6, cards="text")
    source = read_shoe_file(path)
    assert source.ids is None
    prof = quick_profile("batch", power_alternatives=("riffle:k=3",))
    a = analyze_shoes(source, prof, alpha=0.01, seed=0, progress=NoProgress())
    assert a.battery is not None and a.battery.verdict == "PASS"
    assert min(c.adjusted_p for c in a.battery.checks) > 0.01
    codes = source.codes.astype(np.int64)
    naive = np.empty_like(codes)
    for r, row in enumerate(codes):
        seen = np.zeros(52, dtype=np.int64)
        for j, c in enumerate(row):
            naive[r, j] = seen[c] * 52 + c
            seen[c] += 1
    loaded = native.new_shoe(6, ids=True).astype(np.uint16)
    res = battery.run_battery(
        battery.input_positions(naive.astype(np.uint16), loaded), alpha=0.01, codes=source.codes
    )
    assert {c.name: c.verdict for c in res.checks}["position_uniformity"] == "FAIL"


def test_shuffle_out_writes_the_very_shoes_of_its_seed(tmp_path: Path) -> None:
    from feltlab.cli.shuffle import shuffle as shuffle_cmd

    want = native.shuffle_batch(native.make_rng("xoshiro256**", 7), 5, 2, ids=True)
    for name, cards in (("s.npy", "ids"), ("s.jsonl", "codes"), ("s.csv", "text")):
        args = ["--decks", "2", "--shoes", "5", "--seed", "7", "--out", str(tmp_path / name)]
        got = CliRunner().invoke(shuffle_cmd, [*args, "--cards", cards])
        assert got.exit_code == 0, got.output
        read = read_shoe_file(tmp_path / name)
        assert np.array_equal(read.codes, want % 52)
        assert (read.ids is not None) == (cards == "ids")
    assert np.array_equal(np.load(tmp_path / "s.npy"), want)
    bad = CliRunner().invoke(
        shuffle_cmd, ["--shoes", "2", "--out", str(tmp_path / "t.npy"), "--cards", "text"]
    )
    assert (
        bad.exit_code == 2
        and (
            "cannot write cards as 'text' to a npy file: an .npy array holds integers: give "
            "--cards ids or codes, or a .csv or .jsonl file"
        )
        in bad.output
    )
