"""The exercise framework: checkers pass right answers, fail wrong ones with specifics, and report unattempted ones."""

import inspect

import torch

from course_lib.exercises import check_answer, check_function, describe_difference


def _unattempted(x):
    raise NotImplementedError


def test_check_function_passes_the_reference(capsys):
    result = check_function("00.1", torch.relu, torch.relu, [("small", (torch.tensor([-1.0, 2.0]),))])
    assert result and "✅ Exercise 00.1 passed" in capsys.readouterr().out


def test_check_function_names_the_failing_case_and_the_difference(capsys):
    cases = [("positive", (torch.tensor([1.0, 2.0]),)), ("mixed signs", (torch.tensor([-1.0, 2.0]),))]
    result = check_function("00.1", torch.abs, torch.relu, cases)
    out = capsys.readouterr().out
    assert not result and result.status == "failed"
    assert "mixed signs" in out and "expected 0.0000, got 1.0000" in out and "index (0,)" in out


def test_check_function_reports_not_attempted_and_crashes(capsys):
    assert check_function("00.2", _unattempted, torch.relu, [("x", (torch.ones(1),))]).status == "not attempted"
    crashed = check_function("00.2", lambda x: x @ torch.ones(5), torch.relu, [("x", (torch.ones(2),))])
    assert crashed.status == "failed" and "raised RuntimeError" in crashed.message


def test_describe_difference_shapes_dtypes_and_bools():
    assert "expected shape (2, 3)" in describe_difference(torch.zeros(3, 2), torch.zeros(2, 3))
    assert "dtype torch.bool" in describe_difference(torch.zeros(2), torch.zeros(2, dtype=torch.bool))
    assert "first at (1,)" in describe_difference(torch.tensor([True, True]), torch.tensor([True, False]))
    assert describe_difference(torch.tensor([1.0]), torch.tensor([1.0 + 1e-7])) is None


def test_check_answer_values():
    assert not check_answer("00.3", None, 4, quiet=True) and check_answer("00.3", None, 4, quiet=True).status == "not attempted"
    assert check_answer("00.3", 4, 4, quiet=True)
    wrong = check_answer("00.3", 5, 4, hint="Count the <pad> tokens too.", quiet=True)
    assert not wrong and "5 is not right" in wrong.message and "Count the <pad>" in wrong.message
    assert "4" not in wrong.message  # the expected value is the answer: never shown
    assert "second entry is wrong" in check_answer("00.5", (2, 5, 3), (2, 4, 3), quiet=True).message
    assert "expected a tuple of 3 entries, got 2" in check_answer("00.5", (2, 4), (2, 4, 3), quiet=True).message
    assert check_answer("00.4", 0.1251, 0.125, quiet=True) and not check_answer("00.4", 0.2, 0.125, quiet=True)


def test_every_exercise_is_declared_once_with_its_number_points_and_kind():
    from course_lib.exercises import EXERCISES, FUNCTION, VALUE, load_all
    from course_lib.exercises.nb04 import check_attention_by_hand

    declared = load_all()
    assert declared is EXERCISES and len(declared) == 48
    assert all(e.kind in (FUNCTION, VALUE) and e.points >= 1 and e.name.startswith("check_") for e in declared.values())
    assert declared["04.3"] is check_attention_by_hand
    assert (check_attention_by_hand.module, check_attention_by_hand.points) == ("nb04", 3)
    assert list(inspect.signature(check_attention_by_hand).parameters) == ["student_fn", "quiet"]


def test_known_mistake_names_the_first_mistake_that_explains_the_answer():
    from course_lib.exercises import known_mistake

    mistakes = [("doubled", lambda x: 2 * x), ("squared", lambda x: x * x), ("broken", lambda x: x / 0)]
    assert known_mistake(mistakes, lambda wrong: wrong(2) == 4) == "doubled"  # the first of two that fit
    assert known_mistake(mistakes[1:], lambda wrong: wrong(3) == 9) == "squared"
    assert known_mistake(mistakes, lambda wrong: wrong(3) == 7, tolerate=(ZeroDivisionError,)) is None
    try:
        known_mistake(mistakes, lambda wrong: wrong(3) == 7)
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("an exception not tolerated must reach the checker")
