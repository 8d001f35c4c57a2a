"""Hidden tests that grade the course's exercises (instructors only; never handed out).

The public checkers in ``course_lib/exercises/`` are for self-study: students can read them, so
their cases can be copied or hard-coded. These tests use **other inputs** (other seeds, shapes,
sentences and special cases) and their own references, so only a general solution passes them.
They live outside the ``course_lib`` package and outside the student edition:
``scripts/student_edition.py`` puts a call to :func:`grade` inside nbgrader's
``### BEGIN HIDDEN TESTS`` markers after every exercise cell, nbgrader strips it from the student
edition and restores it when it autogrades a submission, with the repository root on ``PYTHONPATH``
(the cell imports ``from instructor import hidden_tests``).

Each module ``nbNN`` registers one test per exercise with :func:`hidden_test`, naming the exercise's
declaration (``course_lib.exercises.nbNN.check_...``, an :class:`~course_lib.exercises.Exercise` that holds
its number, points and kind); the test receives a :class:`Grader` for that exercise, then the same
arguments as the checker call in the notebook (the student's function, class or value), and raises
:class:`AssertionError` with a message for the student's feedback when the answer is wrong or
unattempted::

    @hidden_test(nb01.check_encode, cases=5)
    def encode(grader, student_fn):
        for case, tokens, stoi in cases:
            got = grader.call(student_fn, case, list(tokens), dict(stoi))
            grader.expect(case, got, reference(tokens, stoi))

The test talks to the student's code and compares results only through its grader, so a grader that
gives partial credit (``instructor/partial_credit.py``) passes its own :class:`Grader` to
:meth:`HiddenTest.run_with` instead of replacing functions in these modules.

Exercises that ask for code are worth 2 or 3 points and are graded on hidden inputs, under the
exercise's rules (:mod:`hidden_tests.rules`): an answer that is, wraps or imports course_lib's own
solution, or breaks a "without X" rule of the exercise text, scores 0 with a
:class:`~hidden_tests.rules.RuleViolation` that says why. Each test declares its rules with
``@hidden_test(..., rules=Rules(...))`` and calls the student's code only through :meth:`Grader.call`, which
checks them; :func:`rules_table` lists them for instructors.

Exercises whose answer is one value (a number, a shape, a choice) have only one right answer,
which the public checker and the course's public notebooks necessarily know, so it can be found by
trying values against the checker. Policy: such an exercise earns its point for a short written
justification graded by hand (:attr:`HiddenTest.manual_points`); its hidden test only confirms the value
(:attr:`HiddenTest.auto_points` is 0) and tells the grader whether it is right.
:func:`justification_cell` is the manually graded cell the student edition puts after it.

:func:`evaluate` returns a :class:`Verdict` (points, status, reason) for a grader that runs the tests
itself; :func:`grade` (called from the graded notebook) prints or raises as before.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from course_lib.exercises import FUNCTION, VALUE, Exercise

from .rules import Forbidden, Rules, RuleViolation, check_answer, describe, enforced, traced

__all__ = [
    "Forbidden",
    "Grader",
    "HiddenTest",
    "RuleViolation",
    "Rules",
    "Verdict",
    "call",
    "check_value",
    "enforced",
    "evaluate",
    "expect",
    "generator",
    "grade",
    "hidden_test",
    "justification_cell",
    "load_all",
    "lookup",
    "not_attempted",
    "rules_table",
    "unpack",
]

PASSED, FAILED, NOT_ATTEMPTED, BROKE_RULE = "passed", "failed", "not attempted", "broke a rule"


@dataclass(frozen=True)
class HiddenTest:
    """One exercise's hidden test.

    Attributes:
        declared: the exercise's declaration (number, points, kind, public checker).
        test: the test, ``test(grader, *answers)``; raises AssertionError when the answer is wrong.
        rules: what a coding exercise's answer may use (None for one-value exercises).
        cases: how many hidden cases a coding exercise's test compares (the labels it passes to
            :meth:`Grader.expect`); partial credit is a share of these. None for one-value exercises.
    """

    declared: Exercise
    test: Callable[..., None]
    rules: Rules | None = None
    cases: int | None = None

    @property
    def module(self) -> str:
        """The notebook's checker module, e.g. ``"nb04"``."""
        return self.declared.module

    @property
    def checker(self) -> str:
        """The public check function the notebook calls, e.g. ``"check_attention_by_hand"``."""
        return self.declared.name

    @property
    def exercise(self) -> str:
        """The exercise number shown to students, e.g. ``"04.3"``."""
        return self.declared.id

    @property
    def points(self) -> int:
        return self.declared.points

    @property
    def kind(self) -> str:
        """``"function"`` (graded on hidden inputs) or ``"value"`` (one right answer)."""
        return self.declared.kind

    def run(self, *args: Any, **kwargs: Any) -> None:
        """Run the test on the student's answer with the ordinary :class:`Grader` (stops at the first failure)."""
        self.run_with(Grader(self), *args, **kwargs)

    def run_with(self, grader: Grader, *args: Any, **kwargs: Any) -> None:
        """Run the test on the student's answer with ``grader`` (e.g. one that records every case)."""
        self.test(grader, *args, **kwargs)

    @property
    def auto_points(self) -> int:
        """Points the hidden test awards by itself: all of a coding exercise's, none of a one-value answer's."""
        return self.points if self.kind == FUNCTION else 0

    @property
    def manual_points(self) -> int:
        """Points graded by hand: a one-value answer's point goes to its written justification."""
        return self.points - self.auto_points


