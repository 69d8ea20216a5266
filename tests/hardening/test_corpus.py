"""A generated corpus of malformed inputs (issue 14, item 9): profiles, captures, campaign
folders, tournament files and command-line options.  Each case runs the real ``feltlab``
command (click's CliRunner in this process, under an alarm; a few through a subprocess under
``timeout`` with a memory limit) and must end in a refusal: exit code 1 or 2, no traceback,
one error line naming the problem (the case's phrase) and how to fix it, within a bound."""

from __future__ import annotations

import json
import math
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from click.testing import CliRunner
from pytest import TempPathFactory

from feltlab.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TOURNAMENT = (ROOT / "examples" / "tournament.toml").read_text()
BATCH = (files("feltlab.rig.certify") / "profiles" / "batch6.toml").read_text()
CONTINUOUS = (files("feltlab.rig.certify") / "profiles" / "continuous.toml").read_text()
JACKPOT = (files("feltlab.rig.certify") / "profiles" / "jackpot.toml").read_text()
BOUND = 10.0
"""Seconds any one case may take (each takes well under one second when refused)."""

CERTIFY = "certify shuffler --shoes 2 --profile {f} --out {tmp}/out-{id}"
PANEL = "certify jackpot-panel --draws 2 --profile {f} --out {tmp}/out-{id}"
DEVICE = "device run batch --bus interface=virtual,channel=corpus --duration 0.01 --profile {f}"


@dataclass(frozen=True)
class Case:
    """One malformed input: ``command`` (``{f}``: the case's file, ``{tmp}``: the scratch
    folder, ``{id}``: the case id), the file's bytes (None: no file), the phrase the one-line
    error must contain, and whether to run it in a subprocess (inputs that could hang the
    test process itself, such as ``/dev/zero``)."""

    id: str
    command: str
    data: bytes | None = None
    phrase: str = ""
    suffix: str = ".toml"
    subprocess: bool = False
    setup: Callable[[Path], None] | None = field(default=None, compare=False)
    env: dict[str, str] | None = None
    """The subprocess's environment beside the test's (``{tmp}``: the scratch folder)."""


def _sub(text: str, key: str, value: str, table: str = "") -> str:
    """``text`` with ``key = ...`` replaced by ``key = value`` (or added to ``[table]``); a
    value that is a list may span lines."""
    pat = re.compile(rf"(?m)^{re.escape(key)}\s*=\s*(\[[^\]]*\]|.*)$")
    if pat.search(text):
        return pat.sub(lambda _m: f"{key} = {value}", text, count=1)
    assert table, f"{key} is not in the profile: name its table"
    return text.replace(f"[{table}]", f"[{table}]\n{key} = {value}", 1)


