"""Reports: the record, HTML, JUnit XML and manifest are consistent with each other."""

import hashlib
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from feltlab.rig.certify import battery, measures, report
from feltlab.rig.certify.ahead import AheadWorker, computed_ahead, draw_ahead, serving
from feltlab.rig.certify.battery import Verdict
from feltlab.rig.certify.power import PowerJob
from feltlab.rig.certify.simulate import simulate_shoes
from feltlab.rig.cli.render import html
from feltlab.rig.cli.render.plots import make_plots
from feltlab.rig.profiles import PROFILE_DIR, shown_profile


def _record(
    result: battery.BatteryResult, extra_measurements: Sequence[measures.Measurement] = ()
) -> dict[str, Any]:
    return {
        "campaign_id": "t1",
        "device": {"name": "simulated shuffler"},
        "profile": {"path": None},
        "software": {"feltlab": "0.1.0"},
        "seed": 1,
        "started": "2026-11-29T00:00:00Z",
        "finished": "2026-11-29T00:01:00Z",
        "verdict": str(result.verdict),
        "battery": result.to_dict(),
        "measurements": [m.to_dict() for m in extra_measurements],
        "errors": [],
        "capture": "capture.blf",
    }


def test_report_files_and_manifest(tmp_path: Path) -> None:
    perm = simulate_shoes("riffle:k=4", 100, 52, 1)
    result = battery.run_battery(perm)
    (tmp_path / "capture.blf").write_bytes(b"raw capture bytes")
    timing = measures.timing_measurements("shuffle_cycle", [0.9, 1.0, 1.1, 5.0], limit_max=2.0)
    stats = battery.native.battery_pass(perm)  # type: ignore[attr-defined]
    plots = make_plots(
        position_counts=stats.position_counts,
        rising=stats.rising,
        eulerian=battery.eulerian_pmf(52),
        latencies={"shuffle_cycle": [0.9, 1.0, 1.1, 5.0]},
    )
    assert [t for t, _ in plots] == [
        "Card by position (observed / expected)",
        "Rising sequences",
        "Latency: shuffle_cycle",
    ]
    manifest = report.write_report(tmp_path, _record(result, timing), plots)
    assert set(manifest) == {"capture.blf", "record.json", "report.html", "junit.xml"}
    assert manifest["capture.blf"] == hashlib.sha256(b"raw capture bytes").hexdigest()
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == {"algorithm": "sha256", "files": manifest}
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["record_version"] == report.RECORD_VERSION
    assert record["battery"]["verdict"] == "FAIL"
    html = (tmp_path / "report.html").read_text()
    assert "rising_sequences" in html and "data:image/png;base64," in html
    suite = ET.fromstring((tmp_path / "junit.xml").read_text())
    n_checks = len(result.checks)
    assert int(suite.get("tests")) == n_checks + 4  # type: ignore[arg-type]
    failed = {tc.get("name") for tc in suite if tc.find("failure") is not None}
    assert "battery.rising_sequences" in failed and "shuffle_cycle.max" in failed
    assert "shuffle_cycle.p50" not in failed


def test_timing_summary_exact_percentiles() -> None:
    s = measures.summarize(np.arange(1, 101) / 1000.0, resolution=1e-9)
    assert (s.n, s.max) == (100, 0.1)
    assert s.p50 == pytest.approx(0.0505)
    assert s.p99 == pytest.approx(0.09901)
    with pytest.raises(ValueError, match="no timing samples"):
        measures.summarize([])
    with pytest.raises(ValueError, match="non-negative"):
        measures.summarize([0.1, -0.2])


def test_heartbeat_jitter() -> None:
    t = [0.0, 0.1, 0.2, 0.32, 0.4]
    period, jitter = measures.heartbeat_measurements(t, 0.1, jitter_limit=0.015)
    assert period.value == pytest.approx(0.1)
    assert jitter.value == pytest.approx(0.02)
    assert jitter.verdict is Verdict.FAIL
    assert (
        measures.heartbeat_measurements([1.0], 0.1, jitter_limit=0.01)[0].verdict is Verdict.ERROR
    )