@dataclass(frozen=True)
class Verdict:
    """The outcome of one hidden test, for a grader that reads results instead of parsing messages.

    Attributes:
        exercise: the exercise number, e.g. ``"04.3"``.
        status: ``"passed"``, ``"failed"``, ``"not attempted"`` or ``"broke a rule"``.
        points: points earned by the hidden test (0 unless passed).
        max_points: the points the hidden test can award.
        message: the sentence for the student's feedback (never the hidden test's source or paths).
        rule: for ``"broke a rule"``: ``"own code"``, ``"without"`` or ``"no loops"``; else "".
    """

    exercise: str
    status: str
    points: int
    max_points: int
    message: str
    rule: str = ""


REGISTRY: dict[tuple[str, str], HiddenTest] = {}
RULES: dict[str, Rules] = {}  # exercise number -> rules, for call()
MODULES = sorted(path.stem for path in Path(__file__).parent.glob("nb[0-9][0-9].py"))  # nb00 ... one per notebook


def hidden_test(declared: Exercise, rules: Rules | None = None, cases: int | None = None):
    """Register the decorated function as the hidden test of the exercise ``declared``.

    Args:
        declared: the exercise, as declared with its checker, e.g. ``nb06.check_decoder_mask`` (it holds the
            exercise's number, points and kind).
        rules: a coding exercise's rules (default: its own code, no course_lib at all); not for values.
        cases: the number of hidden cases (labels given to :meth:`Grader.expect`) of a coding exercise; required
            for one (tests/test_hidden_rules.py checks it against a run of the course's solution).
    """
    if not isinstance(declared, Exercise):
        raise TypeError(f"hidden_test takes the exercise's declaration (a checker of course_lib.exercises), "
                        f"got {declared!r}")
    exercise, kind = declared.id, declared.kind
    if kind == VALUE and rules is not None:
        raise ValueError("one-value exercises have no code rules")
    if (kind == FUNCTION) != (isinstance(cases, int) and cases > 0):
        raise ValueError(f"exercise {exercise}: a coding exercise states its number of hidden cases "
                         f"(cases=N > 0), a one-value exercise none; got kind={kind!r}, cases={cases!r}")
    if kind == FUNCTION:
        rules = rules or Rules()
        RULES[exercise] = rules

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        key = (declared.module, declared.name)
        if key in REGISTRY and REGISTRY[key].test.__module__ != fn.__module__:
            raise ValueError(f"two hidden tests for {declared.module}.{declared.name}")
        REGISTRY[key] = HiddenTest(declared, fn, rules, cases)
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


def evaluate(module: str, checker: str, *args: Any) -> Verdict:
    """Run the hidden test of ``module.checker`` on the student's answer and return the :class:`Verdict`
    (see :func:`_evaluate` for the arguments)."""
    return _evaluate(module, checker, *args)[0]


