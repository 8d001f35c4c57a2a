"""The persistent gradebook of ``make grade``: every run kept, manual overrides, and the files made from it.

Layout (inside the grading folder, ``build/grading/`` by default):

    gradebook/runs.jsonl       one line per graded notebook and run (never rewritten, only appended to)
    gradebook/overrides.jsonl  manual overrides: {"student", "exercise", "points", "reason", "time"}

The current grade of a student on a notebook is the notebook's latest run, with the latest override of
each exercise on top. Every report (``grades.csv``, ``grades_long.csv``, the statistics, the platform
export, the feedback files) is made from that alone, so re-grading one student leaves every other
student's rows and files byte for byte as they were; files whose content did not change are not
rewritten at all. All files are written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


def write_atomic(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` through a temporary file and a rename; skip it when unchanged. True if written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    part = path.with_name(f".{path.name}.part")
    with part.open("w", encoding="utf-8", newline="") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(part, path)
    return True


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Student:
    """A student as the roster or the collected submissions know them.

    Attributes:
        student: the folder name in the submissions (the id used everywhere in the grading files).
        platform_id: the learning platform's user id ("" when unknown).
        name: the name on the roster, if any.
        late: True when the platform marked the submission late.
        submitted_at: the submission time the platform recorded ("" when unknown).
    """

    student: str
    platform_id: str = ""
    name: str = ""
    late: bool = False
    submitted_at: str = ""


def read_manifest(path: Path) -> dict[str, Student]:
    """The students of a ``manifest.csv`` written by ``scripts/collect.py`` (roster included)."""
    students = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if not row.get("student"):
                raise ValueError(f"{path}: every row needs a 'student' column value, got {row}")
            students[row["student"]] = Student(row["student"], row.get("platform_id", ""), row.get("name", ""),
                                               row.get("late", "") in ("1", "true", "True", "yes"),
                                               row.get("submitted_at", ""))
    return students


class Gradebook:
    """Every graded run and override of one grading folder.

    Args:
        folder: the grading folder (the gradebook is in ``folder/gradebook``).
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.dir = folder / "gradebook"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.runs_path = self.dir / "runs.jsonl"
        self.overrides_path = self.dir / "overrides.jsonl"

    def _read(self, path: Path) -> list[dict]:
        if not path.exists():
            return []
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    raise ValueError(f"{path}, line {number}: not valid JSON (edit or remove that line)") from None
        return rows

    def _append(self, path: Path, rows: list[dict]) -> None:
        text = "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    def runs(self) -> list[dict]:
        return self._read(self.runs_path)

    def add_runs(self, results: list[dict], run_id: str | None = None) -> None:
        """Append graded notebooks (``NotebookResult.to_json()`` plus ``digest``), flushed to disk at once.

        Args:
            results: the graded notebooks.
            run_id: the run they belong to (``new_run_id()``; a new one when None).
        """
        run_id = run_id or new_run_id()
        self._append(self.runs_path, [{**r, "run": run_id} for r in results])

    def add_override(self, student: str, exercise: str, points: float, reason: str) -> None:
        if not reason.strip():
            raise ValueError("an override needs a reason (--reason 'why'), got an empty one")
        self._append(self.overrides_path, [{"student": student, "exercise": exercise, "points": points,
                                            "reason": reason.strip(), "time": time.strftime("%Y-%m-%d %H:%M:%S")}])

    def current(self) -> dict[tuple[str, str], dict]:
        """{(student, notebook): the latest run of it, overrides applied}."""
        latest: dict[tuple[str, str], dict] = {}
        for row in self.runs():
            latest[(row["student"], row["notebook"])] = row
        overrides = {(o["student"], o["exercise"]): o for o in self._read(self.overrides_path)}
        for (student, _), row in latest.items():
            for exercise in row["exercises"]:
                found = overrides.get((student, exercise["exercise"]))
                if found:
                    exercise["points"] = float(found["points"])
                    exercise["override"] = found["reason"]
        return latest

    def digests(self) -> dict[tuple[str, str], str]:
        """{(student, notebook): sha256 of the file graded last time}."""
        return {(r["student"], r["notebook"]): r.get("digest", "") for r in self.runs()}


def new_run_id() -> str:
    """An id for one ``make grade`` run: its start time and process id."""
    return time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"


def _number(x: float) -> str:
    return f"{round(x, 2):g}"


