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
   graded. A file that is not a valid notebook (truncated, not JSON) gets a message saying so; a UTF-8
   byte order mark and CRLF line ends are fine;
4. nothing in a notebook makes :func:`grade_notebook` raise: an exercise the grader fails on (an answer
   that cannot be read, a failure of the grader's own) gets a message naming the exercise and the cause,
   and the rest is graded. In graded/ every line the grader wrote starts with ``[grader]``; a line of the
   notebook's own output that starts so is marked as the notebook's.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from instructor import kernel as kernel_mod
from instructor import partial_credit, sandbox
from instructor.exercise_cells import check_call
from instructor.remote import AnswerUnreadable, Connection, KernelGone, decode

ROOT = Path(__file__).resolve().parent.parent
LINKED_PAGES = (ROOT / "notebooks" / "mask_card.md",)
VERDICT_MARKS = ("❌", "⏳", "✅")
GRADER_MARK = "[grader]"  # every line the grader writes into graded/ starts with it
NOTEBOOK_MARK = "[printed by the notebook, not the grader]"
MESSAGE_CHARS = 400  # the longest message kept for the student (a student's exception can be kilobytes)


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
        case_total: the number of hidden cases of the test (0 for a one-value exercise).
        graded_by: "hidden tests", or "by hand" for a one-value exercise whose point is for a justification.
    """

    exercise: str
    points: float
    max_points: int
    status: str
    message: str = ""
    hint: str = ""
    cases: dict = field(default_factory=dict)
    case_total: int = 0
    graded_by: str = "hidden tests"


@dataclass
class NotebookResult:
    """A graded notebook: its exercises, what happened to the run, and the timing.

    ``unreadable`` is True when the file is not a notebook at all (nothing in it could be graded).
    """

    student: str
    notebook: str
    exercises: list[ExerciseResult]
    run_note: str = ""
    seconds: float = 0.0
    isolation: str = ""
    graded_notebook: dict | None = None
    unreadable: bool = False

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("graded_notebook")
        return data


def _is_test_cell(cell) -> bool:
    meta = cell.get("metadata", {})
    return str(meta.get("nbgrader", {}).get("grade_id", "")).startswith("hidden_") or \
        "graded-exercise" in meta.get("tags", [])


@dataclass(frozen=True)
class GradingPoint:
    """Where and on what an exercise is graded.

    Attributes:
        index: the cell after which to grade (-1: at the end of the notebook).
        arguments: the arguments of the check call to grade (the student's own call when there is one, so an
            answer bound to another name is graded; else the course's).
    """

    index: int
    arguments: str


def grading_points(nb, specs: list[ExerciseSpec]) -> dict[int, list[tuple[ExerciseSpec, str]]]:
    """{index of the cell after which to grade: [(exercise, arguments of its check call)]}; -1 = at the end.

    The place is the last cell that calls the exercise's public check (and what it passes is what is
    graded); if the student removed that call (or the cell no longer parses), the place of the exercise's
    test cell; if both are gone, the end of the notebook.
    """
    places: dict[int, list[tuple[ExerciseSpec, str]]] = {}
    for spec in specs:
        point = _grading_point(nb, spec)
        places.setdefault(point.index, []).append((spec, point.arguments))
    return places


def _grading_point(nb, spec: ExerciseSpec) -> GradingPoint:
    found = GradingPoint(-1, spec.arguments)
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        call = check_call(_source(cell))
        if call and call[:2] == (spec.module, spec.checker):
            found = GradingPoint(index, call[2] or spec.arguments)
    if found.index != -1:
        return found
    for index, cell in enumerate(nb.cells):
        if _is_test_cell(cell) and cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == spec.grade_id:
            found = GradingPoint(index, spec.arguments)
    return found


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _verdict_line(outputs, exercise: str) -> str:
    for output in outputs:
        for line in str(output.get("text", "")).splitlines():
            if line.startswith(VERDICT_MARKS) and f"Exercise {exercise}" in line:
                return line.strip()
    return ""


def _not_graded(spec: ExerciseSpec, why: str) -> ExerciseResult:
    return ExerciseResult(spec.exercise, 0.0, spec.points, "not graded", _short(why))


def _failed(spec: ExerciseSpec, why: str, hint: str = "") -> ExerciseResult:
    return ExerciseResult(spec.exercise, 0.0, spec.points, "failed", _short(why), hint)


def _short(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters (a student's exception can be kilobytes long)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _cause(exc: BaseException) -> str:
    return _short(f"{type(exc).__name__}: {exc}", 200)


def read_notebook(data: bytes):
    """The notebook in ``data``, or raise ValueError saying in words why it is not one.

    A UTF-8 byte order mark and Windows line ends (CRLF) are accepted: the cells' code gets plain line ends.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("the file is not text: it is not a Jupyter notebook") from None
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception:  # nbformat raises many kinds for broken JSON
        raise ValueError("the file is not a valid notebook: it is truncated or damaged (not complete JSON). "
                         "Open it in Jupyter, save it again and hand it in again") from None
    if not isinstance(nb.get("cells"), list):
        raise ValueError("the file is not a valid notebook: it has no cells")
    for cell in nb.cells:
        if not isinstance(cell, dict):
            raise ValueError("the file is not a valid notebook: one of its cells is damaged")
        cell["source"] = _source(cell).replace("\r\n", "\n")
        cell.setdefault("metadata", {})
        if cell.get("cell_type") == "code":
            cell.setdefault("outputs", [])
    return nb


def grade_notebook(student: str, path: Path, specs: list[ExerciseSpec], tests: dict, limits: sandbox.Limits,
                   notebook: str | None = None) -> NotebookResult:
    """Run ``path`` in a sandbox and grade each exercise of ``specs`` with its hidden test from ``tests``.

    Never raises for anything in the notebook: a failure while grading it becomes the result (the exercises
    graded before it keep their points; the others say "not graded" and why).

    Args:
        student: the student's id (for the result only).
        path: the handed-in notebook.
        specs: the graded exercises of this notebook.
        tests: {(module, checker): HiddenTest}.
        limits: the sandbox's limits.
        notebook: the course notebook it is (its stem); default: the file's stem.
    """
    start = time.monotonic()
    result = NotebookResult(student, notebook or path.stem, [], isolation=sandbox.isolation())
    graded: dict[str, ExerciseResult] = {}
    try:
        nb = read_notebook(path.read_bytes())
    except (OSError, ValueError) as exc:
        result.run_note, result.unreadable = str(exc), True
    else:
        try:
            result.run_note = _run_and_grade(nb, f"{result.notebook}.ipynb", path.read_bytes(), specs, tests,
                                             limits, graded)
            result.graded_notebook = nb
        except Exception as exc:  # a failure of the grader's own: the exercises graded so far keep their points
            result.run_note = f"the grader failed on this notebook ({_cause(exc)})"
    why = f"Not graded: {result.run_note or 'the grader found no place to grade it'}."
    result.exercises = [graded.get(s.exercise) or _not_graded(s, why) for s in specs]
    result.seconds = time.monotonic() - start
    return result


def _run_and_grade(nb, name: str, data: bytes, specs: list[ExerciseSpec], tests: dict, limits: sandbox.Limits,
                   graded: dict[str, ExerciseResult]) -> str:
    """Run the cells of ``nb`` in a sandboxed kernel, grade each exercise at its place into ``graded``, leave
    the graded notebook in ``nb`` (test cells after their exercises) and return the run's note ("" if none).

    Args:
        nb: the notebook (changed in place).
        name: the file name of its copy in the sandbox.
        data: the bytes of that copy.
        specs: the graded exercises.
        tests: {(module, checker): HiddenTest}.
        limits: the sandbox's limits.
        graded: {exercise: result}, filled in as each exercise is graded.
    """
    places = grading_points(nb, specs)
    out_cells = []
    with kernel_mod.SandboxedKernel(data, name, limits, LINKED_PAGES) as kernel:
        run_note = _start(kernel)
        conn = Connection(kernel.execute, kernel.exchange, limits.cell_seconds, kernel.boot_threads)
        deadline = time.monotonic() + limits.notebook_seconds
        for index, cell in enumerate(nb.cells):
            outputs = []
            if not _is_test_cell(cell):  # a test cell is re-inserted after its exercise, with the grade
                out_cells.append(cell)
                outputs, run_note = _run_cell(kernel, cell, index, limits, deadline, run_note)
            for spec, arguments in places.get(index, []):
                hint = _verdict_line(outputs, spec.exercise)
                graded[spec.exercise] = _grade_one(spec, arguments, tests, conn, run_note, hint)
                out_cells.append(_result_cell(spec, graded[spec.exercise]))
        rest = {spec.exercise: arguments for point in places.values() for spec, arguments in point}
        for spec in specs:
            if spec.exercise not in graded:
                graded[spec.exercise] = _grade_one(spec, rest.get(spec.exercise, spec.arguments), tests, conn,
                                                   run_note, "")
                out_cells.append(_result_cell(spec, graded[spec.exercise]))
    nb.cells = out_cells
    return run_note


def _start(kernel) -> str:
    """Start the kernel; "" or the note saying why it could not start."""
    try:
        kernel.start()
    except kernel_mod.KernelDied as exc:
        return f"the notebook's kernel could not start ({exc})"
    return ""


def _run_cell(kernel, cell, index: int, limits: sandbox.Limits, deadline: float, run_note: str) -> tuple[list, str]:
    """Run one cell (unless the run has stopped); its outputs (in the graded notebook too) and the run's note."""
    if cell.get("cell_type") != "code" or run_note:
        return [], run_note
    if time.monotonic() > deadline:
        return [], f"the notebook ran out of time ({limits.notebook_seconds:g} s in all) before cell {index + 1}"
    done = kernel.execute(cell.source, timeout=limits.cell_seconds)
    cell.outputs = [_marked(output) for output in done.outputs]
    if done.status == "dead":
        run_note = (f"the notebook's kernel stopped in cell {index + 1} (it crashed, ran out of memory or CPU "
                    "time, or the code ended the kernel)")
    elif done.status == "timeout":
        cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=(
            f"{GRADER_MARK} this cell was stopped after {limits.cell_seconds:g} s\n")))
    return done.outputs, run_note