def test_prize_distribution() -> None:
    weights = {2500: 90, 50000: 9, 1000000: 1}
    gen = np.random.default_rng(3)
    fair = gen.choice([2500, 50000, 1000000], size=2000, p=[0.9, 0.09, 0.01]).tolist()
    res = measures.prize_distribution_test(fair, weights)
    assert res.verdict is Verdict.PASS and res.dof == 2
    assert res.expected[1000000] == pytest.approx(20.0)
    biased = gen.choice([2500, 50000, 1000000], size=2000, p=[0.95, 0.045, 0.005]).tolist()
    assert measures.prize_distribution_test(biased, weights).verdict is Verdict.FAIL
    # a prize never declared fails at once
    bad = measures.prize_distribution_test([*fair, 777], weights)
    assert bad.verdict is Verdict.FAIL and bad.observed[777] == 1
    # rare prizes are pooled so every group expects at least 5
    small = measures.prize_distribution_test(fair[:100], weights)
    assert small.pooled == [[50000, 1000000], [2500]]


def test_the_forked_helper_draws_the_same_pngs_and_falls_back_when_it_dies() -> None:
    """AheadWorker renders in a forked process (matplotlib imported there while the campaign
    collects): byte for byte the PNGs make_plots draws here; a worker whose process is gone
    draws them here instead, nothing lost."""
    rng = np.random.default_rng(3)
    inputs: dict[str, Any] = {
        "position_counts": rng.poisson(6.0, (52, 52)),
        "rising": rng.integers(20, 30, 200).astype(np.float64),
        "eulerian": np.full(52, 1 / 52),
        "latencies": {"first_card": list(rng.random(100) * 1e-3)},
    }
    here = make_plots(**inputs)
    assert [t for t, _ in here] == [
        "Card by position (observed / expected)",
        "Rising sequences",
        "Latency: first_card",
    ]
    worker = AheadWorker(ahead=True)
    assert worker._proc is not None and worker._proc.pid != os.getpid()
    assert worker.plots(**inputs) == here
    assert worker._proc is None  # joined after its one job
    early = AheadWorker(ahead=True)  # the latencies sent ahead: drawn while the rest is sent
    with serving(early):
        draw_ahead(latencies=inputs["latencies"])
    assert early.plots(**inputs) == here
    stale = AheadWorker(ahead=True)  # latencies sent ahead that are not the final ones
    stale.draw_early({"latencies": {"first_card": [0.5, 0.25]}})
    assert stale.plots(**inputs) == here
    dead = AheadWorker(ahead=True)
    dead._proc.kill()
    dead._proc.join()
    dead.draw_early(inputs)
    assert dead.plots(**inputs) == here
    assert AheadWorker()._proc is None  # matplotlib imported here: no fork


def test_power_computed_ahead_is_the_power_computed_here() -> None:
    """The helper's row of the power table (one alternative) is exactly the row the
    analysis computes in process; only the very job planned is answered from the helper:
    another sample size, or a dead helper, is computed here, with the same result."""
    loaded = np.arange(104, dtype=np.int64)
    job = PowerJob.of(
        "riffle:k=3", 104, shoes=200, seed=9, n_shoes=40, alpha=0.01, loaded_ids=loaded
    )
    other = PowerJob.of(
        "riffle:k=3", 104, shoes=200, seed=9, n_shoes=39, alpha=0.01, loaded_ids=loaded
    )

    def table(row: Any) -> Any:
        return row.to_dict()

    here = table(job.compute())
    assert here == table(job.compute(workers=1))
    assert "adjacent_rank_pairs" in here["checks"] and here["caught_by"] == "rising_sequences"
    worker = AheadWorker(ahead=True, jobs=[job])
    try:
        assert table(worker.result(job)) == here
        assert worker.result(other) is None  # not planned: asked nothing of the helper
        asked: list[Any] = []
        real = worker.result

        def spy(j: Any) -> Any:
            asked.append(j)
            return real(j)

        worker.result = spy  # type: ignore[method-assign,assignment]
        with serving(worker):
            assert table(job.run()) == here
            assert table(other.run()) == table(other.compute())
        assert asked == [job, other]
    finally:
        worker.close()
    dead = AheadWorker(ahead=True, jobs=[job])
    dead._proc.kill()
    dead._proc.join()
    with serving(dead):
        assert dead.result(job) is None
        assert table(job.run()) == here  # computed here instead
    assert computed_ahead(job) is None  # outside serving: nobody asked


