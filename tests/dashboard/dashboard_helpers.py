"""Fixtures and helpers of the dashboard tests: the dashboard as users run it (``fluss dashboard`` in its own
process) against the shared cluster, and a headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven
by Selenium. A missing browser or driver fails the tests (never skips them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fluss.server.zk.local_server import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Set to a directory (e.g. docs) to save the screenshots the browser test takes.
SCREENSHOTS_ENV = "FLUSS_DASHBOARD_SCREENSHOTS"


def get_json(url: str, timeout_s: float = 10.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def dashboard_url(cluster, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("dashboard") / "dashboard.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "fluss.cli", "dashboard", "--bootstrap-servers",
                                 cluster.bootstrap_servers, "--port", str(port), "--interval", "1"],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"fluss dashboard exited with {proc.returncode}: {log.read_text()}")
            try:
                get_json(url + "api/overview", 2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:  # fail, never skip: `make setup` installs both (Debian's chromium and chromium-driver)
        raise RuntimeError(f"{' and '.join(missing)} missing: install Debian's chromium and chromium-driver "
                           "(make setup does)")
    options = Options()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver, name: str) -> Path | None:
    """Saves a screenshot under $FLUSS_DASHBOARD_SCREENSHOTS (nothing when it is not set)."""
    directory = os.environ.get(SCREENSHOTS_ENV)
    if not directory:
        return None
    path = Path(directory) / f"dashboard-{name}.png"
    driver.save_screenshot(str(path))
    return path