def _csv(rows: list[list]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def write_tables(folder: Path, current: dict, exercises: list, students: dict[str, Student]) -> list[Path]:
    """grades.csv, grades_long.csv and platform_grades.csv from the current grades.

    Args:
        folder: the grading folder.
        current: ``Gradebook.current()``.
        exercises: every graded exercise of the assigned notebooks (``ExerciseSpec``), in course order.
        students: every student to list (the roster and everyone graded), by id.
    """
    columns = [e.exercise for e in exercises]
    max_total = sum(e.points for e in exercises)
    wide = [["student", "platform_id", *columns, "total", "max_total", "late", "handed_in"],
            ["(max points)", "", *[e.points for e in exercises], max_total, "", "", ""]]
    long = [["student", "platform_id", "notebook", "exercise", "points", "max_points", "status", "message", "override"]]
    platform = [["platform_id", "student", "name", "total", "max_total", "late", "submitted_at"]]
    for sid in sorted(students):
        info = students[sid]
        mine = {e["exercise"]: (nb, e) for (s, nb), row in current.items() if s == sid for e in row["exercises"]}
        handed = sorted({nb for (s, nb) in current if s == sid})
        total = sum(e["points"] for _, e in mine.values())
        wide.append([sid, info.platform_id, *[_number(mine[c][1]["points"]) if c in mine else "" for c in columns],
                     _number(total), max_total, "late" if info.late else "", " ".join(handed) or "nothing"])
        for c in columns:
            if c in mine:
                nb, e = mine[c]
                long.append([sid, info.platform_id, nb, c, _number(e["points"]), e["max_points"], e["status"],
                             e.get("message", ""), e.get("override", "")])
        platform.append([info.platform_id, sid, info.name, _number(total), max_total, "1" if info.late else "0",
                         info.submitted_at])
    written = []
    for name, rows in (("grades.csv", wide), ("grades_long.csv", long), ("platform_grades.csv", platform)):
        write_atomic(folder / name, _csv(rows))
        written.append(folder / name)
    return written


STATISTICS_COLUMNS = ["exercise", "notebook", "max_points", "graded_by", "graded", "by_hand", "unreadable",
                      "mean_points", "share_solved", "most_common_failing_case"]


def statistics(current: dict, exercises: list) -> list[dict]:
    """Per exercise: how it is graded, the notebooks graded, the exercises graded by hand (an override),
    the unreadable files (not counted as graded), mean points, share solved and the most common failing case.

    ``share_solved`` counts full points; for an exercise whose point is for a written justification
    (``graded_by`` "by hand", e.g. 04.1) it counts the right values, since the points come from the overrides.

    Args:
        current: ``Gradebook.current()``.
        exercises: every graded exercise (``ExerciseSpec``), in course order.
    """
    table = []
    for spec in exercises:
        rows = [(row, e) for row in current.values() for e in row["exercises"] if e["exercise"] == spec.exercise]
        results = [e for row, e in rows if not row.get("unreadable")]
        by_hand = any(e.get("graded_by") == "by hand" for e in results) or spec.kind == "value"
        failing = Counter(case for e in results for case, why in e.get("cases", {}).items() if why)
        common = failing.most_common(1)
        solved = [e for e in results if (e["status"] == "passed" if by_hand and not e.get("override")
                                         else e["points"] >= spec.points)]
        table.append({
            "exercise": spec.exercise, "notebook": spec.notebook, "max_points": spec.points,
            "graded_by": "by hand (value checked automatically)" if by_hand else "hidden tests",
            "graded": len(results), "by_hand": sum(1 for e in results if e.get("override")),
            "unreadable": len(rows) - len(results),
            "mean_points": round(sum(e["points"] for e in results) / len(results), 2) if results else 0.0,
            "share_solved": round(len(solved) / len(results), 3) if results else 0.0,
            "most_common_failing_case": f"{common[0][0]} ({common[0][1]}x)" if common else "",
        })
    return table


def write_statistics(folder: Path, table: list[dict]) -> list[Path]:
    """statistics.csv, statistics.md and statistics.png (mean share of the points and share solved)."""
    header = STATISTICS_COLUMNS
    write_atomic(folder / "statistics.csv", _csv([header] + [[row[h] for h in header] for row in table]))
    lines = ["| exercise | max | graded by | graded | of them by hand | unreadable files | mean | solved | "
             "most common failing hidden case |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['exercise']} | {r['max_points']} | {r['graded_by']} | {r['graded']} | {r['by_hand']} | "
              f"{r['unreadable']} | {r['mean_points']:g} | {r['share_solved']:.0%} | "
              f"{r['most_common_failing_case'].replace('|', '/')} |" for r in table]
    lines += ["", "graded: notebooks that could be read (unreadable files are counted apart); of them by hand: "
              "results set by an override; solved: full points, or for an exercise graded by hand the right value "
              "where no override is recorded yet."]
    write_atomic(folder / "statistics.md", "\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(table) + 2), 4))
    x = range(len(table))
    ax.bar([i - 0.2 for i in x], [r["mean_points"] / r["max_points"] for r in table], 0.4, label="mean share of points")
    ax.bar([i + 0.2 for i in x], [r["share_solved"] for r in table], 0.4, label="share solved (full points, or the right value*)")
    ax.set_xticks(list(x), [r["exercise"] + ("*" if r["graded_by"] != "hidden tests" else "") for r in table])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("exercise (* graded by hand: a justification of the value)")
    ax.set_ylabel("share of students")
    ax.set_title("Exercises: mean points and share solved")
    ax.legend(loc="upper right")
    fig.tight_layout()
    part = folder / ".statistics.png.part"
    fig.savefig(part, format="png", metadata={"Software": None})
    plt.close(fig)
    os.replace(part, folder / "statistics.png")
    return [folder / "statistics.csv", folder / "statistics.md", folder / "statistics.png"]
