"""Lay a notebook's cells onto slides that fit (``scripts/build_slides.py``): the word budget, continuation
slides, split code and outputs, shrinking figures, speaker notes.
"""

from __future__ import annotations

import copy
import html
import math
from dataclasses import dataclass, field

import nbformat

from scripts.build_site import HIDDEN_TAGS, REMOVE_TAG  # the website's rule for the cells it leaves out
from scripts.slide_heights import (
    BLOCK_GAP,
    CONTENT_HEIGHT,
    FIGURE_MAX_HEIGHT,
    FIGURE_MIN_HEIGHT,
    cell_height,
    code_lines_height,
    figure_size,
    markdown_height,
    output_height,
)
from scripts.slide_words import (
    WORD_BUDGET,
    Block,
    count_words,
    heading_text,
    parse_blocks,
    split_cell_at_headings,
    trim_to_budget,
)

MIN_CODE_LINES = 4  # a split code cell shows at least this many lines on a slide
FILL = 0.95  # fill at most this fraction of a slide's content height by the estimate

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