def _profile_cases() -> Iterator[Case]:
    rnd = random.Random(14)
    yield Case("profile-binary", CERTIFY, bytes(rnd.randrange(256) for _ in range(512)), "UTF-8")
    yield Case("profile-utf16", CERTIFY, BATCH.encode("utf-16"), "UTF-8")
    yield Case("profile-utf16-device", DEVICE, BATCH.encode("utf-16"), "UTF-8")
    cut = BATCH.index('name = "') + len('name = "') + 5  # inside a string: never valid TOML
    yield Case("profile-truncated", CERTIFY, BATCH[:cut].encode(), "TOML")
    yield Case("profile-empty", CERTIFY, b"", "[device]")
    yield Case("profile-nul", CERTIFY, b"\0" * 64, "profile")
    yield Case("profile-dev-zero", "certify shuffler --profile /dev/zero", None, "regular file")
    yield Case(
        "profile-dev-zero-device",
        "device run batch --bus interface=virtual,channel=z --profile /dev/zero",
        None,
        "regular file",
    )
    yield Case("profile-directory", "certify shuffler --profile {tmp}", None, "profile")
    yield Case("profile-huge", CERTIFY, b"# x\n" * 600_000, "larger than")
    bad_device = {
        "decks-float": ("decks", "6.5", "decks"),
        "decks-string": ("decks", '"6"', "decks"),
        "decks-zero": ("decks", "0", "decks"),
        "decks-nine": ("decks", "9", "decks"),
        "decks-bool": ("decks", "true", "decks"),
        "base-string": ("base", '"0x100"', "base"),
        "base-negative": ("base", "-16", "base"),
        "base-12bit": ("base", "0x1000", "base"),
        "bitrate-negative": ("bitrate", "-5", "bitrate"),
        "bitrate-huge": ("bitrate", "1e20", "bitrate"),
        "bitrate-string": ("bitrate", '"fast"', "bitrate"),
        "heartbeat-zero": ("heartbeat_period", "0", "heartbeat_period"),
        "heartbeat-negative": ("heartbeat_period", "-1", "heartbeat_period"),
        "heartbeat-nan": ("heartbeat_period", "nan", "heartbeat_period"),
        "heartbeat-inf": ("heartbeat_period", "inf", "heartbeat_period"),
        "heartbeat-65535ms": ("heartbeat_period", "65.535", "heartbeat_period"),
        "heartbeat-string": ("heartbeat_period", '"0.1"', "heartbeat_period"),
        "reports-decks-string": ("reports_decks", '"yes"', "reports_decks"),
        "name-number": ("name", "5", "name"),
        "kind-number": ("kind", "5", "kind"),
        "kind-unknown": ("kind", '"shuffler"', "kind"),
    }
    for cid, (key, value, phrase) in bad_device.items():
        yield Case(f"profile-{cid}", CERTIFY, _sub(BATCH, key, value).encode(), phrase)
    for cid in ("decks-float", "heartbeat-nan", "heartbeat-65535ms", "base-string"):
        key, value, phrase = bad_device[cid]
        yield Case(f"device-{cid}", DEVICE, _sub(BATCH, key, value).encode(), phrase)
    bad_limits = {
        "nan": ("shuffle_cycle_max", "nan"),
        "inf": ("shuffle_cycle_max", "inf"),
        "negative": ("first_card_p99", "-1"),
        "string": ("round_trip_max", '"fast"'),
        "beyond-ceiling": ("shuffle_cycle_max", "1e9"),
        "tolerance-above-1": ("heartbeat_period_tolerance", "5"),
    }
    for cid, (key, value) in bad_limits.items():
        yield Case(f"profile-limits-{cid}", CERTIFY, _sub(BATCH, key, value).encode(), key)
    yield Case("profile-limits-not-table", CERTIFY, b'limits = 5\n[device]\nkind = "batch"\n')
    bad_campaign = {
        "shoes-float": ("shoes", "6.5"),
        "shoes-negative": ("shoes", "-1"),
        "shoes-zero": ("shoes", "0"),
        "shoes-1e10": ("shoes", "1e10"),
        "shoes-70000": ("shoes", "70000"),
        "alpha-two": ("alpha", "2"),
        "alpha-nan": ("alpha", "nan"),
        "alpha-string": ("alpha", '"x"'),
        "timeout-nan": ("timeout", "nan"),
        "timeout-inf": ("timeout", "inf"),
        "timeout-zero": ("timeout", "0"),
        "online-timeout-nan": ("online_timeout", "nan"),
        "online-timeout-huge": ("online_timeout", "1e9"),
        "ping-every-zero": ("ping_every", "0"),
        "ping-every-float": ("ping_every", "1.5"),
        "power-replicates-1e10": ("power_replicates", "1e10"),
        "power-replicates-int-huge": ("power_replicates", "10000000000"),
        "power-replicates-negative": ("power_replicates", "-1"),
        "power-shoes-1e10": ("power_shoes", "1e10"),
        "power-shoes-few": ("power_shoes", "3"),
        "power-required-one": ("power_required", "1"),
        "power-required-nan": ("power_required", "nan"),
        "power-alternatives-number": ("power_alternatives", "5"),
        "power-alternatives-unknown": ("power_alternatives", '["nosuch"]'),
    }
    for cid, (key, value) in bad_campaign.items():
        text = _sub(BATCH, key, value, "campaign")
        yield Case(
            f"profile-campaign-{cid}",
            CERTIFY.replace("--shoes 2 ", ""),
            text.encode(),
            key if "alternatives-unknown" not in cid else "nosuch",
        )
    bad_simulation = {
        "model-number": ("model", "5", "model"),
        "model-unknown": ("model", '"nosuch"', "nosuch"),
        "model-stuck-99999": ("model", '"stuck:pos=99999"', "pos"),
        "shuffle-duration-nan": ("shuffle_duration", "nan", "shuffle_duration"),
        "shuffle-duration-inf": ("shuffle_duration", "inf", "shuffle_duration"),
        "shuffle-duration-negative": ("shuffle_duration", "-1", "shuffle_duration"),
        "shuffle-duration-huge": ("shuffle_duration", "1e9", "shuffle_duration"),
        "penetration-two": ("penetration", "2", "penetration"),
    }
    for cid, (key, value, phrase) in bad_simulation.items():
        text = _sub(BATCH, key, value, "simulation")
        yield Case(f"profile-simulation-{cid}", CERTIFY, text.encode(), phrase)
    yield Case(
        "profile-faults-inject-number", CERTIFY, (BATCH + "\n[faults]\ninject = 5\n").encode()
    )
    yield Case(
        "profile-faults-silence-nan",
        CERTIFY,
        (BATCH + '\n[faults]\ninject = "all"\nheartbeat_silence = nan\n').encode(),
        "heartbeat_silence",
    )
    cont = "certify shuffler --deals 2 --profile {f} --out {tmp}/out-{id}"
    for cid, (key, value, table) in {
        "slots-zero": ("slots", "0", "device"),
        "slots-huge": ("slots", "1000000000", "device"),
        "slots-float": ("slots", "6.5", "device"),
        "card-latency-nan": ("card_latency", "nan", "simulation"),
        "null-replicates-1e10": ("null_replicates", "1e10", "campaign"),
        "deals-float": ("deals", "6.5", "campaign"),
    }.items():
        command = cont if table != "campaign" else cont.replace("--deals 2 ", "")
        yield Case(f"continuous-{cid}", command, _sub(CONTINUOUS, key, value, table).encode(), key)
    prize = "prize_table"
    for cid, (key, value, table, phrase) in {
        "prize-table-number": (prize, "5", "", prize),
        "prize-table-short-row": (prize, "[[2500]]", "", prize),
        "prize-table-negative": (prize, "[[-5, 1]]", "", prize),
        "prize-table-zero-weight": (prize, "[[2500, 0]]", "", prize),
        "prize-table-strings": (prize, '[["a", "b"]]', "", prize),
        "key-not-hex": ("key", '"zz"', "device", "hex"),
        "authenticate-string": ("authenticate", '"yes"', "device", "authenticate"),
        "box-99": ("box", "99", "campaign", "box"),
        "draws-negative": ("draws", "-1", "campaign", "draws"),
        "button-latency-inf": ("button_latency", "inf", "simulation", "button_latency"),
    }.items():
        command = PANEL if table != "campaign" else PANEL.replace("--draws 2 ", "")
        yield Case(f"panel-{cid}", command, _sub(JACKPOT, key, value, table).encode(), phrase)

    def binary_key(tmp: Path) -> None:
        (tmp / "binary.key").write_bytes(bytes(range(200, 240)))

    text = _sub(JACKPOT, "key_file", '"binary.key"', "device")
    text = _sub(text, "authenticate", "true", "device")
    yield Case("panel-key-file-not-hex", PANEL, text.encode(), "hex", setup=binary_key)
    text = _sub(_sub(JACKPOT, "key_file", '"none.key"', "device"), "authenticate", "true", "device")
    yield Case("panel-key-file-missing", PANEL, text.encode(), "does not exist")


