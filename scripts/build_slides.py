"""Build reveal.js slides for notebooks into build/slides/ that work offline and read from the back of a lecture hall.

``make slides`` writes build/slides/<name>.slides.html for every notebook. Open one in a browser: reveal.js
(5.x, with its speaker-notes plugin: press S) and MathJax (2.7, with its STIX-Web fonts) are served from
build/slides/reveal.js/ and build/slides/mathjax/, copied from the pip packages ``sphinx-revealjs`` and
``jupyter-server-mathjax`` pinned in requirements.txt, and the template (scripts/slides_template/offline_reveal)
loads nothing from a CDN, so a deck shows on a classroom machine without a connection. Copy the whole
build/slides/ folder to move the decks. For presenting live with running code, use ``make present`` (RISE:
its settings are scripts/slides_template/rise/overrides.json, its text size notebooks/rise.css, 28.8 px on a
1920 x 1080 screen; see the Makefile).

A deck is cut from a copy of the notebook (the notebook itself is never changed), following each cell's
``slideshow.slide_type`` (slide, subslide, fragment, skip, notes), then re-cut so that every slide fits:

* Left out: ``skip`` cells and the cells the website leaves out too (tags ``course-check`` and
  ``colab-setup``, ``build_site.HIDDEN_TAGS``, and ``remove-cell``).
* Size: reveal.js lays a slide out at ``SLIDE_WIDTH`` x ``SLIDE_HEIGHT`` = 1280 x 720 logical px and scales
  it to the window (x1.47 on a 1920 x 1080 screen with its 2 % margin, x0.98 at 1280 x 720). Body text is
  ``TEXT_PX`` = 24 px (35 px on a 1920 x 1080 screen), code, outputs and tables ``CODE_PX`` = 20 px (29 px),
  headings 40/34/30 px. Code and text outputs wrap (``white-space: pre-wrap``) instead of running off the
  slide, and no input/output prompts take width.
* Words: at most ``WORD_BUDGET`` = 80 words of prose on a slide. A word is a whitespace-separated token with
  a letter or a digit in it, as the slide shows it (link targets, markup and HTML comments do not count);
  each formula, inline ``$...$`` or display ``$$...$$``, counts as one word; code blocks, code cells and
  outputs count none. A markdown cell is first cut before each of its sub-headings (each part may start
  a slide of its own, so every heading stays on a slide). A part over the budget keeps its heading and
  then whole blocks in order while they fit; from the first block that does not fit, everything moves,
  unchanged and in order, into the slide's speaker notes (reveal.js ``<aside class="notes">``). That
  block is itself cut where no sentence is cut: a list after its last item that fits, a table after its
  last row that fits (the notes repeat the header), a paragraph, if it is the first under the heading,
  after its last sentence that fits. A bold label (``**Prerequisites**``) whose block moved goes with it.
* Height: the height of every cell is estimated from its lines (text wrapped at an average character
  width, code at the monospace width), its figures (their pixel size scaled to the slide) and fixed
  margins, all in the logical px of the CSS in the template. A cell that would not fit under the cells
  above it, or would take the slide over the word budget, starts a continuation slide (a vertical
  sub-slide headed "<slide title> (continued)"). A code cell taller than a whole slide is split at line
  boundaries (at a line that starts a new statement where possible) into consecutive slides; a long text
  output is split the same way (nothing is truncated). A figure is at most ``FIGURE_MAX_HEIGHT`` = 70 %
  of the slide height and as wide as the slide; it shrinks (down to ``FIGURE_MIN_HEIGHT`` = 45 %) to fit under
  the cells above it, or moves to the next slide. The estimate fills at most ``FILL`` = 95 % of a slide;
  tests/test_slides.py measures every slide of every deck in headless Chromium at 1920 x 1080 and
  1280 x 720 (no overflow, text >= 28 px at 1920 x 1080, at most 80 words).
* Speaker notes: every deck has some: the prose moved off the slides and any ``notes`` cells of the
  notebook.

Modules: ``slide_words`` (the word budget and the cut into speaker notes), ``slide_heights`` (the height
estimates and the slide's geometry), ``slide_layout`` (cells onto slides: continuation slides, splits,
figures) and this file (the offline reveal.js export and the command line).

Usage:
    python -m scripts.build_slides notebooks/*.ipynb [--out build/slides]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

from scripts.slide_heights import (
    BLOCK_GAP,
    CODE_LINE,
    CODE_PAD_Y,
    CODE_PX,
    FIGURE_MAX_HEIGHT,
    HEADING_LINE,
    HEADING_PX,
    OUTPUT_GAP,
    PAD_X,
    PAD_Y,
    REVEAL_MARGIN,
    SLIDE_HEIGHT,
    SLIDE_WIDTH,
    TEXT_LINE,
    TEXT_PX,
)
from scripts.slide_layout import deck_notebook

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "slides_template"
REVEAL_DIR, MATHJAX_DIR = "reveal.js", "mathjax"
THEME = "white"
REMOTE_IMAGE = re.compile(r"""<img\b[^>]*\bsrc=["']?(?:https?:)?//[^>]*>""", re.IGNORECASE)
ALT_TEXT = re.compile(r"""\balt=["']([^"']*)["']""", re.IGNORECASE)
# A <script src=…>, <link href=…>, CSS url(…) or ES import that reaches the internet (plain links are fine).
REMOTE_ASSET = re.compile(
    r"""<script[^>]*\ssrc=["']?(?:https?:)?//|<link[^>]*\shref=["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//"""
    r"""|\bimport\b[^;'"]*["'](?:https?:)?//|@import\s+["'](?:https?:)?//""",
    re.IGNORECASE,
)


