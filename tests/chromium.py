"""Headless Chromium for the browser tests (tests/test_site.py, tests/test_explorer_lab.py).

Chromium and its WebDriver come from the system (Debian: ``apt-get install chromium chromium-driver``;
``.ci/run`` installs them); Selenium drives them. Nothing is downloaded: the driver path is given
explicitly, so Selenium Manager never runs, and every host name except the loopback address resolves
to nothing, so a page that tries to fetch from the internet fails visibly instead of silently.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SKIP_MESSAGE = (
    "no headless browser found: install Chromium and its WebDriver (Debian/Ubuntu: "
    "`apt-get install chromium chromium-driver`; .ci/run does this) to run the browser tests"
)


def find_browser() -> tuple[str, str] | None:
    """Return ``(browser, driver)`` executables, or None when either is missing.

    ``COURSE_CHROMIUM`` and ``COURSE_CHROMEDRIVER`` name them explicitly (searched on PATH otherwise).
    """
    browser = os.environ.get("COURSE_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    driver = os.environ.get("COURSE_CHROMEDRIVER") or shutil.which("chromedriver")
    if not browser or not driver or not all(os.access(p, os.X_OK) for p in (browser, driver)):
        return None
    return browser, driver


def skip_without_browser() -> None:
    """Skip the calling test when no browser is installed; fail instead where one is required.

    ``.ci/run`` sets ``COURSE_REQUIRE_BROWSER=1`` in CI after installing Chromium, so a browser that
    went missing there fails the run instead of silently skipping the browser tests.
    """
    if find_browser() is not None:
        return
    if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
        pytest.fail("COURSE_REQUIRE_BROWSER=1 but " + SKIP_MESSAGE.removeprefix("no headless browser found: "))
    pytest.skip(SKIP_MESSAGE)


@contextmanager
def headless_chromium(width: int = 1280, height: int = 900):
    """Yield a Selenium WebDriver for a fresh headless Chromium; skip the test when none is installed.

    Args:
        width: window width in pixels.
        height: window height in pixels.
    """
    skip_without_browser()
    found = find_browser()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (it is pinned in requirements.txt)")
    browser, driver_path = found
    profile = Path(tempfile.mkdtemp(prefix="course-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        driver.set_page_load_timeout(60)
        driver.set_script_timeout(60)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
