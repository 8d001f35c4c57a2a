"""Grade a folder of submitted notebooks with nbgrader and the hidden tests (``make grade SUBMISSIONS=dir``).

Layout of the folder: one sub-folder per student, named by the student's id, holding the notebooks
they hand in under the names of the student edition (any subset of them):

    submissions/
        alice/04_attention.ipynb
        alice/06_masking.ipynb
        bob/04_attention.ipynb

What it does: builds a fresh nbgrader course in ``<out>/nbgrader`` from the current notebooks
(``scripts/student_edition.py``: the same test cells the student edition was made with), copies
the submissions into nbgrader's ``submitted/`` folder, runs ``nbgrader autograde`` (each notebook
executed top to bottom in a fresh kernel, the hidden test cells restored from the gradebook and run
with ``instructor/`` on ``PYTHONPATH``) and ``nbgrader generate_feedback``.

Output (default ``build/grading/``):
    grades.csv            one row per student: points per exercise (blank = notebook not handed in), total
    grades_long.csv       one row per student and exercise: points, max points, verdict
    feedback/<student>.md one file per student: points per exercise and what the hidden tests said
    nbgrader/feedback/<student>/<notebook>/<notebook>.html   nbgrader's annotated notebooks

Usage:
    python scripts/grade.py SUBMISSIONS [--out build/grading]
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_edition import ROOT, Exercise, build_course, kernel_environment, nbgrader_api

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Score:
    """One student's result on one exercise."""

    student: str
    exercise: Exercise
    points: float
    verdict: str


def collect(submissions: Path, course_dir: Path, assignments: set[str]) -> dict[str, list[str]]:
    """Copy ``submissions/<student>/<notebook>.ipynb`` into nbgrader's ``submitted/`` folder.

    Returns {student: [assignment, ...]}. Files that are not course notebooks are reported and skipped.
    """
    handed_in: dict[str, list[str]] = {}
    students = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not students:
        raise SystemExit(f"{submissions}: expected one folder per student (e.g. {submissions}/alice/04_attention.ipynb)")
    for folder in students:
        if not STUDENT_ID.fullmatch(folder.name):
            raise SystemExit(f"{folder}: a student id may hold letters, digits, '_', '-' and '.' only")
        for notebook in sorted(folder.glob("*.ipynb")):
            if notebook.stem not in assignments:
                print(f"skipped {notebook}: not a notebook of the student edition")
                continue
            target = course_dir / "submitted" / folder.name / notebook.stem / notebook.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(notebook, target)
            handed_in.setdefault(folder.name, []).append(notebook.stem)
    return handed_in


