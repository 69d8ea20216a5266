"""pytest-benchmark set-up for feltlab's benchmarks.

- Collects ``bench_*.py`` files here (the plain ``pytest`` run never looks in this folder).
- After a timed run, prints each path's shoes/s and ns/card and its ratio to the
  ``numpy permuted`` baseline of the same deck count measured in the same run, and adds the
  same table to pytest-benchmark's JSON (``--benchmark-json``, ``--benchmark-autosave``).
  Under ``--benchmark-disable`` nothing is timed and nothing is printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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


def _ratio(value: float | None, width: int, digits: int) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own tables
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    benchmarks = _timed(config)
    rows = ratio_rows(benchmarks)
    tr = terminalreporter
    if rows:
        tr.ensure_newline()
        tr.section("shuffle throughput vs numpy Generator.permuted (same run, mean times)")
        header = (
            f"{'decks':>5}  {'path':<28} {'shoes/call':>10} {'shoes/s':>12} {'ns/card':>9}"
            f"  {'shoes/s ratio':>13} {'ns/card ratio':>13}"
        )
        tr.write_line(header)
        tr.write_line("-" * len(header))
        for r in rows:
            tr.write_line(
                f"{r['decks']:>5}  {r['path']:<28} {r['shoes']:>10,} {r['shoes_per_s']:>12,.0f}"
                f" {r['ns_per_card']:>9.3f}  {_ratio(r['shoes_per_s_ratio'], 12, 2)}x"
                f" {_ratio(r['ns_per_card_ratio'], 13, 3)}"
            )
        tr.write_line(
            "shoes/s ratio = path / numpy permuted (higher is faster); "
            "ns/card ratio = path / numpy permuted (lower is faster)"
        )
    sim = {
        str(b.extra_info["path"]): b.extra_info
        for b in benchmarks
        if "rounds_per_s" in b.extra_info
    }
    if sim:
        tr.section("round simulation (rounds per second, same run; target 30M/s per core)")
        base = sim.get("Python round engine", {}).get("rounds_per_s")
        for path, info in sim.items():
            ratio = f"  {info['rounds_per_s'] / base:,.0f}x the Python engine" if base else ""
            tr.write_line(f"{path:<32} {info['rounds_per_s']:>14,.0f} rounds/s{ratio}")
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
