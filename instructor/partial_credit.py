"""Run one hidden test case by case and turn its verdicts into points (partial credit).

The hidden tests (``instructor/hidden_tests/``) compare the student's answer case by case with
``grader.expect(case, got, expected)`` and call the student through ``grader.call(fn, case, ...)``, where
``grader`` is the :class:`~instructor.hidden_tests.Grader` the test is run with; the ordinary one stops at the
first failure. Here, in the grader's process, each test runs with a recording grader (:class:`_Recording`):
``expect`` records the case's verdict and goes on, ``call`` records a crash of the student's code on a case
and returns a stand-in that fails every later comparison of that case. So a test runs to its end and each
hidden case counts:

    points = exercise points x (hidden cases passed) / (hidden cases)

The number of hidden cases is the one the hidden test states (``@hidden_test(..., cases=N)``), so the
points of a notebook depend on that notebook alone, never on which notebooks were graded before it. A
wrong structure (not a tuple where the test unpacks one) fails that case and the test goes on
(``unpack`` records it as well). A test that stops on its own (a rule of the exercise is broken, or the
answer breaks the test itself) keeps the cases it had passed, and every case it did not reach counts as
failed. The message names the first thing that went wrong: when the student's code raised, that error,
not the structure check that followed it. One-value exercises have no cases: right or wrong. An
unattempted exercise scores 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from instructor import hidden_tests
from instructor.remote import KernelGone, Remote, RuleBroken

RULES_FILE = Path(__file__).resolve().parent / "hidden_tests" / "rules.py"


class BrokenRule(AssertionError):
    """A rule of the exercise was broken (reported by the rules running in the student's kernel)."""


def _rule_violation(message: str) -> AssertionError:
    return BrokenRule(message)


def _rule_errors() -> tuple[type, ...]:
    return (BrokenRule, *([hidden_tests.RuleViolation] if hasattr(hidden_tests, "RuleViolation") else []))


def _ruled_call(exercise, fn, case, args, kwargs):
    """Call a student's Remote under the exercise's rules, which are checked inside the kernel."""
    rules_of = getattr(hidden_tests, "RULES", None)
    if rules_of is None or not hasattr(hidden_tests, "Rules"):
        return hidden_tests.call(exercise, fn, case, *args, **kwargs)
    rules = rules_of.get(exercise, hidden_tests.Rules())
    try:
        return fn._ask("call_ruled", (exercise, rules, args, kwargs))
    except RuleBroken as exc:
        message = str(exc) if str(exc).startswith("Exercise") else f"Exercise {exercise}: 0 points, {exc}"
        raise _rule_violation(message) from None
    except NotImplementedError:
        raise hidden_tests.not_attempted(exercise) from None
    except KernelGone:
        raise
    except Exception as exc:  # the student's code crashed on a hidden case
        raise AssertionError(f"Exercise {exercise}, hidden case '{case}': your code raised "
                             f"{type(exc).__name__}: {exc}") from exc


@dataclass
class TestOutcome:
    """The result of one hidden test on one student's answer.

    Attributes:
        status: "passed", "partial", "failed", "not attempted" or "not graded".
        earned_share: the share of the points earned, 0..1.
        cases: {case: None when passed, else what was wrong}, in the order the test ran them.
        message: the first reason for lost points (a hidden case's description and what was wrong).
        complete: True when the test ran to its end.
        total: the number of hidden cases the share is taken of (0 for a one-value exercise).
    """

    status: str
    earned_share: float
    cases: dict[str, str | None] = field(default_factory=dict)
    message: str = ""
    complete: bool = True
    total: int = 0


class _Failed:
    """Stands in for the result of a student's call that crashed: fails every comparison, absorbs every use."""

    def __init__(self, why: str):
        self.why = why

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self

    def __iter__(self):
        return iter(())


class _Recording(hidden_tests.Grader):
    """The grader a hidden test runs with here (see the module's docstring); ``cases`` receives each compared
    case's verdict. A crash of the student's code counts for the comparisons that follow it (they receive the
    stand-in); one that no comparison followed counts by itself (:meth:`finish`)."""

    def __init__(self, test, cases: dict[str, str | None]):
        super().__init__(test)
        self.cases = cases
        self.crashes: dict[str, str] = {}

    def call(self, fn, case, *args, **kwargs):
        if isinstance(fn, _Failed):
            self.crashes.setdefault(case, fn.why)
            return fn
        try:
            if type(fn) is Remote:
                return _ruled_call(self.exercise, fn, case, args, kwargs)
            return super().call(fn, case, *args, **kwargs)
        except hidden_tests.NotAttempted:
            raise
        except _rule_errors():  # a broken rule: the exercise scores 0
            raise
        except AssertionError as exc:
            if isinstance(exc.__context__, KernelGone) or isinstance(exc.__cause__, KernelGone):
                raise
            self.crashes[case] = str(exc)
            return _Failed(str(exc))

    def expect(self, case, got, expected, atol=1e-5, rtol=1e-4):
        cases = self.cases
        if isinstance(got, _Failed):
            cases[case] = cases.get(case) or got.why
            return
        why = hidden_tests.difference(got, expected, atol, rtol)
        if why:
            cases[case] = cases.get(case) or f"Exercise {self.exercise}, hidden case '{case}': {why}."
        else:
            cases.setdefault(case, None)

    def unpack(self, case, got, count, wanted, kinds=(tuple,)):
        if isinstance(got, _Failed):
            return (got,) * count
        try:
            return super().unpack(case, got, count, wanted, kinds)
        except AssertionError as exc:
            return (_Failed(str(exc)),) * count

    def finish(self) -> None:
        """Count the crashes that no comparison followed."""
        compared = set(self.cases.values())
        for case, why in self.crashes.items():
            if why not in compared:
                self.cases.setdefault(case, why)


def run_test(test, args: list, kwargs: dict) -> TestOutcome:
    """Run ``test`` (a ``hidden_tests.HiddenTest``) on the student's answer, case by case.

    Args:
        test: the hidden test.
        args, kwargs: the arguments of the exercise's check call, as the student's kernel answered them.
    """
    cases: dict[str, str | None] = {}
    torch.manual_seed(0)
    stopped = ""
    recording = _Recording(test, cases)
    try:
        try:
            test.run_with(recording, *args, **kwargs)
        finally:
            recording.finish()
    except hidden_tests.NotAttempted as exc:
        return TestOutcome("not attempted", 0.0, cases, str(exc), total=_total(test, cases))
    except _rule_errors() as exc:
        return TestOutcome("broke a rule", 0.0, cases, str(exc), total=_total(test, cases))
    except AssertionError as exc:
        if isinstance(exc.__context__, KernelGone) or isinstance(exc.__cause__, KernelGone):
            raise KernelGone(str(exc)) from None
        stopped = str(exc)
    except KernelGone:
        raise
    except Exception as exc:  # the answer broke the test itself (wrong type or size)
        stopped = (f"Exercise {test.exercise}: your answer could not be tested on the hidden cases "
                   f"({type(exc).__name__}: {exc}).")
    return _outcome(test, cases, stopped)


def _total(test, cases: dict) -> int:
    """The number of hidden cases: the test's own statement (never fewer than the cases it ran)."""
    stated = getattr(test, "cases", None) or 0
    return max(stated, len(cases))


def _outcome(test, cases: dict[str, str | None], stopped: str) -> TestOutcome:
    """Points from the recorded ``cases``; ``stopped`` says why the test ended early ("" when it did not)."""
    failures = [why for why in cases.values() if why]
    total = _total(test, cases)
    if not cases and not stopped:  # a one-value exercise: right, as the test did not object
        return TestOutcome("passed", 1.0, cases, "", True, 0)
    if stopped and not cases:
        total = max(total, 1)
    passed = sum(1 for why in cases.values() if why is None)
    share = passed / total if total else 0.0
    status = "passed" if share == 1.0 and not stopped else "partial" if share > 0 else "failed"
    message = failures[0] if failures else stopped  # the student's error first, not what it caused
    return TestOutcome(status, share, cases, message, not stopped, total)
