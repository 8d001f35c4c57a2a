"""Grading that never falls over (issue 32): clumsy notebooks, odd answers, odd names, and the grader's own failures.

The first part runs without a kernel (a second or two): where an exercise is graded when its check call is
gone, partial credit that depends on the notebook alone, BOM and CRLF, the names students' tools give
files, a worker process that dies, statistics and feedback. The second part grades one batch of notebook 04
in sandboxes (``-j 2``, about a minute on two cores, more when the machine is busy): every notebook that
crashed the grader before (a deleted check call, a syntax error in an exercise cell, a NumPy float answer)
among honest students, plus the names, encodings and attacks of issue 32; every honest row is checked.
"""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

import nbformat
import pytest
import torch

from instructor import executor, feedback, hidden_tests, partial_credit, sandbox
from instructor import gradebook as gb
from instructor.synthetic import make_submission
from scripts import grade, student_edition

ROOT = Path(__file__).resolve().parent.parent

STEM = "04_attention"
LIMITS = sandbox.Limits(cell_seconds=20, notebook_seconds=240, cpu_seconds=120)


# ------------------------------------------------------------------------------------------------
# where an exercise is graded, and on what
# ------------------------------------------------------------------------------------------------


def _spec(exercise="04.3", checker="check_attention_by_hand", arguments="attention_by_hand"):
    return executor.ExerciseSpec(STEM, exercise, "nb04", checker, arguments, 3, "function")


def _cells(*sources, test_cell_after=None):
    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    if test_cell_after is not None:
        test = nbformat.v4.new_code_cell("# hidden")
        test.metadata = {"nbgrader": {"grade_id": "hidden_nb04_check_attention_by_hand"}}
        cells.insert(test_cell_after + 1, test)
    return nbformat.v4.new_notebook(cells=cells)


def test_an_exercise_without_its_check_call_is_graded_at_its_test_cell():
    """Before the fix the place was found but the loop skipped test cells, and the run crashed (KeyError '04.3')."""
    for exercise_cell in ("def attention_by_hand(q, k, v, mask=None):\n    return q", "def attention_by_hand(q,:\n"):
        nb = _cells("import torch", exercise_cell, "print('after')", test_cell_after=1)
        places = executor.grading_points(nb, [_spec()])
        assert list(places) == [2] and places[2][0][1] == "attention_by_hand"


def test_the_check_call_says_what_to_grade():
    nb = _cells("def my_attention(q, k, v, mask=None):\n    return q\nnb04.check_attention_by_hand(my_attention)")
    ((_, arguments),) = executor.grading_points(nb, [_spec()])[0]
    assert arguments == "my_attention"


