"""Collect handed-in notebooks into the folder layout ``make grade`` reads (``make collect FROM=…``).

Reads a .zip archive (as a learning platform exports it) or a folder, and copies every notebook
whose file name contains the name of a course notebook (e.g. ``04_attention``) to
``<out>/<student>/<notebook>.ipynb``. The student id is taken from

* the first folder inside the archive or folder (``alice/04_attention.ipynb``), or else
* the start of the file name, before the notebook's name (``alice_04_attention.ipynb``,
  ``bob-smith - 04_attention.ipynb``).

Files it cannot place (no course notebook name, no student id) are listed and skipped; when a
student handed in the same notebook twice, the later file in name order wins and both are listed.

Usage:
    python scripts/collect.py FROM [--out submissions]
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
NOT_ID = re.compile(r"[^A-Za-z0-9_.-]+")


def course_notebooks() -> list[str]:
    """The stems of the course notebooks, longest first (so that no stem shadows a longer one)."""
    return sorted((p.stem for p in (ROOT / "notebooks").glob("*.ipynb")), key=len, reverse=True)


def place(name: str, stems: list[str]) -> tuple[str, str] | None:
    """``(student, notebook)`` for a file at relative path ``name``, or None when it cannot be placed."""
    path = PurePosixPath(name)
    if path.suffix != ".ipynb" or any(part.startswith((".", "__MACOSX")) for part in path.parts):
        return None
    stem = next((s for s in stems if s in path.name), None)
    if stem is None:
        return None
    student = path.parts[0] if len(path.parts) > 1 else path.name[: path.name.index(stem)]
    student = NOT_ID.sub("_", student).strip("_-. ")
    return (student, stem) if student else None


def collect(source: Path, out: Path) -> dict[str, list[str]]:
    """Copy the notebooks of ``source`` (zip or folder) into ``out/<student>/<notebook>.ipynb``."""
    stems = course_notebooks()
    if source.is_dir():
        files = {str(p.relative_to(source).as_posix()): p.read_bytes for p in sorted(source.rglob("*.ipynb"))}
    elif zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        files = {n: (lambda n=n: archive.read(n)) for n in sorted(archive.namelist()) if not n.endswith("/")}
    else:
        raise SystemExit(f"{source}: expected a .zip archive or a folder")
    placed: dict[str, list[str]] = {}
    for name, read in files.items():
        where = place(name, stems)
        if where is None:
            if name.endswith(".ipynb"):
                print(f"skipped {name}: no student id or no course notebook name in it")
            continue
        student, stem = where
        target = out / student / f"{stem}.ipynb"
        if stem in placed.get(student, []):
            print(f"{student} handed in {stem} twice: keeping {name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read())
        placed.setdefault(student, []).append(stem)
    return placed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a .zip archive or a folder of handed-in notebooks")
    parser.add_argument("--out", type=Path, default=ROOT / "submissions")
    args = parser.parse_args(argv)
    placed = collect(args.source, args.out)
    count = sum(len(set(v)) for v in placed.values())
    print(f"collected {count} notebooks of {len(placed)} students into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