def verdicts(autograded: Path) -> dict[str, str]:
    """What each hidden test cell of an autograded notebook printed or raised: {grade_id: text}."""
    found = {}
    nb = nbformat.read(autograded, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or not grade_id:
            continue
        text = ""
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                text = f"{output.ename}: {output.evalue}"
            elif output.output_type == "stream" and not text:
                text = output.text.strip()
        found[grade_id] = text or "no output"
    return found


def grade(submissions: Path, out: Path, notebooks: list[Path] | None = None) -> list[Score]:
    """Grade every submission in ``submissions``; write the CSV files and feedback into ``out``."""
    kernel_environment()
    notebooks = notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    course_dir = out / "nbgrader"
    submitted_stems = {p.stem for p in submissions.glob("*/*.ipynb")}
    notebooks = [p for p in notebooks if p.stem in submitted_stems]
    if not notebooks:
        raise SystemExit(f"{submissions}: no notebook of the course found in its student folders")
    exercises = [e for e in build_course(notebooks, course_dir) if e.points]
    handed_in = collect(submissions, course_dir, {p.stem for p in notebooks})
    api = nbgrader_api(course_dir)
    scores: list[Score] = []
    from nbgrader.api import Gradebook

    for student, assignments in handed_in.items():
        for assignment in assignments:
            print(f"grading {student} / {assignment} ...", flush=True)
            result = api.autograde(assignment, student, force=True, create=True)
            if not result["success"]:  # e.g. not a valid notebook: 0 points, say why, grade the others
                text = f"{result.get('log') or ''}\n{result.get('error') or ''}".strip().splitlines() or ["unknown error"]
                errors = [line.strip() for line in text if "rror" in line and "Please see" not in line]
                why = (errors or text)[-1][:300]
                print(f"  could not grade {student}/{assignment}: {why}")
                scores += [Score(student, e, 0.0, f"could not be graded: {why}") for e in exercises
                           if e.notebook == assignment]
                continue
            feedback = api.generate_feedback(assignment, student, force=True)
            if not feedback["success"]:
                raise RuntimeError(f"nbgrader generate_feedback failed for {student}/{assignment}:\n"
                                   f"{feedback.get('error', '')}")
            said = verdicts(course_dir / "autograded" / student / assignment / f"{assignment}.ipynb")
            with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gradebook:
                submission = gradebook.find_submission_notebook(assignment, assignment, student)
                points = {g.cell.name: float(g.score) for g in submission.grades}
            for exercise in (e for e in exercises if e.notebook == assignment):
                scores.append(Score(student, exercise, points.get(exercise.grade_id, 0.0),
                                    said.get(exercise.grade_id, "test cell missing")))
    write_reports(scores, exercises, handed_in, out)
    return scores


def write_reports(scores: list[Score], exercises: list[Exercise], handed_in: dict[str, list[str]], out: Path) -> None:
    """grades.csv (wide), grades_long.csv and one feedback/<student>.md per student."""
    columns = [e.exercise for e in exercises]
    by_student: dict[str, dict[str, Score]] = {}
    for score in scores:
        by_student.setdefault(score.student, {})[score.exercise.exercise] = score
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *columns, "total", "max_total"])
        writer.writerow(["(max points)", *[e.points for e in exercises], sum(e.points for e in exercises), ""])
        for student in sorted(by_student):
            mine = by_student[student]
            attempted_max = sum(e.points for e in exercises if e.notebook in handed_in[student])
            writer.writerow([student, *[_number(mine[c].points) if c in mine else "" for c in columns],
                             _number(sum(s.points for s in mine.values())), attempted_max])
    with (out / "grades_long.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "notebook", "exercise", "points", "max_points", "verdict"])
        for s in sorted(scores, key=lambda s: (s.student, s.exercise.notebook, s.exercise.exercise)):
            writer.writerow([s.student, s.exercise.notebook, s.exercise.exercise, _number(s.points), s.exercise.points,
                             s.verdict])
    feedback_dir = out / "feedback"
    if feedback_dir.exists():
        shutil.rmtree(feedback_dir)
    feedback_dir.mkdir(parents=True)
    for student, mine in sorted(by_student.items()):
        total = sum(s.points for s in mine.values())
        possible = sum(s.exercise.points for s in mine.values())
        lines = [f"# Feedback for {student}", "", f"**{_number(total)} of {possible} points** on the notebooks you "
                 f"handed in ({', '.join(sorted(handed_in[student]))}).", "",
                 "| exercise | notebook | points | what the hidden tests found |", "|---|---|---|---|"]
        for s in sorted(mine.values(), key=lambda s: s.exercise.exercise):
            verdict = s.verdict.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {s.exercise.exercise} | {s.exercise.notebook} | {_number(s.points)} / "
                         f"{s.exercise.points} | {verdict} |")
        lines += ["", "Your annotated notebooks: `nbgrader/feedback/" + student + "/<notebook>/<notebook>.html`.", ""]
        (feedback_dir / f"{student}.md").write_text("\n".join(lines), encoding="utf-8")


def _number(x: float) -> str:
    return f"{x:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="one folder per student holding their notebooks")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "grading")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"SUBMISSIONS must be a folder, got {args.submissions}")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    scores = grade(args.submissions.resolve(), out)
    students = sorted({s.student for s in scores})
    for student in students:
        mine = [s for s in scores if s.student == student]
        print(f"{student}: {_number(sum(s.points for s in mine))} of {sum(s.exercise.points for s in mine)} points")
    print(f"wrote {out / 'grades.csv'}, {out / 'grades_long.csv'} and {len(students)} files in {out / 'feedback'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
