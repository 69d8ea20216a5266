"""The live view in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``make browser``, which ``.ci/run`` runs before the tests)
driven by selenium, on a simulated campaign.

The campaign is held after each shoe by its progress callback until the test lets it go
on, so the page is seen updating on any machine, fast or slow: no timing is assumed.
A screenshot of the page is kept (``out/artifacts/live-view.png``, or
``$FELTLAB_ARTIFACTS/live-view.png``; its path is printed).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from feltlab.rig.certify.campaign import run_campaign
from feltlab.rig.certify.collect import CampaignOptions
from feltlab.rig.certify.profile import load_profile
from feltlab.rig.live.observer import CampaignObserver
from feltlab.rig.live.server import LiveServer
from feltlab.rig.live.state import LiveFeed

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("FELTLAB_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FELTLAB_CHROMEDRIVER", "/usr/bin/chromedriver")
SHOES = 40
WAIT = 30.0  # seconds any one page change may take (generous: a busy 2-core CI machine)


def say(config: pytest.Config, line: str) -> None:
    """Print ``line`` in pytest's output even while output is captured."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if capture is None or reporter is None:
        print(line, file=sys.stderr)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


def _skip_loudly(config: pytest.Config, why: str) -> None:
    bar = "!" * 78
    for line in (
        "",
        bar,
        f"BROWSER TEST NOT RUN: {why}",
        "Install Debian's chromium and chromium-driver (`make browser`, as root) to run it.",
        bar,
    ):
        say(config, line)
    pytest.skip(f"BROWSER TEST NOT RUN: {why}")


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Any:
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        _skip_loudly(
            request.config, f"{CHROMIUM} or {CHROMEDRIVER} is missing and could not be installed"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="feltlab-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1280,2200",
    ):
        opts.add_argument(arg)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class Gate:
    """A campaign Progress that holds the campaign after each collected shoe until
    :meth:`release` lets it take more."""

    def __init__(self) -> None:
        self.allowed = threading.Semaphore(0)
        self.collecting = False

    def start(self, description: str, total: int | None) -> None:
        self.collecting = description.startswith("collecting")

    def advance(self, n: int = 1) -> None:
        if self.collecting:
            self.allowed.acquire()

    def release(self, shoes: int) -> None:
        for _ in range(shoes):
            self.allowed.release()


def _artifact_dir() -> Path:
    d = Path(os.environ.get("FELTLAB_ARTIFACTS", ROOT / "out" / "artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_the_page_updates_during_a_campaign_and_shows_its_verdict(
    browser: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    feed = LiveFeed()
    observer = CampaignObserver(feed, every=0.0)
    gate = Gate()
    out = tmp_path / "campaign"
    opts = CampaignOptions(load_profile(None, "batch"), out, size=SHOES, seed=18)
    result: list[Any] = []
    errors: list[BaseException] = []

    def campaign() -> None:
        try:
            result.append(run_campaign(opts, progress=gate, live=observer))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    def done() -> int:
        return int(browser.find_element(By.ID, "progress").get_attribute("data-done") or 0)

    def wait(cond: Any, what: str) -> Any:
        return WebDriverWait(browser, WAIT, poll_frequency=0.05).until(
            lambda d: cond(), message=what
        )

    with LiveServer(feed, "127.0.0.1", 0, out) as srv:
        worker = threading.Thread(target=campaign, name="campaign")
        worker.start()
        try:
            gate.release(5)
            browser.get(srv.url)
            wait(lambda: done() >= 5, "the page never showed 5 shoes collected")
            first = done()
            assert first == 5  # the campaign is held at its fifth shoe
            verdict = browser.find_element(By.ID, "verdict")
            assert verdict.get_attribute("data-verdict") == ""
            assert browser.find_element(By.ID, "interim").is_displayed()
            assert "not a verdict" in browser.find_element(By.ID, "interim").text
            gate.release(10)
            wait(lambda: done() == 15, "the page did not follow the campaign to 15 shoes")
            assert "15 of 40 shoes" in browser.find_element(By.ID, "progress").text
            assert "SIMULATED TIME" in browser.find_element(By.ID, "clock").text
            # read in one script: the page rebuilds #latencies on every snapshot, so
            # elements found in one call may be stale in the next
            names = set(
                browser.execute_script(
                    "return [...document.querySelectorAll('#latencies .hist')]"
                    ".map(h => h.dataset.name)"
                )
            )
            assert {"first_card", "shuffle_cycle", "round_trip.SHUFFLE"} <= names
            device = browser.find_element(By.ID, "device-table").text
            assert "heartbeats" in device and "online" in device
            running = _artifact_dir() / "live-view-running.png"
            browser.set_window_size(1280, 1450)
            assert browser.save_screenshot(str(running))
            browser.set_window_size(1280, 2200)
            say(request.config, f"\nlive view screenshot (running): {running}")
            gate.release(SHOES)
            wait(
                lambda: verdict.get_attribute("data-verdict") != "",
                "the page never showed a verdict",
            )
        finally:
            gate.release(SHOES)
            worker.join(60)
        assert not errors, errors
        record = result[0].record
        # 40 shoes do not catch the bundled profile's naive swap (biased: 244 shoes)
        assert verdict.get_attribute("data-verdict") == record["verdict"] == "INCONCLUSIVE"
        assert verdict.text == "INCONCLUSIVE"
        assert "biased" in browser.find_element(By.ID, "power").text
        assert done() == SHOES
        assert not browser.find_element(By.ID, "interim").is_displayed()
        rows = browser.find_elements(By.CSS_SELECTOR, "#checks tr")
        assert len(rows) == 1 + len(record["battery"]["checks"]) + len(record["measurements"])
        link = browser.find_element(By.ID, "report")
        assert link.get_attribute("href") == srv.url + "report/report.html"
        shot = _artifact_dir() / "live-view.png"
        assert browser.save_screenshot(str(shot))
        say(request.config, f"live view screenshot (final): {shot}")
        browser.get(srv.url + "report/report.html")
        assert record["campaign_id"] in browser.page_source
