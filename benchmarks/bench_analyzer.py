"""Time of the combinatorial analyzer's whole analysis of the main wager (6 decks, S17, DAS,
split to 4 hands, CDZ-), beside the baseline of the same run: the time the C round simulator
needs to reach a 95% interval of +-0.01 percentage points on the same game (fresh shoe),
extrapolated from its measured rounds per second and the per-round standard deviation.

Target (issue 15): the analysis in under 0.2 s on one core; the figures and their ratio are
printed (and kept in pytest-benchmark's extra_info); nothing is asserted about speed.

Issue 28: ``feltlab math main`` as a whole process (console script, start to exit, JSON out:
the exact distribution of the net result included) against Eric Farmer's CA v7.6 as a whole
process (its ``strategy`` program, GPL, built here with ``g++ -O2`` from ../shared/peers/
farmer-ca into a temporary folder at benchmark time, never copied), alternating, medians of
REPEATS, on the same rules: 6 decks S17 DOA DAS, no RSA, peek, 3:2, CDZ-, (a) split once,
where both compute the exact distribution (Farmer's blackjack_pdf covers one split only) and
(b) split to 4 hands, where Farmer's program computes no distribution.  Target 2x.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.compare import PEERS, Comparison, alternate, feltlab_command, user_env, wall
from benchmarks.compare import RESULTS as COMPARISONS
from feltlab import native
from feltlab.core_rules import DEFAULT_STAKE, simulator_rules
from feltlab.math import strategy_tables as simstrategy
from feltlab.native.analyzer import AnalyzerRules, shoe_counts
from feltlab.rules import Rules

RULES = AnalyzerRules(counts=shoe_counts(6), strategy="cdz", max_hands=4)
RESULTS: dict[str, float] = {}
HALF_WIDTH = 0.0001  # +-0.01 percentage points


@pytest.mark.benchmark(group="analyzer")
def test_analyzer_cdz_six_decks_split_to_four(benchmark: BenchmarkFixture) -> None:
    a = benchmark(native.analyze, RULES)
    assert abs(100 * a.ev + 0.402870) <= 1e-6  # Farmer's CA v7.6, the same rules
    if benchmark.stats:
        RESULTS["analyzer_s"] = benchmark.stats.stats.mean
        benchmark.extra_info.update(path="analyzer, 6 decks S17 DAS SPL4 CDZ-")


@pytest.mark.benchmark(group="analyzer")
def test_simulator_time_to_a_hundredth_of_a_point(benchmark: BenchmarkFixture) -> None:
    rules = simulator_rules(
        Rules.preset("vegas_s17"),
        simstrategy.strategy_tables(Rules.preset("vegas_s17")),
        fresh_shoe=True,
    )
    rounds = 2_000_000
    rng = native.Xoshiro256StarStar(3)
    # pytest-benchmark's pedantic() is unannotated (third-party)
    res = benchmark.pedantic(  # type: ignore[no-untyped-call]
        native.simulate_rounds, (rng, rules, rounds), rounds=3, iterations=1
    )
    sd = float(res.net.std()) / DEFAULT_STAKE
    if benchmark.stats:
        rate = rounds / benchmark.stats.stats.mean
        needed = (1.96 * sd / HALF_WIDTH) ** 2
        RESULTS["simulator_s"] = needed / rate
        benchmark.extra_info.update(
            path="C simulator to +-0.01 pp", rounds_needed=needed, rounds_per_s=rate
        )
    assert 1.1 < sd < 1.2


def teardown_module() -> None:
    if "analyzer_s" in RESULTS and "simulator_s" in RESULTS:
        a, s = RESULTS["analyzer_s"], RESULTS["simulator_s"]
        print(
            f"\nanalyzer (exact): {a:.3f} s; simulator to +-0.01 pp: {s:.1f} s "
            f"({math.ceil(s / a):,} times the analyzer)"
        )


FARMER = PEERS / "farmer-ca"
REPEATS = 3
_BUILT: dict[str, Path] = {}


def farmer_strategy() -> Path | None:
    """Farmer's CA v7.6 ``strategy`` program built once per run outside the tree (its
    README's command), or None when the peers folder or g++ is missing."""
    if "exe" in _BUILT:
        return _BUILT["exe"]
    cxx = os.environ.get("CXX", "g++")
    if not (FARMER / "strategy.cpp").exists() or shutil.which(cxx) is None:
        return None
    exe = Path(tempfile.mkdtemp(prefix="feltlab-farmer-")) / "farmer-strategy"
    srcs = [str(FARMER / f) for f in ("strategy.cpp", "blackjack.cpp", "blackjack_pdf.cpp",
                                      "indices.cpp")]  # fmt: skip
    subprocess.run([cxx, "-O2", f"-I{FARMER}", "-o", str(exe), *srcs], check=True, timeout=600)
    _BUILT["exe"] = exe
    return exe


