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

Usage:
    python scripts/build_slides.py notebooks/*.ipynb [--out build/slides]
"""

from __future__ import annotations

import argparse
import base64
import copy
import html
import itertools
import math
import re
import shutil
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from nbconvert import SlidesExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_site import HIDDEN_TAGS, REMOVE_TAG  # the website's rule for the cells it leaves out

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
# Layout, in the logical px of a slide (the template's CSS uses the same numbers)
# ------------------------------------------------------------------------------------------------
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
REVEAL_MARGIN = 0.02  # reveal.js leaves this fraction of the window free around the slide
PAD_X, PAD_Y = 40, 18  # padding of a slide
CONTENT_WIDTH = SLIDE_WIDTH - 2 * PAD_X
CONTENT_HEIGHT = SLIDE_HEIGHT - 2 * PAD_Y
TEXT_PX, TEXT_LINE = 24, 1.35  # body text: font size and line height
CODE_PX, CODE_LINE = 20, 1.3  # code cells, their outputs, code blocks in text, tables
HEADING_PX = {1: 40, 2: 34, 3: 30, 4: 26, 5: 26, 6: 26}
HEADING_LINE = 1.2
BLOCK_GAP = 12  # space below a paragraph, list, table or code block in text, and below a cell
CODE_PAD_Y = 6  # padding above and below code and text outputs
OUTPUT_GAP = 4  # space between a code cell's source and its outputs
FIGURE_MAX_HEIGHT = round(0.7 * SLIDE_HEIGHT)
FIGURE_MIN_HEIGHT = round(0.45 * SLIDE_HEIGHT)
# Widths of a character in em, generous so the estimate errs on the tall side: the theme's Source Sans Pro
# averages under 0.5 em on English prose; monospace fonts are 0.55-0.61 em.
TEXT_CHAR_EM, CODE_CHAR_EM = 0.49, 0.62
MIN_CODE_LINES = 4  # a split code cell shows at least this many lines on a slide
FILL = 0.95  # fill at most this fraction of a slide's content height by the estimate
WORD_BUDGET = 80

MD = MarkdownIt("commonmark").enable("table")
WORD = re.compile(r"[^\W_]")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
MATH = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)|(?<![\\$])\$(?!\s)(?:[^$\n\\]|\\.)+?\$", re.S)
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
TAG = re.compile(r"</?[A-Za-z][^>]*>")
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.M)
# Where a sentence ends: . ! or ? (then closing marks), space, and a capital, digit, formula or code next;
# not after the abbreviations below.
SENTENCE_END = re.compile(r"""(?<=[.!?])[)"'”’*_]*\s+(?=[("“*_]*[A-Z0-9`$])""")
LABEL = re.compile(r"\s*(\*\*|__)[^\n]+?\1:?\s*")  # a paragraph that only names what follows
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "al.", "Fig.", "No.", "approx.", "resp.")


def count_words(markdown: str) -> int:
    """Words a slide shows for this markdown: tokens with a letter or digit; a formula is one word.

    Code blocks (fenced) and HTML comments count nothing, code spans count their words, links their text,
    images from the internet their alt text (the deck shows it instead of the image), other images nothing.
    """
    text = HTML_COMMENT.sub(" ", FENCE.sub(" ", markdown))
    words = 0
    spans = []

    def code_span(match: re.Match) -> str:
        spans.append(match.group(2))
        return " "

    text = CODE_SPAN.sub(code_span, text)
    words += sum(_plain_words(span) for span in spans)
    text = MATH.sub(" M ", text)
    text = IMAGE.sub(lambda m: f" {m.group(1)} " if re.match(r"(?:https?:)?//", m.group(2)) else " ", text)
    text = LINK.sub(r" \1 ", text)
    text = TAG.sub(" ", text)
    text = LIST_MARK.sub(" ", text)
    return words + _plain_words(text.replace("|", " "))


def _plain_words(text: str) -> int:
    return sum(1 for token in text.split() if WORD.search(token))


# ------------------------------------------------------------------------------------------------
# Markdown: blocks, units, the word budget
# ------------------------------------------------------------------------------------------------


@dataclass
class Block:
    """One top-level markdown block: its kind (heading, paragraph, list, table, fence, html, other) and source."""

    kind: str
    text: str
    level: int = 0  # heading level
    items: list[str] = field(default_factory=list)  # list items, or table rows (header and rule first)

    @property
    def words(self) -> int:
        return count_words(self.text)


def parse_blocks(markdown: str) -> list[Block]:
    """The top-level blocks of a markdown text, each with its own source lines."""
    lines = markdown.splitlines()
    tokens = MD.parse(markdown)
    blocks: list[Block] = []
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        start, end = token.map
        text = "\n".join(lines[start:end]).strip("\n")
        kind = {"heading_open": "heading", "paragraph_open": "paragraph", "bullet_list_open": "list",
                "ordered_list_open": "list", "table_open": "table", "fence": "fence", "code_block": "fence",
                "html_block": "html"}.get(token.type, "other")
        block = Block(kind, text)
        if kind == "heading":
            block.level = int(token.tag[1])
        elif kind == "list":
            close = next(j for j in range(i + 1, len(tokens)) if tokens[j].level == 0 and tokens[j].nesting == -1)
            starts = [t.map[0] for t in tokens[i + 1:close] if t.type == "list_item_open" and t.level == 1]
            bounds = [*starts, end]
            block.items = ["\n".join(lines[a:b]).rstrip() for a, b in itertools.pairwise(bounds)]
        elif kind == "table":
            block.items = lines[start:end]
        blocks.append(block)
    return blocks


def sentences(paragraph: str) -> list[str]:
    """A paragraph cut into sentences (never inside a formula, a code span or after an abbreviation)."""
    masked = CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), paragraph)
    masked = MATH.sub(lambda m: "x" * len(m.group(0)), masked)
    cuts = [0]
    for match in SENTENCE_END.finditer(masked):
        before = masked[:match.start()].split()
        if before and any(before[-1].endswith(a) for a in ABBREVIATIONS):
            continue
        cuts.append(match.end())
    cuts.append(len(paragraph))
    return [paragraph[a:b].strip() for a, b in itertools.pairwise(cuts) if paragraph[a:b].strip()]


def _units(block: Block) -> tuple[list[str], str, list[str]]:
    """A block as (head, joiner, units): the pieces a first block may be cut into."""
    if block.kind == "paragraph":
        return [], " ", sentences(block.text)
    if block.kind == "list":
        return [], "\n", block.items
    if block.kind == "table" and len(block.items) > 2:
        return block.items[:2], "\n", block.items[2:]
    return [], "\n", [block.text]


def split_cell_at_headings(markdown: str) -> list[str]:
    """A markdown cell cut before every heading but the first: each part starts a slide of its own if needed."""
    parts: list[list[Block]] = [[]]
    for block in parse_blocks(markdown):
        if block.kind == "heading" and any(b.kind != "html" for b in parts[-1]):
            parts.append([])
        parts[-1].append(block)
    return ["\n\n".join(b.text for b in part) for part in parts if part]


def trim_to_budget(markdown: str, budget: int = WORD_BUDGET) -> tuple[str, str]:
    """Split markdown into (shown on the slide, moved to speaker notes) with at most ``budget`` words shown.

    Leading headings always stay. Then whole blocks stay in order while they fit; from the first block that
    does not, everything moves to the notes, in order. That block itself is cut where it can be without
    cutting a sentence: a list after its last item that fits, a table after its last row that fits (the
    notes repeat its header), and a paragraph, if it is the first after the headings, after its last
    sentence that fits. A bold label (a paragraph such as ``**Prerequisites**``) whose block moved to the
    notes moves with it.
    """
    blocks = parse_blocks(markdown)
    shown: list[str] = []
    used = 0
    i = 0
    while i < len(blocks) and blocks[i].kind in ("heading", "html"):
        shown.append(blocks[i].text)
        used += blocks[i].words
        i += 1
    first_body = i
    while i < len(blocks) and used + blocks[i].words <= budget:
        shown.append(blocks[i].text)
        used += blocks[i].words
        i += 1
    if i == len(blocks):
        return "\n\n".join(shown), ""
    block, moved = blocks[i], [b.text for b in blocks[i + 1:]]
    kept = 0
    if block.kind in ("list", "table") or i == first_body:
        head, joiner, units = _units(block)
        room = budget - used - count_words("\n".join(head))
        while kept < len(units) and count_words(joiner.join(units[:kept + 1])) <= room:
            kept += 1
        if kept:
            shown.append(joiner.join(head + units[:kept]))
            moved.insert(0, joiner.join((head if block.kind == "table" else []) + units[kept:]))
    if not kept:
        moved.insert(0, block.text)
        while len(shown) > first_body and LABEL.fullmatch(shown[-1]):
            moved.insert(0, shown.pop())
    return "\n\n".join(shown), "\n\n".join(moved)


def heading_text(markdown: str) -> str | None:
    """The text of the first heading in markdown (markup removed), or None."""
    for block in parse_blocks(markdown):
        if block.kind == "heading":
            text = CODE_SPAN.sub(lambda m: m.group(2), block.text.lstrip("#").strip())
            text = LINK.sub(r"\1", TAG.sub("", text))
            return re.sub(r"[*_]{1,2}(\S.*?\S|\S)[*_]{1,2}", r"\1", text).strip() or None
    return None


# ------------------------------------------------------------------------------------------------
# Height estimates (logical px)
# ------------------------------------------------------------------------------------------------


def _rows(text: str, width: float, char_px: float) -> int:
    """How many rows ``text`` (one line, no breaks) takes when wrapped at spaces to ``width`` (greedy, as a browser).

    Every character is taken as ``char_px`` wide; a word longer than a row is broken anywhere.
    """
    per_row = max(1, int(width // char_px))
    rows, used = 1, 0
    indent = len(text) - len(text.lstrip(" "))
    for k, word in enumerate(text.lstrip(" ").split(" ")):
        size = len(word) + (indent if k == 0 else 0)
        if used and used + 1 + size > per_row:  # the word goes to the next row
            rows, used = rows + 1, 0
        elif used:
            used += 1
        while size > per_row - used:
            size -= per_row - used
            rows, used = rows + 1, 0
        used += size
    return rows


def _plain(markdown: str) -> str:
    """Roughly the characters a markdown text shows (a formula as about half its TeX)."""
    text = CODE_SPAN.sub(lambda m: m.group(2), markdown)
    text = MATH.sub(lambda m: "x" * max(1, len(m.group(0)) // 2), text)
    text = IMAGE.sub(r"\1", text)
    text = LINK.sub(r"\1", text)
    text = TAG.sub("", text)
    text = re.sub(r"[*_]{1,2}(?=\S)|(?<=\S)[*_]{1,2}", "", text)
    return " ".join(text.split())


TEXT_ROW = TEXT_PX * TEXT_LINE
CODE_ROW = CODE_PX * CODE_LINE
TEXT_CHAR = TEXT_CHAR_EM * TEXT_PX
CODE_CHAR = CODE_CHAR_EM * CODE_PX
DISPLAY_MATH = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]", re.S)
TALL_FORMULA = re.compile(r"\\(?:dfrac|displaystyle|begin)\b")
RAISED_FORMULA = re.compile(r"\\(?:frac|sum|prod|int|sqrt|binom|underbrace|overbrace)\b")
DISPLAY_MATH_HEIGHT = 2.6 * TEXT_ROW  # a displayed formula with a fraction, and its margins


def block_height(block: Block) -> float:
    """Estimated height of a markdown block, with the gap below it."""
    if block.kind == "heading":
        size = HEADING_PX[block.level]
        chars = _plain(block.text.lstrip("#").strip())
        return _rows(chars, CONTENT_WIDTH, 0.55 * size) * size * HEADING_LINE + BLOCK_GAP
    if block.kind == "fence":
        lines = block.text.splitlines()[1:-1] if block.text.lstrip().startswith(("```", "~~~")) else block.text.splitlines()
        rows = sum(_rows(line, CONTENT_WIDTH - 24, CODE_CHAR) for line in lines)
        return rows * CODE_ROW + 2 * CODE_PAD_Y + 2 + BLOCK_GAP
    if block.kind == "html" and not TAG.sub("", HTML_COMMENT.sub("", block.text)).strip():
        return 0.0
    if block.kind == "table":
        rows = [r for r in block.items if not re.fullmatch(r"[\s|:-]+", r)]
        columns = max(1, block.items[0].strip().strip("|").count("|") + 1) if block.items else 1
        width = CONTENT_WIDTH / columns - 14
        height = 0.0
        for row in rows:
            cells = row.strip().strip("|").split("|")
            height += max(_rows(_plain(c), width, CODE_CHAR) for c in cells) * CODE_ROW + 6
        return height + BLOCK_GAP
    if block.kind == "list":
        height = 0.0
        for item in block.items:
            for line in re.split(r"\n\s*\n", item):
                indent = len(line) - len(line.lstrip())
                height += _text_height(LIST_MARK.sub("", line, count=1), CONTENT_WIDTH - 40 - 10 * indent) + 4
        return height + BLOCK_GAP
    return _text_height(block.text, CONTENT_WIDTH) + BLOCK_GAP


def _text_height(markdown: str, width: float) -> float:
    displays = DISPLAY_MATH.findall(markdown)
    rest = DISPLAY_MATH.sub("\n", markdown)
    height = len(displays) * DISPLAY_MATH_HEIGHT
    for part in rest.split("\n\n"):
        if part.strip():
            height += _rows(_plain(part), width, TEXT_CHAR) * TEXT_ROW
    for formula in MATH.findall(rest):  # tall inline formulas make their row taller
        height += TEXT_ROW * (1.5 if TALL_FORMULA.search(formula) else 0.5 if RAISED_FORMULA.search(formula) else 0)
    return height


def markdown_height(markdown: str) -> float:
    """Estimated height of a markdown cell on a slide (px): its blocks, each with the gap below it but the last."""
    return sum(block_height(b) for b in parse_blocks(markdown))


def code_lines_height(lines: list[str]) -> float:
    rows = sum(_rows(line.expandtabs(4), CONTENT_WIDTH - 24, CODE_CHAR) for line in lines)
    return rows * CODE_ROW + 2 * CODE_PAD_Y + 2


def png_size(data: str) -> tuple[int, int]:
    """(width, height) in pixels of a base64 PNG."""
    raw = base64.b64decode(data[:64])
    return struct.unpack(">II", raw[16:24])


def figure_size(output: dict, max_height: float = FIGURE_MAX_HEIGHT) -> tuple[int, int]:
    """The size a PNG output is shown at on a slide: its own size, scaled down to the width and ``max_height``."""
    width, height = png_size(output["data"]["image/png"])
    scale = min(1.0, CONTENT_WIDTH / width, max_height / height)
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def output_height(output: dict) -> float:
    """Estimated height of one code-cell output (px)."""
    if output.get("output_type") == "stream":
        return code_lines_height(output.get("text", "").rstrip("\n").split("\n"))
    data = output.get("data", {})
    if "image/png" in data:
        meta = output.get("metadata", {}).get("image/png", {})
        height = meta.get("height") or figure_size(output)[1]
        return height + 8
    if output.get("output_type") == "error":
        return code_lines_height("\n".join(output.get("traceback", [])).split("\n"))
    if "text/plain" in data:
        text = data["text/plain"]
        return code_lines_height((text if isinstance(text, str) else "".join(text)).split("\n"))
    return 2 * TEXT_ROW


def cell_height(cell) -> float:
    """Estimated height of a cell on a slide (px), with the gap below it."""
    if cell.cell_type == "markdown":
        return markdown_height(cell.source)
    height = 0.0 if cell.metadata.get("transient", {}).get("remove_source") else code_lines_height(cell.source.split("\n"))
    if cell.outputs:
        height += OUTPUT_GAP + sum(output_height(o) for o in cell.outputs)
    return height + BLOCK_GAP


# ------------------------------------------------------------------------------------------------
# Cutting a notebook into slides that fit
# ------------------------------------------------------------------------------------------------


def slide_type(cell) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-") or "-"


def _set_type(cell, kind: str):
    cell.metadata.setdefault("slideshow", {})["slide_type"] = kind
    return cell


def hidden(cell) -> bool:
    """A cell no deck shows: ``skip``, or tagged for CI/Colab only (the website leaves those out too)."""
    tags = set(cell.metadata.get("tags", []))
    return slide_type(cell) == "skip" or bool(tags & {*HIDDEN_TAGS, REMOVE_TAG})


@dataclass
class Slide:
    """One slide of the deck being built: its cells, its speaker notes, its estimated height and words."""

    kind: str  # "slide" or "subslide"
    title: str | None
    cells: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    height: float = 0.0
    words: int = 0

    def fits(self, height: float, words: int) -> bool:
        return self.height + height <= FILL * CONTENT_HEIGHT and self.words + words <= WORD_BUDGET

    def add(self, cell, height: float, words: int) -> None:
        self.cells.append(cell)
        self.height += height
        self.words += words


def _markdown_cell(source: str, kind: str, template=None):
    cell = nbformat.v4.new_markdown_cell(source)
    if template is not None:
        cell.metadata = copy.deepcopy(template.metadata)
        if template.get("attachments"):
            cell.attachments = copy.deepcopy(template.attachments)
    return _set_type(cell, kind)


CONTINUED_MARK = '<p class="course-continued">'


def _continued_header(title: str | None) -> str:
    label = f"{html.escape(title)} (continued)" if title else "(continued)"
    return f"{CONTINUED_MARK}{label}</p>"


class DeckBuilder:
    """Lays a notebook's shown cells out on slides that fit (see the module docstring)."""

    def __init__(self) -> None:
        self.slides: list[Slide] = []
        self.serial = 0

    @property
    def current(self) -> Slide:
        return self.slides[-1]

    def new_slide(self, kind: str, title: str | None) -> None:
        self.slides.append(Slide(kind, title))

    def continue_slide(self) -> None:
        """A continuation (vertical sub-slide) of the current slide, headed with its title."""
        title = self.current.title
        self.new_slide("subslide", title)
        header = _markdown_cell(_continued_header(title), "-")
        header.id = self._id(None)
        self.current.add(header, markdown_height(header.source), count_words(header.source))

    def _id(self, cell) -> str:
        """A new cell id, the same in every build (a piece of cell ``abc`` gets ``abc-7``)."""
        self.serial += 1
        return f"{cell.get('id', 'cell') if cell is not None else 'deck'}-{self.serial}"[-64:]

    # -- markdown --------------------------------------------------------------------------------
    def place_markdown(self, cell) -> None:
        for k, part in enumerate(split_cell_at_headings(cell.source)):
            title = heading_text(part)
            if title is not None and not self.current.cells:
                self.current.title = title
            self._place_markdown_part(cell, part, fragment=slide_type(cell) == "fragment" and k == 0)

    def _fits_markdown(self, source: str) -> bool:
        return self.current.fits(markdown_height(source), count_words(source))

    def _add_markdown(self, cell, source: str, kind: str) -> None:
        piece = _markdown_cell(source, kind, cell)
        piece.id = self._id(cell)
        self.current.add(piece, markdown_height(source), count_words(source))

    def _place_markdown_part(self, cell, source: str, fragment: bool) -> None:
        """Markdown under the cells above if it fits; else on a new slide; over the budget, the rest to notes."""
        if self._fits_markdown(source):
            self._add_markdown(cell, source, "fragment" if fragment else "-")
            return
        if self.current.cells:
            if self._starts_with_heading(source):  # a new section: a slide of its own, under its own heading
                self.new_slide("subslide", heading_text(source))
            else:
                self.continue_slide()
            if self._fits_markdown(source):
                self._add_markdown(cell, source, "-")
                return
        shown, moved = trim_to_budget(source, WORD_BUDGET - self.current.words)
        if moved:
            self.current.notes.append(moved)
        for piece in self._split_markdown_by_height(shown):
            if not self._fits_markdown(piece) and self.current.cells:
                self.continue_slide()
            if not self._fits_markdown(piece):  # the continuation's header took words: trim again
                piece, moved = trim_to_budget(piece, WORD_BUDGET - self.current.words)
                if moved:
                    self.current.notes.append(moved)
            self._add_markdown(cell, piece, "-")

    @staticmethod
    def _starts_with_heading(source: str) -> bool:
        blocks = parse_blocks(source)
        return bool(blocks) and blocks[0].kind == "heading"

    def _split_markdown_by_height(self, source: str) -> list[str]:
        """Markdown cut at block boundaries (and tables at rows) into pieces that each fit an empty slide."""
        room = FILL * CONTENT_HEIGHT - markdown_height(_continued_header("x" * 30)) - BLOCK_GAP
        pieces: list[list[str]] = [[]]
        height = 0.0
        for block in parse_blocks(source):
            for text in self._block_pieces(block, room):
                h = markdown_height(text)
                if pieces[-1] and height + h > room:
                    pieces.append([])
                    height = 0.0
                pieces[-1].append(text)
                height += h
        return ["\n\n".join(p) for p in pieces if p]

    @staticmethod
    def _block_pieces(block: Block, room: float) -> list[str]:
        if markdown_height(block.text) <= room or block.kind != "table" or len(block.items) <= 3:
            return [block.text]
        head, rows, pieces, current = block.items[:2], block.items[2:], [], []
        for row in rows:
            if current and markdown_height("\n".join(head + current + [row])) > room:
                pieces.append("\n".join(head + current))
                current = []
            current.append(row)
        pieces.append("\n".join(head + current))
        return pieces

    # -- code ------------------------------------------------------------------------------------
    def place_code(self, cell) -> None:
        """A code cell under the cells above (its figures shrunk if need be), else on a new slide, else split."""
        if self._place_whole(cell):
            return
        if self.current.cells and self._fits_a_new_slide(cell):
            self.continue_slide()
            self._place_whole(_set_type(cell, "-"))
            return
        self._place_pieces(cell)  # too tall for any slide: it starts under the cells above

    def _fits_a_new_slide(self, cell) -> bool:
        """Whether the cell fits a continuation slide whole, its figures shrunk at most to the smallest allowed."""
        height = cell_height(cell)
        for output in cell.outputs:
            if "image/png" in output.get("data", {}):
                height -= output_height(output) - min(FIGURE_MIN_HEIGHT, figure_size(output)[1]) - 8
        return height <= FILL * CONTENT_HEIGHT - markdown_height(_continued_header(self.current.title))

    def _place_whole(self, cell) -> bool:
        height = cell_height(cell)
        if self.current.fits(height, 0):
            self.current.add(cell, height, 0)
            return True
        figures = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        if not figures:
            return False
        # shrink the figures, all by the same factor, to the height left under everything else
        rest = height - sum(output_height(o) for o in figures)
        room = FILL * CONTENT_HEIGHT - self.current.height - rest - 8 * len(figures)
        natural = [figure_size(o) for o in figures]
        scale = room / sum(h for _, h in natural)
        if scale >= 1 or min(h for _, h in natural) * scale < FIGURE_MIN_HEIGHT:
            return False
        for output, (width, height) in zip(figures, natural, strict=True):
            output.setdefault("metadata", {})["image/png"] = {
                "width": max(1, math.floor(width * scale)), "height": max(1, math.floor(height * scale))}
        self.current.add(cell, cell_height(cell), 0)
        return True

    def _fresh(self) -> bool:
        """Whether the current slide shows nothing yet but its "(continued)" header."""
        return all(c.source.startswith(CONTINUED_MARK) for c in self.current.cells)

    def _room(self) -> float:
        return FILL * CONTENT_HEIGHT - self.current.height - BLOCK_GAP

    def _place_pieces(self, cell) -> None:
        """A code cell too tall for a slide: its source in chunks of lines, then each output on its own."""
        kind = slide_type(cell) if slide_type(cell) == "fragment" else "-"
        lines = cell.source.split("\n")
        while lines:
            take = self._lines_that_fit(lines)
            if take < min(MIN_CODE_LINES, len(lines)) and not self._fresh():  # too few lines fit here
                self.continue_slide()
                continue
            take = max(take, 1)
            piece = nbformat.v4.new_code_cell("\n".join(lines[:take]), metadata=copy.deepcopy(cell.metadata))
            piece.id = self._id(cell)
            piece.execution_count = cell.execution_count
            _set_type(piece, kind)
            self.current.add(piece, cell_height(piece), 0)
            lines = lines[take:]
            kind = "-"
            if lines:
                self.continue_slide()
        for output in cell.outputs:
            self._place_output(cell, output)

    def _lines_that_fit(self, lines: list[str]) -> int:
        """How many of ``lines`` fit under the current slide's cells; cut before a new statement if possible."""
        room = self._room()
        take = 0
        while take < len(lines) and code_lines_height(lines[:take + 1]) <= room:
            take += 1
        if take in (0, len(lines)):
            return take
        for cut in range(take, max(take // 2, 1) - 1, -1):  # prefer cutting before an unindented line
            line = lines[cut]
            if line.strip() and not line[0].isspace() and not line.lstrip().startswith((")", "]", "}", "#")):
                return cut
        return take

    def _place_output(self, cell, output) -> None:
        output = copy.deepcopy(output)
        if output.get("output_type") == "stream":
            lines = output["text"].rstrip("\n").split("\n")
            while lines:
                take = self._lines_that_fit(lines)
                if take == 0 and not self._fresh():
                    self.continue_slide()
                    continue
                take = max(take, 1)
                chunk = copy.deepcopy(output)
                chunk["text"] = "\n".join(lines[:take]) + "\n"
                self._add_output_cell(cell, chunk)
                lines = lines[take:]
                if lines:
                    self.continue_slide()
            return
        if "image/png" in output.get("data", {}):
            room = self._room()
            if room < FIGURE_MIN_HEIGHT + 8 and room < output_height(output):
                self.continue_slide()
                room = self._room()
            width, height = figure_size(output, max_height=min(FIGURE_MAX_HEIGHT, room - 8))
            output.setdefault("metadata", {})["image/png"] = {"width": width, "height": height}
            self._add_output_cell(cell, output)
            return
        if not self.current.fits(output_height(output) + BLOCK_GAP, 0):
            self.continue_slide()
        self._add_output_cell(cell, output)

    def _add_output_cell(self, cell, output) -> None:
        piece = nbformat.v4.new_code_cell("", metadata=copy.deepcopy(cell.metadata))
        piece.id = self._id(cell)
        piece.metadata["transient"] = {"remove_source": True}
        piece.outputs = [output]
        _set_type(piece, "-")
        self.current.add(piece, cell_height(piece), 0)


def _clean_outputs(cell) -> None:
    """Show a widget's stored picture: without a widget manager the widget itself shows nothing."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "application/vnd.jupyter.widget-view+json" in data and len(data) > 1:
            del data["application/vnd.jupyter.widget-view+json"]


def layout_slides(nb) -> list[Slide]:
    """The slides of a deck for ``nb``: its shown cells, laid out so that every slide fits (see the docstring)."""
    builder = DeckBuilder()
    for cell in copy.deepcopy(nb).cells:
        if hidden(cell):
            continue
        kind = slide_type(cell)
        if cell.cell_type == "raw":
            continue
        if not builder.slides or kind in ("slide", "subslide"):
            title = heading_text(cell.source) if cell.cell_type == "markdown" else None
            inherited = builder.current.title if builder.slides and kind == "subslide" else None
            builder.new_slide("slide" if not builder.slides else kind, title or inherited)
        if kind == "notes":
            builder.current.notes.append(cell.source)
            continue
        if cell.cell_type == "markdown":
            builder.place_markdown(cell)
        else:
            _clean_outputs(cell)
            builder.place_code(cell)
    return [s for s in builder.slides if s.cells or s.notes]


def deck_notebook(nb):
    """A copy of ``nb`` re-cut into slides that fit, with the moved prose as speaker-notes cells."""
    slides = layout_slides(nb)
    cells = []

    def notes(slide: Slide):
        cell = _markdown_cell("\n\n".join(slide.notes), "notes")
        cell.id = f"notes-{len(cells)}"
        return cell

    for slide in slides:
        if not slide.cells:  # notes only: attach them to the slide before
            if cells:
                cells.append(notes(slide))
            continue
        first, *rest = slide.cells
        cells.append(_set_type(first, slide.kind))
        if slide.notes:
            cells.append(notes(slide))
        cells.extend(rest)
    deck = copy.deepcopy(nb)
    deck.cells = cells
    return deck


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
