"""The attention explorer renders and responds in JupyterLab (a real browser drives the real front end).

Starts JupyterLab on a free loopback port with a random token and its settings and workspaces in a
temporary folder, opens a notebook whose one cell creates the explorer, runs that cell through the
JupyterLab UI (Shift+Enter in headless Chromium), and checks that the widget appears (text box, tabs,
the attention heatmap as a loaded image) instead of the static fallback picture, that it fits a laptop
screen (1366 x 768: the whole heatmap is in view once the explorer's top is, with JupyterLab's file
browser open), that every control shows a tooltip, that choosing a head in the menu makes the kernel
redraw the heatmap, and that JupyterLab asks no "official Jupyter news?" question (the course
environment switches that plugin off: ``make setup``). Skipped, saying why, without a browser.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from chromium import headless_chromium, skip_without_browser

ROOT = Path(__file__).resolve().parent.parent
CELL = "from course_lib.explorer import Explorer\n\nExplorer.from_checkpoint()"
# A 1366 x 768 laptop screen shows a page of about 1366 x 650 pixels: the rest is the taskbar and the
# browser's tabs and address bar. The page gets exactly that size (headless Chromium's own window
# size would take off a browser frame it does not draw).
WINDOW = (1366, 650)
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(predicate, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture()
def jupyterlab(tmp_path, request):
    """A JupyterLab server serving ``tmp_path/work`` with ``explorer.ipynb``, whose one cell is :data:`CELL`
    (or the test's own, given by indirect parametrization); yields (base URL, token)."""
    skip_without_browser()  # before starting JupyterLab: nothing to look at without a browser
    work = tmp_path / "work"
    work.mkdir()
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": "explorer", "metadata": {}, "outputs": [],
                   "source": getattr(request, "param", CELL)}],
        "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    (work / "explorer.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    # Fresh user settings, as for a student: the news question must be switched off by the course
    # environment itself (make setup), not by settings made here.
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "COURSE_NUM_THREADS": "1",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        f"--ServerApp.root_dir={work}", f"--IdentityProvider.token={token}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=",
        "--LabApp.extension_manager=readonly",  # no package-index look-ups
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    log = (tmp_path / "jupyterlab.log").open("w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"

    def ready():
        if server.poll() is not None:
            raise AssertionError(f"JupyterLab exited:\n{(tmp_path / 'jupyterlab.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    try:
        _wait_for(ready, 60, "JupyterLab to start")
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


_STATE = """
const box = document.querySelector('.course-attention-explorer');
if (!box) { return null; }
const images = Array.from(box.querySelectorAll('img'));
return {
  text_inputs: box.querySelectorAll('.widget-text input').length,
  tabs: Array.from(box.querySelectorAll('.lm-TabBar-tabLabel, .p-TabBar-tabLabel')).map(e => e.textContent),
  images: images.map(img => [img.naturalWidth, img.src.length]),
  first_image: images.length ? images[0].src : '',
  summary: box.innerText,
  selects: Array.from(box.querySelectorAll('select')).map(s => Array.from(s.options).map(o => o.text.replace(/\u00a0/g, ' '))),
  fallback_png: document.querySelectorAll('.jp-OutputArea-output img:not(.course-attention-explorer img)').length,
};
"""

# Where the explorer and its visible heatmap are, and the notebook's visible area (pixels, page coordinates).
_GEOMETRY = """
const box = document.querySelector('.course-attention-explorer');
const image = Array.from(box.querySelectorAll('img')).find(img => img.offsetParent !== null && img.naturalWidth > 0);
if (!image) { return null; }
const rect = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
const area = rect(box.closest('.jp-WindowedPanel-outer') || box.closest('.jp-NotebookPanel-notebook'));
area.bottom = Math.min(area.bottom, window.innerHeight);
return {box: rect(box), image: rect(image), area: area, window: [window.innerWidth, window.innerHeight]};
"""

# Controls without a tooltip: a "title" on the control, on its widget inside the explorer, or on the
# widget's visible description (where ipywidgets puts a slider's tooltip).
_UNEXPLAINED = """
const box = document.querySelector('.course-attention-explorer');
const explained = e => e && e.title.trim().length > 10;
return Array.from(box.querySelectorAll('select, input, button, textarea, .widget-slider'))
  .filter(e => {
    const titled = e.closest('[title]');
    const widget = e.closest('.jupyter-widgets');
    const label = widget && widget.querySelector(':scope > label.widget-label');
    return !((titled && box.contains(titled) && explained(titled)) || (label && label.style.display !== 'none' && explained(label)));
  })
  .map(e => e.outerHTML.slice(0, 120));
"""


def run_the_cell(driver, base: str, token: str) -> None:
    """Open ``explorer.ipynb`` in JupyterLab at the laptop size :data:`WINDOW` and run its cell from the UI."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1, "mobile": False})
    driver.get(f"{base}/lab/tree/explorer.ipynb?token={token}")
    page_config = json.loads(driver.execute_script(
        "return document.getElementById('jupyter-config-data').textContent"))
    assert ANNOUNCEMENTS in page_config.get("disabledExtensions", []), (
        "JupyterLab would ask students about Jupyter news: run `make setup` (it disables " + ANNOUNCEMENTS + ")")
    def shown_editors():
        try:
            return [e for e in driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell .cm-content")
                    if e.is_displayed()]
        except StaleElementReferenceException:  # JupyterLab redrew the cell while it was being looked at
            return None

    editor = _wait_for(shown_editors, 90, "the notebook to open in JupyterLab")[0]
    # Wait until the kernel is connected and idle (status bar), then run the cell from the UI.
    _wait_for(lambda: "| Idle" in driver.find_element(By.CSS_SELECTOR, "#jp-main-statusbar").text, 90,
              "the kernel to become idle")
    editor.click()
    editor.send_keys(Keys.SHIFT, Keys.ENTER)


def check_the_heatmaps_fit(driver, screenshot_name: str, tabs: tuple[str, ...] = ("Attention", "Step by step")) -> None:
    """With the explorer's top at the top of the notebook area, the whole heatmap is in view (in every tab);
    ends on the first tab."""
    from selenium.webdriver.common.by import By

    driver.execute_script("document.querySelector('.course-attention-explorer').scrollIntoView()")
    for tab in tabs:
        if tab != tabs[0]:
            next(e for e in driver.find_elements(By.CSS_SELECTOR, ".course-attention-explorer .lm-TabBar-tab")
                 if e.text == tab).click()
        where = _wait_for(lambda: driver.execute_script(_GEOMETRY), 30, f"the heatmap in the {tab} tab")
        if os.environ.get("COURSE_SCREENSHOT_DIR"):  # for a person to look at
            name = f"{screenshot_name}_{tab.lower().replace(' ', '_')}.png"
            driver.save_screenshot(str(Path(os.environ["COURSE_SCREENSHOT_DIR"]) / name))
        assert where["window"] == list(WINDOW), where
        box, image, area = where["box"], where["image"], where["area"]
        assert image["bottom"] - box["top"] <= area["bottom"] - area["top"], (
            f"{tab}: the heatmap ends {image['bottom'] - box['top']:.0f} px below the explorer's top, but the "
            f"notebook shows only {area['bottom'] - area['top']:.0f} px at {WINDOW[0]} x {WINDOW[1]}: {where}")
        assert image["right"] <= area["right"], f"{tab}: the heatmap is cut off on the right: {where}"
    next(e for e in driver.find_elements(By.CSS_SELECTOR, ".course-attention-explorer .lm-TabBar-tab")
         if e.text == tabs[0]).click()


def test_explorer_renders_and_responds_in_jupyterlab(jupyterlab):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, token = jupyterlab
    with headless_chromium(*WINDOW) as driver:
        run_the_cell(driver, base, token)
        state = _wait_for(lambda: driver.execute_script(_STATE), 120, "the explorer widget to appear")
        state = _wait_for(lambda: (s := driver.execute_script(_STATE)) and len(s["images"]) >= 2
                          and all(w > 0 for w, _ in s["images"][:1]) and s, 60, "the heatmap image to load")
        assert state["text_inputs"] == 1, state
        assert state["tabs"][:3] == ["Attention", "Step by step", "Candidates"], state["tabs"]
        assert "Translation (greedy)" in state["summary"] and "Translation (beam 4)" in state["summary"], \
            state["summary"][:500]
        assert "rows: English word being written" in state["summary"].replace("Rows:", "rows:"), state["summary"][:800]
        assert any("all heads (mean)" in options and "head 4 of 4" in options for options in state["selects"]), \
            state["selects"]
        assert any("layer 2 of 2 (last)" in options for options in state["selects"]), state["selects"]
        assert state["fallback_png"] == 0, "JupyterLab showed the static picture instead of the widget"
        assert driver.execute_script(_UNEXPLAINED) == [], "controls without a tooltip"

        check_the_heatmaps_fit(driver, "explorer_in_jupyterlab")

        # Choose head 2: the kernel redraws the heatmap and the browser receives the new picture.
        before = state["first_image"]
        head_menu = next(s for s in driver.find_elements(By.CSS_SELECTOR, ".course-attention-explorer select")
                         if s.is_displayed() and "all heads (mean)" in s.text.replace("\xa0", " "))
        Select(head_menu).select_by_visible_text("head 2 of 4")
        _wait_for(lambda: driver.execute_script(_STATE)["first_image"] != before, 60,
                  "the heatmap to change after choosing head 2")
        news = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".jp-toast-message, .Toastify__toast")]
        assert not any("news" in text.lower() for text in news), news
