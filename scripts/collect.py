"""Collect handed-in notebooks into the folder layout ``make grade`` reads (``make collect FROM=… ROSTER=…``).

Reads a learning platform's export (a .zip archive or a folder) and writes

    <out>/<student>/<notebook>.ipynb   one folder per student, notebooks under the course's names
    <out>/manifest.csv                 student, platform_id, name, late, submitted_at, notebooks, source files

in the spirit of nbgrader's ``zip_collect``: a regular expression with named groups reads each file's
path in the export. Built-in patterns (``--format``):

* ``moodle``: ``Ada Lovelace_12345_assignsubmission_file_/04_attention.ipynb`` (the name, the user id;
  a name may itself contain ``_``: the user id is the last number before ``_assignsubmission``);
* ``canvas``: ``lovelaceada_LATE_12345_67890_04_attention-1.ipynb`` (login, late marker, user id,
  submission id, the file name; Canvas adds ``-1``, ``-2`` to re-submissions);
* ``folders``: ``alice/04_attention.ipynb`` or ``alice_04_attention.ipynb`` (the id before the notebook's name);
* ``auto`` (default): the first of these that matches the file.

``--pattern REGEX`` replaces them; its groups may be ``platform_id``, ``name``, ``student``, ``late``,
``timestamp`` and ``file``. The late marker and the submission time are kept in the manifest, never in
the student's id. With ``--roster roster.csv`` (columns ``platform_id`` and at least one of ``student``,
``name``), students are named by the roster, and students on it who handed in nothing are listed in the
manifest and reported. A notebook renamed by its student (``my attention (1).ipynb``) is matched by the
locked test cells inside it (``make grade`` matches the same way: :func:`match_notebook`); when a student handed in a notebook twice, the latest submission is kept.

Usage:
    python -m scripts.collect FROM [--out submissions] [--format auto] [--pattern REGEX] [--roster roster.csv]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
NOT_ID = re.compile(r"[^A-Za-z0-9_.-]+")
PATTERNS = {
    "moodle": r"^(?:.*/)?(?P<name>[^/]+)_(?P<platform_id>\d+)_assignsubmission_file_/(?P<file>[^/]+)$",
    "canvas": r"^(?P<student>[a-z0-9]+)_(?:(?P<late>LATE)_)?(?P<platform_id>\d+)_\d+_(?P<file>[^/]+)$",
    "folders": r"^(?:(?P<student>[^/]+)/(?P<file>[^/]+)|(?P<prefix>[^/]+))$",
}
COPY_OF = re.compile(r"^(?:copy of|kopie von|copia de|copie de)\s+")
GRADE_ID = re.compile(r'"grade_id":\s*"hidden_nb(\d\d)_')
MANIFEST_COLUMNS = ["student", "platform_id", "name", "late", "submitted_at", "notebooks", "files"]


@dataclass
class Entry:
    """One student's collected work."""

    student: str
    platform_id: str = ""
    name: str = ""
    late: bool = False
    submitted_at: str = ""
    notebooks: dict[str, tuple[str, str]] = field(default_factory=dict)  # stem -> (time, source file)


def course_notebooks() -> list[str]:
    """The stems of the course notebooks, longest first (so that no stem shadows a longer one)."""
    return sorted((p.stem for p in (ROOT / "notebooks").glob("*.ipynb")), key=len, reverse=True)


def slug(text: str) -> str:
    """A student id from a name: ASCII letters, digits, '_', '-' and '.'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return NOT_ID.sub("_", ascii_text).strip("_-. ").lower()


def normalized_name(file_name: str) -> str:
    """A file name as students' tools change it, brought back to the course's form: no folder and no
    ``.ipynb``, lower case, "Copy of " and a browser's " (1)" dropped, spaces, dots and dashes as ``_``
    (``Copy of 04 Attention (1).ipynb`` -> ``04_attention``)."""
    name = PurePosixPath(str(file_name).replace("\\", "/")).name
    if name.lower().endswith(".ipynb"):
        name = name[: -len(".ipynb")]
    text = unicodedata.normalize("NFKC", name).casefold()
    text = COPY_OF.sub("", text)
    text = re.sub(r"\s*\(\d+\)", "", text)  # a browser's " (1)"
    text = re.sub(r"[\s.\-]+", "_", text)
    return re.sub(r"_+", "_", text).strip("_")


def match_notebook(file_name: str, data: bytes, stems: list[str]) -> str | None:
    """The course notebook a handed-in file is: by its name (see :func:`normalized_name`), else by the locked
    test cells inside it; None when neither tells.

    Args:
        file_name: the file's name (a path is fine).
        data: the file's bytes (a UTF-8 byte order mark is fine).
        stems: the course notebooks' stems, longest first.
    """
    name = normalized_name(file_name)
    stem = next((s for s in stems if s.casefold() in name), None)
    if stem:
        return stem
    found = GRADE_ID.search(data.decode("utf-8", errors="replace"))
    if found:
        return next((s for s in stems if s.startswith(found.group(1) + "_")), None)
    return None


def read_roster(path: Path) -> list[dict]:
    """Rows of a roster CSV; each needs ``platform_id`` and ``student`` or ``name``."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for number, row in enumerate(rows, 2):
        if not row.get("platform_id") or not (row.get("student") or row.get("name")):
            raise SystemExit(f"{path}, line {number}: a roster row needs 'platform_id' and 'student' or 'name', "
                             f"got {row}")
    return rows