def _capture_cases() -> Iterator[Case]:
    rnd = random.Random(1414)
    noise = bytes(rnd.randrange(256) for _ in range(2048))
    for fmt in ("blf", "asc", "log"):
        phrase = "no frame" if fmt != "blf" else "BLF"
        yield Case(f"capture-empty-{fmt}", "capture decode {f}", b"", phrase, f".{fmt}")
        yield Case(f"capture-random-{fmt}", "capture decode {f}", noise, "", f".{fmt}")
        yield Case(f"analyze-random-{fmt}", "analyze {f}", noise, "", f".{fmt}")
    yield Case("analyze-empty-blf", "analyze {f}", b"", "", ".blf")
    yield Case(
        "capture-asc-bad-header",
        "capture decode {f}",
        b"date Someday 99 99:99:99 pm 2026\nbase hex  timestamps nowhere\n"
        b"   0.000 1  100             Rx   d 8 00 00 00 00 00 00 00 00\n",
        "",
        ".asc",
    )
    yield Case(
        "capture-asc-truncated-frame",
        "capture decode {f}",
        b"base hex  timestamps absolute\n   0.000 1  100             Rx   d 8 00 01\n",
        "",
        ".asc",
    )
    yield Case(
        "capture-candump-garbage-lines",
        "capture decode {f}",
        b"(1.0) vcan0 100#zz\n(notatime) vcan0 1#00\nvcan0 100#00\n",
        "",
        ".log",
    )
    yield Case(
        "capture-candump-truncated",
        "capture decode {f}",
        b"(1700000000.000000) vcan0 10",
        "",
        ".log",
    )
    yield Case(
        "capture-not-a-file",
        "capture decode {tmp}",
        None,
        "",
    )
    yield Case("capture-base-huge", "capture decode {f} --base 0x99999", noise, "base", ".blf")


def _truncated_blf_cases() -> Iterator[Case]:
    """A real campaign's BLF cut short at several points (set up from the module's campaign)."""
    for frac in (0.1, 0.5, 0.9):

        def cut(tmp: Path, frac: float = frac) -> None:
            data = (tmp / "campaign" / "capture-001.blf").read_bytes()
            (tmp / f"cut-{frac}.blf").write_bytes(data[: int(len(data) * frac)])

        yield Case(
            f"analyze-truncated-blf-{int(frac * 100)}",
            f"analyze {{tmp}}/cut-{frac}.blf",
            None,
            "",
            setup=cut,
        )


