"""The operator page in headless Chromium (as tests/rig/test_live_browser.py: Debian's
``chromium`` and ``chromium-driver``, ``make browser``): the Done-when station of 8 sockets, its
page showing 8 tiles while the station runs, then the batch report (one row a socket) and a
socket's own report through the page's links.  Screenshots: ``out/artifacts/station-page*.png``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.station.config import load_station

from .conftest import EIGHT, FELTLAB, station_env, write_profiles, write_station

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("FELTLAB_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FELTLAB_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT = 240.0  # seconds the whole station may take on a busy 2-core machine


@pytest.fixture
def browser() -> Any:
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.skip(f"BROWSER TEST NOT RUN: {CHROMIUM} or {CHROMEDRIVER} is missing")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="feltlab-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1280,1600",
    ):
        opts.add_argument(arg)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _artifacts() -> Path:
    """Where the page's screenshots are kept: ``$FELTLAB_ARTIFACTS`` or ``out/artifacts``."""
    root = Path(__file__).resolve().parents[2]
    d = Path(os.environ.get("FELTLAB_ARTIFACTS", root / "out" / "artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _page_url(proc: subprocess.Popen[str], lines: list[str], ready: threading.Event) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("operator page: http"):
            ready.set()
    ready.set()


def test_operator_page_shows_eight_tiles_then_the_batch_report(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    profiles = write_profiles(tmp_path / "p")
    path = write_station(tmp_path / "lab.toml", EIGHT, profiles, name="lab-page")
    station = load_station(path)
    proc = subprocess.Popen(
        [*FELTLAB, "station", "run", str(path), "--page", "0", "--page-linger", "600"],
        env=station_env(tmp_path / "state"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()
    threading.Thread(target=_page_url, args=(proc, lines, ready), daemon=True).start()

    def wait(cond: Any, what: str) -> Any:
        return WebDriverWait(browser, WAIT, poll_frequency=0.05).until(
            lambda d: cond(), message=what
        )

    try:
        assert ready.wait(120), "".join(lines)
        url = next(x for x in lines if x.startswith("operator page: ")).split()[2]
        browser.get(url)
        summary = browser.find_element(By.ID, "summary")
        wait(lambda: summary.get_attribute("data-state") == "running", "never running")
        tiles = wait(
            lambda: browser.find_elements(By.CSS_SELECTOR, "#tiles .tile") or None, "no tiles"
        )
        assert len(tiles) == 8  # one a socket, while the station runs
        shot = _artifacts() / "station-page-running.png"
        assert browser.save_screenshot(str(shot))
        names = browser.execute_script(
            "return [...document.querySelectorAll('#tiles .tile')].map(t => t.dataset.socket)"
        )
        assert names == [s.name for s in station.sockets]
        wait(lambda: summary.get_attribute("data-state") == "ended", "the station never ended")
        verdicts = browser.execute_script(
            "return [...document.querySelectorAll('#tiles .tile')].map(t => t.dataset.verdict)"
        )
        assert verdicts == ["PASS"] * 8
        done = browser.execute_script(
            "return [...document.querySelectorAll('#tiles .tile')].map(t => +t.dataset.done)"
        )
        assert done == [s.size for s in station.sockets]
        assert browser.save_screenshot(str(_artifacts() / "station-page.png"))
        link = browser.find_element(By.ID, "batch-report-link")
        assert link.get_attribute("href") == url + "report/batch-report.html"
        report = browser.find_element(By.CSS_SELECTOR, "#tile-b3 a.report").get_attribute("href")
        assert report == url + "socket/b3/report.html"
        link.click()
        wait(lambda: "batch report" in browser.title, "the batch report did not open")
        rows = browser.find_elements(By.CSS_SELECTOR, "#sockets tr[data-socket]")
        assert [r.get_attribute("data-verdict") for r in rows] == ["PASS"] * 8
        browser.get(report)
        record = (station.folder("b3") / "record.json").read_text()
        campaign_id = record.split('"campaign_id": "', 1)[1].split('"', 1)[0]
        assert campaign_id in browser.page_source
    finally:
        proc.send_signal(signal.SIGINT)  # ends the page's linger
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, "".join(lines)[-3000:]
