"""Write the repository address into every notebook's Colab badge and Colab set-up cell.

The address lives in one place, ``[project.urls] Repository`` in pyproject.toml. Each notebook has
    * in its first (markdown) cell, a line holding the "Open in Colab" badge, and
    * a code cell tagged ``colab-setup`` that, on Google Colab only, clones the course and installs
      ``course_lib`` (so the data and the shipped checkpoint are there too); elsewhere it does nothing.
      ``tests/test_colab_path.py`` runs that cell as Colab would, with ``COURSE_COLAB_DIR`` naming a
      temporary folder instead of ``/content/...`` and git's ``url.<base>.insteadOf`` pointing the
      clone at the local checkout. The cell is out of the reader's view: collapsed in JupyterLab, only its
      ``# @title`` line on Colab, left out of the website and the slides.
This script rewrites both from the templates below.

Usage:
    python -m scripts.stamp_colab notebooks/*.ipynb          # rewrite in place
    python -m scripts.stamp_colab --check notebooks/*.ipynb  # exit 1 if any notebook is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from scripts.notebook_cells import hide_cell

ROOT = Path(__file__).resolve().parent.parent
BADGE_RE = re.compile(r"^\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]\([^)]*\)$", re.M)
SETUP_TAG = "colab-setup"

SETUP_TEMPLATE = '''# @title Set-up (Colab only): fetch the course and install course_lib. Elsewhere it does nothing.
# On Google Colab it clones the course (code, data, trained checkpoint) and installs course_lib;
# anywhere else `make lab` has already installed everything.
import sys

REPO_URL = "{url}"
if "google.colab" in sys.modules:
    import os
    import subprocess

    course_dir = os.environ.get("COURSE_COLAB_DIR", "/content/{name}")  # tests/test_colab_path.py sets it
    if not os.path.isdir(course_dir):
        subprocess.run(["git", "clone", "--depth", "1", REPO_URL, course_dir], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", course_dir], check=True)
    sys.path.insert(0, course_dir)  # make the fresh install importable without restarting'''


def repository_url() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^Repository = "([^"]+)"', text, re.M)
    if not match:
        raise ValueError("pyproject.toml has no [project.urls] Repository line")
    return match.group(1).rstrip("/")


def badge_line(url: str, notebook: Path) -> str:
    github_path = url.removeprefix("https://github.com/")
    return (
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"(https://colab.research.google.com/github/{github_path}/blob/main/notebooks/{notebook.name})"
    )


def setup_source(url: str) -> str:
    return SETUP_TEMPLATE.format(url=url, name=url.rsplit("/", 1)[-1])


def stamp(nb, notebook: Path, url: str) -> list[str]:
    """Update ``nb`` in place; return a list of what was out of date."""
    changed = []
    first = nb.cells[0] if nb.cells else None
    if first is None or first.cell_type != "markdown" or not BADGE_RE.search(first.source):
        raise ValueError(f"{notebook}: the first cell must be markdown with an 'Open In Colab' badge line")
    new_first = BADGE_RE.sub(badge_line(url, notebook), first.source)
    if new_first != first.source:
        first.source = new_first
        changed.append("badge")
    setup_cells = [c for c in nb.cells if SETUP_TAG in c.get("metadata", {}).get("tags", [])]
    if len(setup_cells) != 1:
        raise ValueError(f"{notebook}: expected exactly one code cell tagged '{SETUP_TAG}', found {len(setup_cells)}")
    if setup_cells[0].source != setup_source(url):
        setup_cells[0].source = setup_source(url)
        changed.append("colab set-up cell")
    hidden = hide_cell(dict(setup_cells[0].metadata))
    if dict(setup_cells[0].metadata) != hidden:  # collapsed in JupyterLab, only the title line on Colab
        setup_cells[0].metadata.update(hidden)
        changed.append("colab set-up cell collapsed")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="report notebooks that are out of date; change nothing")
    args = parser.parse_args(argv)
    url = repository_url()
    stale = 0
    for notebook in args.notebooks:
        nb = nbformat.read(notebook, as_version=4)
        changed = stamp(nb, notebook, url)
        if changed:
            stale += 1
            print(f"{notebook}: {'out of date' if args.check else 'updated'}: {', '.join(changed)}")
            if not args.check:
                nbformat.write(nb, notebook)
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
