"""Build the student edition of the course with nbgrader (``make student-edition``).

Derived from whatever notebooks are in ``notebooks/``, never edited by hand:

1. every collapsed solution (a markdown cell holding ``<details><summary>…solution…``) and every hidden
   ``course-check`` cell (CI's check of the course's own prose) is removed, and
   every ``%%my_part`` cell (the notebook's own version of a part) keeps only the part's contract and
   a stub, so that students save their own parts (the cell after it reports "not saved yet");
2. after every exercise cell (a cell that calls ``nbNN.check_…(…)``) a locked nbgrader test cell is
   inserted. Its visible part tells the student that the exercise is graded; its hidden part (between
   ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``) calls the exercise's hidden test from
   ``instructor/hidden_tests/``, which is neither in the student edition nor in the ``course_lib`` package;
3. ``nbgrader generate_assignment`` turns each notebook (one assignment per notebook) into its student
   version: hidden tests stripped, outputs cleared, test cells locked and checksummed.

Output:
    build/nbgrader/                the nbgrader course directory (source/, release/, gradebook.db)
    build/student_edition/         the notebooks to hand out, one per course notebook
    build/nbgrader/coverage.csv    every exercise found, its hidden test and points

The exercise cells themselves are handed out exactly as they are in the course (stub, public checker
call and all), so students keep the self-checks. ``scripts/grade.py`` grades the submissions.

Usage:
    python -m scripts.student_edition [notebooks/*.ipynb] [--out build]
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

from course_lib.student.magic import skeleton
from instructor.exercise_cells import check_call, hidden_registry, is_solution_cell, kernel_environment
from scripts.notebook_cells import CHECK_TAG

ROOT = Path(__file__).resolve().parent.parent
COURSE_ID = "transformers-from-scratch"
# Pages the notebooks link to by a relative path: handed out next to the notebooks.
LINKED_PAGES = (ROOT / "notebooks" / "mask_card.md",)
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


@dataclass(frozen=True)
class Exercise:
    """One exercise cell of a notebook and the hidden test that grades it (if any).

    Attributes:
        notebook: the notebook's stem, e.g. ``"04_attention"``.
        cell_index: the exercise cell's index in the course notebook.
        module: the checker module the cell calls, e.g. ``"nb04"``.
        checker: the check function, e.g. ``"check_attention_by_hand"``.
        arguments: the source text of the check call's arguments, e.g. ``"attention_by_hand"``.
        exercise: the exercise number from the hidden test (e.g. ``"04.3"``), or "" when there is none.
        points: the points of the hidden test (0 when there is none).
        kind: "function", "value" or "" (no hidden test).
    """

    notebook: str
    cell_index: int
    module: str
    checker: str
    arguments: str
    exercise: str = ""
    points: int = 0
    kind: str = ""

    @property
    def grade_id(self) -> str:
        """The nbgrader id of the test cell (unique within a notebook)."""
        return f"hidden_{self.module}_{self.checker}"


def find_exercises(nb, notebook: str, registry: dict) -> list[Exercise]:
    """Every exercise cell of ``nb`` with its hidden test (looked up in ``registry``).

    When one checker is called from several cells (a demonstration and the exercise), the exercise is
    the cell followed by a collapsed solution, or else the last one.
    """
    calls: dict[tuple[str, str], tuple[int, str, bool]] = {}
    for index, cell in enumerate(nb.cells):
        found = check_call(cell.source) if cell.cell_type == "code" else None
        if found is None:
            continue
        module, checker, arguments = found
        solved = index + 1 < len(nb.cells) and is_solution_cell(nb.cells[index + 1])
        previous = calls.get((module, checker))
        if previous is None or solved or not previous[2]:
            calls[(module, checker)] = (index, arguments, solved)
    exercises = []
    for (module, checker), (index, arguments, _) in sorted(calls.items(), key=lambda item: item[1][0]):
        test = registry.get((module, checker))
        if test is None:
            exercises.append(Exercise(notebook, index, module, checker, arguments))
        else:
            exercises.append(Exercise(notebook, index, module, checker, arguments, test.exercise, test.points, test.kind))
    return exercises


def grading_cell(exercise: Exercise):
    """The nbgrader autograder cell that runs ``exercise``'s hidden test."""
    plural = "s" if exercise.points != 1 else ""
    if exercise.kind == "value":  # the point is for the written justification below (instructor/hidden_tests)
        heading = (f"# Exercise {exercise.exercise} ({exercise.points} point{plural}) is graded by hand from your "
                   "justification below; the hidden test only checks your value.")
    else:
        heading = (f"# Exercise {exercise.exercise} ({exercise.points} point{plural}) is graded by hidden tests when "
                   "you hand in this notebook.")
    source = "\n".join([
        heading,
        "# Keep this cell; your answer above must run without errors.",
        BEGIN_HIDDEN,
        "from instructor import hidden_tests",
        "",
        f"hidden_tests.grade({exercise.module!r}, {exercise.checker!r}, {exercise.arguments})",
        END_HIDDEN,
    ])
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = {
        "deletable": False,
        "editable": False,
        "nbgrader": {
            "grade": True, "grade_id": exercise.grade_id, "locked": True, "points": exercise.points,
            "schema_version": 3, "solution": False, "task": False,
        },
        "slideshow": {"slide_type": "skip"},
        "tags": ["graded-exercise"],
    }
    return cell


