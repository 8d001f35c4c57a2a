"""Hidden tests that grade the course's exercises (instructors only; never handed out).

The public checkers in ``course_lib/exercises/`` are for self-study: students can read them, so
their cases can be copied or hard-coded. These tests use **other inputs** (other seeds, shapes,
sentences and special cases) and their own references, so only a general solution passes them.
They live outside the ``course_lib`` package and outside the student edition:
``scripts/student_edition.py`` puts a call to :func:`grade` inside nbgrader's
``### BEGIN HIDDEN TESTS`` markers after every exercise cell, nbgrader strips it from the student
edition and restores it when it autogrades a submission, with this folder on ``PYTHONPATH``.

Each module ``nbNN`` registers one test per public checker with :func:`hidden_test`; the test
receives the same arguments as the checker call in the notebook (the student's function, class or
value) and raises :class:`AssertionError` with a message for the student's feedback when the answer
is wrong or unattempted.

Exercises whose answer is one value (a number, a shape, a choice) have only one right answer,
which the public checker necessarily knows: their hidden test checks the value against a
reference kept here, and they are worth 1 point. Exercises that ask for code are worth 2 or 3
points and are graded on hidden inputs.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

FUNCTION, VALUE = "function", "value"


@dataclass(frozen=True)
class HiddenTest:
    """One exercise's hidden test.

    Attributes:
        module: the notebook's checker module, e.g. ``"nb04"``.
        checker: the public check function the notebook calls, e.g. ``"check_attention_by_hand"``.
        exercise: the exercise number shown to students, e.g. ``"04.3"``.
        points: points the exercise is worth.
        kind: ``"function"`` (graded on hidden inputs) or ``"value"`` (one right answer).
        run: the test; raises AssertionError when the answer is wrong.
    """

    module: str
    checker: str
    exercise: str
    points: int
    kind: str
    run: Callable[..., None]


REGISTRY: dict[tuple[str, str], HiddenTest] = {}
MODULES = sorted(path.stem for path in Path(__file__).parent.glob("nb[0-9][0-9].py"))  # nb00 ... one per notebook


def hidden_test(checker: str, exercise: str, points: int, kind: str = FUNCTION):
    """Register the decorated function as the hidden test of ``checker`` in the calling module.

    Args:
        checker: the name of the public check function, e.g. ``"check_decoder_mask"``.
        exercise: the exercise number, e.g. ``"06.1"``.
        points: points for a right answer.
        kind: ``"function"`` or ``"value"``.
    """
    if kind not in (FUNCTION, VALUE):
        raise ValueError(f"kind must be {FUNCTION!r} or {VALUE!r}, got {kind!r}")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        module = fn.__module__.rsplit(".", 1)[-1]
        key = (module, checker)
        if key in REGISTRY:
            raise ValueError(f"two hidden tests for {module}.{checker}")
        REGISTRY[key] = HiddenTest(module, checker, exercise, points, kind, fn)
        return fn

    return register


def load_all() -> dict[tuple[str, str], HiddenTest]:
    """Import every ``nbNN`` module that exists here and return the registry."""
    for name in MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return REGISTRY


def lookup(module: str, checker: str) -> HiddenTest | None:
    """The hidden test of ``module.checker``, or None when there is none."""
    load_all()
    return REGISTRY.get((module, checker))


def grade(module: str, checker: str, *args: Any) -> None:
    """Run the hidden test of ``module.checker`` on the student's answer (called from the graded notebook).

    Prints a one-line verdict when the answer passes; raises AssertionError (0 points) otherwise.
    """
    test = lookup(module, checker)
    if test is None:
        raise LookupError(f"no hidden test for {module}.{checker}: add one to instructor/hidden_tests/{module}.py")
    torch.manual_seed(0)
    try:
        test.run(*args)
    except AssertionError:
        raise
    except Exception as exc:  # the answer broke the test itself (wrong type or size): no points, say why
        raise AssertionError(f"Exercise {test.exercise}: your answer could not be tested on the hidden cases "
                             f"({type(exc).__name__}: {exc}).") from None
    unit = "point" if test.points == 1 else "points"
    print(f"Exercise {test.exercise}: the hidden tests pass ({test.points} of {test.points} {unit}).")


# ------------------------------------------------------------------------------------------------
# helpers for the tests
# ------------------------------------------------------------------------------------------------


class NotAttempted(AssertionError):
    """The student left the exercise as handed out."""


def not_attempted(exercise: str) -> NotAttempted:
    return NotAttempted(f"Exercise {exercise} was not attempted (it still raises NotImplementedError or is None).")


def call(exercise: str, fn: Callable, case: str, *args: Any, **kwargs: Any) -> Any:
    """Call the student's ``fn``; turn NotImplementedError and crashes into AssertionErrors that say where."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise not_attempted(exercise) from None
    except Exception as exc:  # the student's code crashed on a hidden case
        raise AssertionError(f"Exercise {exercise}, hidden case '{case}': your code raised "
                             f"{type(exc).__name__}: {exc}") from None


def difference(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> str | None:
    """How ``got`` differs from ``expected`` (tensors, numbers, sequences), or None when they agree."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"expected a torch.Tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return f"expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
        if expected.dtype == torch.bool or got.dtype == torch.bool:
            if got.dtype != expected.dtype:
                return f"expected dtype {expected.dtype}, got {got.dtype}"
            wrong = int((got != expected).sum())
            return f"{wrong} entries differ" if wrong else None
        got_f, expected_f = got.detach().double(), expected.detach().double()
        if torch.isnan(got_f).any() and not torch.isnan(expected_f).any():
            return "your result contains NaN"
        if not torch.allclose(got_f, expected_f, atol=atol, rtol=rtol, equal_nan=True):
            return f"values differ (max abs difference {float((got_f - expected_f).abs().nan_to_num(math.inf).max()):.3g})"
        return None
    if isinstance(expected, float):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = float(got)
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return f"expected a number, got {type(got).__name__}"
        return None if abs(got - expected) <= atol + rtol * abs(expected) else "wrong value"
    if isinstance(expected, (tuple, list)) and isinstance(got, (tuple, list)) and len(got) == len(expected) and any(
        isinstance(e, (torch.Tensor, float)) for e in expected
    ):
        for index, (g, e) in enumerate(zip(got, expected, strict=True)):
            why = difference(g, e, atol, rtol)
            if why:
                return f"element {index}: {why}"
        return None
    return None if got == expected else "wrong result"


def expect(exercise: str, case: str, got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Raise an AssertionError naming the hidden case when ``got`` differs from ``expected``."""
    why = difference(got, expected, atol, rtol)
    if why:
        raise AssertionError(f"Exercise {exercise}, hidden case '{case}': {why}.")


def check_value(exercise: str, answer: Any, expected: Any, atol: float = 1e-3, rtol: float = 0.0) -> None:
    """A one-value exercise: None means not attempted, anything else must equal ``expected``."""
    if answer is None or (isinstance(answer, tuple) and all(a is None for a in answer)):
        raise not_attempted(exercise)
    if isinstance(expected, float) and isinstance(answer, (int, float, torch.Tensor)) and not isinstance(answer, bool):
        answer = float(answer)
    if difference(answer, expected, atol=atol, rtol=rtol):
        shown = answer.int().tolist() if isinstance(answer, torch.Tensor) else answer
        raise AssertionError(f"Exercise {exercise}: your answer {shown!r} is not right.")


def generator(seed: int) -> torch.Generator:
    """A torch generator seeded with one of the hidden seeds (never one of the public checkers')."""
    return torch.Generator().manual_seed(seed)