def test_a_stuck_helper_costs_a_bounded_wait_and_a_dead_parent_ends_the_helper() -> None:
    """A helper that takes nothing (SIGSTOP) is ended after SEND_TIMEOUT and the plots are
    drawn here, the same; a helper whose parent is killed (-9) ends at once (its reader
    thread sees the end of file), so it holds nothing of the parent's (a port) for long."""
    import signal
    import subprocess
    import sys
    import time

    rng = np.random.default_rng(4)
    inputs: dict[str, Any] = {"latencies": {"first_card": list(rng.random(20_000))}}
    here = make_plots(**inputs)
    stuck = AheadWorker(ahead=True)
    stuck.SEND_TIMEOUT = 0.5
    os.kill(stuck._proc.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    stuck.draw_early(inputs)  # more than a pipe holds: the send would block for ever
    assert time.monotonic() - t0 < 5.0 and stuck._proc is None
    assert stuck.plots(**inputs) == here
    code = (  # the helper is busy with a 60 s job when the parent dies
        "import os, sys, time\n"
        "from dataclasses import dataclass\n"
        "from feltlab.rig.certify.ahead import AheadWorker\n"
        "@dataclass(frozen=True)\n"
        "class Slow:\n"
        "    seconds: float\n"
        "    def compute(self, workers=None):\n"
        "        time.sleep(self.seconds)\n"
        "w = AheadWorker(ahead=True, jobs=[Slow(60.0)])\n"
        "print(w._proc.pid, flush=True)\n"
        "sys.stdin.readline()\n"
        "os.kill(os.getpid(), 9)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None and parent.stdin is not None
    helper = int(parent.stdout.readline())
    parent.stdin.write("\n")
    parent.stdin.flush()
    parent.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{helper}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):  # ended; its new parent reaps it
                    break
        except (FileNotFoundError, ProcessLookupError):  # ended and reaped
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the helper outlived its parent by 10 s")


def test_a_bundled_profile_is_shown_by_its_name_not_the_installed_path(tmp_path: Path) -> None:
    """Issue 41: the report showed the bundled profile as an absolute path inside the build
    folder (``.../build/__editable__.feltlab-.../profiles/batch6.toml``)."""
    installed = PROFILE_DIR / "batch6.toml"
    assert shown_profile(str(installed)) == "bundled profile batch6"
    mine = tmp_path / "batch6.toml"  # a lab's own file of the same name is its own
    mine.write_text(installed.read_text())
    assert shown_profile(str(mine)) == str(mine)
    assert shown_profile(None) == "built-in default"
    assert shown_profile("gone/batch6.toml") == "gone/batch6.toml"


def test_the_battery_table_scrolls_within_the_page(tmp_path: Path) -> None:
    """Issue 41: thirteen "power vs <model>" columns made the battery table 2,400 px wide; it
    is in a scrolling container, and each column is headed by the model alone, under one
    "power against each named alternative" heading, in a narrow wrapping cell."""
    perm = simulate_shoes("riffle:k=4", 20, 52, 1)
    rec = _record(battery.run_battery(perm), [])
    for c in rec["battery"]["checks"]:
        c["power"] = {"strip:cuts=8,passes=2": 0.5, "biased": 0.25}
    report.write_report(tmp_path, rec)
    html = (tmp_path / "report.html").read_text()
    assert '<div class="wide"><table>' in html and ".wide{overflow-x:auto" in html
    assert '<th colspan="2">power against each named alternative</th>' in html
    assert '<th class="alt">strip:cuts=8,passes=2</th>' in html and "power vs" not in html


def test_the_report_template_is_compiled_once_across_processes_and_renders_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template's bytecode kept in the cache folder is what the next process renders
    with (jinja2 checks it against the template's source); an unwritable cache is skipped."""
    record = _record(battery.run_battery(simulate_shoes("riffle:k=4", 20, 52, 1)))
    compiled = html.report_template

    def render(cache_root: Path, out: str) -> str:
        monkeypatch.setenv("FELTLAB_CACHE_DIR", str(cache_root))
        compiled.cache_clear()
        try:
            report.write_report(tmp_path / out, dict(record))
        finally:
            compiled.cache_clear()
        return (tmp_path / out / "report.html").read_text()

    fresh = render(tmp_path / "c", "a")
    written = list((tmp_path / "c" / html.TEMPLATE_CACHE_KIND).iterdir())
    assert [p.suffix for p in written] == [".cache"]
    assert render(tmp_path / "c", "b") == fresh  # rendered from the bytecode read back
    (tmp_path / "file").write_bytes(b"")  # a cache folder that cannot be made
    assert render(tmp_path / "file", "d") == fresh
    shared = tmp_path / "shared" / html.TEMPLATE_CACHE_KIND
    shared.mkdir(parents=True)
    shared.chmod(0o777)  # others may write it: its bytecode is neither read nor written
    assert render(tmp_path / "shared", "e") == fresh
    assert not any(shared.iterdir())