MY_PART = re.compile(r"^%%my_part (\w+)")
COMPARED_PART = re.compile(r"compare_with_course\(['\"](\w+)['\"]")


def blank_part_cell(cell):
    """Students write their own parts: a ``%%my_part`` cell keeps only its contract and a stub, and the cell
    that compares the saved part with course_lib's reports "not saved yet" instead of failing."""
    if cell.cell_type != "code":
        return cell
    match = MY_PART.match(cell.source)
    if match:
        blank = nbformat.v4.new_code_cell(f"%%my_part {match.group(1)}\n{skeleton(match.group(1))}",
                                          metadata=cell.metadata)
        blank.id = cell.id
        return blank
    if "from my_transformer." in cell.source and COMPARED_PART.search(cell.source):
        calls = "\n".join(f"check_saved_part({part!r})" for part in COMPARED_PART.findall(cell.source))
        blank = nbformat.v4.new_code_cell(f"from course_lib.student.magic import check_saved_part\n\n{calls}",
                                          metadata=cell.metadata)
        blank.id = cell.id
        return blank
    return cell


def instructor_notebook(nb, exercises: list[Exercise]):
    """The nbgrader source version of a course notebook: solutions removed, hidden test cells inserted."""
    graded = {e.cell_index: e for e in exercises if e.points}
    source = nbformat.v4.new_notebook(metadata=nb.metadata)
    source.nbformat, source.nbformat_minor = nb.nbformat, nb.nbformat_minor
    for index, cell in enumerate(nb.cells):
        if is_solution_cell(cell) or CHECK_TAG in cell.get("metadata", {}).get("tags", []):
            continue  # course-check cells test the course's own prose, not the student's work
        source.cells.append(blank_part_cell(cell))
        if index in graded:
            source.cells.append(grading_cell(graded[index]))
            if graded[index].kind == "value":  # one-value answers: the point is for a justification
                test = hidden_registry()[(graded[index].module, graded[index].checker)]
                source.cells.append(nbformat.from_dict({**hidden_justification_cell(test), "id": f"why-{index}"}))
    return source


def hidden_justification_cell(test) -> dict:
    """``hidden_tests.justification_cell(test)``: the manually graded cell after a one-value exercise."""
    from instructor import hidden_tests

    return hidden_tests.justification_cell(test)


