"""Prose on a slide: count its words and cut a markdown cell to the word budget (``scripts/build_slides.py``).

A word is a whitespace-separated token with a letter or a digit in it, as the slide shows it; each formula
counts as one word; code counts none. What does not fit moves, whole blocks in order, into speaker notes.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

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