def test_bom_and_crlf_are_read():
    text = nbformat.writes(_cells("x = 1\nprint(x)")).replace("\n", "\r\n")
    nb = executor.read_notebook(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert nb.cells[0].source == "x = 1\nprint(x)"
    nb = executor.read_notebook(nbformat.writes(_cells("y = 1\r\nprint(y)\r\n")).encode())
    assert nb.cells[0].source == "y = 1\nprint(y)\n"
    with pytest.raises(ValueError, match="truncated or damaged"):
        executor.read_notebook(b'{"cells": [')


# ------------------------------------------------------------------------------------------------
# partial credit: the notebook alone decides
# ------------------------------------------------------------------------------------------------


def _masks(src, tgt, pad_id=0):
    n = tgt.size(1)
    return (src != pad_id)[:, None, None, :], (tgt != pad_id)[:, None, None, :] & torch.ones(n, n).tril().bool()


def _raises_on_pad_2(src, tgt, pad_id=0):
    if pad_id == 2:
        raise IndexError("index 7 is out of bounds for dimension 0 with size 7")
    return _masks(src, tgt, pad_id)


def _list_on_pad_2(src, tgt, pad_id=0):
    return list(_masks(src, tgt, pad_id)) if pad_id == 2 else _masks(src, tgt, pad_id)


def test_partial_credit_comes_from_the_hidden_test_not_from_earlier_notebooks():
    """06.3 has 6 hidden cases: an answer that raises on one of its 3 inputs earns 4 of 6, before and after a
    complete run of the test, and the feedback blames the error (before: 1.0 then 0.67, "2 of 3", "return a
    tuple")."""
    test = hidden_tests.lookup("nb06", "check_fixed_masks")
    first = partial_credit.run_test(test, [_raises_on_pad_2], {})
    assert partial_credit.run_test(test, [_masks], {}).status == "passed"
    again = partial_credit.run_test(test, [_raises_on_pad_2], {})
    for outcome in (first, again):
        assert (outcome.total, round(outcome.earned_share, 3), outcome.status) == (6, round(4 / 6, 3), "partial")
        assert "raised" in outcome.message and "index 7 is out of bounds" in outcome.message
        assert "tuple" not in outcome.message
    row = {"exercise": "06.3", "points": 1.33, "max_points": 2, "status": first.status, "message": first.message,
           "cases": first.cases, "case_total": first.total}
    detail = feedback.rows_for([("06_masking", row)])[0]["detail"]
    assert detail.startswith("4 of 6 hidden cases passed.") and "IndexError" not in detail


def test_a_wrong_structure_fails_its_case_and_the_test_goes_on():
    test = hidden_tests.lookup("nb06", "check_fixed_masks")
    outcome = partial_credit.run_test(test, [_list_on_pad_2], {})
    assert (outcome.total, round(outcome.earned_share, 3)) == (6, round(4 / 6, 3))
    assert "return a tuple" in outcome.message


def test_every_coding_exercise_states_its_number_of_cases():
    for test in hidden_tests.load_all().values():
        assert (test.cases or 0) > 0 if test.kind == hidden_tests.FUNCTION else test.cases is None, test.exercise


# ------------------------------------------------------------------------------------------------
# names
# ------------------------------------------------------------------------------------------------


def _write(path: Path, data: bytes = b"{}", age: float = 0.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_names_students_tools_give_are_matched_and_the_rest_is_listed(tmp_path):
    subs = tmp_path / "subs"
    _write(subs / "ada" / "04_attention (1).ipynb")
    _write(subs / "bob" / "Copy of 04 Attention.ipynb")
    _write(subs / "cy" / "04_ATTENTION.IPYNB")
    _write(subs / "dee" / "04_attention.ipynb", age=100)
    _write(subs / "dee" / "04_attention (1).ipynb")  # a second download: the course's own name wins
    _write(subs / "eve" / "homework.ipynb", b'{"metadata": {"nbgrader": {"grade_id": "hidden_nb06_check_picture"}}}')
    _write(subs / "eve" / "notes.ipynb")
    _write(subs / "eve" / "answers.pdf")
    _write(subs / "Ada Lovelace" / "04_attention.ipynb")
    handed = grade.find_submissions(subs, {"04_attention", "06_masking"})
    assert {k: p.name for k, p in handed.found.items()} == {
        ("ada", STEM): "04_attention (1).ipynb", ("bob", STEM): "Copy of 04 Attention.ipynb",
        ("cy", STEM): "04_ATTENTION.IPYNB", ("dee", STEM): "04_attention.ipynb", ("eve", "06_masking"): "homework.ipynb"}
    assert handed.not_graded["dee"] == ["04_attention (1).ipynb: not graded: 04_attention.ipynb is graded as 04_attention"]
    assert [n.split(":")[0] for n in handed.not_graded["eve"]] == ["answers.pdf", "notes.ipynb"]
    assert handed.problems and handed.problems[0].startswith("Ada Lovelace/")


# ------------------------------------------------------------------------------------------------
# the run goes on: a worker that dies, results saved as they come
# ------------------------------------------------------------------------------------------------


def _fake_init() -> None:
    pass


def _fake_task(student, path, notebook, specs, limits):
    """Stands in for grading: student "dies" kills its worker process, everyone else earns every point."""
    if student == "dies":
        os._exit(3)
    exercises = [executor.ExerciseResult(s.exercise, float(s.points), s.points, "passed") for s in specs]
    return executor.NotebookResult(student, notebook, exercises)


def test_a_worker_that_dies_costs_only_its_own_notebook(tmp_path):
    specs = [_spec()]
    todo = [(sid, STEM, _write(tmp_path / sid / f"{STEM}.ipynb")) for sid in ("a", "dies", "b", "c")]
    saved = []
    grade.grade_all(todo, specs, LIMITS, 2, lambda result, path: saved.append(result), _fake_task, _fake_init)
    by_student = {r.student: r for r in saved}
    assert sorted(by_student) == ["a", "b", "c", "dies"]
    assert all(by_student[s].exercises[0].points == 3 for s in "abc")
    assert by_student["dies"].exercises[0].status == "not graded" and "died" in by_student["dies"].run_note


def test_a_run_stopped_half_way_keeps_what_it_graded(tmp_path, monkeypatch):
    """The first notebook is saved to the gradebook as soon as it is graded; the run is then interrupted: the
    reports are still written, and the next run grades only the notebook left (before the fix nothing was kept)."""
    subs = tmp_path / "subs"
    for sid in ("first", "second"):
        _write(subs / sid / f"{STEM}.ipynb", nbformat.writes(_cells("x = 1")).encode())

    def interrupted(todo, specs, limits, jobs, save):
        sid, nb, path = todo[0]
        save(_fake_task(sid, str(path), nb, [s for s in specs if s.notebook == nb], limits), path)
        raise KeyboardInterrupt

    monkeypatch.setattr(grade, "grade_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        grade.grade(subs, tmp_path / "out", limits=LIMITS)
    runs = [json.loads(line) for line in (tmp_path / "out" / "gradebook" / "runs.jsonl").read_text().splitlines()]
    assert [r["student"] for r in runs] == ["first"]
    with (tmp_path / "out" / "grades.csv").open(encoding="utf-8") as handle:
        assert {row["student"]: row["total"] for row in csv.DictReader(handle)}["first"] == "5"
    left = []
    monkeypatch.setattr(grade, "grade_all", lambda todo, *rest: left.extend(sid for sid, _, _ in todo))
    grade.grade(subs, tmp_path / "out", limits=LIMITS)
    assert left == ["second"]


# ------------------------------------------------------------------------------------------------
# statistics and feedback
# ------------------------------------------------------------------------------------------------


def test_statistics_count_hand_graded_and_unreadable_apart():
    specs = [executor.ExerciseSpec(STEM, "04.1", "nb04", "check_dot_product_variance", "a", 1, "value"),
             _spec()]

    def row(points_41, status_41, points_43, unreadable=False, override=""):
        first = {"exercise": "04.1", "points": points_41, "status": status_41, "cases": {}}
        if override:
            first["override"] = override
        return {"unreadable": unreadable, "exercises": [first, {"exercise": "04.3", "points": points_43,
                                                                "status": "passed", "cases": {}}]}

    current = {("a", STEM): row(0.0, "passed", 3), ("b", STEM): row(1.0, "passed", 3, override="good reasoning"),
               ("c", STEM): row(0.0, "not graded", 0, unreadable=True)}
    table = {r["exercise"]: r for r in gb.statistics(current, specs)}
    assert table["04.1"]["graded_by"].startswith("by hand") and table["04.3"]["graded_by"] == "hidden tests"
    assert (table["04.1"]["graded"], table["04.1"]["by_hand"], table["04.1"]["unreadable"]) == (2, 1, 1)
    assert table["04.1"]["share_solved"] == 1.0 and table["04.3"]["share_solved"] == 1.0


def test_feedback_stays_short_whatever_the_code_raised():
    noise = "RuntimeError: " + "Multiple dispatch failed for 'aten::allclose'; all __torch_function__ handlers " * 60
    row = {"exercise": "04.3", "points": 0, "max_points": 3, "status": "failed", "message": noise,
           "cases": {"c": noise}, "case_total": 6}
    (shown,) = feedback.rows_for([(STEM, row)])
    assert len(shown["detail"]) < 450 and shown["detail"].startswith("0 of 6 hidden cases passed.")
    assert "Error" not in shown["detail"]


# ------------------------------------------------------------------------------------------------
# one grading batch in sandboxes: every crash of issue 32 among honest students
# ------------------------------------------------------------------------------------------------

SOFTMAX = ("def attention_by_hand(q, k, v, mask=None):\n"
           "    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5\n"
           "    if mask is not None:\n"
           "        scores = scores.masked_fill(~mask, float('-inf'))\n"
           "    return torch.softmax(scores, dim=-1) @ v\n")
SWITCHES = {  # each tries to switch the rules off from a notebook cell; then the answer uses softmax
    "rules_flag": "import course_rules\ncourse_rules._enforced = False\n",
    "rules_functions": ("import contextlib, course_rules\n"
                        "course_rules.traced = lambda *a, **k: contextlib.nullcontext()\n"
                        "course_rules.check_answer = lambda *a, **k: None\n"),
    "helper_replaced": ("import contextlib, sys, types\nside = sys.modules['grader_kernel_side']\n"
                        "real_serve = side.serve\n"
                        "def serve(*args):\n"
                        "    rules = types.SimpleNamespace(check_answer=lambda *a, **k: None,\n"
                        "                                  traced=lambda *a, **k: contextlib.nullcontext())\n"
                        "    real_fresh = side.fresh_rules\n"
                        "    side.fresh_rules = lambda source: types.SimpleNamespace(**{**vars(real_fresh(source)),\n"
                        "                                                              **vars(rules)})\n"
                        "    try:\n        return real_serve(*args)\n    finally:\n        side.fresh_rules = real_fresh\n"
                        "side.serve = serve\n"
                        "import course_rules\ncourse_rules.traced = rules.traced\n"),
    "hooks_patched": ("import sys, torch\n"
                      "sys.setprofile = lambda f: None\n"
                      "sys.getprofile = lambda: sys._getframe(1).f_locals.get('profiler')\n"
                      "torch.overrides.TorchFunctionMode.__enter__ = lambda self: self\n"
                      "torch.overrides.TorchFunctionMode.__exit__ = lambda self, *a: None\n"),
    "thread": "",  # the answer computes in a thread of its own (below)
    "background_thread": ("import threading, time\n"
                          "def keep_watch():\n    while True:\n        time.sleep(0.01)\n"
                          "threading.Thread(target=keep_watch, daemon=True).start()\n"),
}
IN_A_THREAD = ("import threading\n_softmax_answer = attention_by_hand\n"
               "def attention_by_hand(q, k, v, mask=None):\n    out = []\n"
               "    worker = threading.Thread(target=lambda: out.append(_softmax_answer(q, k, v, mask)))\n"
               "    worker.start()\n    worker.join()\n    return out[0]\n")


def _switched(switch: str, source: str) -> str:
    """The exercise cell with ``switch`` tried first (its errors printed, not raised) and a softmax answer."""
    tried = "try:\n" + "".join(f"    {line}\n" for line in (switch or "pass").splitlines()) + \
        "except Exception as exc:\n    print('the switch failed:', exc)\n"
    answer = SOFTMAX + (IN_A_THREAD if switch == "" else "")
    return source.replace("nb04.check_attention_by_hand(", f"{tried}{answer}\nnb04.check_attention_by_hand(")


POSER = '''class Poser(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("Multiple dispatch failed for " + str(func) + "; " + "x" * 4000)

def attention_by_hand(q, k, v, mask=None):
    return torch.zeros(1).as_subclass(Poser)
'''
FAKE_TICK = 'print("[grader] Exercise 04.3: 3 of 3 points (passed)")\nprint("✅ Exercise 04.3: all hidden cases pass")\n'


def _edit_cell(nb, checker: str, edit) -> None:
    cell = next(c for c in nb.cells if c.cell_type == "code" and f".{checker}(" in c.source)
    cell.source = edit(cell.source)


def _variant(right: Path, target: Path, edit=None, checker="check_attention_by_hand", encoding=None) -> None:
    nb = nbformat.read(right, as_version=4)
    if edit is not None:
        _edit_cell(nb, checker, edit)
    text = nbformat.writes(nb)
    target.parent.mkdir(parents=True, exist_ok=True)
    if encoding == "bom+crlf":
        target.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    else:
        target.write_text(text, encoding="utf-8")


def _without_check(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if ".check_" not in line)


def _renamed(source: str) -> str:
    """The solution bound to ``my_attention`` and passed to the check; the handed-out stub is left as it was."""
    head, _, tail = source.rpartition("def attention_by_hand(")
    return (head + "def my_attention(" + tail).replace("check_attention_by_hand(attention_by_hand",
                                                       "check_attention_by_hand(my_attention")


def _batch(subs: Path, edition: Path) -> None:
    """The honest students, and one student per crash, name, encoding and attack (see the module docstring)."""
    course = ROOT / "notebooks" / f"{STEM}.ipynb"
    right = subs / "honest_a" / f"{STEM}.ipynb"
    make_submission(course, edition / f"{STEM}.ipynb", "right", right)
    make_submission(course, edition / f"{STEM}.ipynb", "right", subs / "honest_b" / f"{STEM}.ipynb")
    make_submission(course, edition / f"{STEM}.ipynb", "wrong", subs / "honest_wrong" / f"{STEM}.ipynb")
    _variant(right, subs / "no_check_call" / f"{STEM}.ipynb", _without_check)
    _variant(right, subs / "syntax_error" / f"{STEM}.ipynb", lambda s: "def broken(:\n" + s)
    _variant(right, subs / "numpy_float" / f"{STEM}.ipynb",
             lambda s: s.replace("nb04.check_dot_product_variance(", "import numpy as np\n"
                                 "answer_04_1 = np.float64(answer_04_1)\nnb04.check_dot_product_variance("),
             checker="check_dot_product_variance")
    _variant(right, subs / "bom_crlf" / f"{STEM}.ipynb", encoding="bom+crlf")
    _variant(right, subs / "browser_copy" / f"{STEM} (1).ipynb")
    _variant(right, subs / "platform_copy" / "Copy of 04 Attention.ipynb")
    _variant(right, subs / "renamed_answer" / f"{STEM}.ipynb", _renamed)
    _variant(right, subs / "poser" / f"{STEM}.ipynb", lambda s: s.replace(
        "nb04.check_attention_by_hand(", POSER + "\nnb04.check_attention_by_hand("))
    _variant(right, subs / "fake_tick" / f"{STEM}.ipynb", lambda s: s + "\n" + FAKE_TICK)
    for name, switch in SWITCHES.items():
        _variant(right, subs / f"switch_{name}" / f"{STEM}.ipynb", lambda s, switch=switch: _switched(switch, s))
    _write(subs / "honest_b" / "scratch.ipynb", b'{"cells": []}')  # matches nothing: listed, not dropped


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resilience")
    student_edition.kernel_environment()
    edition, _ = student_edition.build_student_edition([ROOT / "notebooks" / f"{STEM}.ipynb"], tmp / "build")
    subs = tmp / "submissions"
    _batch(subs, edition)
    out = tmp / "out"
    start = time.monotonic()
    done = grade.grade(subs, out, jobs=2, limits=LIMITS)
    seconds = time.monotonic() - start
    print(f"\ngraded {len(done['graded'])} notebooks in {seconds:.0f} s")
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    with (out / "grades_long.csv").open(encoding="utf-8") as handle:
        long = {(row["student"], row["exercise"]): row for row in csv.DictReader(handle)}
    return {"out": out, "done": done, "rows": rows, "long": long, "subs": subs}


def _automatic(batch) -> str:
    return batch["rows"]["honest_a"]["total"]


def test_the_batch_is_graded_to_the_end_and_every_honest_row_is_right(batch):
    rows = batch["rows"]
    assert len(batch["done"]["graded"]) == len(rows) - 1  # every notebook graded; the row "(max points)" aside
    assert float(_automatic(batch)) == 3 and rows["honest_b"]["total"] == _automatic(batch)
    assert float(rows["honest_wrong"]["total"]) < 3
    runs = (batch["out"] / "gradebook" / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(runs) == len(rows) - 1 and len({json.loads(r)["run"] for r in runs}) == 1


@pytest.mark.parametrize("student", ["no_check_call", "syntax_error"])
def test_a_missing_or_broken_check_call_is_graded_at_the_test_cell(batch, student):
    long = batch["long"]
    assert long[(student, "04.1")]["status"] == long[("honest_a", "04.1")]["status"] == "passed"
    if student == "no_check_call":  # the answer is still defined: it is graded
        assert long[(student, "04.3")]["points"] == "3", long[(student, "04.3")]
    else:  # the exercise cell does not run: its answer is not defined
        assert long[(student, "04.3")]["status"] == "failed" and "not defined" in long[(student, "04.3")]["message"]


def test_a_numpy_float_answer_is_graded(batch):
    assert batch["long"][("numpy_float", "04.1")]["status"] == "passed"
    assert batch["rows"]["numpy_float"]["total"] == _automatic(batch)


@pytest.mark.parametrize("student", ["bom_crlf", "browser_copy", "platform_copy", "renamed_answer"])
def test_names_encodings_and_renamed_answers_are_graded(batch, student):
    assert batch["rows"][student]["total"] == _automatic(batch), batch["long"].get((student, "04.3"))


def test_files_that_match_nothing_are_listed_in_the_feedback(batch):
    assert batch["done"]["not_graded"]["honest_b"] == [
        "scratch.ipynb: not graded: neither its name nor its cells say which course notebook it is"]
    assert "scratch.ipynb" in (batch["out"] / "feedback" / "honest_b.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("switch", sorted(SWITCHES))
def test_no_switch_in_the_notebook_turns_the_rules_off(batch, switch):
    row = batch["long"][(f"switch_{switch}", "04.3")]
    assert (row["points"], row["status"]) == ("0", "broke a rule"), row


def test_a_tensor_posing_as_torch_tensor_gets_short_feedback(batch):
    row = batch["long"][("poser", "04.3")]
    assert row["points"] == "0" and len(row["message"]) <= executor.MESSAGE_CHARS
    text = (batch["out"] / "feedback" / "poser.md").read_text(encoding="utf-8")
    assert len(text) < 3000 and "xxxxxxxxxx" * 10 not in text


def test_graded_copies_mark_the_grader_s_lines(batch):
    nb = nbformat.read(batch["out"] / "graded" / "fake_tick" / f"{STEM}.ipynb", as_version=4)
    lines = [line for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("text")
             for line in o["text"].splitlines()]
    grader = [line for line in lines if line.startswith(executor.GRADER_MARK)]
    assert grader and all("printed by the notebook" not in line for line in grader)
    assert f"{executor.NOTEBOOK_MARK} [grader] Exercise 04.3: 3 of 3 points (passed)" in lines
    graded_cells = [c for c in nb.cells if "course_grader" in c.metadata]
    assert len(graded_cells) == 3


def test_statistics_of_the_batch(batch):
    with (batch["out"] / "statistics.csv").open(encoding="utf-8") as handle:
        stats = {row["exercise"]: row for row in csv.DictReader(handle)}
    assert stats["04.1"]["graded_by"].startswith("by hand") and float(stats["04.1"]["share_solved"]) > 0.5
    assert stats["04.3"]["graded_by"] == "hidden tests"