def _marked(output):
    """The output with every line of the notebook's own that starts like a grader's line marked as the
    notebook's (so that only the grader's lines in graded/ start with ``GRADER_MARK``)."""
    def mark(text: str) -> str:
        return "".join(f"{NOTEBOOK_MARK} {line}" if line.lstrip().startswith(GRADER_MARK) else line
                       for line in str(text).splitlines(True))

    output = nbformat.from_dict(dict(output))
    if output.get("output_type") == "stream":
        output["text"] = mark(output.get("text", ""))
    elif isinstance(output.get("data"), dict) and "text/plain" in output["data"]:
        output["data"]["text/plain"] = mark(output["data"]["text/plain"])
    return output


def _grade_one(spec: ExerciseSpec, arguments: str, tests: dict, conn: Connection, run_note: str,
               hint: str) -> ExerciseResult:
    """Grade one exercise; never raises (a failure of the grader's own becomes a "not graded" result).

    Args:
        spec: the exercise.
        arguments: what the check call passes (evaluated in the kernel).
        tests: {(module, checker): HiddenTest}.
        conn: the connection to the kernel.
        run_note: why the run stopped before this point ("" when it did not).
        hint: what the notebook's own check printed.
    """
    try:
        return _grade_answer(spec, arguments, tests, conn, run_note, _short(hint))
    except Exception as exc:
        return _not_graded(spec, f"Not graded: the grader failed on exercise {spec.exercise} ({_cause(exc)}).")


