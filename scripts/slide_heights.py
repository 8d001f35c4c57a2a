"""Estimated heights of notebook cells on a 1280 x 720 reveal.js slide (``scripts/build_slides.py``).

All sizes are logical px of the slide, the same numbers as the CSS of the offline template; the estimates
err on the tall side, and ``tests/test_slides.py`` measures the real decks in headless Chromium.
"""

from __future__ import annotations

import base64
import math
import re
import struct

from scripts.slide_words import CODE_SPAN, HTML_COMMENT, IMAGE, LINK, LIST_MARK, MATH, TAG, Block, parse_blocks

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
