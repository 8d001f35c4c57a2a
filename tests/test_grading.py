"""Grading in a sandbox (scripts/grade.py, instructor/): attacks, partial credit, crashes, incremental runs.

One student edition of notebook 04 and one grading run of eleven synthetic submissions (the right and the
wrong answers, and the attacks of ``synthetic.ATTACKS``) with ``-j 2`` (one to two minutes on a 2-core
machine, more when it is busy), then a second run that grades one late student only.
"""

from __future__ import annotations

import csv
import os
import signal
import zipfile
from pathlib import Path

import nbformat
import pytest

from instructor import feedback, sandbox
from instructor.synthetic import ATTACKS, FORK_SECONDS, make_attack, make_submission
from scripts import collect, grade, student_edition

ROOT = Path(__file__).resolve().parent.parent

STEM = "04_attention"
LIMITS = sandbox.Limits(cell_seconds=10, notebook_seconds=240, cpu_seconds=120)  # 10 s: an import cell can take 6 s under load
pytestmark = pytest.mark.filterwarnings("ignore:Object of type .* not in session")


def _rows(path: Path) -> dict[str, dict]:
    with path.open() as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grading")
    student_edition.kernel_environment()
    edition, _ = student_edition.build_student_edition([ROOT / "notebooks" / f"{STEM}.ipynb"], tmp / "build")
    subs = tmp / "submissions"
    for kind in ("right", "wrong"):
        make_submission(ROOT / "notebooks" / f"{STEM}.ipynb", edition / f"{STEM}.ipynb", kind, subs / kind / f"{STEM}.ipynb")
    honest = {"replace_grader": "wrong", "spy": "right", "loop": "right", "crash": "right", "moved_cells": "right",
              "truncated": "right", "memory": "right", "fork": "right", "cpu_burn": "right"}
    for attack in ATTACKS:
        make_attack(subs / honest[attack] / f"{STEM}.ipynb", attack, subs / attack / f"{STEM}.ipynb", ROOT, subs)
    out = tmp / "out"
    done = grade.grade(subs, out, jobs=2, limits=LIMITS)
    leftover = _fork_leftovers()
    for pid in leftover:  # started by the "fork" attack above: do not leave them behind when the test fails
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return {"subs": subs, "out": out, "edition": edition, "done": done, "tmp": tmp, "leftover": leftover}