def _evaluate(module: str, checker: str, *args: Any) -> tuple[Verdict, AssertionError | None]:
    """Run the hidden test of ``module.checker`` on the student's answer: (verdict, the AssertionError to raise
    or None). Never raises for a wrong answer; LookupError when there is no such test.

    Args:
        module: the checker module, e.g. ``"nb04"``.
        checker: the public check function's name, e.g. ``"check_attention_by_hand"``.
        *args: the arguments of the notebook's check call (the student's function, class or value).
    """
    test = lookup(module, checker)
    if test is None:
        raise LookupError(f"no hidden test for {module}.{checker}: add one to instructor/hidden_tests/{module}.py")
    try:
        if test.kind == FUNCTION:
            for answer in args:  # every argument of a coding exercise's check call is the student's
                check_answer(test.exercise, answer, test.rules)
        with torch.random.fork_rng(devices=[]):  # the notebook's later cells draw the same numbers as ungraded
            torch.manual_seed(0)
            test.run(*args)
    except RuleViolation as exc:
        return Verdict(test.exercise, BROKE_RULE, 0, test.auto_points, str(exc), exc.rule), exc
    except NotAttempted as exc:
        return Verdict(test.exercise, NOT_ATTEMPTED, 0, test.auto_points, str(exc)), exc
    except AssertionError as exc:
        return Verdict(test.exercise, FAILED, 0, test.auto_points, str(exc)), exc
    except Exception as exc:  # the answer broke the test itself (wrong type or size): no points, say why
        error = AssertionError(f"Exercise {test.exercise}: your answer could not be tested on the hidden cases "
                               f"({exc}).")
        return Verdict(test.exercise, FAILED, 0, test.auto_points, str(error)), error
    if test.kind == VALUE:
        message = f"Exercise {test.exercise}: your value is right."
    else:
        unit = "point" if test.points == 1 else "points"
        message = f"Exercise {test.exercise}: the hidden tests pass ({test.points} of {test.points} {unit})."
    return Verdict(test.exercise, PASSED, test.auto_points, test.auto_points, message), None


def grade(module: str, checker: str, *args: Any) -> None:
    """Run the hidden test of ``module.checker`` on the student's answer (called from the graded notebook).

    Prints a one-line verdict when the answer passes; raises AssertionError (0 points) otherwise, a
    :class:`RuleViolation` (an AssertionError) when it breaks the exercise's rules.

    Args:
        module: the checker module, e.g. ``"nb04"``.
        checker: the public check function's name.
        *args: the arguments of the notebook's check call.
    """
    verdict, error = _evaluate(module, checker, *args)
    if error is not None:
        raise error
    print(verdict.message)


def rules_table() -> str:
    """A Markdown table of every coding exercise's rules (for instructors): exercise, checker, points, rules."""
    rows = ["| exercise | checker | points | rules | stated in the exercise text |", "|---|---|---|---|---|"]
    for test in sorted(load_all().values(), key=lambda t: t.exercise):
        if test.kind == FUNCTION:
            rows.append(f"| {test.exercise} | {test.module}.{test.checker} | {test.points} | {describe(test.rules)} | "
                        f"{test.rules.stated or 'own code: course-wide rule for graded work'} |")
    return "\n".join(rows)


def justification_cell(test: HiddenTest) -> dict:
    """The manually graded Markdown cell that follows a one-value exercise in the student edition.

    Returns a cell as a plain dict (nbformat 4), with nbgrader metadata: ``solution`` (the student writes in
    it), ``grade`` with :attr:`HiddenTest.manual_points` points, id ``why_<module>_<checker>``.

    Args:
        test: a one-value exercise's hidden test.
    """
    if test.kind != VALUE:
        raise ValueError(f"exercise {test.exercise} asks for code: it is graded automatically")
    return {
        "cell_type": "markdown",
        "metadata": {
            "nbgrader": {"grade": True, "grade_id": f"why_{test.module}_{test.checker}", "locked": False,
                         "points": test.manual_points, "schema_version": 3, "solution": True, "task": False},
            "tags": ["graded-justification"],
        },
        "source": (f"**Exercise {test.exercise}, why?** In two or three sentences, how did you get your answer "
                   f"(the reasoning or the computation)? Your point for this exercise is given for this "
                   f"explanation, read by your instructor.\n\nYOUR ANSWER HERE"),
    }


# ------------------------------------------------------------------------------------------------
# helpers for the tests
# ------------------------------------------------------------------------------------------------


class NotAttempted(AssertionError):
    """The student left the exercise as handed out."""


def not_attempted(exercise: str) -> NotAttempted:
    return NotAttempted(f"Exercise {exercise} was not attempted (it still raises NotImplementedError or is None).")


