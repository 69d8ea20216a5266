"""pytest-benchmark set-up for feltlab's benchmarks.

- Collects ``bench_*.py`` files here (the plain ``pytest`` run never looks in this folder).
- After a timed run, prints one comparison table per subject (benchmarks/compare.py: feltlab's
  figure, the named baseline's measured alternately in the same run with calls of the same
  size, the ratio, the target, met or not), the rig's frames/s, frames lost and round-trip
  percentiles; pytest-benchmark's own tables hold one benchmark each (``make bench`` groups
  by full name), so none compares calls of different sizes.  The shuffle paths' ratios to
  ``numpy permuted`` go to pytest-benchmark's JSON (``--benchmark-json``).
  Under ``--benchmark-disable`` nothing is timed and nothing is printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.compare import RESULTS, Comparison

BASELINE = "numpy permuted"
# Rows of the ratio table, in order; the feltlab paths are the point, the rest is context.
PATH_ORDER = (
    "feltlab xoshiro256** batch",
    "feltlab chacha20 batch",
    BASELINE,
    "numpy shuffle loop",
    "random.shuffle loop",
)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)  # an explicit path is collected anyway
    ):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def _timed(config: pytest.Config) -> list[Any]:
    session = getattr(config, "_benchmarksession", None)
    if session is None or session.disabled:
        return []
    return [b for b in session.benchmarks if b and not b.has_error]


def ratio_rows(benchmarks: list[Any]) -> list[dict[str, Any]]:
    """One row per (decks, path) with its rates and its ratios to the same-deck baseline."""
    found: dict[tuple[int, str], dict[str, Any]] = {}
    for bench in benchmarks:
        info = bench.extra_info
        if "shoes_per_s" in info and "decks" in info:
            found[(int(info["decks"]), str(info["path"]))] = info
    rows = []
    for decks in sorted({d for d, _ in found}):
        base = found.get((decks, BASELINE))
        paths = [p for p in PATH_ORDER if (decks, p) in found]
        paths += sorted(p for d, p in found if d == decks and p not in PATH_ORDER)
        for path in paths:
            info = found[(decks, path)]
            rows.append(
                {
                    "decks": decks,
                    "path": path,
                    "shoes": info["shoes"],
                    "shoes_per_s": info["shoes_per_s"],
                    "ns_per_card": info["ns_per_card"],
                    "shoes_per_s_ratio": info["shoes_per_s"] / base["shoes_per_s"]
                    if base
                    else None,
                    "ns_per_card_ratio": info["ns_per_card"] / base["ns_per_card"]
                    if base
                    else None,
                }
            )
    return rows


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s"
    if unit.startswith("ns"):
        return f"{value:,.1f} {unit}"
    return f"{value:,.0f} {unit}"


def comparison_lines(c: Comparison) -> list[str]:
    """One subject's table: feltlab's figure, the baseline's, the ratio, the target, met."""
    if c.absolute:
        sign = ">=" if c.higher else "<="
        target = f"{sign} {_fmt(c.target, c.unit)} (feltlab's own figure)"
    else:
        target = f">= {c.target:g}x"
    rows = [
        ("feltlab", c.feltlab_label, _fmt(c.feltlab, c.unit)),
        ("baseline", c.baseline_label, _fmt(c.baseline, c.unit)),
    ]
    width = max(len(r[1]) for r in rows)
    derived = c.note.startswith("pytest-benchmark")
    how = "pytest-benchmark means" if derived else f"median of {c.repeats}, alternating"
    out = [f"[{c.subject}]  calls: {c.size}; {how}"]
    out += [f"  {k:<8}  {label:<{width}}  {fig:>22}" for k, label, fig in rows]
    how_fast = "faster" if c.ratio >= 1 else "slower"
    if c.higher:
        ratio = f"{c.ratio:.2f}x (feltlab / baseline): {how_fast}"
    else:
        ratio = f"{c.ratio:.2f}x (baseline / feltlab, {c.unit}): {how_fast}"
    out.append(f"  ratio     {ratio}; target {target}: {'MET' if c.met else 'NOT MET'}")
    if c.note:
        out.append(f"  ({c.note})")
    return out


