"""Self-checking exercises for the notebooks.

Each notebook ``NN`` has a module ``course_lib.exercises.nbNN`` with one check function per
exercise. A student writes their answer in the notebook cell (a function whose body starts as
``raise NotImplementedError``, or a value that starts as ``None``) and calls the check function,
which prints one line per verdict:

    ✅ Exercise 04.1 passed: all 5 cases agree with the reference.
    ❌ Exercise 04.1: on case 'causal mask, q_len=3': values differ (max abs difference 0.25 at (0, 1, 2)).
    ⏳ Exercise 04.1 not attempted yet: replace `raise NotImplementedError` with your code and run the cell again.

and returns a :class:`CheckResult` (``bool(result)`` is True when the answer passes) so that
tests can verify the checkers themselves. The helpers below are shared by every notebook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check: ``status`` is 'passed', 'failed' or 'not attempted'."""

    exercise: str
    status: str
    message: str

    def __bool__(self) -> bool:
        return self.status == PASSED

    def __str__(self) -> str:
        if self.status == PASSED:
            return f"✅ Exercise {self.exercise} passed: {self.message}"
        if self.status == NOT_ATTEMPTED:
            return f"⏳ Exercise {self.exercise} not attempted yet: {self.message}"
        return f"❌ Exercise {self.exercise}: {self.message}"

    def __repr__(self) -> str:  # a Python shell shows the verdict, not the dataclass
        return str(self)

    def _ipython_display_(self) -> None:
        """Show nothing in Jupyter: the check already printed its verdict (avoids printing it twice)."""


def report(exercise: str, status: str, message: str, quiet: bool = False) -> CheckResult:
    """Build a result and print it (unless ``quiet``)."""
    result = CheckResult(exercise, status, message)
    if not quiet:
        print(result)
    return result


def not_attempted(exercise: str, what: str = "replace `raise NotImplementedError` with your code", quiet=False):
    return report(exercise, NOT_ATTEMPTED, f"{what} and run the cell again.", quiet)


def describe_difference(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> str | None:
    """Explain how ``got`` differs from ``expected`` (tensors, numbers, sequences), or None if they agree."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"expected a torch.Tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return f"expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}"
        if expected.dtype == torch.bool or got.dtype == torch.bool:
            if got.dtype != expected.dtype:
                return f"expected dtype {expected.dtype}, got dtype {got.dtype}"
            wrong = (got != expected).nonzero()
            if len(wrong):
                index = tuple(int(i) for i in wrong[0])
                return f"{len(wrong)} entries differ, first at {index}: expected {bool(expected[index])}, got {bool(got[index])}"
            return None
        got_f, expected_f = got.detach().double(), expected.detach().double()
        if torch.isnan(got_f).any() and not torch.isnan(expected_f).any():
            return "your result contains NaN"
        if not torch.allclose(got_f, expected_f, atol=atol, rtol=rtol):
            diff = (got_f - expected_f).abs()
            index = tuple(int(i) for i in (diff == diff.max()).nonzero()[0])
            return (
                f"values differ (max abs difference {diff.max():.4g} at index {index}: "
                f"expected {expected_f[index]:.4f}, got {got_f[index]:.4f})"
            )
        return None
    if isinstance(expected, float):
        if not isinstance(got, (int, float)):
            return f"expected a number, got {type(got).__name__}"
        return None if abs(got - expected) <= atol + rtol * abs(expected) else f"expected {expected:.4f}, got {got:.4f}"
    if got != expected:
        return f"expected {expected!r}, got {got!r}"
    return None


def check_function(
    exercise: str,
    student_fn: Callable,
    reference_fn: Callable,
    cases: Sequence[tuple[str, tuple]],
    atol: float = 1e-5,
    quiet: bool = False,
) -> CheckResult:
    """Run the student's function and the reference on every case and compare.

    Args:
        exercise: the exercise number shown to the student, e.g. ``"04.1"``.
        student_fn: the student's function.
        reference_fn: the course's solution.
        cases: ``(description, args)`` pairs; ``args`` is the tuple of positional arguments.
        atol: absolute tolerance for tensor comparisons.
        quiet: return the result without printing it.
    """
    for description, args in cases:
        try:
            got = student_fn(*args)
        except NotImplementedError:
            return not_attempted(exercise, quiet=quiet)
        except Exception as exc:  # the student's code crashed: say where and how
            return report(exercise, FAILED, f"on case '{description}' your function raised {type(exc).__name__}: {exc}", quiet)
        difference = describe_difference(got, reference_fn(*args), atol=atol)
        if difference:
            return report(exercise, FAILED, f"on case '{description}': {difference}.", quiet)
    return report(exercise, PASSED, f"all {len(cases)} cases agree with the reference.", quiet)


def check_answer(exercise: str, answer: Any, expected: Any, hint: str = "", atol: float = 1e-3, quiet=False) -> CheckResult:
    """Compare a value the student computed or chose (``None`` means not attempted yet).

    Args:
        exercise: the exercise number, e.g. ``"03.2"``.
        answer: the student's value.
        expected: the right value.
        hint: a sentence added to the failure message to point the student in the right direction.
        atol: tolerance for numbers.
        quiet: return the result without printing it.
    """
    if answer is None:
        return not_attempted(exercise, "set your answer instead of `None`", quiet)
    difference = describe_difference(answer, expected, atol=atol)
    if difference:
        return report(exercise, FAILED, f"{difference}. {hint}".strip(), quiet)
    return report(exercise, PASSED, "correct.", quiet)