def _files(source: Path):
    """(relative path, modification time, reader) of every file in a folder or a .zip archive."""
    if source.is_dir():
        for p in sorted(source.rglob("*")):
            if p.is_file():
                stamp = datetime.fromtimestamp(p.stat().st_mtime).isoformat(timespec="seconds")
                yield p.relative_to(source).as_posix(), stamp, p.read_bytes
    elif zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            if not info.is_dir():
                yield info.filename, datetime(*info.date_time).isoformat(timespec="seconds"), \
                    (lambda n=info.filename: archive.read(n))
    else:
        raise SystemExit(f"FROM: expected a .zip archive or a folder, got {source}")


def _parse(name: str, patterns: list[re.Pattern], stems: list[str]) -> dict | None:
    for pattern in patterns:
        m = pattern.match(name)
        if not m:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v}
        if "prefix" in groups:  # alice_04_attention.ipynb: the id is what comes before the notebook's name
            stem = next((s for s in stems if s in groups["prefix"]), None)
            if not stem or not groups["prefix"].index(stem):
                continue
            groups = {"student": groups["prefix"][: groups["prefix"].index(stem)], "file": groups["prefix"]}
        return groups
    return None


def collect(source: Path, out: Path, fmt: str = "auto", pattern: str | None = None,
            roster_path: Path | None = None) -> dict[str, Entry]:
    """Sort the notebooks of ``source`` into ``out/<student>/<notebook>.ipynb`` and write ``out/manifest.csv``.

    Args:
        source: a .zip export or a folder.
        out: the submissions folder to write.
        fmt: "auto", "moodle", "canvas" or "folders" (ignored when ``pattern`` is given).
        pattern: a regular expression with named groups for the file paths of the export.
        roster_path: a roster CSV (``platform_id``, ``student`` and/or ``name``).
    """
    if pattern:
        try:
            patterns = [re.compile(pattern)]
        except re.error as exc:
            raise SystemExit(f"--pattern is not a valid regular expression: {exc}") from None
    elif fmt == "auto":
        patterns = [re.compile(p) for p in PATTERNS.values()]
    elif fmt in PATTERNS:
        patterns = [re.compile(PATTERNS[fmt])]
    else:
        raise SystemExit(f"--format must be auto, {', '.join(PATTERNS)}; got {fmt!r}")
    stems = course_notebooks()
    roster = read_roster(roster_path) if roster_path else []
    by_id = {r["platform_id"]: r for r in roster}
    entries: dict[str, Entry] = {}
    for name, stamp, read in _files(source):
        path = PurePosixPath(name)
        if path.suffix != ".ipynb" or any(part.startswith((".", "__MACOSX")) for part in path.parts):
            continue
        groups = _parse(name, patterns, stems)
        data = read()
        stem = match_notebook(PurePosixPath(groups.get("file", name) if groups else name).name, data, stems)
        if groups is None or stem is None:
            print(f"skipped {name}: cannot tell {'whose it is' if groups is None else 'which course notebook it is'}")
            continue
        pid = groups.get("platform_id", "")
        listed = by_id.get(pid)
        student = slug(listed.get("student") or listed.get("name")) if listed else \
            slug(groups.get("student") or groups.get("name") or "")
        if not student:
            print(f"skipped {name}: no student id in it")
            continue
        if roster and not listed:
            print(f"note: {name}: user id {pid or '(none)'} is not on the roster; collected as {student}")
        entry = entries.setdefault(student, Entry(student, pid, (listed or {}).get("name") or groups.get("name", "")))
        when = groups.get("timestamp") or stamp
        entry.late = entry.late or bool(groups.get("late"))
        previous = entry.notebooks.get(stem)
        if previous and previous[0] > when:
            print(f"{student} handed in {stem} twice: keeping {previous[1]} (later than {name})")
            continue
        if previous:
            print(f"{student} handed in {stem} twice: keeping {name} (later than {previous[1]})")
        entry.notebooks[stem] = (when, name)
        entry.submitted_at = max(entry.submitted_at, when)
        target = out / student / f"{stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for row in roster:
        student = slug(row.get("student") or row.get("name"))
        if student not in entries:
            entries[student] = Entry(student, row["platform_id"], row.get("name", ""))
            print(f"handed in nothing: {student} (user id {row['platform_id']})")
    write_manifest(out, entries)
    return entries


def write_manifest(out: Path, entries: dict[str, Entry]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(MANIFEST_COLUMNS)
    for sid in sorted(entries):
        e = entries[sid]
        writer.writerow([sid, e.platform_id, e.name, "1" if e.late else "0", e.submitted_at,
                         " ".join(sorted(e.notebooks)), json.dumps({k: v[1] for k, v in sorted(e.notebooks.items())})])
    out.mkdir(parents=True, exist_ok=True)
    part = out / ".manifest.csv.part"
    part.write_text(buffer.getvalue(), encoding="utf-8")
    os.replace(part, out / "manifest.csv")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a .zip export or a folder of handed-in notebooks")
    parser.add_argument("--out", type=Path, default=ROOT / "submissions")
    parser.add_argument("--format", default="auto", help="auto, moodle, canvas or folders")
    parser.add_argument("--pattern", help="a regular expression with named groups (platform_id, name, student, "
                                          "late, timestamp, file) for the paths in the export")
    parser.add_argument("--roster", type=Path, help="CSV with platform_id and student and/or name")
    args = parser.parse_args(argv)
    if args.roster and not args.roster.is_file():
        parser.error(f"--roster must be a CSV file, got {args.roster}")
    entries = collect(args.source, args.out, args.format, args.pattern, args.roster)
    count = sum(len(e.notebooks) for e in entries.values())
    empty = sum(not e.notebooks for e in entries.values())
    print(f"collected {count} notebooks of {len(entries) - empty} students into {args.out} "
          f"({empty} on the roster handed in nothing); manifest: {args.out / 'manifest.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