# ------------------------------------------------------------------------------------------------
# Export
# ------------------------------------------------------------------------------------------------


def _package_dir(module: str, *parts: str) -> Path:
    """A data folder inside an installed package, with a clear error when the package is missing."""
    try:
        package = __import__(module)
    except ImportError as exc:
        raise SystemExit(f"{module} is not installed: run `make setup` (it is pinned in requirements.txt)") from exc
    folder = Path(package.__file__).resolve().parent.joinpath(*parts)
    if not folder.is_dir():
        raise SystemExit(f"{folder} not found: the installed {module} does not ship the expected files")
    return folder


def copy_assets(out_dir: Path) -> None:
    """Copy reveal.js (dist + notes plugin) and MathJax next to the decks in ``out_dir``."""
    reveal = _package_dir("sphinx_revealjs", "_static", "revealjs")
    for part in ("dist", "plugin/notes"):
        shutil.copytree(reveal / part, out_dir / REVEAL_DIR / part, dirs_exist_ok=True)
    if (reveal / "LICENSE").exists():
        shutil.copy2(reveal / "LICENSE", out_dir / REVEAL_DIR / "LICENSE")
    shutil.copytree(_package_dir("jupyter_server_mathjax", "static"), out_dir / MATHJAX_DIR, dirs_exist_ok=True)
    theme = (out_dir / REVEAL_DIR / "dist" / "theme" / f"{THEME}.css").read_text(encoding="utf-8")
    if remote_assets(theme):
        raise RuntimeError(f"the reveal.js theme {THEME!r} loads from the internet: {remote_assets(theme)[:2]}")


def exporter() -> SlidesExporter:
    """nbconvert's slides exporter with the offline template and local asset URLs."""
    slides = SlidesExporter(extra_template_basedirs=[str(TEMPLATES)], template_name="offline_reveal")
    slides.reveal_url_prefix = REVEAL_DIR
    slides.reveal_theme = THEME  # its fonts ship with reveal.js; "simple" (the default) imports Google Fonts
    slides.reveal_transition = "slide"
    slides.mathjax_url = f"{MATHJAX_DIR}/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
    return slides


def layout_resources() -> dict:
    """The sizes the template's reveal.js configuration and CSS use (logical px)."""
    return {
        "width": SLIDE_WIDTH, "height": SLIDE_HEIGHT, "margin": REVEAL_MARGIN, "pad_x": PAD_X, "pad_y": PAD_Y,
        "text_px": TEXT_PX, "text_line": TEXT_LINE, "code_px": CODE_PX, "code_line": CODE_LINE,
        "h1": HEADING_PX[1], "h2": HEADING_PX[2], "h3": HEADING_PX[3], "h4": HEADING_PX[4],
        "heading_line": HEADING_LINE, "gap": BLOCK_GAP, "code_pad": CODE_PAD_Y, "output_gap": OUTPUT_GAP, "figure_max": FIGURE_MAX_HEIGHT,
    }


def inline_remote_images(html: str) -> str:
    """Replace images from the internet (the Colab badge) by their alt text; links around them stay links."""

    def alt_text(match: re.Match) -> str:
        alt = ALT_TEXT.search(match.group(0))
        return f"<span>{alt.group(1) if alt else 'image'}</span>"

    return REMOTE_IMAGE.sub(alt_text, html)


def remote_assets(html: str) -> list[str]:
    """Every place in ``html`` that would load a script, style sheet or font from the internet."""
    return [html[max(0, m.start() - 40):m.end() + 60] for m in REMOTE_ASSET.finditer(html)]


def build_slides(notebook: Path, out_dir: Path, fit: bool = True) -> Path:
    """Convert one notebook to ``out_dir/<name>.slides.html`` and return that path.

    Args:
        notebook: the notebook (read, never written).
        out_dir: where the deck goes (``copy_assets`` puts reveal.js and MathJax there).
        fit: re-cut the slides so that each fits (``deck_notebook``); False exports the slides as the
            notebook's metadata cuts them (tests/test_slides.py shows that those overflow).
    """
    nb = nbformat.read(notebook, as_version=4)
    deck = deck_notebook(nb) if fit else nb
    resources = {"course_slides": layout_resources(), "metadata": {"name": notebook.stem}}
    body, _ = exporter().from_notebook_node(deck, resources=resources)
    body = inline_remote_images(body)
    remote = remote_assets(body)
    if remote:
        raise RuntimeError(f"{notebook.name}: the deck would load from the internet: {remote[:3]}")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{notebook.stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "slides")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    for notebook in args.notebooks:
        print(f"wrote {build_slides(notebook, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
