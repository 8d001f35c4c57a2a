"""Grade handed-in notebooks in sandboxes, in parallel, into a persistent gradebook (``make grade``).

Layout of the submissions folder: one sub-folder per student (named by the student's id) holding the
notebooks they hand in under the student edition's names (any subset); ``scripts/collect.py`` makes it
from a learning platform's export, with a ``manifest.csv`` (platform user ids, late marks, submission
times, students on the roster who handed in nothing):

    submissions/manifest.csv
    submissions/alice/04_attention.ipynb
    submissions/bob/04_attention.ipynb

What it does (see ``instructor/executor.py``): each notebook runs in a fresh kernel in its own sandbox
(``instructor/sandbox.py``: no network, only ``course_lib/``, ``data/`` and a private copy of the
notebook visible, CPU/memory/time limits); the hidden tests run in the grader's process, never in the
student's kernel, and give partial credit per hidden case. ``-j N`` grades N notebooks at once.

Incremental: by default only notebooks that are new or changed since they were last graded run
(``--students a b`` re-grades those students, ``--all`` everyone). Every run is kept in
``<out>/gradebook/``; ``--override STUDENT EXERCISE POINTS --reason TEXT`` records a manual grade.

Output (default ``build/grading/``):
    grades.csv             one row per student (roster included): points per exercise, total, max_total
    grades_long.csv        one row per student and exercise: points, status, why points were lost
    platform_grades.csv    for the learning platform: its user id, total, max_total, late, submission time
    statistics.csv/.md/.png per exercise: mean, share solved, most common failing hidden case; the plot
                           (exercises graded by hand apart from automatic ones; unreadable files apart)
    feedback/<student>.md and .html   one file per student, for the student
    graded/<student>/<notebook>.ipynb the notebook as graded (test cells after their exercises, with the grade)

Usage:
    python -m scripts.grade SUBMISSIONS [--out build/grading] [-j 2] [--students alice bob] [--all]
    python -m scripts.grade SUBMISSIONS --override alice 04.3 3 --reason "checked by hand"
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import multiprocessing
import re
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from instructor import executor, feedback, sandbox
from instructor import gradebook as gb
from instructor.executor import ExerciseSpec
from instructor.exercise_cells import hidden_registry
from scripts import collect, student_edition

ROOT = Path(__file__).resolve().parent.parent

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MANIFEST = "manifest.csv"


def course_exercises(stems: list[str]) -> list[ExerciseSpec]:
    """Every graded exercise of the course notebooks ``stems``, in course order (from the course's notebooks)."""
    registry = hidden_registry()
    specs = []
    for stem in stems:
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        for e in student_edition.find_exercises(nb, stem, registry):
            if e.points:
                specs.append(ExerciseSpec(stem, e.exercise, e.module, e.checker, e.arguments, e.points, e.kind))
    return specs


@dataclass
class Submissions:
    """What the submissions folder holds.

    Attributes:
        found: {(student, notebook stem): the file graded for it}.
        not_graded: {student: ["file: why it is not graded"]}, for the run's summary and the feedback.
        problems: folders that are no student's (a name that is not a valid id), for the run's summary.
    """

    found: dict[tuple[str, str], Path] = field(default_factory=dict)
    not_graded: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def find_submissions(submissions: Path, stems: set[str]) -> Submissions:
    """Every course notebook in ``submissions/<student>/``, matched as ``make collect`` matches them
    (``collect.match_notebook``: ``04_attention (1).ipynb``, ``Copy of 04 Attention.ipynb``, or the test cells
    inside); every other file is listed with the reason it is not graded, never dropped silently.

    Args:
        submissions: one folder per student.
        stems: the course notebooks' stems.
    """
    ordered = sorted(stems, key=len, reverse=True)
    result = Submissions()
    for folder in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not STUDENT_ID.fullmatch(folder.name):
            result.problems.append(f"{folder.name}/: not graded: a student id may hold letters, digits, '_', '-' "
                                   "and '.' only (rename the folder)")
            continue
        matched: dict[str, list[Path]] = {}
        notes = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
            shown = path.relative_to(folder).as_posix()
            if path.suffix.lower() != ".ipynb":
                notes.append(f"{shown}: not graded: not a Jupyter notebook (.ipynb)")
                continue
            stem = collect.match_notebook(path.name, _head(path), ordered)
            if stem is None:
                notes.append(f"{shown}: not graded: neither its name nor its cells say which course notebook it is")
            else:
                matched.setdefault(stem, []).append(path)
        for stem, paths in sorted(matched.items()):
            chosen = _preferred(stem, paths)
            result.found[(folder.name, stem)] = chosen
            notes += [f"{p.relative_to(folder).as_posix()}: not graded: {chosen.relative_to(folder).as_posix()} "
                      f"is graded as {stem}" for p in paths if p != chosen]
        if notes:
            result.not_graded[folder.name] = notes
    return result


def _head(path: Path, limit: int = 4 << 20) -> bytes:
    """The first bytes of ``path`` (enough to find a locked test cell's grade id)."""
    with path.open("rb") as handle:
        return handle.read(limit)


def _preferred(stem: str, paths: list[Path]) -> Path:
    """Of several files for one notebook: the one under the course's own name, else the latest saved one."""
    exact = [p for p in paths if p.name == f"{stem}.ipynb"]
    return exact[0] if exact else max(paths, key=lambda p: (p.stat().st_mtime, p.name))


# ---- worker side -------------------------------------------------------------------------------------

_WORKER: dict = {}


def _worker_init() -> None:
    _WORKER["tests"] = hidden_registry()


def _grade_task(student: str, path: str, notebook: str, specs: list[ExerciseSpec], limits: sandbox.Limits):
    """Grade one notebook in a worker; whatever fails becomes the notebook's result (never an exception)."""
    try:
        return executor.grade_notebook(student, Path(path), specs, _WORKER["tests"], limits, notebook)
    except (Exception, SystemExit) as exc:
        return failed_result(student, notebook, specs, f"the grader failed on this notebook "
                                                       f"({type(exc).__name__}: {str(exc)[:200]})")


def failed_result(student: str, notebook: str, specs: list[ExerciseSpec], why: str):
    """The result of a notebook the grader could not grade at all: every exercise "not graded", saying why."""
    exercises = [executor.ExerciseResult(s.exercise, 0.0, s.points, "not graded", f"Not graded: {why}.")
                 for s in specs]
    return executor.NotebookResult(student, notebook, exercises, run_note=why, isolation=sandbox.isolation())


def grade_all(todo: list[tuple[str, str, Path]], specs: list[ExerciseSpec], limits: sandbox.Limits, jobs: int,
              save, task=_grade_task, initializer=_worker_init) -> None:
    """Grade every ``(student, notebook, path)`` of ``todo`` in worker processes and ``save(result, path)`` each
    as it finishes.

    A worker process that dies (the pool breaks) takes the notebooks it was grading with it: those are graded
    again, each in a worker of its own; a notebook that kills its worker again gets a result saying so.

    Args:
        todo: what to grade.
        specs: every graded exercise (each notebook gets its own).
        limits: the sandbox's limits.
        jobs: notebooks graded at once.
        save: called with each result and its file, in the order they finish.
        task, initializer: the worker's function and set-up (tests replace them).
    """
    broken = _grade_in_pool(todo, specs, limits, jobs, save, task, initializer)
    if broken:
        print(f"  a grading worker died: grading {len(broken)} notebook(s) again, one at a time", flush=True)
    for item in broken:
        if _grade_in_pool([item], specs, limits, 1, save, task, initializer):
            sid, nb, path = item
            save(failed_result(sid, nb, [s for s in specs if s.notebook == nb],
                               "the grader's worker process died while grading this notebook (twice)"), path)


def _grade_in_pool(todo, specs, limits, jobs: int, save, task, initializer) -> list:
    """Grade ``todo`` in one pool of ``jobs`` workers; return the items lost to a worker that died."""
    broken = []
    context = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads
    with futures.ProcessPoolExecutor(min(jobs, len(todo)), mp_context=context, initializer=initializer) as pool:
        pending = {pool.submit(task, sid, str(path), nb, [s for s in specs if s.notebook == nb], limits):
                   (sid, nb, path) for sid, nb, path in todo}
        for done in futures.as_completed(pending):
            sid, nb, path = pending[done]
            try:
                result = done.result()
            except BrokenProcessPool:
                broken.append((sid, nb, path))
                continue
            except Exception as exc:  # e.g. a result that could not be sent back from the worker
                result = failed_result(sid, nb, [s for s in specs if s.notebook == nb],
                                       f"the grader failed on this notebook ({type(exc).__name__}: {str(exc)[:200]})")
            save(result, path)
    return broken


# ---- the command ---------------------------------------------------------------------------------------


def grade(submissions: Path, out: Path, jobs: int = 1, students: list[str] | None = None, regrade_all: bool = False,
          limits: sandbox.Limits | None = None, notebooks: list[str] | None = None) -> dict:
    """Grade what is new or asked for and rewrite the reports from the gradebook.

    Each notebook's result is appended to the gradebook (and its graded copy written) as soon as it is
    graded, so a run that is stopped half-way keeps what it graded: the next run grades only the rest. The
    reports are written at the end, and also when the run is interrupted.

    Args:
        submissions: one folder per student (optionally with ``manifest.csv`` from ``collect.py``).
        out: the grading folder (gradebook, reports, feedback).
        jobs: notebooks graded at once.
        students: re-grade these students' notebooks (even if unchanged); None = only new or changed notebooks.
        regrade_all: re-grade every notebook.
        limits: the sandbox's limits.
        notebooks: the assigned notebooks (stems); default: every course notebook someone handed in.

    Returns {"graded": [(student, notebook)], "current": Gradebook.current(), "not_graded": {student: [notes]}}.
    """
    if jobs < 1:
        raise ValueError(f"jobs (-j) must be at least 1, got {jobs}")
    limits = limits or sandbox.Limits()
    all_stems = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    handed = find_submissions(submissions, set(all_stems))
    found = handed.found
    roster = gb.read_manifest(submissions / MANIFEST) if (submissions / MANIFEST).exists() else {}
    for sid in students or []:
        if sid not in roster and not any(s == sid for s, _ in found):
            raise SystemExit(f"--students: no submissions folder or roster entry for {sid!r} in {submissions}")
    assigned = notebooks or sorted({nb for _, nb in found})
    unknown = sorted(set(assigned) - set(all_stems))
    if unknown:
        raise SystemExit(f"--notebooks: not course notebooks: {unknown} (expected stems like 04_attention)")
    if not assigned:
        raise SystemExit(f"{submissions}: no course notebook found in its student folders")
    specs = course_exercises(assigned)
    book = gb.Gradebook(out)
    todo = _todo(found, assigned, book.digests(), students, regrade_all)
    print(sandbox.describe())
    print(f"grading {len(todo)} notebooks with {jobs} worker(s); {len(found) - len(todo)} unchanged kept", flush=True)
    run_id = gb.new_run_id()
    graded = []

    def save(result, path: Path) -> None:
        _print_result(result)
        if result.graded_notebook is not None:
            _write_graded(out / "graded" / result.student / f"{result.notebook}.ipynb", result.graded_notebook)
        book.add_runs([{**result.to_json(), "digest": gb.file_digest(path)}], run_id)
        graded.append((result.student, result.notebook))

    try:
        if todo:
            grade_all(todo, specs, limits, jobs, save)
    finally:
        current = {k: v for k, v in book.current().items() if k[1] in assigned}
        write_reports(out, current, specs, roster, {s for s, _ in found}, handed.not_graded)
        _print_not_graded(handed)
    return {"graded": sorted(graded), "current": current, "not_graded": handed.not_graded}


def _todo(found: dict, assigned: list[str], digests: dict, students: list[str] | None,
          regrade_all: bool) -> list[tuple[str, str, Path]]:
    todo = []
    for (sid, nb), path in sorted(found.items()):
        if nb not in assigned:
            continue
        if students is not None:
            if sid in students:
                todo.append((sid, nb, path))  # only the students asked for, changed or not
        elif regrade_all or digests.get((sid, nb)) != gb.file_digest(path):
            todo.append((sid, nb, path))
    return todo


def _write_graded(target: Path, nb) -> None:
    try:
        gb.write_atomic(target, nbformat.writes(nb))
    except Exception as exc:  # the graded copy is for reading; the grades are in the gradebook
        print(f"    could not write {target.name} ({type(exc).__name__}: {str(exc)[:200]})", flush=True)


def _print_result(result) -> None:
    """One line per graded notebook, and one per exercise that was not graded (naming the cause)."""
    got = sum(e.points for e in result.exercises)
    possible = sum(e.max_points for e in result.exercises)
    note = f" ({result.run_note})" if result.run_note else ""
    print(f"  {result.student} / {result.notebook}: {got:g} of {possible} points in {result.seconds:.1f} s{note}",
          flush=True)
    if not result.run_note:
        for e in result.exercises:
            if e.status == "not graded":
                print(f"    {result.student}, exercise {e.exercise}: {e.message}", flush=True)


def _print_not_graded(handed: Submissions) -> None:
    if not handed.not_graded and not handed.problems:
        return
    print("files not graded:")
    for line in handed.problems:
        print(f"  {line}")
    for sid, notes in sorted(handed.not_graded.items()):
        for note in notes:
            print(f"  {sid}: {note}")


def write_reports(out: Path, current: dict, specs: list[ExerciseSpec], roster: dict, handed_in: set[str],
                  not_graded: dict[str, list[str]] | None = None) -> None:
    """The CSV files, the statistics and one feedback file per student (only changed files are rewritten).

    Args:
        out: the grading folder.
        current: ``Gradebook.current()`` for the assigned notebooks.
        specs: every graded exercise of the assigned notebooks.
        roster: the students of the manifest.
        handed_in: the students with a submissions folder.
        not_graded: {student: ["file: why it is not graded"]} (shown in their feedback).
    """
    not_graded = not_graded or {}
    people = dict(roster)
    for sid in handed_in | {s for s, _ in current}:
        people.setdefault(sid, gb.Student(sid))
    gb.write_tables(out, current, specs, people)
    gb.write_statistics(out, gb.statistics(current, specs))
    max_total = sum(s.points for s in specs)
    for sid, info in sorted(people.items()):
        rows_in = [(nb, e) for (s, nb), row in sorted(current.items()) if s == sid for e in row["exercises"]]
        notes = []
        handed = {nb for (s, nb) in current if s == sid}
        missing = sorted({s.notebook for s in specs} - handed)
        if missing:
            notes.append(f"Not handed in: {', '.join(missing)} (0 points).")
        for (s, nb), row in sorted(current.items()):
            if s == sid and row.get("run_note"):
                notes.append(f"{nb}: {row['run_note']}.")
        notes += [f"Your file {note}." for note in not_graded.get(sid, [])]
        if info.late:
            notes.append(f"Marked late by the learning platform{' (' + info.submitted_at + ')' if info.submitted_at else ''}.")
        rows = feedback.rows_for(rows_in)
        total = sum(e["points"] for _, e in rows_in)
        gb.write_atomic(out / "feedback" / f"{sid}.md", feedback.markdown(sid, rows, total, max_total, notes))
        gb.write_atomic(out / "feedback" / f"{sid}.html", feedback.to_html(sid, rows, total, max_total, notes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="one folder per student holding their notebooks")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "grading")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    parser.add_argument("--students", nargs="+", help="re-grade these students (default: new or changed notebooks)")
    parser.add_argument("--all", action="store_true", help="re-grade every notebook")
    parser.add_argument("--notebooks", nargs="+", help="assigned notebooks (stems); default: all handed in")
    parser.add_argument("--cell-timeout", type=float, default=sandbox.Limits.cell_seconds, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=float, default=sandbox.Limits.notebook_seconds)
    parser.add_argument("--cpu-seconds", type=int, default=sandbox.Limits.cpu_seconds, help="CPU seconds per notebook")
    parser.add_argument("--memory-gb", type=float, default=sandbox.Limits.memory_bytes / 2**30)
    parser.add_argument("--override", nargs=3, metavar=("STUDENT", "EXERCISE", "POINTS"),
                        help="record a manual grade (with --reason) and rewrite the reports")
    parser.add_argument("--reason", default="", help="why the override (shown to the student)")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"SUBMISSIONS must be a folder with one sub-folder per student, got {args.submissions}")
    if args.jobs < 1:
        parser.error(f"-j/--jobs must be at least 1, got {args.jobs}")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.override:
        student, exercise, points = args.override
        try:
            value = float(points)
        except ValueError:
            parser.error(f"--override POINTS must be a number, got {points!r}")
        try:
            gb.Gradebook(out).add_override(student, exercise, value, args.reason)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        limits = sandbox.Limits(cpu_seconds=args.cpu_seconds, memory_bytes=int(args.memory_gb * 2**30),
                                cell_seconds=args.cell_timeout, notebook_seconds=args.notebook_timeout)
    except ValueError as exc:
        parser.error(str(exc))
    start = time.monotonic()
    done = grade(args.submissions.resolve(), out, args.jobs, args.students, args.all, limits, args.notebooks)
    print(f"graded {len(done['graded'])} notebooks in {time.monotonic() - start:.1f} s; wrote {out / 'grades.csv'}, "
          f"grades_long.csv, platform_grades.csv, statistics.csv/.md/.png and feedback/ (Markdown and HTML)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