def _grade_answer(spec, arguments: str, tests: dict, conn: Connection, run_note: str, hint: str) -> ExerciseResult:
    if run_note:
        return _not_graded(spec, f"Not graded: {run_note}; the exercises before that point were graded.")
    test = tests.get((spec.module, spec.checker))
    if test is None:
        return _not_graded(spec, "Not graded: this exercise has no hidden test.")
    try:
        data = conn.run_raw("import sys as _s; _s.modules['grader_kernel_side'].answer("
                            f"{spec.grade_id!r}, lambda: (lambda *a, **k: (a, k))({arguments}))")
    except NameError as exc:
        return _failed(spec, f"Exercise {spec.exercise}: your answer is not defined ({exc}).", hint)
    except KernelGone as exc:
        return _not_graded(spec, f"Not graded: the kernel stopped while your answer was read ({exc}).")
    except Exception as exc:
        return _failed(spec, f"Exercise {spec.exercise}: your answer could not be read ({exc}).", hint)
    try:
        args = [decode(a, conn) for a in data["args"]]
        kwargs = {str(k): decode(v, conn) for k, v in data["kwargs"].items()}
    except AnswerUnreadable as exc:
        return _failed(spec, f"Exercise {spec.exercise}: your answer could not be read: {exc}.", hint)
    except (ValueError, KeyError, TypeError, AttributeError):
        return _failed(spec, f"Exercise {spec.exercise}: your answer could not be read back from the notebook.",
                       hint)
    try:
        outcome = partial_credit.run_test(test, args, kwargs)
    except KernelGone as exc:
        return _not_graded(spec, f"Not graded: the kernel stopped while the hidden tests ran ({exc}).")
    automatic = getattr(test, "auto_points", spec.points)  # one-value answers: their point is for a justification
    points = round(automatic * outcome.earned_share, 2)
    message = outcome.message
    if automatic < spec.points and outcome.status == "passed":
        message = ("Your value is right. The point of this exercise is for your written justification, "
                   "graded by your instructor.")
    cases = {str(case): None if why is None else _short(why) for case, why in outcome.cases.items()}
    return ExerciseResult(spec.exercise, points, spec.points, outcome.status, _short(message), hint, cases,
                          outcome.total, "by hand" if automatic < spec.points else "hidden tests")


def _result_cell(spec: ExerciseSpec, result: ExerciseResult):
    """The exercise's test cell, back right after its exercise, with the grade as its output (lines that
    start with ``GRADER_MARK``; the notebook's own lines that start so are marked as the notebook's)."""
    cell = nbformat.v4.new_code_cell(f"# Exercise {spec.exercise} ({spec.points} points): graded by hidden tests")
    cell.metadata = {"nbgrader": {"grade": True, "grade_id": spec.grade_id, "locked": True, "points": spec.points,
                                  "schema_version": 3, "solution": False, "task": False},
                     "tags": ["graded-exercise"], "deletable": False, "editable": False,
                     "course_grader": {"exercise": spec.exercise, "points": result.points, "status": result.status}}
    lines = [f"{GRADER_MARK} Exercise {spec.exercise}: {result.points:g} of {spec.points} points ({result.status})"]
    if result.message:
        lines.append(f"{GRADER_MARK} {result.message}")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines) + "\n")]
    return cell
