"""The course website (``make site``): built offline from the committed notebooks, checked in a real browser.

The site is built once per test session into a temporary folder with ``scripts/build_site.py`` (which
refuses every network connection while Sphinx runs), or taken from ``COURSE_SITE_DIR`` when that names an
already built site. The browser tests open every notebook page in headless Chromium at 1366×768, served
from the loopback address with every other host name unresolvable, and check that the page loads, that
every figure the notebook stores is shown (image loaded, natural width > 0) with a meaningful alt text,
that the cells kept for CI and Colab are left out, that no code block runs off the right edge and every
code cell has a copy button, that MathJax typeset every formula (no raw ``$$`` or ``\\(`` left), that no
resource comes from elsewhere, and that no internal link is broken (target page exists, ``#anchor``
exists on it). The landing page must offer notebook 00 without scrolling, no page may scroll sideways at
a phone's width (390 px), and search previews show the pages' text, not the theme's buttons or raw
LaTeX. They are skipped, saying why, without a browser.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import nbformat
import pytest
from chromium import headless_chromium

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REPOSITORY = re.search(r'^Repository = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
BUILD_SECONDS_LIMIT = 120
DESKTOP = (1366, 768)  # a common laptop screen: what "above the fold" means here
PHONE_WIDTH = 390  # a common phone in portrait
HIDDEN_TAGS = ("course-check", "colab-setup")  # cells the website leaves out (scripts/build_site.py)
# The README's sections that have their own page instead of being on the landing page.
README_PAGES = ["setup.html", "command_line.html", "real_data.html", "package.html", "development.html"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """Folder of the built site (built here unless COURSE_SITE_DIR names one)."""
    given = os.environ.get("COURSE_SITE_DIR")
    if given:
        path = Path(given)
        assert (path / "index.html").is_file(), f"COURSE_SITE_DIR={given} holds no built site (no index.html)"
        return path
    pytest.importorskip("sphinx", reason="the site dependencies are not installed (pip install -r requirements.txt)")
    base = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "scripts.build_site", "--out", str(base / "html"), "--src", str(base / "src")],
        cwd=ROOT, capture_output=True, text=True, timeout=2 * BUILD_SECONDS_LIMIT,
    )
    seconds = time.perf_counter() - start
    assert result.returncode == 0, f"the site build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert "WARNING" not in result.stderr, f"the site build warned:\n{result.stderr[-3000:]}"
    assert seconds < BUILD_SECONDS_LIMIT, f"the site build took {seconds:.0f} s (limit {BUILD_SECONDS_LIMIT} s)"
    return base / "html"


@pytest.fixture(scope="session")
def server(site):
    """Serve the site on a free port of the loopback address; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def _viewport(driver, width: int, height: int, mobile: bool = False) -> None:
    """Make the page area exactly ``width`` x ``height`` CSS pixels (``mobile``: a phone's viewport rules)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})


@pytest.fixture(scope="module")
def browser():
    with headless_chromium(*DESKTOP) as driver:
        _viewport(driver, *DESKTOP)
        yield driver


def test_network_guard_refuses_connections():
    """The build's proof of offline-ness only means something if the guard really blocks connections."""
    code = (
        "import socket\n"
        "from scripts import build_site\n"
        "build_site.disable_network()\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 9))\n"
        "except build_site.NetworkDisabledError:\n"
        "    print('refused')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "refused", result.stderr


def test_site_pages_and_assets_are_local(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        page = site / "notebooks" / f"{notebook.stem}.html"
        assert page.is_file(), f"no page for {notebook.name}"
        assert f'notebooks/{notebook.stem}.html"' in index, f"the landing page does not link to {notebook.name}"
        # The download link serves the committed notebook itself.
        assert (site / "_sources" / "notebooks" / notebook.name).read_bytes() == notebook.read_bytes()
    for page in ("data/README.html", "data/checkpoints/README.html", "instructors.html", "search.html", *README_PAGES):
        assert (site / page).is_file(), f"the site has no {page}"
        assert f'href="{page}' in index or page == "search.html", f"the landing page does not link to {page}"
    assert "architecture.png" in index, "the landing page does not show the architecture picture"
    assert "Syllabus" in index and "Instructor notes" in index
    # The landing page is for learners: the README's instructor and developer sections have their own pages.
    for heading in ("For instructors", "The package", "Development", "Real data (Multi30k)"):
        assert not re.search(rf"<h2>{re.escape(heading)}<", index), f"the landing page still holds '{heading}'"
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not served from the site"
    for page in site.rglob("*.html"):
        remote = re.findall(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(https?:)?//[^"]*"', page.read_text(encoding="utf-8"))
        assert not remote, f"{page.relative_to(site)} loads something from the internet"


def test_cells_for_ci_and_colab_are_left_out(site):
    """Cells tagged course-check or colab-setup are not on the notebook pages (the download keeps them)."""
    for notebook in NOTEBOOKS:
        nb = nbformat.read(notebook, as_version=4)
        page = (site / "notebooks" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        shown = sum(1 for cell in nb.cells if cell.cell_type == "code" and _shown(cell))
        rendered = len(re.findall(r'<div class="cell[ "]', page))
        assert rendered == shown, f"{notebook.name}: {rendered} code cells on the page, {shown} expected"
        assert "colab-setup" not in page and "course-check" not in page, f"{notebook.name}: a hidden cell is shown"


def _shown(cell) -> bool:
    """Whether the website shows the cell (cells tagged for CI or Colab are left out)."""
    return not any(tag in HIDDEN_TAGS for tag in cell.get("metadata", {}).get("tags", []))


def _count_figures(notebook: Path) -> int:
    nb = nbformat.read(notebook, as_version=4)
    return sum(
        1
        for cell in nb.cells if cell.cell_type == "code" and _shown(cell)
        for output in cell.get("outputs", [])
        if output.get("output_type") in ("display_data", "execute_result")
        and any(m in output.get("data", {}) for m in ("image/png", "image/svg+xml", "image/jpeg"))
    )


_WAIT_FOR_PAGE = """
const done = arguments[arguments.length - 1];
const images = Array.from(document.images);
images.forEach(img => { img.loading = 'eager'; });
const loaded = images.map(img => img.complete ? Promise.resolve() :
    new Promise(resolve => { img.addEventListener('load', resolve); img.addEventListener('error', resolve); }));
const typeset = (window.MathJax && MathJax.startup && MathJax.startup.promise) ? MathJax.startup.promise : Promise.resolve();
Promise.all([typeset, ...loaded]).then(() => {
  const plain = document.querySelector('main, article, body').cloneNode(true);
  plain.querySelectorAll('pre, code, script, style, mjx-container, .math').forEach(e => e.remove());
  done({
    title: document.title,
    images: images.map(img => ({src: img.currentSrc || img.src, width: img.naturalWidth, alt: img.alt,
                                output: !!img.closest('.cell_output')})),
    overflowing_code: Array.from(document.querySelectorAll('div.highlight pre, div.cell_output pre'))
        .filter(pre => pre.scrollWidth > pre.clientWidth).map(pre => pre.textContent.slice(0, 80)),
    cell_inputs: document.querySelectorAll('div.cell_input div.highlight pre').length,
    input_copy_buttons: document.querySelectorAll('div.cell_input button.copybtn').length,
    output_copy_buttons: document.querySelectorAll('div.cell_output button.copybtn').length,
    math: document.querySelectorAll('.math').length,
    typeset: Array.from(document.querySelectorAll('.math')).filter(e => e.querySelector('mjx-container')).length,
    text: plain.innerText,
    links: Array.from(document.querySelectorAll('a[href]')).map(a => ({href: a.href, cls: a.className})),
    resources: performance.getEntriesByType('resource').map(e => e.name),
  });
}).catch(e => done({error: String(e)}));
"""


@functools.cache
def _fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def _check_page(driver, base: str, path: str) -> dict:
    driver.get(base + path)
    info = driver.execute_async_script(_WAIT_FOR_PAGE)
    assert "error" not in info, f"{path}: {info.get('error')}"
    assert "404" not in info["title"], f"{path} did not load: {info['title']}"
    broken = [img["src"] for img in info["images"] if img["width"] == 0]
    assert not broken, f"{path}: images that did not load: {broken}"
    foreign = [r for r in info["resources"] if not r.startswith((base, "data:"))]
    assert not foreign, f"{path} requested resources from elsewhere: {foreign}"
    assert info["typeset"] == info["math"], f"{path}: MathJax typeset {info['typeset']} of {info['math']} formulas"
    for raw in ("$$", "\\(", "\\["):
        assert raw not in info["text"], f"{path}: raw math {raw!r} left in the text"
    for link in info["links"]:
        url, fragment = urldefrag(link["href"])
        if not url.startswith(base):
            continue
        status, html = _fetch(url)
        assert status == 200, f"{path}: broken internal link {link['href']} (HTTP {status})"
        if fragment and url.endswith(".html"):
            assert re.search(rf'id="{re.escape(unquote(fragment))}"', html), f"{path}: link to a missing anchor {link['href']}"
    return info


def _meaningless(alt: str) -> bool:
    """An alt text a screen-reader user cannot use: empty, a file name or hash, or a bare word like "png"."""
    text = alt.strip()
    return (not text or text.lower() in {"png", "svg", "jpg", "jpeg", "image", "figure", "img", "picture"}
            or bool(re.search(r"[0-9a-f]{16,}", text.lower()))
            or bool(re.search(r"\.(png|svg|jpe?g|gif)$", text, re.I)))


def test_meaningless_alt_texts_are_recognised():
    assert _meaningless("") and _meaningless("  ") and _meaningless("png")
    assert _meaningless("../_images/6ebf4a519574d2e259065ee982d0895165ca4fd8cbc5e7c5728e3f847f5823b0.png")
    assert not _meaningless("Line chart, titled “Variance of attention scores”; variance against d_k.")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_page_in_browser(notebook, browser, server):
    info = _check_page(browser, server, f"notebooks/{notebook.stem}.html")
    figures = sum(img["output"] for img in info["images"])
    assert figures == _count_figures(notebook), f"{notebook.name}: {figures} figures shown, {_count_figures(notebook)} stored"
    no_alt = [img["alt"] or img["src"] for img in info["images"] if _meaningless(img["alt"])]
    assert not no_alt, f"{notebook.name}: images without a meaningful alt text: {no_alt}"
    assert not info["overflowing_code"], (
        f"{notebook.name}: code blocks wider than the page at {DESKTOP[0]} px: {info['overflowing_code']}")
    assert info["input_copy_buttons"] == info["cell_inputs"] > 0 and info["output_copy_buttons"] == 0, (
        f"{notebook.name}: {info['input_copy_buttons']} copy buttons for {info['cell_inputs']} code cells, "
        f"{info['output_copy_buttons']} on outputs (expected none)")
    markdown = "".join(c.source for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "markdown")
    if "$" in markdown:
        assert info["math"] > 0, f"{notebook.name} has formulas but the page shows none"
    hrefs = [link["href"] for link in info["links"]]
    colab = f"https://colab.research.google.com/github/{urlparse(REPOSITORY).path.strip('/')}/blob/main/notebooks/{notebook.name}"
    assert colab in hrefs, f"{notebook.name}: no 'Open in Colab' link"
    downloads = [link["href"] for link in info["links"] if "download-notebook" in link["cls"]]
    assert len(downloads) == 1, f"{notebook.name}: expected one 'Download notebook' link, found {downloads}"
    status, text = _fetch(downloads[0])
    assert status == 200 and json.loads(text)["cells"], f"{notebook.name}: the download link does not serve the notebook"


@pytest.mark.parametrize("path", ["index.html", "instructors.html", "data/README.html", "data/checkpoints/README.html",
                                  "notebooks/README.html", *README_PAGES])
def test_other_pages_in_browser(path, browser, server):
    info = _check_page(browser, server, path)
    no_alt = [img["alt"] or img["src"] for img in info["images"] if _meaningless(img["alt"])]
    assert not no_alt, f"{path}: images without a meaningful alt text: {no_alt}"
    if path == "index.html":
        assert any("architecture" in img["src"] and img["width"] > 0 for img in info["images"]), "no architecture picture"
        pages = {urlparse(link["href"]).path for link in info["links"]}
        missing = [nb.name for nb in NOTEBOOKS if f"/notebooks/{nb.stem}.html" not in pages]
        assert not missing, f"the landing page does not link to {missing}"


_START_LINK = """
const links = Array.from(document.querySelectorAll('article a[href]'))
    .filter(a => new URL(a.href).pathname.endsWith('/notebooks/00_welcome.html'));
return links.map(a => {
  const box = a.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return {text: a.innerText.trim(), top: box.top, bottom: box.bottom, width: box.width,
          onTop: !!hit && (hit === a || a.contains(hit)), height: window.innerHeight};
});
"""


def test_landing_page_starts_notebook_00_above_the_fold(browser, server):
    browser.get(server + "index.html")
    links = browser.execute_script(_START_LINK)
    visible = [link for link in links
               if link["width"] > 0 and link["top"] >= 0 and link["bottom"] <= link["height"] and link["onTop"]]
    assert any("Start" in link["text"] for link in visible), (
        f"no 'Start with notebook 00' link visible without scrolling at {DESKTOP[0]}×{DESKTOP[1]}: {links}")


_PAGE_WIDTH = """
return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
        wide: Array.from(document.querySelectorAll('article *'))
            .filter(e => e.getBoundingClientRect().right > arguments[0] + 1 && e.children.length === 0)
            .slice(0, 5).map(e => e.tagName + ': ' + e.textContent.slice(0, 60))};
"""


@pytest.mark.parametrize("path", ["index.html", *(f"notebooks/{nb.stem}.html" for nb in NOTEBOOKS)])
def test_no_sideways_scrolling_on_a_phone(path, browser, server):
    _viewport(browser, PHONE_WIDTH, 844, mobile=True)
    try:
        browser.get(server + path)
        browser.execute_async_script(_WAIT_FOR_PAGE)  # images loaded, formulas typeset: the final layout
        width = browser.execute_script(_PAGE_WIDTH, PHONE_WIDTH)
    finally:
        _viewport(browser, *DESKTOP)
    # A phone widens its layout viewport (innerWidth) to fit content that overflows, so compare with both.
    assert width["scroll"] <= min(width["inner"], PHONE_WIDTH), (
        f"{path} scrolls sideways at {PHONE_WIDTH} px: page {width['scroll']} px wide; too wide: {width['wide']}")


_SEARCH_STATE = """
const items = Array.from(document.querySelectorAll('#search-results li'));
// Sphinx writes "Search finished, ..." into p.search-summary (older versions: #search-progress)
const status = document.querySelector('#search-results p.search-summary') || document.getElementById('search-progress');
return {finished: !!status && status.innerText.startsWith('Search finished'),
        results: items.map(li => li.querySelector('a').href),
        previews: items.map(li => li.querySelector('p.context')).filter(p => p).map(p => p.textContent),
        expected: items.filter(li => !li.querySelector(':scope > span')).length};
"""


def _search(driver, base: str, query: str) -> dict:
    """Search the site; return the result links and the preview under each (once all have arrived)."""
    driver.get(f"{base}search.html?q={query}")
    deadline = time.monotonic() + 30
    state = {}
    while time.monotonic() < deadline:
        state = driver.execute_script(_SEARCH_STATE)
        if state["finished"] and len(state["previews"]) >= state["expected"]:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"searching {query!r}: the search did not finish with a preview under every result "
                             f"within 30 s: {state}")
    return state


def test_search_finds_pages(browser, server):
    results = _search(browser, server, "attention")["results"]
    assert any("04_attention.html" in r for r in results), f"searching 'attention' did not find notebook 04: {results}"


@pytest.mark.parametrize("query", ["attention", "softmax"])
def test_search_previews_show_the_text(query, browser, server):
    """The text under each search result is the page's text: no theme buttons or table of contents, no raw LaTeX."""
    previews = _search(browser, server, query)["previews"]
    assert previews, f"searching {query!r}: the results show no previews"
    for preview in previews:
        for unwanted in ("\\(", "\\[", "$$", "Light Dark", "System Settings", "Download notebook", "Skip to main"):
            assert unwanted not in preview, f"searching {query!r}: a preview shows {unwanted!r}: {preview}"