def farmer_run(split_to_four: bool) -> tuple[float, float, float]:
    """Farmer's program as a whole process on 6 decks S17 DOA DAS no RSA peek 3:2 CDZ-:
    (wall seconds, EV per unit, SD per round: NaN when it computes no distribution) from its
    output file."""
    exe = farmer_strategy()
    assert exe is not None
    out = exe.parent / "out.txt"
    answers = ["6", "n", "y", "y", "n", "y", "y" if split_to_four else "n"]
    answers += ["n"] if split_to_four else []
    answers += ["y", "n", "1.5", str(out), "0 0"]
    t0 = time.perf_counter()
    subprocess.run([str(exe)], input="\n".join(answers) + "\n", capture_output=True, text=True,
                   timeout=600, check=True)  # fmt: skip
    dt = time.perf_counter() - t0
    m = re.search(r"Total \|\s+([-+\d.]+)(?: \+/- ([\d.]+))?", out.read_text())
    assert m, "Farmer's output has no Total line"
    sd = float(m.group(2)) / 100 if m.group(2) else math.nan  # no distribution: no SD
    return dt, float(m.group(1)) / 100, sd


needs_farmer = pytest.mark.skipif(
    farmer_strategy() is None, reason="../shared/peers/farmer-ca or g++ missing"
)


@needs_farmer
@pytest.mark.benchmark(group="analyzer")
@pytest.mark.parametrize("hands", [2, 4])
def test_math_main_whole_process_vs_farmer(benchmark: BenchmarkFixture, hands: int) -> None:
    reps = 1 if benchmark.disabled else REPEATS
    cmd = [*feltlab_command(), "math", "main", "--rules", "vegas_s17", "--split-hands",
           str(hands), "--format", "json"]  # fmt: skip
    got: dict[str, float] = {}

    def feltlab() -> float:
        dt, out = wall(cmd, user_env())
        d = json.loads(out)
        got.update(ev=d["return"]["value"], sd=d["std_dev"])
        return dt

    def farmer() -> float:
        dt, ev, sd = farmer_run(hands == 4)
        got.update(farmer_ev=ev, farmer_sd=sd)
        return dt

    def run() -> None:
        f, b = alternate(feltlab, farmer, reps)
        c = Comparison(
            f"feltlab math main, whole process, split to {hands} hands",
            "feltlab math main (exact distribution)",
            f,
            "Farmer CA v7.6 strategy"
            + (" (its exact distribution)" if hands == 2 else " (no distribution)"),
            b,
            "s",
            False,
            2.0,
            "6 decks S17 DOA DAS no RSA peek 3:2 CDZ-, start to exit",
            reps,
        )
        COMPARISONS.append(c)
        benchmark.extra_info.update(comparison=c.subject, feltlab=f, baseline=b, ratio=c.ratio)

    benchmark.pedantic(run, rounds=1, iterations=1)  # type: ignore[no-untyped-call]
    assert abs(got["ev"] - got["farmer_ev"]) <= 5e-11  # Farmer prints 9 decimals of a %
    if hands == 2:
        assert abs(got["sd"] - got["farmer_sd"]) <= 5e-11
