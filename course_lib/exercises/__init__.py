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

Feedback policy (the same for every checker, tested in ``tests/test_exercises_policy.py``):

* a wrong answer names the failing case (or the part of the question) and gives a hint toward the
  mistake; when the mistake is a recognisable one, the hint names that mistake;
* the expected value is never printed when it is the answer itself (a number, a shape, a token, a
  list of ids): :func:`check_answer` says *that* a value is wrong, never what the right one is.
  Function exercises may show what the reference returns on one test case, because the answer is
  the function, not that value;
* a function that still raises ``NotImplementedError`` (or a value left as ``None``) is "not attempted";
  a function that crashes fails with the case and the exception. :func:`call_student` does both.

An exercise is declared once, where its checker is written: :func:`exercise` turns the check function
into an :class:`Exercise` holding the number, the points and the kind of answer, and hands itself to the
function as its first argument, so the number is typed only in the declaration::

    @exercise("04.1", points=1, kind=VALUE)
    def check_dot_product_variance(ex, answer, quiet: bool = False):
        return ex.check_answer(answer, 64.0, hint=..., quiet=quiet)

The notebook calls ``check_dot_product_variance(answer)`` as before; the hidden test that grades it
(``instructor/hidden_tests/nb04.py``) names this object. A wrong answer that a known mistake explains
gets that mistake's hint through :func:`known_mistake`, the one loop over a list of known mistakes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"
FUNCTION, VALUE = "function", "value"  # the kinds of answer: code graded on hidden inputs, or one value


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
    """Report that the student has not answered yet; ``what`` says what to do (without a final full stop)."""
    return report(exercise, NOT_ATTEMPTED, f"{what} and run the cell again.", quiet)


