"""dieharder where a lab has it installed (issue 39 item 7; docs/rng.md "dieharder"): Robert
G. Brown's battery (the ``dieharder`` system package, found on PATH, never required), run on
a raw file through its raw-input generator (``-g 201``, file_input_raw) without ever letting
it rewind the file.

dieharder rewinds a raw file that runs out and goes on, testing the same bits twice, and
still prints a p-value (dieharder issue #27).  So the data each requested test needs is
worked out first: :func:`calibrate` runs the test on its stdin generator (``-g 200``)
fed from a ChaCha20 stream through a pipe of one page, counting the bytes it reads for 1 and
2 p-samples (its ``-p``; each p-sample is ``tsamples`` draws of its own, so the need is
linear in them: :class:`Calibration`).  :func:`plan` then marks a test that would need more
than the file holds INVALID, with the bytes it needs, and :func:`run_file` runs only the
others, one dieharder process per test from the file's start; a run whose output still
reports a rewind is INVALID too (belt and braces), its p-value never reported.

Results come back in the shape of the SP 800-22 battery's (a name, labels, p-values, the
reason a test was not run and the data it needs): :meth:`DieharderResult.to_record`.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from feltlab import native
from feltlab.rig.errors import RigError

#: Linux ``F_SETPIPE_SZ``: the calibration pipe is shrunk to one page so that the bytes
#: written bound the bytes dieharder read to within a page and its stdio buffer
F_SETPIPE_SZ = 1031
#: bytes written that dieharder may not have read: the pipe (4096) and stdio's buffer (4096)
PIPE_SLACK = 8192
#: runs of each calibration count, the least kept (:func:`calibrate`)
CALIBRATION_RUNS = 3
#: p-samples when none are asked for (dieharder's own default for most tests)
DEFAULT_PSAMPLES = 100

#: dieharder 3.31's tests by ``-d`` number, as ``dieharder -l`` lists them (14, diehard_sums,
#: is "Do Not Use" there: requested, it runs, but the docs say why not)
TEST_NAMES: dict[int, str] = {
    0: "diehard_birthdays", 1: "diehard_operm5", 2: "diehard_rank_32x32",
    3: "diehard_rank_6x8", 4: "diehard_bitstream", 5: "diehard_opso", 6: "diehard_oqso",
    7: "diehard_dna", 8: "diehard_count_1s_str", 9: "diehard_count_1s_byt",
    10: "diehard_parking_lot", 11: "diehard_2dsphere", 12: "diehard_3dsphere",
    13: "diehard_squeeze", 14: "diehard_sums", 15: "diehard_runs", 16: "diehard_craps",
    17: "marsaglia_tsang_gcd", 100: "sts_monobit", 101: "sts_runs", 102: "sts_serial",
    200: "rgb_bitdist", 201: "rgb_minimum_distance", 202: "rgb_permutations",
    203: "rgb_lagged_sum", 204: "rgb_kstest_test", 205: "dab_bytedistrib", 206: "dab_dct",
    207: "dab_filltree", 208: "dab_filltree2", 209: "dab_monobit2",
}  # fmt: skip

_ROW = re.compile(
    r"^\s*(?P<name>[a-z0-9_]+)\|\s*(?P<ntup>\d+)\|\s*(?P<tsamples>\d+)\|\s*(?P<psamples>\d+)\|"
    r"\s*(?P<p>[0-9.eE+-]+)\|\s*(?P<assessment>PASSED|WEAK|FAILED)\s*$"
)
_REWOUND = re.compile(r"was rewound (\d+) times")


class DieharderError(RigError):
    """dieharder is absent, failed, or printed nothing that parses."""


def find_dieharder() -> str | None:
    """The path of ``dieharder`` on PATH, or None (it is never required)."""
    return shutil.which("dieharder")


@dataclass(frozen=True)
class Calibration:
    """The bytes test ``test`` (dieharder's ``-d`` number) reads: ``fixed`` + ``per_psample``
    x p-samples, at ``tsamples`` (None: the test's default); measured by :func:`calibrate`,
    an upper bound by at most :data:`PIPE_SLACK`."""

    test: int
    fixed: int
    per_psample: int
    tsamples: int | None = None

    def bytes_needed(self, psamples: int) -> int:
        if psamples < 1:
            raise ValueError(f"psamples must be at least 1, not {psamples}")
        return self.fixed + self.per_psample * psamples


@dataclass(frozen=True)
class PlanItem:
    """One requested test: run it, or INVALID because the file is too short (``reason``)."""

    test: int
    psamples: int
    bytes_needed: int
    file_bytes: int

    @property
    def runnable(self) -> bool:
        return self.bytes_needed <= self.file_bytes

    @property
    def reason(self) -> str | None:
        if self.runnable:
            return None
        return (
            f"needs {self.bytes_needed} bytes for {self.psamples} p-samples, the file holds "
            f"{self.file_bytes}: dieharder would rewind it (fewer -p, or more data)"
        )


def plan(calibrations: list[Calibration], psamples: int, file_bytes: int) -> list[PlanItem]:
    """The plan of a run on a file of ``file_bytes`` bytes: each calibrated test with the
    bytes it needs at ``psamples`` p-samples and whether the file holds them."""
    return [PlanItem(c.test, psamples, c.bytes_needed(psamples), file_bytes) for c in calibrations]


@dataclass(frozen=True)
class DieharderRow:
    """One result line of dieharder's table."""

    name: str
    ntup: int
    tsamples: int
    psamples: int
    p_value: float
    assessment: str


def parse_output(text: str) -> tuple[list[DieharderRow], int]:
    """The result rows of dieharder's output and how many times it rewound its file (0 when
    it says nothing of it).  Raises DieharderError when no row parses."""
    rows = [
        DieharderRow(
            m["name"],
            int(m["ntup"]),
            int(m["tsamples"]),
            int(m["psamples"]),
            float(m["p"]),
            m["assessment"],
        )
        for line in text.splitlines()
        if (m := _ROW.match(line.split("#")[0].rstrip() if "|" in line else ""))
    ]
    rewinds = sum(int(r) for r in _REWOUND.findall(text))
    if not rows:
        raise DieharderError(f"dieharder printed no result: {text.strip()[-200:]!r}")
    return rows, rewinds


@dataclass(frozen=True)
class DieharderResult:
    """A dieharder test on a file, in the shape of the SP 800-22 battery's results: ``name``,
    one label and p-value per row (``ntup``), dieharder's assessments, and for a test not
    run (INVALID) the reason and the bytes it needs."""

    test: int
    name: str
    labels: tuple[str, ...]
    p_values: tuple[float, ...]
    assessments: tuple[str, ...]
    psamples: int
    bytes_needed: int
    invalid: str | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "battery": "dieharder",
            "test": self.name,
            "dieharder_test": self.test,
            "labels": list(self.labels),
            "p_values": list(self.p_values),
            "assessments": list(self.assessments),
            "verdict": "INVALID" if self.invalid else _verdict(self.assessments),
            "not_run": self.invalid,
            "bytes_needed": self.bytes_needed,
            "psamples": self.psamples,
        }


def _verdict(assessments: tuple[str, ...]) -> str:
    if "FAILED" in assessments:
        return "FAIL"
    return "WEAK" if "WEAK" in assessments else "PASS"


def calibrate(
    test: int, *, exe: str | None = None, tsamples: int | None = None, timeout: float = 600.0
) -> Calibration:
    """Measure the bytes dieharder test ``test`` reads for 1 and 2 p-samples (module doc).
    Raises DieharderError when dieharder is absent or fails."""
    # each count can only exceed what dieharder read (the feeder runs ahead of a reader the
    # scheduler delays), never fall short: the least of CALIBRATION_RUNS is the tightest (one
    # run on a loaded host overshot by three pages, past PIPE_SLACK)
    one = min(_bytes_read(test, 1, exe, tsamples, timeout) for _ in range(CALIBRATION_RUNS))
    two = min(_bytes_read(test, 2, exe, tsamples, timeout) for _ in range(CALIBRATION_RUNS))
    per = max(two - one, 0)
    return Calibration(test, max(one - per, 0) + PIPE_SLACK, per, tsamples)


def _command(exe: str | None, test: int, psamples: int, tsamples: int | None) -> list[str]:
    path = exe or find_dieharder()
    if path is None:
        raise DieharderError("dieharder is not installed (apt-get install dieharder)")
    cmd = [path, "-d", str(test), "-p", str(psamples)]
    return cmd + (["-t", str(tsamples)] if tsamples else [])


def _bytes_read(
    test: int, psamples: int, exe: str | None, tsamples: int | None, timeout: float
) -> int:
    cmd = [*_command(exe, test, psamples, tsamples), "-g", "200"]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdin is not None and proc.stdout is not None
    with contextlib.suppress(OSError):
        fcntl.fcntl(proc.stdin.fileno(), F_SETPIPE_SZ, 4096)
    written = [0]
    feeder = threading.Thread(target=_feed, args=(proc.stdin, written), daemon=True)
    feeder.start()
    # not communicate(): it would close stdin, an EOF for dieharder's stdin generator
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        out = proc.stdout.read()
        proc.wait()
    finally:
        killer.cancel()
    feeder.join(timeout=5)
    with contextlib.suppress(OSError):
        proc.stdin.close()
    if proc.returncode < 0:
        raise DieharderError(f"dieharder -d {test} ran over {timeout:.0f} s and was stopped")
    parse_output(out.decode("utf-8", "replace"))
    return written[0]


def _feed(pipe: IO[bytes], written: list[int]) -> None:
    """Write a ChaCha20 stream into ``pipe`` a page at a time until dieharder closes it."""
    rng = native.ChaCha20(0x39D)
    try:
        while True:
            pipe.write(rng.keystream(4096))
            pipe.flush()
            written[0] += 4096
    except (BrokenPipeError, ValueError, OSError):
        pass


def run_file(
    path: str | Path,
    tests: list[int],
    *,
    psamples: int = DEFAULT_PSAMPLES,
    calibrations: list[Calibration] | None = None,
    exe: str | None = None,
    timeout: float = 3600.0,
) -> list[DieharderResult]:
    """Run dieharder tests ``tests`` on raw file ``path`` (bytes as dieharder reads them:
    32-bit words in the machine's order), each from the file's start, none rewinding: the
    plan (``calibrations``, else :func:`calibrate` each) first.  Raises DieharderError when
    dieharder is absent or fails, FileNotFoundError for a missing file."""
    size = Path(path).stat().st_size
    cals = calibrations or [calibrate(t, exe=exe) for t in tests]
    out = []
    for item in plan(cals, psamples, size):
        if not item.runnable:
            out.append(_invalid(item, item.reason or ""))
            continue
        cmd = [*_command(exe, item.test, psamples, None), "-g", "201", "-f", str(path)]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise DieharderError(f"dieharder -d {item.test} ran over {timeout:.0f} s") from exc
        # the rewind note goes to stderr, the table to stdout: both are read
        text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
        rows, rewinds = parse_output(text)
        result = DieharderResult(
            item.test,
            rows[0].name,
            _labels(rows),
            tuple(r.p_value for r in rows),
            tuple(r.assessment for r in rows),
            psamples,
            item.bytes_needed,
        )
        if rewinds:
            why = f"dieharder rewound the file {rewinds} times: its p-values are not reported"
            result = _invalid(item, why, rows[0].name)
        out.append(result)
    return out


def _labels(rows: list[DieharderRow]) -> tuple[str, ...]:
    """``name:ntup``, and ``name:ntup#k`` for the k-th of several rows of one ntup (the
    generalized serial test gives two p-values per tuple size)."""
    seen: dict[int, int] = {}
    out = []
    for r in rows:
        seen[r.ntup] = seen.get(r.ntup, 0) + 1
        out.append(f"{r.name}:{r.ntup}")
    again: dict[int, int] = {}
    for i, r in enumerate(rows):
        if seen[r.ntup] > 1:
            again[r.ntup] = again.get(r.ntup, 0) + 1
            out[i] += f"#{again[r.ntup]}"
    return tuple(out)


def _invalid(item: PlanItem, why: str, name: str = "") -> DieharderResult:
    return DieharderResult(
        item.test,
        name or TEST_NAMES.get(item.test, f"dieharder-{item.test}"),
        (),
        (),
        (),
        item.psamples,
        item.bytes_needed,
        why,
    )
