"""Helpers for writing course notebooks from Python (a scratch script builds the cells, then the .ipynb is the source).

Every notebook follows the standard in notebooks/README.md: an opening cell (title, goals,
prerequisites, CPU run time, Colab badge), the stamped Colab set-up cell, an imports-and-seed
cell, teaching cells with slide metadata, exercises with check functions and collapsed
solutions, and a closing summary.

    from scripts.notebook_cells import markdown, code, opening_cells, write_notebook
    cells = opening_cells("04", "Attention", goals=[...], prerequisites=[...], minutes=1, imports="...")
    cells += [markdown("## Dot products", slide="slide"), code("x = torch.randn(3, 4)\\nx.shape")]
    write_notebook("notebooks/04_attention.ipynb", cells)
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

BADGE_PLACEHOLDER = (
    "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com)"
)
SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")

# Cells that exist for CI, not for the reader (notebooks/README.md "Out of the reader's view"): the
# course-check cells that keep the prose's figures equal to the computation, and the Colab set-up cell.
# They run everywhere, but JupyterLab shows them collapsed, Colab shows only their title line, and
# the website, the slides and the student edition leave them out.
CHECK_TAG = "course-check"
CHECK_TITLE = "# @title Course check (hidden): the figures quoted in the text above come from this computation"


def hide_cell(metadata: dict) -> dict:
    """Mark a code cell's metadata so JupyterLab collapses it and Colab shows only its ``# @title`` line."""
    metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
    metadata["cellView"] = "form"
    return metadata


def _metadata(slide: str, tags=(), reasons: dict | None = None) -> dict:
    if slide not in SLIDE_TYPES:
        raise ValueError(f"slide must be one of {SLIDE_TYPES}, got {slide!r}")
    meta = {"slideshow": {"slide_type": slide}}
    if tags:
        meta["tags"] = list(tags)
    if reasons:
        meta["tag_reasons"] = dict(reasons)
    return meta


def markdown(text: str, slide: str = "-"):
    """A markdown cell; ``slide`` is its reveal.js slide type."""
    return new_markdown_cell(text.strip("\n"), metadata=_metadata(slide))


def code(src: str, slide: str = "-", tags=(), reasons: dict | None = None):
    """A code cell.

    Args:
        src: the code.
        slide: its reveal.js slide type.
        tags: cell tags, e.g. ("nbval-ignore-output",).
        reasons: why each nbval tag is there, e.g. {"nbval-ignore-output": "wall-clock time"}; stored in
            the cell's metadata (``tag_reasons``), beside the tag, not in the code a student reads.
    """
    return new_code_cell(src.strip("\n"), metadata=_metadata(slide, tags, reasons))


def course_check(src: str):
    """A hidden cell that checks the figures quoted in the prose above (``prose.check(...)`` lines)."""
    source = f"{CHECK_TITLE}\nfrom course_lib import prose\n\n{src.strip()}"
    return new_code_cell(source, metadata=hide_cell(_metadata("skip", (CHECK_TAG,))))


def solution(text: str, title: str = "Show a solution"):
    """A collapsed solution: students see only the summary line until they click it."""
    return markdown(f"<details>\n<summary>{title}</summary>\n\n{text.strip()}\n\n</details>", slide="skip")


def opening_cells(number: str, title: str, goals: list[str], prerequisites: list[str], minutes: float,
                  imports: str, seed: int = 0) -> list:
    """Opening cell, Colab set-up cell (stamped later by scripts/stamp_colab.py), imports + seed cell."""
    goal_lines = "\n".join(f"- {g}" for g in goals)
    prereq_lines = "\n".join(f"- {p}" for p in prerequisites)
    opening = (
        f"# {number} · {title}\n\n{BADGE_PLACEHOLDER}\n\n"
        f"**What you will learn**\n\n{goal_lines}\n\n"
        f"**Prerequisites**\n\n{prereq_lines}\n\n"
        f"**Expected run time:** about {minutes:g} min on a laptop CPU (2 cores)."
    )
    seed_src = imports.strip("\n") + f"\n\nseed_everything({seed})\n"
    return [
        markdown(opening, slide="slide"),
        code("# filled in by scripts/stamp_colab.py", slide="skip", tags=("colab-setup",)),
        code(seed_src, slide="skip"),
    ]


def write_notebook(path: str | Path, cells: list) -> None:
    """Write cells as a Python 3 notebook (run scripts/regenerate_notebooks.py afterwards)."""
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, str(path))