def call_student(
    exercise: str,
    student_fn: Callable,
    args: tuple = (),
    case: str | None = None,
    who: str = "your function",
    todo: str = "replace `raise NotImplementedError` with your code",
    quiet: bool = False,
) -> tuple[Any, CheckResult | None]:
    """Call the student's code once, turning "not written yet" and crashes into verdicts.

    Args:
        exercise: the exercise number, e.g. ``"04.3"``.
        student_fn: the student's function (or class: it is simply called).
        args: positional arguments of the call.
        case: the name of the test case, shown when the call crashes.
        who: how the message names the code that crashed (``"your function"``, ``"merge_heads"``, ...).
        todo: what the not-attempted line asks the student to do.
        quiet: build the verdict without printing it.

    Returns:
        ``(value, None)`` when the call returned, ``(None, verdict)`` when it raised: 'not attempted' for
        ``NotImplementedError``, 'failed' (naming the case and the exception) for anything else.
    """
    try:
        return student_fn(*args), None
    except NotImplementedError:
        return None, not_attempted(exercise, todo, quiet)
    except Exception as exc:  # the student's code crashed: say where and how
        where = f"on case '{case}' " if case else ""
        return None, report(exercise, FAILED, f"{where}{who} raised {type(exc).__name__}: {exc}", quiet)


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
        got, verdict = call_student(exercise, student_fn, args, case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        difference = describe_difference(got, reference_fn(*args), atol=atol)
        if difference:
            return report(exercise, FAILED, f"on case '{description}': {difference}.", quiet)
    return report(exercise, PASSED, f"all {len(cases)} cases agree with the reference.", quiet)


def _show(value: Any) -> str:
    """The student's value as the message shows it (numbers rounded, strings quoted)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def describe_wrong_answer(answer: Any, expected: Any, atol: float = 1e-3, rtol: float = 0.0) -> str | None:
    """Say what is wrong with a value answer WITHOUT quoting ``expected``, or None if the answer is right.

    Type and length problems are named (they are the form of the answer, not the answer); for a tuple or list
    of the right length the wrong positions are named; otherwise the message only says the value is not right.
    """
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(answer, torch.Tensor) and answer.numel() == 1:
            answer = answer.item()
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            return f"expected a number, got {type(answer).__name__}"
        if isinstance(expected, int) and isinstance(answer, float) and not answer.is_integer():
            return f"expected a whole number, got {_show(answer)}"
        if abs(answer - expected) <= atol + rtol * abs(expected):
            return None
        return f"{_show(answer)} is not right"
    if isinstance(expected, str):
        if not isinstance(answer, str):
            return f"expected a string, got {type(answer).__name__}"
        return None if answer.strip() == expected else f"{_show(answer)} is not right"
    if isinstance(expected, (tuple, list)):
        if isinstance(answer, torch.Size):
            answer = tuple(answer)
        kind = type(expected).__name__
        if not isinstance(answer, (tuple, list)):
            return f"expected a {kind}, got {type(answer).__name__}"
        if len(answer) != len(expected):
            return f"expected a {kind} of {len(expected)} entries, got {len(answer)}"
        wrong = [i for i, (a, e) in enumerate(zip(answer, expected, strict=True))
                 if describe_wrong_answer(a, e, atol, rtol) is not None]
        if not wrong:
            return None
        names = [_ORDINALS[i] if i < len(_ORDINALS) else f"#{i + 1}" for i in wrong]
        which = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{_show(answer)} is not right: the {which} {'entry is' if len(wrong) == 1 else 'entries are'} wrong"
    return None if answer == expected else f"{_show(answer)} is not right"


def check_answer(exercise: str, answer: Any, expected: Any, hint: str = "", atol: float = 1e-3, quiet=False) -> CheckResult:
    """Compare a value the student computed or chose (``None`` means not attempted yet).

    The failure message never shows ``expected`` (it is the answer): it says what is wrong with the
    form of the answer, or that the value is not right, followed by ``hint``.

    Args:
        exercise: the exercise number, e.g. ``"03.2"``.
        answer: the student's value.
        expected: the right value (a number, string, tuple or list).
        hint: a sentence added to the failure message to point the student in the right direction.
        atol: tolerance for numbers.
        quiet: return the result without printing it.
    """
    if answer is None:
        return not_attempted(exercise, "set your answer instead of `None`", quiet)
    difference = describe_wrong_answer(answer, expected, atol=atol)
    if difference:
        return report(exercise, FAILED, f"{difference}. {hint}".strip(), quiet)
    return report(exercise, PASSED, "correct.", quiet)


def known_mistake(mistakes: Iterable[tuple[str, Any]], matches: Callable[[Any], bool],
                  tolerate: tuple[type[BaseException], ...] = ()) -> str | None:
    """The message of the first known mistake that explains the student's answer, or None.

    Every checker that recognises mistakes goes through this loop: it lists the mistakes as
    ``(message, wrong)`` pairs and says how to recognise one.

    Args:
        mistakes: ``(message, wrong)`` pairs in the order to try them; ``wrong`` is whatever ``matches`` takes
            (usually a function computing what that mistake returns).
        matches: ``matches(wrong)`` is True when the student's answer is what that mistake gives.
        tolerate: exceptions raised by ``matches`` that mean "not this mistake" (e.g. a mistake whose shapes
            only fit some cases).
    """
    for message, wrong in mistakes:
        try:
            if matches(wrong):
                return message
        except tolerate:
            continue
    return None


class Exercise:
    """One exercise, declared once with :func:`exercise`: its number, points, kind and checker.

    Calling it runs the checker (``check_encode(encode)`` in the notebook); the checker receives this
    object first and reports through it, so its number is written nowhere else.

    Attributes:
        id: the exercise number shown to students, e.g. ``"04.3"``.
        points: points the exercise is worth when graded.
        kind: :data:`FUNCTION` (code, graded on hidden inputs) or :data:`VALUE` (one right value).
        check: the check function, ``check(exercise, *answers, quiet=False)``.
        module: the checker module's short name, e.g. ``"nb04"``.
        name: the checker's name as notebooks call it, e.g. ``"check_attention_by_hand"``.
    """

    def __init__(self, id: str, check: Callable[..., CheckResult], points: int, kind: str = FUNCTION):
        if kind not in (FUNCTION, VALUE):
            raise ValueError(f"exercise {id}: kind must be {FUNCTION!r} or {VALUE!r}, got {kind!r}")
        self.id, self.check, self.points, self.kind = id, check, points, kind
        self.module = check.__module__.rsplit(".", 1)[-1]
        self.name = check.__name__
        functools.update_wrapper(self, check)
        parameters = list(inspect.signature(check).parameters.values())[1:]  # without the exercise itself
        self.__signature__ = inspect.Signature(parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> CheckResult:
        return self.check(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<exercise {self.id}: {self.module}.{self.name}, {self.points} point(s), {self.kind}>"

    def __reduce__(self) -> str:
        return self.name  # pickled by reference, as the module attribute it is

    # The shared helpers, with this exercise's number filled in.
    def report(self, status: str, message: str, quiet: bool = False) -> CheckResult:
        return report(self.id, status, message, quiet)

    def not_attempted(self, what: str = "replace `raise NotImplementedError` with your code", quiet=False):
        return not_attempted(self.id, what, quiet)

    def call_student(self, student_fn: Callable, args: tuple = (), **options: Any) -> tuple[Any, CheckResult | None]:
        return call_student(self.id, student_fn, args, **options)

    def check_answer(self, answer: Any, expected: Any, **options: Any) -> CheckResult:
        return check_answer(self.id, answer, expected, **options)

    def check_function(self, student_fn: Callable, reference_fn: Callable, cases, **options: Any) -> CheckResult:
        return check_function(self.id, student_fn, reference_fn, cases, **options)


EXERCISES: dict[str, Exercise] = {}  # exercise number -> its declaration, filled as nb00 ... nb15 are imported


def exercise(id: str, points: int, kind: str = FUNCTION) -> Callable[[Callable[..., CheckResult]], Exercise]:
    """Declare an exercise: decorate its check function, which becomes the :class:`Exercise`.

    Args:
        id: the exercise number, e.g. ``"04.3"`` (written here and nowhere else).
        points: points for a right answer when the exercise is graded.
        kind: :data:`FUNCTION` or :data:`VALUE`.
    """

    def declare(check: Callable[..., CheckResult]) -> Exercise:
        declared = Exercise(id, check, points, kind)
        previous = EXERCISES.get(id)
        if previous is not None and (previous.module, previous.name) != (declared.module, declared.name):
            raise ValueError(f"exercise {id} is declared twice: {previous.module}.{previous.name} and "
                             f"{declared.module}.{declared.name}")
        EXERCISES[id] = declared
        return declared

    return declare


def load_all() -> dict[str, Exercise]:
    """Import every checker module (``nb00`` ... ) and return :data:`EXERCISES`."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("nb"):
            importlib.import_module(f"{__name__}.{info.name}")
    return EXERCISES