def _fork_leftovers() -> list[int]:
    """Process ids of the ``sleep FORK_SECONDS`` processes the "fork" attack started that are still running."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or it ended meanwhile
            continue
        if entry.name.isdigit() and argv[:2] == [b"sleep", FORK_SECONDS.encode()]:
            found.append(int(entry.name))
    return found


def _attack_cell(graded, student: str, start: str):
    """The attack cell (the first code cell whose source starts with ``start``) as graded."""
    nb = nbformat.read(graded["out"] / "graded" / student / f"{STEM}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start))
    printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    errors = [o.ename for o in cell.outputs if o.output_type == "error"]
    return printed, errors


def _no_new_processes() -> bool:
    """Whether the sandbox refuses new processes here (bubblewrap with the seccomp filter of sandbox.py)."""
    return sandbox.isolation() == sandbox.STRONG and sandbox.no_new_processes() is not None


def _automatic_points() -> str:
    """What a fully right notebook 04 earns automatically (one-value answers may be left to a justification)."""
    tests = student_edition.hidden_registry()
    specs = grade.course_exercises([STEM])
    return f"{sum(getattr(tests[(s.module, s.checker)], 'auto_points', s.points) for s in specs):g}"


def test_honest_work_and_partial_credit(graded):
    rows = _rows(graded["out"] / "grades.csv")
    assert rows["(max points)"]["total"] == "5"
    assert rows["right"]["total"] == _automatic_points() != "0"
    assert float(rows["wrong"]["total"]) < float(rows["right"]["total"])
    long = list(csv.DictReader((graded["out"] / "grades_long.csv").open()))
    partial = [r for r in long if r["status"] == "partial"]
    for row in partial:  # partial credit: a share of the points, never all or nothing
        assert 0 < float(row["points"]) < float(row["max_points"])


def test_attacks_earn_what_the_honest_work_earns(graded):
    rows = _rows(graded["out"] / "grades.csv")
    assert rows["replace_grader"]["total"] == rows["wrong"]["total"]
    assert rows["spy"]["total"] == rows["right"]["total"]
    assert rows["moved_cells"]["total"] == rows["right"]["total"], "deleted/moved test cells are put back"


def test_student_code_cannot_read_hidden_tests_list_or_write(graded):
    nb = nbformat.read(graded["out"] / "graded" / "spy" / f"{STEM}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                      if o.output_type == "stream")
    assert "cannot list the submissions" in printed  # the attack cell ran
    assert "HIDDEN SOURCE" not in printed
    # A write may succeed only inside the sandbox's private, throw-away space (when the repository lies under
    # /tmp, its path inside the sandbox is on the sandbox's own /tmp): nothing it wrote exists outside.
    for line in printed.splitlines():
        if line.startswith("WROTE "):
            assert not Path(line.removeprefix("WROTE ")).exists(), f"the student's code wrote outside its sandbox: {line}"
    assert not (ROOT / "instructor" / "hidden_tests" / "pwned.py").exists()
    assert not (graded["subs"] / "pwned.txt").exists() and not (ROOT / "pwned.txt").exists()


def test_loop_costs_the_cell_timeout_and_the_rest_is_graded(graded):
    rows = _rows(graded["out"] / "grades.csv")
    assert rows["loop"]["total"] == _automatic_points()
    run = next(r for r in graded["done"]["current"].values() if r["student"] == "loop")
    assert run["seconds"] < 120


def test_memory_cpu_and_process_attacks_earn_what_the_honest_work_earns(graded):
    """Each runs before the first exercise; the limits stop it, the kernel lives on and every exercise is graded."""
    rows = _rows(graded["out"] / "grades.csv")
    runs = {r["student"]: r for r in graded["done"]["current"].values()}
    for attack in ("memory", "fork", "cpu_burn"):
        assert rows[attack]["total"] == rows["right"]["total"] == _automatic_points(), attack
        assert not runs[attack]["run_note"] and runs[attack]["seconds"] < 120, (attack, runs[attack])


def test_memory_attack_is_refused_by_the_memory_limit(graded):
    printed, errors = _attack_cell(graded, "memory", "import resource")
    assert "refused: MemoryError" in printed and "refused: RuntimeError" in printed and "GOT" not in printed
    assert "stopped after" in printed
    assert errors in (["MemoryError"], ["RuntimeError"]), "the memory limit stopped the loop, not the cell timeout"


def test_fork_attack_leaves_no_process_behind(graded):
    printed, errors = _attack_cell(graded, "fork", "import os, subprocess")
    assert graded["leftover"] == [], f"{len(graded['leftover'])} 'sleep {FORK_SECONDS}' outlived the grading"
    if _no_new_processes():
        assert "started 0 children" in printed and errors == ["PermissionError"], printed


def test_cpu_burn_costs_the_cell_timeout(graded):
    printed, errors = _attack_cell(graded, "cpu_burn", "import multiprocessing")
    assert errors == ["KeyboardInterrupt"]  # the grader stopped the cell after --cell-timeout
    if _no_new_processes():  # no spinning process outlives the cell to slow down the rest of the grading
        assert "refused after 0 processes: PermissionError" in printed, printed


def test_crash_keeps_the_points_before_it(graded):
    rows = _rows(graded["out"] / "grades.csv")
    assert rows["crash"]["04.1"] == rows["right"]["04.1"] and rows["crash"]["04.3"] == "0"
    assert rows["right"]["04.3"] == "3"
    text = (graded["out"] / "feedback" / "crash.md").read_text()
    assert "stopped" in text and "not graded" in text


def test_truncated_notebook_says_so(graded):
    rows = _rows(graded["out"] / "grades.csv")
    assert rows["truncated"]["total"] == "0"
    assert "truncated or damaged" in (graded["out"] / "feedback" / "truncated.md").read_text()


def test_feedback_has_no_exception_names_paths_or_hidden_source(graded):
    for path in (graded["out"] / "feedback").glob("*"):
        text = path.read_text()
        assert "Error" not in text and "Traceback" not in text, path.name
        assert str(ROOT) not in text and "/tmp/" not in text and "hidden_tests" not in text, path.name
    wrong = (graded["out"] / "feedback" / "wrong.md").read_text()
    assert "hidden case" in wrong and "❌" in wrong  # the failing case and the checker's hint
    assert (graded["out"] / "feedback" / "wrong.html").read_text().startswith("<!DOCTYPE html>")


def test_statistics_plot_and_platform_export(graded):
    stats = list(csv.DictReader((graded["out"] / "statistics.csv").open()))
    assert [r["exercise"] for r in stats] == ["04.1", "04.2", "04.3"]
    assert all(0 <= float(r["share_solved"]) <= 1 for r in stats)
    assert (graded["out"] / "statistics.png").read_bytes()[:4] == b"\x89PNG"
    assert "platform_id" in (graded["out"] / "platform_grades.csv").read_text().splitlines()[0]


def test_second_run_grades_one_late_student_and_keeps_the_others(graded):
    out, subs = graded["out"], graded["subs"]
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and "feedback" in p.parts}
    before_grades = _rows(out / "grades.csv")
    late = subs / "late"
    make_submission(ROOT / "notebooks" / f"{STEM}.ipynb", graded["edition"] / f"{STEM}.ipynb", "right", late / f"{STEM}.ipynb")
    done = grade.grade(subs, out, jobs=1, limits=LIMITS)
    assert done["graded"] == [("late", STEM)]
    after = _rows(out / "grades.csv")
    assert after["late"]["total"] == _automatic_points()
    assert {k: v for k, v in after.items() if k != "late"} == before_grades
    for path, data in before.items():
        assert path.read_bytes() == data, path.name
    assert len((out / "gradebook" / "runs.jsonl").read_text().splitlines()) == len(before_grades)  # every run kept


def test_override_is_kept_and_shown(graded):
    out = graded["out"]
    grade.main([str(graded["subs"]), "--out", str(out), "--override", "wrong", "04.3", "2", "--reason",
                "right idea, checked by hand", "--cell-timeout", "10"])
    assert _rows(out / "grades.csv")["wrong"]["04.3"] == "2"
    assert "checked by hand" in (out / "feedback" / "wrong.md").read_text()


def test_feedback_text_is_cleaned():
    text = feedback.student_text("Exercise 04.3, hidden case 'x': your code raised IndexError: index 3 is out "
                                 "of bounds in /work/main/instructor/hidden_tests/nb04.py")
    assert "IndexError" not in text and "/work" not in text and "raised an error: index 3" in text


# ------------------------------------------------------------------------------------------------
# collect
# ------------------------------------------------------------------------------------------------


def _notebook_json(grade_id: str = "") -> str:
    cell = {"cell_type": "code", "id": "graded-cell", "metadata": {"nbgrader": {"grade_id": grade_id}}, "source": "",
            "outputs": [], "execution_count": None}  # nbformat 4.5 cells carry an id
    return nbformat.writes(nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                               "cells": [cell] if grade_id else []}))


def test_collect_moodle_with_roster(tmp_path):
    archive = tmp_path / "moodle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("Ada Lovelace_1001_assignsubmission_file_/04_attention.ipynb", _notebook_json())
        zf.writestr("Ada Lovelace_1001_assignsubmission_file_/my copy (1).ipynb",
                    _notebook_json("hidden_nb06_check_decoder_mask"))
        zf.writestr("Alan Turing_1002_assignsubmission_file_/notes.txt", "not a notebook")
        zf.writestr("Mary_Ann O'Neil_2_1004_assignsubmission_file_/04_attention.ipynb", _notebook_json())
    roster = tmp_path / "roster.csv"
    roster.write_text("platform_id,name,student\n1001,Ada Lovelace,ada\n1002,Alan Turing,alan\n1003,Grace Hopper,grace\n"
                      "1004,Mary_Ann O'Neil_2,maryann\n")
    entries = collect.collect(archive, tmp_path / "subs", roster_path=roster)
    assert sorted(entries["ada"].notebooks) == ["04_attention", "06_masking"], "a renamed notebook is matched"
    assert entries["ada"].platform_id == "1001"
    assert not entries["grace"].notebooks and not entries["alan"].notebooks  # on the roster, handed in nothing
    manifest = _rows(tmp_path / "subs" / "manifest.csv")
    assert manifest["grace"]["platform_id"] == "1003" and manifest["grace"]["notebooks"] == ""
    assert entries["maryann"].platform_id == "1004" and sorted(entries["maryann"].notebooks) == ["04_attention"], \
        "a name with underscores and digits keeps its user id (the last number before _assignsubmission)"


def test_collect_canvas_keeps_late_marker_out_of_the_id(tmp_path):
    archive = tmp_path / "canvas.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("lovelaceada_LATE_1001_555_04_attention.ipynb", _notebook_json())
        zf.writestr("lovelaceada_LATE_1001_556_06_masking-1.ipynb", _notebook_json())
        zf.writestr("turingalan_1002_557_04_attention.ipynb", _notebook_json())
    entries = collect.collect(archive, tmp_path / "subs", fmt="canvas")
    assert sorted(entries) == ["lovelaceada", "turingalan"]
    assert entries["lovelaceada"].late and not entries["turingalan"].late
    assert entries["lovelaceada"].platform_id == "1001" and entries["lovelaceada"].submitted_at
    assert sorted(entries["lovelaceada"].notebooks) == ["04_attention", "06_masking"]


def test_max_total_counts_every_exercise_of_the_assigned_notebooks():
    specs = grade.course_exercises(["04_attention", "06_masking"])
    assert sum(s.points for s in specs) == 12


def test_a_seeded_hidden_case_draws_the_same_numbers_in_the_sandbox(tmp_path):
    """08.2's training-mode case seeds the generator before calling the student's layer and again before the
    reference: the grader's random state travels with the call into the kernel and back, so the right answer
    earns every case (without it, dropout drew different numbers in the kernel and the case failed)."""
    stem = "08_encoder"
    student_edition.kernel_environment()
    edition, _ = student_edition.build_student_edition([ROOT / "notebooks" / f"{stem}.ipynb"], tmp_path / "build")
    subs = tmp_path / "submissions"
    make_submission(ROOT / "notebooks" / f"{stem}.ipynb", edition / f"{stem}.ipynb", "right",
                    subs / "right" / f"{stem}.ipynb")
    grade.grade(subs, tmp_path / "out", jobs=1, limits=LIMITS)
    long = {row["exercise"]: row for row in csv.DictReader((tmp_path / "out" / "grades_long.csv").open())}
    assert long["08.2"]["status"] == "passed" and float(long["08.2"]["points"]) == 3.0, long["08.2"]