def nbgrader_api(course_dir: Path):
    """An nbgrader API object for the course directory ``course_dir`` (gradebook in course_dir/gradebook.db)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(course_dir)
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.db_url = f"sqlite:///{course_dir / 'gradebook.db'}"
    config.Execute.timeout = 1800  # notebook 10 trains for a few minutes
    config.Execute.interrupt_on_timeout = True
    config.OverwriteCells.add_missing_cells = True  # a deleted test cell is put back, not skipped
    config.ClearSolutions.enforce_metadata = True
    config.NbGraderAPI.log_level = "WARN"
    config.Exchange.root = str(course_dir / "exchange")  # unused (we hand out and collect by hand), but must exist
    (course_dir / "exchange").mkdir(parents=True, exist_ok=True)
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


def build_course(notebooks: list[Path], course_dir: Path) -> list[Exercise]:
    """Write nbgrader's source assignments for ``notebooks`` into ``course_dir`` and generate the releases.

    Returns every exercise found (graded or not). Raises RuntimeError when nbgrader fails.
    """
    registry = hidden_registry()
    if course_dir.exists():
        shutil.rmtree(course_dir)
    exercises: list[Exercise] = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        found = find_exercises(nb, path.stem, registry)
        exercises += found
        target = course_dir / "source" / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(instructor_notebook(nb, found), target)
    api = nbgrader_api(course_dir)
    for path in notebooks:
        result = api.generate_assignment(path.stem, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment failed for {path.name}:\n{result.get('error', '')}"
                               f"\n{result.get('log', '')}")
    write_coverage(exercises, course_dir / "coverage.csv")
    return exercises


def write_coverage(exercises: list[Exercise], target: Path) -> None:
    """One row per exercise cell: notebook, checker, exercise number, points, kind ('' = not graded)."""
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["notebook", "checker", "exercise", "points", "kind"])
        for e in exercises:
            writer.writerow([e.notebook, f"{e.module}.{e.checker}", e.exercise, e.points, e.kind or "NOT GRADED"])


def build_student_edition(notebooks: list[Path], out: Path) -> tuple[Path, list[Exercise]]:
    """Build the nbgrader course in ``out/nbgrader`` and copy the releases to ``out/student_edition``."""
    course_dir = out / "nbgrader"
    exercises = build_course(notebooks, course_dir)
    edition = out / "student_edition"
    if edition.exists():
        shutil.rmtree(edition)
    edition.mkdir(parents=True)
    for path in notebooks:
        for item in sorted((course_dir / "release" / path.stem).iterdir()):
            if item.is_file():
                shutil.copy2(item, edition / item.name)
            else:
                shutil.copytree(item, edition / item.name, dirs_exist_ok=True)
    for page in LINKED_PAGES:
        shutil.copy2(page, edition / page.name)
    return edition, exercises


def summary(exercises: list[Exercise]) -> str:
    """A few lines: how many exercises are graded, with how many points, and which are not."""
    graded = [e for e in exercises if e.points]
    lines = [f"{len(graded)} of {len(exercises)} exercises graded by hidden tests, "
             f"{sum(e.points for e in graded)} points in all "
             f"({sum(e.kind == 'function' for e in graded)} on hidden inputs, {sum(e.kind == 'value' for e in graded)} "
             "one-value answers)."]
    for e in exercises:
        if not e.points:
            lines.append(f"  NOT GRADED (no hidden test): {e.notebook} {e.module}.{e.checker}")
    found = {(e.module, e.checker) for e in exercises}
    modules = {e.module for e in exercises}
    for module, checker in sorted(set(hidden_registry()) - found):
        if module in modules:  # its notebook was built, but no cell calls this checker any more
            lines.append(f"  UNUSED hidden test (no exercise calls {module}.{checker}): check instructor/hidden_tests")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--out", type=Path, default=ROOT / "build")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    kernel_environment()
    edition, exercises = build_student_edition(notebooks, args.out.resolve())
    print(f"wrote {len(notebooks)} notebooks to {edition}")
    print(summary(exercises))
    return 0


if __name__ == "__main__":
    sys.exit(main())