def _campaign_cases() -> Iterator[Case]:
    good = None

    def folder(
        name: str, content: bytes | Callable[[dict[str, Any]], Any]
    ) -> Callable[[Path], None]:
        def make(tmp: Path) -> None:
            d = tmp / name
            if d.exists():
                return
            shutil.copytree(tmp / "campaign", d)
            for junk in ("record.json", "report.html", "junit.xml", "manifest.json"):
                (d / junk).unlink(missing_ok=True)
            if isinstance(content, bytes):
                data = content
            else:
                state = json.loads((tmp / "campaign" / "campaign.json").read_text())
                data = json.dumps(content(state)).encode()
            (d / "campaign.json").write_bytes(data)

        return make

    def drop(key: str) -> Callable[[dict[str, Any]], Any]:
        return lambda s: {k: v for k, v in s.items() if k != key}

    def put(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
        return lambda s: dict(s, **{key: value})

    variants: dict[str, bytes | Callable[[dict[str, Any]], Any]] = {
        "not-json": b"{this is not json",
        "binary": bytes(range(256)),
        "utf16": json.dumps({"kind": "batch"}).encode("utf-16"),
        "empty": b"",
        "list": b"[1, 2, 3]",
        "number": b"5",
        "empty-object": b"{}",
        "no-profile": drop("profile"),
        "no-kind": drop("kind"),
        "no-campaign-id": drop("campaign_id"),
        "profile-number": put("profile", 5),
        "profile-data-list": lambda s: dict(s, profile=dict(s["profile"], data=[1])),
        "kind-unknown": put("kind", "toaster"),
        "seed-string": put("seed", "seven"),
        "seed-negative": put("seed", -5),
        "size-string": put("size", "many"),
        "size-huge": put("size", 10**12),
        "alpha-string": put("alpha", "x"),
        "parts-number": put("parts", 5),
        "parts-of-numbers": put("parts", [1, 2]),
        "clock-unknown": put("clock", "sundial"),
        "faults-number": put("faults", 5),
    }
    for cid, content in variants.items():
        name = f"camp-{cid}"
        yield Case(
            f"resume-{cid}",
            f"certify shuffler --resume {{tmp}}/{name}",
            None,
            "campaign.json",
            setup=folder(name, content),
        )
        yield Case(
            f"analyze-{cid}",
            f"analyze {{tmp}}/{name}",
            None,
            "campaign.json",
            setup=folder(name, content),
        )
    del good


def _tournament_cases() -> Iterator[Case]:
    run = "tournament run {f}"
    yield Case("tournament-binary", run, bytes(range(256)) * 4, "UTF-8")
    yield Case("tournament-utf16", run, EXAMPLE_TOURNAMENT.encode("utf-16"), "UTF-8")
    yield Case("tournament-truncated", run, EXAMPLE_TOURNAMENT[:300].encode(), "")
    yield Case("tournament-dev-zero", "tournament run /dev/zero", None, "regular file")
    yield Case("tournament-huge", run, b"# x\n" * 600_000, "larger than")
    for cid, (key, value, phrase) in {
        "bots-100000000": ("bots", "100000000", "bots"),
        "bots-negative": ("bots", "-1", "bots"),
        "bots-float": ("bots", "2.5", "bots"),
        "strategies-number": ("strategies", "5", "strategies"),
        "strategies-unknown": ("strategies", '["nosuch"]', "nosuch"),
        "decks-nine": ("decks", "9", "decks"),
        "decks-float": ("decks", "6.5", "decks"),
        "entry-fee-negative": ("entry_fee", "-1", "entry_fee"),
        "rounds-huge": ("rounds", "10000000000", "rounds"),
        "minimum-string": ("minimum", '"ten"', "minimum"),
        "shares-bad-sum": ("shares", "[1, 2]", "shares"),
        "time-limit-nan": ("time_limit_seconds", "nan", "time_limit_seconds"),
        "name-number": ("name", "5", "name"),
        "rules-unknown": ("rules", '"atlantis"', "rules"),
        "max-players-huge": ("max_players", "100000000", ""),
    }.items():
        text = _sub(EXAMPLE_TOURNAMENT, key, value)
        yield Case(f"tournament-{cid}", run, text.encode(), phrase)


def _option_cases() -> Iterator[Case]:
    ro = "/proc/feltlab-corpus"  # never writable, even as root
    out = "--out {tmp}/out-{id}"
    for cid, command, phrase in [
        ("model-stuck-99999", f"certify shuffler --shoes 2 --model stuck:pos=99999 {out}", "pos"),
        (
            "model-missing-99999",
            f"certify shuffler --shoes 2 --model missing:pos=99999 {out}",
            "pos",
        ),
        ("model-riffle-huge", f"certify shuffler --shoes 2 --model riffle:k=1000000000 {out}", "k"),
        ("model-shelf-zero", f"certify shuffler --shoes 2 --model shelf:m=0 {out}", "m"),
        (
            "model-device-stuck",
            "device run batch --bus interface=virtual,channel=m "
            "--model stuck:pos=99999 --duration 0.01",
            "pos",
        ),
        (
            "udp-port-70000",
            "certify shuffler --shoes 2 "
            "--bus interface=udp_multicast,channel=ff11::4645:4c54,port=70000"
            " --clock real " + out,
            "port",
        ),
        (
            "udp-port-negative",
            "device run batch --bus interface=udp_multicast,port=-1 --duration 0.01",
            "port",
        ),
        (
            "bus-bitrate-string",
            "device run batch --bus interface=virtual,channel=b,bitrate=fast --duration 0.01",
            "bitrate",
        ),
        ("math-paytable-empty", 'math perfect_pairs --paytable ""', "paytable"),
        ("math-paytable-space", 'math perfect_pairs --paytable " "', "paytable"),
        (
            "events-unwritable",
            f"tournament run {ROOT}/examples/tournament.toml --events {ro}/events.jsonl",
            "events",
        ),
        ("new-wager-dir-unwritable", f"new wager corpus_bet --dir {ro}/pkg", "pkg"),
        (
            "capture-record-unwritable",
            f"capture record {ro}/x.blf --bus interface=virtual,channel=r --duration 0.01",
            "x.blf",
        ),
        (
            "capture-record-nan",
            "capture record {tmp}/nan-{id}.blf --bus interface=virtual,channel=r --duration nan",
            "duration",
        ),
        (
            "capture-record-inf",
            "capture record {tmp}/inf-{id}.blf --bus interface=virtual,channel=r --duration inf",
            "duration",
        ),
        (
            "capture-record-negative",
            "capture record {tmp}/neg-{id}.blf --bus interface=virtual,channel=r --duration -1",
            "duration",
        ),
        (
            "device-duration-nan",
            "device run batch --bus interface=virtual,channel=d --duration nan",
            "duration",
        ),
        (
            "device-duration-inf",
            "device run batch --bus interface=virtual,channel=d --duration inf",
            "duration",
        ),
        (
            "device-base-huge",
            "device run batch --bus interface=virtual,channel=d --base 0x99999 --duration 0.01",
            "base",
        ),
        (
            "device-base-text",
            "device run batch --bus interface=virtual,channel=d --base zz --duration 0.01",
            "base",
        ),
        ("shoes-above-65535", f"certify shuffler --shoes 70000 {out}", "65535"),
        ("shoes-65536", f"certify shuffler --shoes 65536 {out}", "65535"),
        ("deals-huge", f"certify shuffler --profile continuous --deals 10000000000 {out}", "deals"),
        ("draws-huge", f"certify jackpot-panel --draws 10000000000 {out}", "draws"),
        ("live-port-70000", f"certify shuffler --shoes 2 --live 70000 {out}", "port"),
        ("out-unwritable", f"certify shuffler --shoes 2 --out {ro}/c", "c"),
        ("analyze-out-unwritable", "analyze {tmp}/campaign --out " + ro + "/r", "r"),
        ("simulate-rounds-huge", "simulate --rounds 100000000000000", "rounds"),
        ("rules-decks-float", "simulate --decks 6.5", "decks"),
        ("rules-decks-huge", "simulate --decks 99", "decks"),
        ("shuffle-decks-text", "shuffle --decks six", "decks"),
        (
            "tournament-seed-huge",
            f"tournament run {ROOT}/examples/tournament.toml --seed 99999999999999999999999",
            "seed",
        ),
    ]:
        yield Case(f"option-{cid}", command, None, phrase)


def _round3_cases() -> Iterator[Case]:
    """Issue 30's cases: rules files, capture stamps and frames, journals and parts without
    proof, decompression bombs, crafted records for ``view``, freshness locations."""
    math_main = "math main --rules {f}"
    for cid, (text, phrase) in {
        "pays-zero-stake": ('blackjack_pays = "3:0"', "stake above 0"),
        "pays-nan": ('blackjack_pays = "nan:1"', "win:stake"),
        "pays-list": ("blackjack_pays = [3, 2, 1]", "blackjack_pays"),
        "flag-string": ('insurance = "yes"', "true or false"),
        "flag-number": ("resplit_aces = 2", "true or false"),
        "typo": ('blackjak_pays = "3:2"', "did you mean"),
        "deep": ("a = " + "[" * 3000 + "]" * 3000, "nested too deeply"),
    }.items():
        yield Case(f"option-rules-{cid}", math_main, (text + "\n").encode(), phrase)
    yield Case("option-rules-binary", math_main, bytes(range(128, 256)) * 8, "UTF-8")
    for stamp in ("inf", "nan", "-inf", "1e400"):
        frame = f"({stamp}) can0 100#0011223344556677\n".encode()
        yield Case(f"analyze-stamp-{stamp}", "analyze {f}", frame, "not a CAN frame", ".log")

    def bomb(tmp: Path) -> None:
        import struct
        import zlib

        import can

        path = tmp / "bomb.blf"
        with can.BLFWriter(str(path)) as w:
            w.on_message_received(can.Message(timestamp=1.7e9, arbitration_id=0x100))
        head = path.read_bytes()[: struct.unpack_from("<4sL", path.read_bytes())[1]]
        packed = zlib.compress(b"\0" * (32 << 20), 9)
        body = struct.pack("<H6xL4x", 2, 32 << 20) + packed
        obj = struct.pack("<4sHHLL", b"LOBJ", 16, 1, 16 + len(body), 10) + body
        path.write_bytes(head + obj + b"\0" * (len(obj) % 4))

    for cmd in ("analyze", "capture decode"):
        yield Case(
            f"capture-bomb-{cmd.replace(' ', '-')}",
            f"{cmd} {{tmp}}/bomb.blf",
            None,
            "decompression bomb",
            setup=bomb,
        )

    def campaign_copy(name: str, change: Callable[[Path], None]) -> Callable[[Path], None]:
        def make(tmp: Path) -> None:
            d = tmp / name
            if not d.exists():
                shutil.copytree(tmp / "campaign", d)
                for junk in ("record.json", "report.html", "junit.xml", "manifest.json"):
                    (d / junk).unlink(missing_ok=True)
                change(d)

        return make

    def journal(header: str, line: str) -> Callable[[Path], None]:
        def change(d: Path) -> None:
            cid = json.loads((d / "campaign.json").read_text())["campaign_id"]
            text = header.format(cid=cid) + line
            (d / "capture-002.journal.log").write_bytes(text.encode() + b"\0" * 512)

        return change

    line = "(1.0) can0 100#0011 R\n"
    for cid, change, phrase in (
        ("journal-foreign", journal("# feltlab-journal 1 campaign=0ff part=2\n", line), "names"),
        ("journal-headless", journal("", line), "names no campaign"),
        ("journal-wrong-part", journal("# feltlab-journal 1 campaign={cid} part=9\n", line),
         "part 9"),
        # lines without their chained MAC (issue 41): refused before any is parsed
        ("journal-300-bytes", journal("# feltlab-journal 1 campaign={cid} part=2\n",
                                      f"(1.0) can0 100#{'AB' * 300} R\n(2.0) can0 100#00 R\n"),
         "chained MAC"),
        ("journal-own-header", journal("# feltlab-journal 1 campaign={cid} part=2\n", line),
         "chained MAC"),
        ("journal-forged-mac", journal("# feltlab-journal 1 campaign={cid} part=2\n",
                                       "(1.0) can0 100#0011 R mac=" + "0" * 32 + "\n"),
         "line 2 fails"),
        ("parts-removed", lambda d: (d / "campaign.json").write_text(json.dumps(
            {k: v for k, v in json.loads((d / "campaign.json").read_text()).items()
             if k != "parts"})), "parts"),
        ("link-planted", lambda d: (d / "record.json").symlink_to(d / "campaign.json"), "link"),
        ("fifo-planted", lambda d: os.mkfifo(d / "record.json"), "regular"),
    ):  # fmt: skip
        yield Case(
            f"resume-{cid}",
            f"certify shuffler --resume {{tmp}}/r3-{cid}",
            None,
            phrase,
            setup=campaign_copy(f"r3-{cid}", change),
        )

    def record(name: str, data: bytes) -> Callable[[Path], None]:
        def make(tmp: Path) -> None:
            (tmp / name).mkdir(exist_ok=True)
            (tmp / name / "record.json").write_bytes(data)

        return make

    for cid, data in {
        "types": json.dumps({"measurements": 5, "errors": 7, "campaign": "x"}).encode(),
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "list": b"[1, 2]",
        "binary": bytes(range(256)),
    }.items():
        yield Case(
            f"view-record-{cid}",
            f"view {{tmp}}/v-{cid}",
            None,
            "record.json" if cid != "types" else "campaign",
            setup=record(f"v-{cid}", data),
        )

    def panel_profile(cid: str, freshness: Callable[[Path], str]) -> Callable[[Path], None]:
        def make(tmp: Path) -> None:
            text = _sub(JACKPOT, "freshness_state", f'"{freshness(tmp)}"', "campaign")
            (tmp / f"panel-fresh-{cid}.toml").write_text(text)

        return make

    def fifo_state(tmp: Path) -> str:
        (tmp / "fresh-fifo").mkdir(exist_ok=True)
        if not (tmp / "fresh-fifo" / "freshness.json").exists():
            os.mkfifo(tmp / "fresh-fifo" / "freshness.json")
        return str(tmp / "fresh-fifo" / "freshness.json")

    def blocked_state(tmp: Path) -> str:
        (tmp / "fresh-blocker").write_text("a file where a folder should be")
        return str(tmp / "fresh-blocker" / "freshness.json")

    for cid, where, phrase in (
        ("fifo", fifo_state, "regular file"),
        ("unwritable", blocked_state, "freshness_state"),
    ):
        yield Case(
            f"panel-fresh-{cid}",
            f"certify jackpot-panel --draws 2 --profile {{tmp}}/panel-fresh-{cid}.toml "
            f"--out {{tmp}}/out-fresh-{cid}",
            None,
            phrase,
            setup=panel_profile(cid, where),
        )


def _npy(shape: str, descr: str = "<i8", payload: bytes = b"") -> bytes:
    """A .npy file (format 1.0) whose header declares ``shape`` of ``descr``, then
    ``payload`` as its data, whatever the shape says."""
    import struct

    head = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    head += b" " * (63 - (10 + len(head)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head + payload


def _raw_input_cases() -> Iterator[Case]:
    """Hostile shoe files for ``certify shuffler --from``: .npy headers that declare more
    than the file holds (np.load allocated 7 EiB first: MemoryError), a pickled object
    array, fields that would be echoed whole into the error."""
    shoes = "certify shuffler --from {f} --out {tmp}/out-{id}"
    for cid, data, phrase in (
        ("npy-huge-shape", _npy("(1000000000, 1000000000)"), "wrong length: 1000000000 cards"),
        ("npy-huge-rows", _npy("(1000000000000, 52)"), "the header declares shape"),
        ("npy-short-data", _npy("(2, 52)", payload=bytes(100)), "holds 100 bytes of data"),
        ("npy-object", _npy("(2, 52)", "|O", b"\x80\x04N."), "integer dtype"),
        ("npy-float", _npy("(2, 52)", "<f8", bytes(832)), "integer dtype"),
        ("npy-3d", _npy("(2, 4, 13)", "<i8", bytes(832)), "shape (shoes, cards)"),
        ("npy-nine-decks", _npy("(2, 468)", "|u1", bytes(936)), "wrong length: 468 cards"),
        ("npy-no-header", b"\x93NUMPY\x01\x00", "not a numpy .npy array"),
    ):
        yield Case(f"shoes-{cid}", shoes, data, phrase, ".npy", subprocess=True)
    for cid, data, suffix, phrase in (
        ("csv-long-field", b"X" * 1_000_000 + b",1\n", ".csv", "(1,000,000 characters)"),
        ("jsonl-long-object", b'[{"a": "' + b"a" * 100_000 + b'"}]\n', ".jsonl", "characters)"),
        ("csv-utf16", "1,2\n".encode("utf-16"), ".csv", "not UTF-8"),
        ("csv-one-card", b"5\n5\n", ".csv", "wrong length: 1 cards"),
        ("jsonl-floats", b"[1.0, 2.0]\n", ".jsonl", "1.0 is not a card"),
    ):
        yield Case(f"shoes-{cid}", shoes, data, phrase, suffix)


def _round4_cases() -> Iterator[Case]:
    """Issue 41's cases (the fourth round): a required option missing, ..."""
    for cid, command in (
        ("device-run", "device run batch --duration 0.01"),
        ("capture-record", "capture record {tmp}/nobus-{id}.blf --duration 0.01"),
    ):
        yield Case(f"option-no-bus-{cid}", command, None, "missing option '--bus'. give the bus")

    def recorded(name: str, table: str, key: str, value: Any) -> Callable[[Path], None]:
        """A copy of the module's campaign whose campaign.json records ``value`` in its
        profile's ``[table] key``."""

        def make(tmp: Path) -> None:
            d = tmp / name
            if d.exists():
                return
            shutil.copytree(tmp / "campaign", d)
            for junk in ("record.json", "report.html", "junit.xml", "manifest.json"):
                (d / junk).unlink(missing_ok=True)
            state = json.loads((d / "campaign.json").read_text())
            state["profile"]["data"][table][key] = value
            (d / "campaign.json").write_text(json.dumps(state))

        return make

    # a bad value in the profile campaign.json records is named there, not in the bundled
    # profile's file inside the installed package (the file it was read from at the start)
    for cid, (table, key, value) in {
        "decks-float": ("device", "decks", 6.5),
        "alpha-string": ("campaign", "alpha", "x"),
        "heartbeat-negative": ("device", "heartbeat_period", -1),
    }.items():
        for command in ("certify shuffler --resume", "analyze"):
            verb = command.split()[-1].lstrip("-")
            yield Case(
                f"{verb}-recorded-profile-{cid}",
                f"{command} {{tmp}}/rec-{cid}",
                None,
                f"rec-{cid}/campaign.json: its profile (read from bundled profile batch6): "
                f"[{table}] {key}",
                setup=recorded(f"rec-{cid}", table, key, value),
            )

    def keyed(tmp: Path) -> Path:
        """A keyed jackpot panel's second campaign (10 draws each), made once: its part began
        after the first campaign's results, at a freshness above 0."""
        d = tmp / "keyed-panel"
        if not d.exists():
            (tmp / "keyed.key").write_text(bytes(range(32)).hex())
            text = _sub(JACKPOT, "key_file", f'"{tmp / "keyed.key"}"', "device")
            text = _sub(text, "authenticate", "true", "device")
            text = _sub(text, "freshness_state", f'"{tmp / "keyed-lab" / "f.json"}"', "campaign")
            (tmp / "keyed.toml").write_text(text)
            args = ["certify", "jackpot-panel", "--profile", str(tmp / "keyed.toml")]
            for out in (tmp / "keyed-panel-first", d):
                done = CliRunner().invoke(main, [*args, "--draws", "10", "--out", str(out)])
                assert done.exit_code == 0, done.output
            assert json.loads((d / "freshness-starts.json").read_text())["starts"]["1"] > 0
        return d

    def starts(name: str, change: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
        def make(tmp: Path) -> None:
            d = tmp / name
            if not d.exists():
                shutil.copytree(keyed(tmp), d)
                path = d / "freshness-starts.json"
                path.write_text(json.dumps(change(json.loads(path.read_text()))))

        return make

    def kind_site(tmp: Path) -> None:
        """Two installed device-kind plugins (as a wheel installs them): ``slow``, whose
        import blocks, and ``misnamed``, whose entry point names a kind called otherwise."""
        site = tmp / "kind-site"
        if site.exists():
            return
        for dist, entry, source in (
            ("slow_rig", "slow = slow_rig:KIND", "import time\ntime.sleep(3600)\n"),
            (
                "misnamed_rig",
                "misnamed = misnamed_rig:KIND",
                "from feltlab.rig.kinds.batch import BatchShufflerKind\n"
                "KIND = BatchShufflerKind().with_settings(name='other', base=0x700)\n",
            ),
        ):
            info = site / f"{dist}-0.1.dist-info"
            info.mkdir(parents=True)
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
            (info / "entry_points.txt").write_text(f"[feltlab.rig.kinds]\n{entry}\n")
            (site / dist).mkdir()
            (site / dist / "__init__.py").write_text(source)
        (tmp / "slowkind.toml").write_text(BATCH.replace('kind = "batch"', 'kind = "slow"'))

    plugins = {"PYTHONPATH": "{tmp}/kind-site", "FELTLAB_KIND_IMPORT_SECONDS": "1"}
    for cid, command, phrase in (
        (
            "blocks",
            "certify shuffler --profile {tmp}/slowkind.toml --shoes 2",
            "slow_rig:KIND (slow_rig) did not finish importing within 1 s",
        ),
        (
            "misnamed",
            "device run misnamed --bus interface=virtual,channel=kp --duration 0.01",
            "names a kind called 'other': name the entry point after its kind",
        ),
    ):
        yield Case(
            f"option-kind-plugin-{cid}",
            command,
            None,
            phrase,
            subprocess=True,
            setup=kind_site,
            env=plugins,
        )

    # the freshness each part began at is bound: an edit would change the offline check
    for cid, change, phrase in (
        ("lowered", lambda d: {**d, "starts": {"1": 0}}, "fails its tag"),
        ("raised", lambda d: {**d, "starts": {"1": 99}}, "fails its tag"),
        ("unbound", lambda d: {"1": 0}, "of an older feltlab (unbound"),
    ):
        yield Case(
            f"analyze-freshness-starts-{cid}",
            f"analyze {{tmp}}/starts-{cid}",
            None,
            phrase,
            setup=starts(f"starts-{cid}", change),
        )


def _round5_cases() -> Iterator[Case]:
    """A breaker's fifth round: a trial's handle too small to divide by, non-finite and
    degenerate numbers given to ``trial``, ``certify predict`` and every option of a
    number within a range (``FiniteRange``), ``submit``'s bad
    ``--scheduler``, and trial files with a column twice, a row too wide, commas that are not
    thousands separators."""
    header = b"date,table,handle,win,bets\n"
    drop = b"date,table,drop,win,bets\n2026-03-01,T1,1000,1,100\n"
    trial = "trial {f} --wager perfect_pairs"
    simulate = "trial --simulate 100 --wager perfect_pairs"
    predict = "certify predict --simulate 5000000000000 --generator mt19937 --seed-bits 44"
    for cid, command, data, phrase in (
        ("handle-tiny", trial, header + b"2026-03-01,T1,1e-300,0,1\n",
         "row 1 (line 2): a handle of 1e-300 is outside 0.01"),
        ("edge-offset-nan", f"{simulate} --edge-offset nan", None, "--edge-offset"),
        ("detect-nan", f"{simulate} --detect nan", None, "--detect"),
        ("drop-ratio-denormal", f"{trial} --drop-to-handle 1e-320", drop, "--drop-to-handle"),
        ("drop-ratio-nan", f"{trial} --drop-to-handle nan", drop, "--drop-to-handle"),
        ("column-twice", trial, b"date,table,handle,handle,win,bets\n2026-03-01,T1,1,1,0,1\n",
         "the column 'handle' is named twice"),
        ("row-too-wide", trial, header + b"2026-03-01,T1,1,234,0,1\n",
         "6 fields, the header names 5"),
        ("commas-ungrouped", trial, header + b'2026-03-01,T1,"1,2,3,4",0,1\n',
         "not thousands separators"),
        ("predict-max-search-nan", f"{predict} --max-search nan", None, "--max-search"),
        ("predict-max-search-inf", f"{predict} --max-search inf", None, "--max-search"),
        ("predict-max-search-tiny", f"{predict} --max-search 1e-300", None, "--max-search"),
        ("submit-scheduler-bogus",
         "submit perfect_pairs --scheduler bogus --out {tmp}/out-{id}", None, "--scheduler"),
        # click's FloatRange let NaN through: plan and explore ran with it (exit 0)
        ("plan-alpha-nan", "certify plan --alpha nan", None, "--alpha"),
        ("plan-power-nan", "certify plan --power nan", None, "--power"),
        ("explore-wall-guard-nan", "certify explore --wall-guard nan", None, "--wall-guard"),
        ("live-linger-nan", "certify shuffler --shoes 2 --live-linger nan --out {tmp}/out-{id}",
         None, "--live-linger"),
        ("indices-max-count-nan", "indices --max-count nan", None, "--max-count"),
    ):  # fmt: skip
        yield Case(f"option-{cid}", command, data, phrase, suffix=".csv")


CASES = [
    *_profile_cases(),
    *_capture_cases(),
    *_truncated_blf_cases(),
    *_campaign_cases(),
    *_tournament_cases(),
    *_option_cases(),
    *_round3_cases(),
    *_raw_input_cases(),
    *_round4_cases(),
    *_round5_cases(),
]


def test_the_corpus_is_large_and_ids_are_unique() -> None:
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
    kinds = {c.id.split("-")[0] for c in CASES}
    assert {"profile", "capture", "analyze", "resume", "tournament", "option"} <= kinds


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: TempPathFactory) -> Path:
    """A scratch folder holding one real two-shoe campaign (``campaign/``)."""
    d = tmp_path_factory.mktemp("corpus")
    result = CliRunner().invoke(
        main, ["certify", "shuffler", "--shoes", "2", "--seed", "5", "--out", str(d / "campaign")]
    )
    assert result.exit_code == 3, result.output  # 2 shoes: INCONCLUSIVE, too few for the power
    return d


class _Alarm(Exception):
    pass


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Alarm(f"the case took more than {BOUND} s")


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _run(case: Case, args: list[str], tmp: Path) -> tuple[int, str]:
    if case.subprocess or "/dev/zero" in case.command:
        exe = Path(sys.executable).with_name("feltlab")
        env = dict(os.environ, COLUMNS="200")
        env.update({k: v.format(tmp=tmp) for k, v in (case.env or {}).items()})
        proc = subprocess.run(
            ["timeout", str(int(BOUND)), str(exe), *args],
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            preexec_fn=_limit_memory,
            check=False,
        )
        assert proc.returncode != 124, f"{case.id}: killed after {BOUND} s (a hang)"
        return proc.returncode, proc.stdout + proc.stderr
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, BOUND)
    try:
        result = CliRunner().invoke(main, args, terminal_width=200)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    out = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{case.id}: raised {result.exception!r}\n{out}") from (
            result.exception
        )
    return result.exit_code, out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused(scratch: Path, case: Case) -> None:
    path = scratch / f"{case.id}{case.suffix}"
    if case.data is not None:
        path.write_bytes(case.data)
    if case.setup is not None:
        case.setup(scratch)
    command = case.command.format(f=path, tmp=scratch, id=case.id)
    t0 = time.monotonic()
    code, out = _run(case, shlex.split(command), scratch)
    elapsed = time.monotonic() - t0
    assert elapsed < BOUND, f"{case.id} took {elapsed:.1f} s"
    assert "Traceback" not in out, out
    assert code == 2, f"{case.id}: exit {code}\n{out}"
    errors = [line for line in out.splitlines() if re.match(r"^(Error|error)\b", line)]
    assert len(errors) == 1, f"{case.id}: wanted one error line\n{out}"
    (line,) = errors
    assert case.phrase.lower() in line.lower(), f"{case.id}: {case.phrase!r} not in {line!r}"
    assert len(line) < 2000, f"{case.id}: a {len(line):,}-character error line"
    assert len(line) > 20, line
    assert not math.isnan(elapsed)


def test_capture_decode_json_is_valid_json_for_nan_and_infinite_timestamps(tmp_path: Path) -> None:
    """``capture decode --json`` writes null for a NaN or infinite number (RFC 8259 JSON has
    neither): a candump log whose timestamps are ``nan`` and ``inf``."""
    from feltlab.strictjson import json_safe

    assert json_safe({"a": [math.nan, math.inf, -math.inf, 1.5], "b": "x"}) == {
        "a": [None, None, None, 1.5],
        "b": "x",
    }
    log = tmp_path / "nan.log"
    # two frames at 0x10A (the batch shuffler at 0x100), decoded as malformed SHOE payloads
    log.write_text("(nan) vcan0 10A#0100640000000000\n(inf) vcan0 10A#0100640001000000\n")
    result = CliRunner().invoke(main, ["capture", "decode", str(log), "--json"])
    assert "Traceback" not in result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2, result.output

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON")

    for line in lines:
        item = json.loads(line, parse_constant=refuse)
        assert item["timestamp"] is None
