"""The offline decks (``make slides``, scripts/build_slides.py) fit a lecture-hall screen.

Every notebook's deck is built once; one headless Chromium per screen size (1920 x 1080 and 1280 x 720,
set exactly with the DevTools device metrics) visits every slide of every deck and measures it:

* nothing overflows: the slide's content is no taller and no wider than the slide (a slide is a
  fixed-height box, so ``scrollHeight``/``scrollWidth`` beyond its client size is overflow), the slide
  lies inside the window, and no element inside it hides content behind a scroll bar or a clip;
* every piece of text (body, lists, tables, code, outputs, headings) renders at >= 28 px on a
  1920 x 1080 screen: computed font size x the scale reveal.js applies;
* at most 80 words of prose on a slide (counted as slide_words.count_words counts them: formulas are
  one word each, code and speaker notes are not counted);
* every deck has speaker notes.

``test_measurement_catches_overflow`` shows that the same measurement fails on slides cut as the notebooks'
metadata cuts them, before build_slides lays them out. The rest are unit tests of the layout step.
Costs about 10 s to build the decks and 35 s per screen size on a 2-core machine.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from chromium import headless_chromium
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from scripts import build_slides, slide_heights, slide_layout, slide_words

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SCREENS = [(1920, 1080), (1280, 720)]
MIN_RENDERED_PX = 28  # at 1920 x 1080
MAX_WORDS = 80

# Visit every slide of the deck open in the browser and measure it. Returns {viewport, scale, slides}.
MEASURE = r"""
const done = arguments[arguments.length - 1];
(async () => {
  const wait = (ms) => new Promise(resolve => setTimeout(resolve, ms));
  for (let i = 0; i < 400 && !(window.Reveal && Reveal.isReady()); i++) await wait(50);
  if (!(window.Reveal && Reveal.isReady())) return done({error: 'reveal.js did not start'});
  for (let i = 0; i < 400 && !(window.MathJax && MathJax.Hub && MathJax.isReady); i++) await wait(50);
  await new Promise(resolve => MathJax.Hub.Queue(resolve));  // every formula typeset
  Reveal.configure({transition: 'none', backgroundTransition: 'none'});
  const config = Reveal.getConfig();
  const box = document.querySelector('.reveal .slides');
  const mathjax = '.MathJax, .MathJax_Display, .MathJax_Preview, .MJX_Assistive_MathML';
  const slides = [];
  for (const slide of Reveal.getSlides()) {
    const at = Reveal.getIndices(slide);
    Reveal.slide(at.h, at.v, Number.MAX_SAFE_INTEGER);  // every fragment shown
    await new Promise(resolve => requestAnimationFrame(() => resolve()));
    const shown = [...slide.querySelectorAll('*')].filter(e => !e.closest('aside.notes'));
    const hiding = shown.filter(e => !e.closest(mathjax)).filter(e => {
      const style = getComputedStyle(e);
      return (style.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1)
          || (style.overflowY !== 'visible' && e.scrollHeight > e.clientHeight + 1);
    }).map(e => e.tagName + '.' + String(e.className).split(' ')[0]);
    let textPx = Infinity, codePx = Infinity;
    for (const e of shown) {
      if (e.closest(mathjax) || e.closest('script, style') || e.getClientRects().length === 0) continue;  // not shown
      if (![...e.childNodes].some(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim())) continue;
      const px = parseFloat(getComputedStyle(e).fontSize);
      if (e.closest('pre, code')) codePx = Math.min(codePx, px); else textPx = Math.min(textPx, px);
    }
    const prose = document.createElement('div');
    for (const cell of slide.querySelectorAll('.jp-MarkdownCell')) {
      if (!cell.closest('aside.notes')) prose.appendChild(cell.cloneNode(true));
    }
    prose.querySelectorAll('pre, .MathJax, .MathJax_Display, .MathJax_Preview, .MJX_Assistive_MathML')
         .forEach(e => e.remove());
    prose.querySelectorAll('script[type^="math/tex"]').forEach(e => e.replaceWith(' M '));
    const words = (prose.textContent.match(/\S+/g) || []).filter(w => /[\p{L}\p{N}]/u.test(w)).length;
    const rect = slide.getBoundingClientRect();
    slides.push({h: at.h, v: at.v, scrollHeight: slide.scrollHeight, clientHeight: slide.clientHeight,
                 scrollWidth: slide.scrollWidth, clientWidth: slide.clientWidth,
                 top: rect.top, bottom: rect.bottom, left: rect.left, right: rect.right,
                 hiding, textPx, codePx, words, notes: slide.querySelectorAll('aside.notes').length});
  }
  done({viewport: [innerWidth, innerHeight], scale: Reveal.getScale(),
        boxScale: box.getBoundingClientRect().width / config.width, size: [config.width, config.height],
        slides});
})().catch(error => done({error: String(error)}));
"""


def _open(driver, width: int, height: int) -> None:
    """Make the page area exactly width x height (a headless window's size includes no page area rule)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def measure(driver, deck: Path) -> dict:
    driver.get(deck.as_uri())
    result = driver.execute_async_script(MEASURE)
    assert "error" not in result, f"{deck.name}: {result.get('error')}"
    return result


def overflowing(result: dict) -> list[str]:
    """Slides whose content does not fit the slide or the window, or hides content behind a scroll bar."""
    width, height = result["viewport"]
    bad = []
    for s in result["slides"]:
        problems = []
        if s["scrollHeight"] > s["clientHeight"] + 1:
            problems.append(f"{s['scrollHeight']} px tall in {s['clientHeight']}")
        if s["scrollWidth"] > s["clientWidth"] + 1:
            problems.append(f"{s['scrollWidth']} px wide in {s['clientWidth']}")
        if s["top"] < -1 or s["left"] < -1 or s["bottom"] > height + 1 or s["right"] > width + 1:
            problems.append("outside the window")
        if s["hiding"]:
            problems.append(f"clipped or scrolling: {s['hiding'][:3]}")
        if problems:
            bad.append(f"slide {s['h']}.{s['v']}: " + "; ".join(problems))
    return bad


@pytest.fixture(scope="module")
def decks(tmp_path_factory) -> dict[str, Path]:
    if not NOTEBOOKS:
        pytest.skip("no notebooks")
    out = tmp_path_factory.mktemp("slides")
    build_slides.copy_assets(out)
    return {nb.stem: build_slides.build_slides(nb, out) for nb in NOTEBOOKS}


@pytest.fixture(scope="module", params=SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def measured(request, decks) -> tuple[tuple[int, int], dict[str, dict]]:
    width, height = request.param
    with headless_chromium(width, height) as driver:
        _open(driver, width, height)
        return (width, height), {name: measure(driver, deck) for name, deck in decks.items()}


def test_the_window_is_the_screen_size(measured):
    (width, height), results = measured
    for name, result in results.items():
        assert result["viewport"] == [width, height], name
        assert result["size"] == [slide_heights.SLIDE_WIDTH, slide_heights.SLIDE_HEIGHT]
        assert result["scale"] == pytest.approx(result["boxScale"], rel=0.01), name  # reveal.js's scale is real
        assert len(result["slides"]) >= 5, name


def test_no_slide_overflows(measured):
    (width, height), results = measured
    report = {name: overflowing(result) for name, result in results.items()}
    report = {name: bad for name, bad in report.items() if bad}
    assert not report, f"at {width}x{height}: " + " | ".join(f"{n}: {b[:4]} ({len(b)})" for n, b in report.items())


def test_text_is_legible_from_the_back(measured):
    """>= 28 px at 1920 x 1080; a smaller screen shows the same slide scaled down (>= 18.7 px at 1280 x 720)."""
    (width, height), results = measured
    least = MIN_RENDERED_PX * min(width / 1920, height / 1080)
    for name, result in results.items():  # a slide without text or code reports null (JSON for Infinity)
        text = min(s["textPx"] for s in result["slides"] if s["textPx"] is not None) * result["scale"]
        code = min(s["codePx"] for s in result["slides"] if s["codePx"] is not None) * result["scale"]
        assert text >= least, f"{name}: text renders at {text:.1f} px at {width}x{height}"
        assert code >= least, f"{name}: code renders at {code:.1f} px at {width}x{height}"


def test_at_most_80_words_on_a_slide(measured):
    _, results = measured
    for name, result in results.items():
        wordy = [(s["h"], s["v"], s["words"]) for s in result["slides"] if s["words"] > MAX_WORDS]
        assert not wordy, f"{name}: slides (h, v, words) over {MAX_WORDS} words: {wordy}"
        assert max(s["words"] for s in result["slides"]) > 10, name  # the count sees the prose at all


def test_every_deck_has_speaker_notes(measured):
    _, results = measured
    for name, result in results.items():
        assert sum(s["notes"] for s in result["slides"]) >= 1, f"{name}: no speaker notes"


# ------------------------------------------------------------------------------------------------
# the measurement can fail
# ------------------------------------------------------------------------------------------------


def _md(text: str, slide: str = "-"):
    return new_markdown_cell(text, metadata={"slideshow": {"slide_type": slide}})


def _code(src: str, slide: str = "-", outputs=(), tags=()):
    cell = new_code_cell(src, metadata={"slideshow": {"slide_type": slide}, "tags": list(tags)})
    cell.outputs = list(outputs)
    return cell


SENTENCE = "Attention mixes the values of all positions with weights that sum to one."
LONG_CODE = "\n".join(f"x_{i} = torch.randn(2, 3)  # line {i}: a comment long enough to look like real code" for i in range(60))


def crowded_notebook() -> nbformat.NotebookNode:
    """Slides that cannot fit as authored: a 60-line cell, 150 words of prose, an output wider than a slide."""
    nb = new_notebook(cells=[
        _md("# A crowded deck\n\n" + " ".join([SENTENCE] * 3), "slide"),
        _md("## Too much prose\n\n" + "\n\n".join(" ".join([SENTENCE] * 2) for _ in range(5)), "slide"),
        _code(LONG_CODE, "slide", [new_output("stream", name="stdout", text="".join(f"{i}\n" for i in range(40)))]),
        _md('<div style="width: 3000px">a table far wider than any slide</div>', "slide"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_measurement_catches_overflow(tmp_path):
    """As authored, the crowded slides overflow and carry too many words; laid out by build_slides they fit."""
    for name in ("crowded", "crowded_as_authored"):
        nbformat.write(crowded_notebook(), tmp_path / f"{name}.ipynb")
    build_slides.copy_assets(tmp_path)
    raw = build_slides.build_slides(tmp_path / "crowded_as_authored.ipynb", tmp_path, fit=False)
    fitted = build_slides.build_slides(tmp_path / "crowded.ipynb", tmp_path)
    with headless_chromium(1280, 720) as driver:
        _open(driver, 1280, 720)
        before, after = measure(driver, raw), measure(driver, fitted)
    bad = overflowing(before)
    assert any("px tall" in b for b in bad), bad
    assert any("px wide" in b for b in bad), bad
    assert max(s["words"] for s in before["slides"]) > MAX_WORDS
    assert len(after["slides"]) > len(before["slides"])
    assert max(s["words"] for s in after["slides"]) <= MAX_WORDS
    assert [b for b in overflowing(after) if "px tall" in b] == []
    assert sum(s["notes"] for s in after["slides"]) >= 1


# ------------------------------------------------------------------------------------------------
# the layout step, without a browser
# ------------------------------------------------------------------------------------------------


def test_words_count_formulas_once_and_code_not_at_all():
    assert slide_words.count_words("Two words") == 2
    assert slide_words.count_words("The $QK^\\top$ product, $$\\mathrm{softmax}(x_i)$$ done.") == 5
    assert slide_words.count_words("Call `nn.Linear` - see [the docs](https://pytorch.org).") == 5
    assert slide_words.count_words("```python\nx = 1\ny = 2\n```") == 0
    assert slide_words.count_words("- one\n- two\n1. three") == 3
    assert slide_words.count_words("<!-- hidden --> shown") == 1


def test_word_budget_moves_whole_paragraphs_to_the_notes_and_keeps_the_heading():
    paragraphs = [" ".join([SENTENCE] * 3) for _ in range(4)]  # 39 words each
    shown, notes = slide_words.trim_to_budget("## Title\n\n" + "\n\n".join(paragraphs))
    assert shown.startswith("## Title")
    assert shown.count(SENTENCE) == 6 and slide_words.count_words(shown) <= MAX_WORDS  # heading + 2 paragraphs
    assert notes == "\n\n".join(paragraphs[2:])  # the rest, whole and in order


def test_an_overlong_first_paragraph_keeps_its_first_sentences():
    paragraph = " ".join(f"Sentence {i} says that attention weights sum to one, e.g. over the keys." for i in range(9))
    shown, notes = slide_words.trim_to_budget(f"### Heading\n\n{paragraph}")
    assert shown.startswith("### Heading\n\n") and slide_words.count_words(shown) <= MAX_WORDS
    body = shown.split("\n\n", 1)[1]
    assert body.endswith("keys.") and notes.startswith("Sentence ")  # cut between sentences, not after "e.g."
    assert f"{body} {notes}" == paragraph


def test_a_short_cell_is_left_alone():
    text = "## Title\n\nShort.\n\n- a\n- b"
    assert slide_words.trim_to_budget(text) == (text, "")


def test_a_long_code_cell_is_split_at_line_boundaries_onto_continuation_slides():
    nb = new_notebook(cells=[_md("## Long code", "slide"), _code(LONG_CODE)])
    slides = slide_layout.layout_slides(nb)
    pieces = [c for s in slides for c in s.cells if c.cell_type == "code"]
    assert len(pieces) >= 3
    assert "\n".join(p.source for p in pieces) == LONG_CODE  # every line, in order, none cut
    for slide in slides[1:]:
        assert slide.kind == "subslide"
        assert slide.cells[0].source == slide_layout._continued_header("Long code")
    for slide in slides:
        assert slide.height <= slide_layout.FILL * slide_heights.CONTENT_HEIGHT


def test_a_cell_that_does_not_fit_under_the_cells_above_starts_a_continuation():
    figure = new_output("display_data", data={"image/png": _png(800, 600), "text/plain": "<Figure>"})
    nb = new_notebook(cells=[_md("## Picture\n\n" + " ".join([SENTENCE] * 5), "slide"),
                             _code("\n".join(f"y = {i}" for i in range(6)), outputs=[figure])])
    slides = slide_layout.layout_slides(nb)
    assert len(slides) == 2 and slides[1].cells[0].source.endswith("Picture (continued)</p>")
    assert slides[1].cells[1].source.startswith("y = 0")  # the whole cell, source and figure together
    (output,) = slides[1].cells[1].outputs
    size = output.metadata.get("image/png", {})
    height = size.get("height", slide_heights.figure_size(output)[1])
    assert slide_heights.FIGURE_MIN_HEIGHT <= height <= slide_heights.FIGURE_MAX_HEIGHT


def test_ci_and_colab_cells_are_left_out_as_on_the_website():
    nb = new_notebook(cells=[
        _md("# Title", "slide"),
        _code("# @title Course check", "skip", tags=["course-check"]),
        _code("# Colab set-up", "-", tags=["colab-setup"]),
        _code("print('site leaves this out')", "-", tags=["remove-cell"]),
        _code("print('shown')"),
        _md("Speaker only.", "notes"),
    ])
    deck = slide_layout.deck_notebook(nb)
    sources = [c.source for c in deck.cells]
    assert "print('shown')" in sources
    assert not any("Course check" in s or "Colab" in s or "site leaves" in s for s in sources)
    assert [c.source for c in deck.cells if slide_layout.slide_type(c) == "notes"] == ["Speaker only."]


def test_every_notebook_gets_speaker_notes_and_keeps_its_notebook_unchanged():
    for path in NOTEBOOKS:
        before = path.read_bytes()
        deck = slide_layout.deck_notebook(nbformat.read(path, as_version=4))
        assert any(slide_layout.slide_type(c) == "notes" for c in deck.cells), path.name
        assert path.read_bytes() == before


def _png(width: int, height: int) -> str:
    """A base64 PNG header of the given size (enough for slide_heights.png_size)."""
    import base64
    import struct

    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00"
    return base64.b64encode(header + b"\x00" * 40).decode()


# ------------------------------------------------------------------------------------------------
# RISE (make present): its configuration
# ------------------------------------------------------------------------------------------------

RISE_OVERRIDES = ROOT / "scripts" / "slides_template" / "rise" / "overrides.json"
RISE_CSS = ROOT / "notebooks" / "rise.css"


def test_rise_settings_are_valid_for_the_installed_rise():
    """Every key is one RISE's settings schema knows (it rejects unknown ones), with an allowed value."""
    import json

    settings = json.loads(RISE_OVERRIDES.read_text())["jupyterlab-rise:plugin"]
    assert settings["scroll"] is True  # a slide taller than the screen scrolls instead of being cut off
    assert settings["width"] == settings["height"] == "100%"  # a fixed size is laid out at window size, then scaled off screen
    schema_file = ROOT / ".venv" / "share" / "jupyter" / "labextensions" / "jupyterlab-rise" / "schemas" / "jupyterlab-rise" / "plugin.json"
    if not schema_file.exists():
        pytest.skip("jupyterlab-rise is not installed in .venv (make setup)")
    properties = json.loads(schema_file.read_text())["properties"]
    for key, value in settings.items():
        assert key in properties, key
        if "enum" in properties[key]:
            assert value in properties[key]["enum"], (key, value)


def test_rise_css_makes_text_and_code_legible_at_1920x1080():
    """notebooks/rise.css (RISE loads it next to the notebook) sizes text and code with the screen."""
    import re

    css = RISE_CSS.read_text()
    for variable in ("--jp-content-font-size1", "--jp-code-font-size"):
        vw, vh = map(float, re.search(rf"{variable}:\s*min\(([\d.]+)vw,\s*([\d.]+)vh\)", css).groups())
        assert min(vw * 1920, vh * 1080) / 100 >= MIN_RENDERED_PX, variable
    assert "pre-wrap" in css  # long lines wrap


def test_make_present_installs_the_rise_settings():
    import shutil
    import subprocess

    if shutil.which("make") is None or not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("make or the course environment (make setup) is missing")
    result = subprocess.run(["make", "-n", "-W", str(RISE_OVERRIDES.relative_to(ROOT)), "present",
                             "NB=notebooks/04_attention.ipynb"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    copy = next(i for i, line in enumerate(lines) if line.startswith("cp ") and "overrides.d/" in line)
    start = next(i for i, line in enumerate(lines) if "jupyterlab_rise" in line)
    assert str(RISE_OVERRIDES.relative_to(ROOT)) in lines[copy] and copy < start
    assert ".venv/share/jupyter/lab/settings/overrides.d/" in lines[copy]  # RISE's (and JupyterLab's) app settings
