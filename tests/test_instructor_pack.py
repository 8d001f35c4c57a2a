"""scripts/instructor_pack.py: the course plan covers every notebook and every graded point; the answer key has
every graded exercise with its worked solution and its grading mode."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pack():
    from scripts import instructor_pack

    return instructor_pack, instructor_pack.student_edition.hidden_registry()


def test_the_plan_has_seven_weeks_every_notebook_and_every_point(pack):
    module, registry = pack
    plan = module.course_plan(registry)
    assert len(re.findall(r"^## Week \d", plan, flags=re.MULTILINE)) == 7
    for number in module.notebook_paths():
        assert re.search(rf"^\| {number} · ", plan, flags=re.MULTILINE), f"notebook {number} is not in the plan"
    total = float(re.search(r"Points over the seven weeks: ([\d.]+)", plan).group(1))
    assert total == sum(test.points for test in registry.values())  # every hidden test's points are handed in
    assert "not stated" not in plan  # every notebook states its run time


def test_a_notebook_left_out_of_the_weeks_is_an_error(pack, monkeypatch):
    module, registry = pack
    monkeypatch.setattr(module, "WEEKS", module.WEEKS[:-1])
    with pytest.raises(ValueError, match="WEEKS leaves out notebooks"):
        module.course_plan(registry)


def test_the_answer_key_has_every_graded_exercise_with_its_solution(pack):
    module, registry = pack
    key = module.answer_key(registry)
    numbers = re.findall(r"^### Exercise (\d\d\.\d+)", key, flags=re.MULTILINE)
    assert sorted(numbers) == sorted(test.exercise for test in registry.values())
    for section in key.split("### Exercise ")[1:]:
        number = section.split(":")[0]
        solution = section.split("\n\n", 2)[-1]  # after the heading and the points line
        assert len(solution.strip()) > 40, f"exercise {number}: no worked solution"
        assert ("graded by hand" in section) != ("hidden cases" in section), number
    assert key.count("```python") >= 28  # the coding exercises' solutions are code
    assert "<details>" not in key and "<summary>" not in key
    assert "no course_lib inside the answer" in key and "softmax" in key  # the rules are stated
