"""Grade one handed-in notebook: run it in a sandboxed kernel and test each answer from outside the kernel.

This replaces nbgrader's ``autograde`` step (nbgrader still builds the student edition): nbgrader runs
the hidden test cells inside the student's kernel, where a student's cell can replace the grading
function, print the hidden tests or write next to them (its own FAQ says so). Here:

1. the notebook's cells run one by one in a fresh kernel inside the sandbox (``instructor/sandbox.py``),
   each under a wall-time limit; an error in a cell does not stop the cells after it;
2. the locked test cells of the student edition are not run at all: right after each exercise cell (the
   cell that calls the exercise's public check, wherever the test cell is, even if it was deleted or
   moved) the kernel is asked for the arguments of the check call, and the exercise's hidden test runs
   in this process with the student's answer as a proxy (``instructor/remote.py``), case by case
   (``instructor/partial_credit.py``);
3. if the kernel dies (a crash, ``exit()``, the CPU or memory limit) or the time for the whole notebook
   is up, the exercises before that point keep their points and the later ones say why they were not
   graded. A file that is not a valid notebook (truncated, not JSON) gets a message saying so.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import kernel as kernel_mod
import nbformat
import partial_credit
import sandbox
from remote import Connection, KernelGone, StudentTimeout, decode

ROOT = Path(__file__).resolve().parent.parent
LINKED_PAGES = (ROOT / "notebooks" / "mask_card.md",)
VERDICT_MARKS = ("❌", "⏳", "✅")


@dataclass(frozen=True)
class ExerciseSpec:
    """What the grader needs to know about one graded exercise (from the course notebook, not the student's)."""

    notebook: str
    exercise: str
    module: str
    checker: str
    arguments: str
    points: int
    kind: str

    @property
    def grade_id(self) -> str:
        return f"hidden_{self.module}_{self.checker}"


@dataclass
class ExerciseResult:
    """One exercise's grade.

    Attributes:
        exercise: its number, e.g. "04.3".
        points, max_points: points earned and possible.
        status: "passed", "partial", "failed", "not attempted" or "not graded".
        message: why points were lost (for the student), "" when none.
        hint: what the notebook's own public check printed for this exercise (its hint), if anything.
        cases: {hidden case: None or what was wrong}.
    """

    exercise: str
    points: float
    max_points: int
    status: str
    message: str = ""
    hint: str = ""
    cases: dict = field(default_factory=dict)


@dataclass
class NotebookResult:
    """A graded notebook: its exercises, what happened to the run, and the timing."""

    student: str
    notebook: str
    exercises: list[ExerciseResult]
    run_note: str = ""
    seconds: float = 0.0
    isolation: str = ""
    graded_notebook: dict | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("graded_notebook")
        return data


def _is_test_cell(cell) -> bool:
    meta = cell.get("metadata", {})
    return str(meta.get("nbgrader", {}).get("grade_id", "")).startswith("hidden_") or \
        "graded-exercise" in meta.get("tags", [])


def _check_call(source: str):
    from student_edition import check_call

    return check_call(source)


def grading_points(nb, specs: list[ExerciseSpec]) -> dict[int, list[ExerciseSpec]]:
    """{index of the cell after which to grade: [exercises]}; -1 = at the end of the notebook.

    The place is the last cell that calls the exercise's public check; if the student removed that
    call, the place of the exercise's test cell; if both are gone, the end of the notebook.
    """
    places: dict[int, list[ExerciseSpec]] = {}
    for spec in specs:
        where = -1
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            found = _check_call(cell.source)
            if found and found[:2] == (spec.module, spec.checker):
                where = index
        if where == -1:
            for index, cell in enumerate(nb.cells):
                if _is_test_cell(cell) and cell.metadata.get("nbgrader", {}).get("grade_id") == spec.grade_id:
                    where = index
        places.setdefault(where, []).append(spec)
    return places


def _verdict_line(outputs, exercise: str) -> str:
    for output in outputs:
        for line in str(output.get("text", "")).splitlines():
            if line.startswith(VERDICT_MARKS) and f"Exercise {exercise}" in line:
                return line.strip()
    return ""


def _not_graded(spec: ExerciseSpec, why: str) -> ExerciseResult:
    return ExerciseResult(spec.exercise, 0.0, spec.points, "not graded", why)


def read_notebook(data: bytes):
    """The notebook in ``data``, or raise ValueError saying in words why it is not one."""
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except UnicodeDecodeError:
        raise ValueError("the file is not text: it is not a Jupyter notebook") from None
    except Exception:  # nbformat raises many kinds for broken JSON
        raise ValueError("the file is not a valid notebook: it is truncated or damaged (not complete JSON). "
                         "Open it in Jupyter, save it again and hand it in again") from None
    if not isinstance(nb.get("cells"), list):
        raise ValueError("the file is not a valid notebook: it has no cells")
    return nb


def grade_notebook(student: str, path: Path, specs: list[ExerciseSpec], tests: dict, limits: sandbox.Limits,
                   counts: partial_credit.CaseCounts) -> NotebookResult:
    """Run ``path`` in a sandbox and grade each exercise of ``specs`` with its hidden test from ``tests``.

    Args:
        student: the student's id (for the result only).
        path: the handed-in notebook.
        specs: the graded exercises of this notebook.
        tests: {(module, checker): HiddenTest}.
        limits: the sandbox's limits.
        counts: the number of cases per hidden test (see ``partial_credit.CaseCounts``).
    """
    start = time.monotonic()
    result = NotebookResult(student, path.stem, [], isolation=sandbox.isolation())
    try:
        nb = read_notebook(path.read_bytes())
    except ValueError as exc:
        result.run_note = str(exc)
        result.exercises = [_not_graded(s, f"Not graded: {exc}.") for s in specs]
        result.seconds = time.monotonic() - start
        return result
    places = grading_points(nb, specs)
    graded: dict[str, ExerciseResult] = {}
    out_cells = []
    run_note = ""
    with kernel_mod.SandboxedKernel(path.read_bytes(), path.name, limits, LINKED_PAGES) as kernel:
        try:
            kernel.start()
        except kernel_mod.KernelDied as exc:
            run_note = f"the notebook's kernel could not start ({exc})"
        conn = Connection(kernel.execute, kernel.exchange, limits.cell_seconds)
        deadline = start + limits.notebook_seconds
        for index, cell in enumerate(nb.cells):
            if _is_test_cell(cell):
                continue  # re-inserted after its exercise below
            out_cells.append(cell)
            if cell.cell_type != "code" or run_note:
                cell_outputs = []
            else:
                if time.monotonic() > deadline:
                    run_note = (f"the notebook ran out of time ({limits.notebook_seconds:g} s in all) before "
                                f"cell {index + 1}")
                    continue
                done = kernel.execute(cell.source, timeout=limits.cell_seconds)
                cell.outputs = done.outputs
                cell_outputs = done.outputs
                if done.status == "dead":
                    run_note = (f"the notebook's kernel stopped in cell {index + 1} (it crashed, ran out of "
                                "memory or CPU time, or the code ended the kernel)")
                elif done.status == "timeout":
                    cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=(
                        f"[grader] this cell was stopped after {limits.cell_seconds:g} s\n")))
            for spec in places.get(index, []):
                hint = _verdict_line(cell_outputs, spec.exercise)
                graded[spec.exercise] = _grade_one(spec, tests, conn, kernel, counts, run_note, hint)
                out_cells.append(_result_cell(spec, graded[spec.exercise]))
        for spec in places.get(-1, []):
            graded[spec.exercise] = _grade_one(spec, tests, conn, kernel, counts, run_note, "")
            out_cells.append(_result_cell(spec, graded[spec.exercise]))
    result.exercises = [graded[s.exercise] for s in specs]
    result.run_note = run_note
    nb.cells = out_cells
    result.graded_notebook = nb
    result.seconds = time.monotonic() - start
    return result