def _rig_lines(benchmarks: list[Any]) -> list[str]:
    out = []
    for b in benchmarks:
        info = b.extra_info
        if "frames_per_s" in info:
            lost = int(info["frames"]) - int(info["received"])
            paced = f", paced to {info['bitrate']:,} bit/s" if info.get("bitrate") else ""
            out.append(
                f"  {b.name:<52} {info['frames_per_s']:>10,.0f} frames/s, "
                f"{lost:,} of {info['frames']:,} frames lost ({info['loss']:.2%}){paced}"
            )
        elif "p50_us" in info:
            out.append(
                f"  {b.name:<52} round trip p50 {info['p50_us']:,.0f} us, p90 "
                f"{info['p90_us']:,.0f} us, p99 {info['p99_us']:,.0f} us, max "
                f"{info['max_us']:,.0f} us ({info['pings']} pings)"
            )
    return out


def derived_comparisons(benchmarks: list[Any]) -> list[Comparison]:
    """Comparisons made of two pytest-benchmark runs of the same size in this run: the
    randomness battery's C kernels against its numpy reference (target: under 3 s)."""
    paths = {
        str(b.extra_info.get("path")): b for b in benchmarks if "battery_decks" in b.extra_info
    }
    c, ref = paths.get("feltlab battery (C kernels)"), paths.get("numpy reference")
    if c is None or ref is None or c.extra_info["battery_decks"] != ref.extra_info["battery_decks"]:
        return []
    return [
        Comparison(
            "randomness battery",
            "feltlab battery (C kernels)",
            c.stats.mean,
            "numpy reference (tests/certify/battery_reference.py)",
            ref.stats.mean,
            "s",
            False,
            3.0,
            f"{c.extra_info['battery_decks']:,} decks of 52 cards per call",
            min(len(c.stats.data), len(ref.stats.data)),
            absolute=True,
            note="pytest-benchmark runs one after the other: C mean of 3 rounds, numpy 1",
        )
    ]


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own tables
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    benchmarks = _timed(config)
    if not benchmarks:
        return
    tr = terminalreporter
    sim_rows = [c for c in RESULTS if c.subject.startswith("issue 29: ")]
    if sim_rows:  # benchmarks/bench_simulate.py: the simulation's targets in one table
        tr.ensure_newline()
        tr.section("simulation against plain_bj, one table (same run, same call sizes)")
        tr.write_line(
            f"{'subject':<58} {'feltlab':>12} {'baseline':>12} {'ratio':>7} {'goal':>6}  met"
        )
        for c in sim_rows:
            tr.write_line(
                f"{c.subject[len('issue 29: ') :]:<58} {c.feltlab:>12,.0f} {c.baseline:>12,.0f} "
                f"{c.ratio:>6.2f}x {c.target:>5.2f}x  {'yes' if c.met else 'NO'}"
            )
        tr.write_line("")
    comparisons = [c for c in RESULTS if c not in sim_rows] + derived_comparisons(benchmarks)
    if comparisons:
        tr.ensure_newline()
        tr.section("feltlab against named baselines (same run, same call sizes)")
        for c in comparisons:
            for line in comparison_lines(c):
                tr.write_line(line)
            tr.write_line("")
    rig = _rig_lines(benchmarks)
    if rig:
        tr.section("rig: frames/s, frames lost, round-trip percentiles")
        for line in rig:
            tr.write_line(line)
    for bench in benchmarks:
        info = bench.extra_info
        if "hands_per_s" in info:
            tr.write_line(
                f"evaluate_hands: {info['hands']:,} hands x {info['max_cards']} cards: "
                f"{info['hands_per_s']:,.0f} hands/s, {info['ns_per_hand']:.2f} ns/hand"
            )


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(
    config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]
) -> None:
    rows = ratio_rows(_timed(config))
    if rows:
        output_json["feltlab_ratios_vs_numpy_permuted"] = rows
