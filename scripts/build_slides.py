"""Build reveal.js slides for notebooks into build/slides/ (``make slides``).

Uses each cell's ``slideshow.slide_type`` metadata (slide, subslide, fragment, skip, notes).
Open build/slides/<name>.slides.html in a browser; the reveal.js library is loaded from a CDN
when the page opens. For presenting live with running code, use JupyterLab's
"Open With > Presentation" or the RISE extension instead.

Usage:
    python scripts/build_slides.py notebooks/*.ipynb [--out build/slides]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

ROOT = Path(__file__).resolve().parent.parent


def build_slides(notebook: Path, out_dir: Path) -> Path:
    """Convert one notebook to ``out_dir/<name>.slides.html`` and return that path."""
    exporter = SlidesExporter()
    exporter.reveal_scroll = True
    body, _ = exporter.from_notebook_node(nbformat.read(notebook, as_version=4))
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{notebook.stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "slides")
    args = parser.parse_args(argv)
    for notebook in args.notebooks:
        print(f"wrote {build_slides(notebook, args.out).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