def _grade_one(spec, tests, conn: Connection, kernel, counts, run_note: str, hint: str) -> ExerciseResult:
    if run_note:
        return _not_graded(spec, f"Not graded: {run_note}; the exercises before that point were graded.")
    test = tests.get((spec.module, spec.checker))
    if test is None:
        return _not_graded(spec, "Not graded: this exercise has no hidden test.")
    try:
        data = conn.run_raw("import sys as _s; _s.modules['grader_kernel_side'].answer("
                       f"{spec.grade_id!r}, lambda: (lambda *a, **k: (a, k))({spec.arguments}))")
    except NameError as exc:
        return ExerciseResult(spec.exercise, 0.0, spec.points, "failed",
                              f"Exercise {spec.exercise}: your answer is not defined ({exc}).", hint)
    except (KernelGone, StudentTimeout, Exception) as exc:
        return ExerciseResult(spec.exercise, 0.0, spec.points, "failed",
                              f"Exercise {spec.exercise}: your answer could not be read ({exc}).", hint)
    try:
        args = [decode(a, conn) for a in data["args"]]
        kwargs = {str(k): decode(v, conn) for k, v in data["kwargs"].items()}
        outcome = partial_credit.run_test(test, args, kwargs, counts)
    except KernelGone as exc:
        return _not_graded(spec, f"Not graded: the kernel stopped while the hidden tests ran ({exc}).")
    automatic = getattr(test, "auto_points", spec.points)  # one-value answers: their point is for a justification
    points = round(automatic * outcome.earned_share, 2)
    message = outcome.message
    if automatic < spec.points and outcome.status == "passed":
        message = ("Your value is right. The point of this exercise is for your written justification, "
                   "graded by your instructor.")
    return ExerciseResult(spec.exercise, points, spec.points, outcome.status, message, hint, outcome.cases)


def _result_cell(spec: ExerciseSpec, result: ExerciseResult):
    """The exercise's test cell, back right after its exercise, with the grade as its output."""
    cell = nbformat.v4.new_code_cell(f"# Exercise {spec.exercise} ({spec.points} points): graded by hidden tests")
    cell.metadata = {"nbgrader": {"grade": True, "grade_id": spec.grade_id, "locked": True, "points": spec.points,
                                  "schema_version": 3, "solution": False, "task": False},
                     "tags": ["graded-exercise"], "deletable": False, "editable": False}
    text = f"Exercise {spec.exercise}: {result.points:g} of {spec.points} points ({result.status})"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + (f"\n{result.message}" if
                                                                                  result.message else "") + "\n")]
    return cell
