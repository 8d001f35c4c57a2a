"""Build reveal.js slides for notebooks into build/slides/ that work without a network (``make slides``).

Uses each cell's ``slideshow.slide_type`` metadata (slide, subslide, fragment, skip, notes). Open
build/slides/<name>.slides.html in a browser: reveal.js (5.x, with its speaker-notes plugin) and
MathJax (2.7) are served from build/slides/reveal.js/ and build/slides/mathjax/, copied from the
pip packages ``sphinx-revealjs`` and ``jupyter-server-mathjax`` pinned in requirements.txt, and the
template (scripts/slides_template/offline_reveal) loads nothing from a CDN, so a deck shows on a
classroom machine without a connection. Copy the whole build/slides/ folder to move the decks.
For presenting live with running code, use the RISE extension in JupyterLab
(``jupyterlab-rise``: View > Render as slideshow, or Alt+R).

Usage:
    python scripts/build_slides.py notebooks/*.ipynb [--out build/slides]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

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
    slides.reveal_scroll = True
    slides.reveal_theme = THEME  # its fonts ship with reveal.js; "simple" (the default) imports Google Fonts
    slides.mathjax_url = f"{MATHJAX_DIR}/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
    return slides


def inline_remote_images(html: str) -> str:
    """Replace images from the internet (the Colab badge) by their alt text; links around them stay links."""

    def alt_text(match: re.Match) -> str:
        alt = ALT_TEXT.search(match.group(0))
        return f"<span>{alt.group(1) if alt else 'image'}</span>"

    return REMOTE_IMAGE.sub(alt_text, html)


def remote_assets(html: str) -> list[str]:
    """Every place in ``html`` that would load a script, style sheet or font from the internet."""
    return [html[max(0, m.start() - 40):m.end() + 60] for m in REMOTE_ASSET.finditer(html)]


def build_slides(notebook: Path, out_dir: Path) -> Path:
    """Convert one notebook to ``out_dir/<name>.slides.html`` and return that path."""
    body, _ = exporter().from_notebook_node(nbformat.read(notebook, as_version=4))
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