class Grader:
    """What a hidden test uses to run the student's code and judge it, for one exercise.

    This one stops at the first failure (it raises); ``instructor/partial_credit.py`` passes a subclass that
    records each case's verdict and goes on. Messages name the exercise, so a test never types its number.
    """

    def __init__(self, test: HiddenTest):
        self.test = test
        self.exercise = test.exercise

    def call(self, fn: Callable, case: str, *args: Any, **kwargs: Any) -> Any:
        """Call the student's ``fn`` on a hidden case under the exercise's rules (see :func:`call`)."""
        return call(self.exercise, fn, case, *args, **kwargs)

    def expect(self, case: str, got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> None:
        """Fail the hidden ``case`` when ``got`` differs from ``expected`` (see :func:`expect`)."""
        expect(self.exercise, case, got, expected, atol, rtol)

    def unpack(self, case: str, got: Any, count: int, wanted: str, kinds: tuple = (tuple,)) -> tuple:
        """``got`` as a tuple of ``count`` items, or fail saying ``wanted`` (see :func:`unpack`)."""
        return unpack(self.exercise, case, got, count, wanted, kinds)

    def check_value(self, answer: Any, expected: Any, atol: float = 1e-3, rtol: float = 0.0) -> None:
        """A one-value exercise: not attempted when ``answer`` is None, else it must equal ``expected``."""
        check_value(self.exercise, answer, expected, atol, rtol)

    def not_attempted(self) -> NotAttempted:
        """The error that says the exercise was not attempted (raise it)."""
        return not_attempted(self.exercise)

    def wrong(self, message: str) -> AssertionError:
        """The error for a wrong answer, ``"Exercise NN.N: <message>"`` (raise it)."""
        return AssertionError(f"Exercise {self.exercise}: {message}")


def call(exercise: str, fn: Callable, case: str, *args: Any, **kwargs: Any) -> Any:
    """Call the student's ``fn`` under the exercise's rules; turn NotImplementedError and crashes into
    AssertionErrors that say where.

    Args:
        exercise: the exercise number (its rules were registered by :func:`hidden_test`).
        fn: the student's function, class or module instance.
        case: the hidden case's description, for the message.
        *args, **kwargs: the inputs of the hidden case.

    Raises:
        RuleViolation: ``fn`` is, wraps or imports course_lib's code, or breaks a "without X" rule.
        NotAttempted: ``fn`` still raises NotImplementedError.
        AssertionError: ``fn`` crashed on the case.
    """
    rules = RULES.get(exercise, Rules())
    check_answer(exercise, fn, rules)
    try:
        with traced(exercise, rules):
            return fn(*args, **kwargs)
    except RuleViolation:
        raise
    except NotImplementedError:
        raise not_attempted(exercise) from None
    except Exception as exc:  # the student's code crashed on a hidden case
        raise AssertionError(f"Exercise {exercise}, hidden case '{case}': your code raised "
                             f"{type(exc).__name__}: {exc}") from None


def as_torch(value: Any) -> Any:
    """A NumPy array as a tensor and a NumPy scalar as a Python number; anything else unchanged."""
    kind = type(value)
    if kind.__module__ == "numpy" and hasattr(value, "dtype"):
        if kind.__name__ == "ndarray" and value.dtype.kind in "biufc":
            return torch.from_numpy(value.copy())
        if hasattr(value, "item") and kind.__name__ != "ndarray":
            return value.item()
    return value


def unpack(exercise: str, case: str, got: Any, count: int, wanted: str, kinds: tuple = (tuple,)) -> tuple:
    """``got`` as a tuple of ``count`` items, or raise AssertionError saying ``wanted`` (e.g. "return a tuple
    (src_mask, tgt_mask)"). The partial-credit grader (``instructor/partial_credit.py``) records the failure
    instead, so that a wrong structure fails the case's comparisons and the test goes on to its next case.

    Args:
        exercise: the exercise number.
        case: the hidden case's description.
        got: what the student's code returned.
        count: how many items it must have.
        wanted: what to return, for the message.
        kinds: the sequence types accepted.
    """
    if isinstance(got, kinds) and len(got) == count:
        return tuple(got)
    raise AssertionError(f"Exercise {exercise}, hidden case '{case}': {wanted}.")


def difference(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> str | None:
    """How ``got`` differs from ``expected`` (tensors, numbers, sequences), or None when they agree.

    A NumPy answer is compared as the tensor or number it holds (see :func:`as_torch`).
    """
    got = as_torch(got)
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            kind = type(got).__name__
            return f"expected a torch.Tensor, got {'an object of another kind' if kind == 'Remote' else kind}"
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
    answer = as_torch(answer)
    if isinstance(expected, float) and isinstance(answer, (int, float, torch.Tensor)) and not isinstance(answer, bool):
        answer = float(answer)
    if difference(answer, expected, atol=atol, rtol=rtol):
        shown = answer.int().tolist() if isinstance(answer, torch.Tensor) else answer
        raise AssertionError(f"Exercise {exercise}: your answer {shown!r} is not right.")


def generator(seed: int) -> torch.Generator:
    """A torch generator seeded with one of the hidden seeds (never one of the public checkers')."""
    return torch.Generator().manual_seed(seed)
