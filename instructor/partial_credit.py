"""Run one hidden test case by case and turn its verdicts into points (partial credit).

The hidden tests (``instructor/hidden_tests/``) compare the student's answer case by case with
``expect(exercise, case, got, expected)`` and call the student through ``call(exercise, fn, case, ...)``;
both stop at the first failure when a student checks a notebook. Here, in the grader's process, those
two names are replaced in every hidden-test module for the duration of one test (nothing in the files
changes): ``expect`` records the case's verdict and goes on, ``call`` records a crash of the student's
code on a case and returns a stand-in that fails every later comparison of that case. So a test runs to
its end and each hidden case counts:

    points = exercise points x (hidden cases passed) / (hidden cases)

A test that stops on its own (the answer has the wrong structure, e.g. not a tuple; or a rule of the
exercise is broken) keeps the cases it had passed, and every case it did not reach counts as failed (the
number of cases of each test is learnt from runs that reached the end; see :class:`CaseCounts`). One-value
exercises have no cases: right or wrong. An unattempted exercise scores 0.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import hidden_tests  # noqa: E402
from remote import KernelGone, Remote, RuleBroken  # noqa: E402

RULES_FILE = HERE / "hidden_tests" / "rules.py"


class BrokenRule(AssertionError):
    """A rule of the exercise was broken (reported by the rules running in the student's kernel)."""


def _rule_violation(message: str) -> AssertionError:
    return BrokenRule(message)


def _rule_errors() -> tuple[type, ...]:
    return (BrokenRule, *([hidden_tests.RuleViolation] if hasattr(hidden_tests, "RuleViolation") else []))


def _ruled_call(original_call, exercise, fn, case, args, kwargs):
    """Call a student's Remote under the exercise's rules, which are checked inside the kernel."""
    rules_of = getattr(hidden_tests, "RULES", None)
    if rules_of is None or not hasattr(hidden_tests, "Rules"):
        return original_call(exercise, fn, case, *args, **kwargs)
    rules = rules_of.get(exercise, hidden_tests.Rules())
    try:
        return fn._ask("call_ruled", (exercise, rules, args, kwargs))
    except RuleBroken as exc:
        raise _rule_violation(str(exc)) from None
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
    """

    status: str
    earned_share: float
    cases: dict[str, str | None] = field(default_factory=dict)
    message: str = ""
    complete: bool = True


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


class CaseCounts:
    """How many hidden cases each test has, learnt from the runs that reached the test's end (a JSON file)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.counts: dict[str, int] = {}
        if path is not None and path.exists():
            self.counts = {str(k): int(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}

    def learn(self, exercise: str, count: int) -> None:
        if count > self.counts.get(exercise, 0):
            self.counts[exercise] = count

    def get(self, exercise: str) -> int:
        return self.counts.get(exercise, 0)

    def save(self) -> None:
        if self.path is None:
            return
        part = self.path.with_suffix(".part")
        part.write_text(json.dumps(dict(sorted(self.counts.items())), indent=1), encoding="utf-8")
        os.replace(part, self.path)


@contextmanager
def _recording(cases: dict[str, str | None]):
    original_call, original_expect = hidden_tests.call, hidden_tests.expect

    def call(exercise, fn, case, *args, **kwargs):
        if isinstance(fn, _Failed):
            cases.setdefault(case, fn.why)
            return fn
        try:
            if type(fn) is Remote:
                return _ruled_call(original_call, exercise, fn, case, args, kwargs)
            return original_call(exercise, fn, case, *args, **kwargs)
        except hidden_tests.NotAttempted:
            raise
        except _rule_errors():  # a broken rule: the exercise scores 0
            raise
        except AssertionError as exc:
            if isinstance(exc.__context__, KernelGone) or isinstance(exc.__cause__, KernelGone):
                raise
            cases[case] = str(exc)
            return _Failed(str(exc))

    def expect(exercise, case, got, expected, atol=1e-5, rtol=1e-4):
        if isinstance(got, _Failed):
            cases[case] = cases.get(case) or got.why
            return
        why = hidden_tests.difference(got, expected, atol, rtol)
        if why:
            cases[case] = cases.get(case) or f"Exercise {exercise}, hidden case '{case}': {why}."
        else:
            cases.setdefault(case, None)

    modules = [m for name, m in sys.modules.items() if name == "hidden_tests" or name.startswith("hidden_tests.")]
    saved = [(m, name, getattr(m, name)) for m in modules for name in ("call", "expect") if hasattr(m, name)]
    for module, name, _ in saved:
        setattr(module, name, call if name == "call" else expect)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        hidden_tests.call, hidden_tests.expect = original_call, original_expect


def run_test(test, args: list, kwargs: dict, counts: CaseCounts) -> TestOutcome:
    """Run ``test`` (a ``hidden_tests.HiddenTest``) on the student's answer, case by case.

    Args:
        test: the hidden test.
        args, kwargs: the arguments of the exercise's check call, as the student's kernel answered them.
        counts: the number of cases of each test (learnt here when the test reaches its end).
    """
    cases: dict[str, str | None] = {}
    torch.manual_seed(0)
    stopped = ""
    try:
        with _recording(cases):
            test.run(*args, **kwargs)
    except hidden_tests.NotAttempted as exc:
        return TestOutcome("not attempted", 0.0, cases, str(exc))
    except _rule_errors() as exc:
        return TestOutcome("broke a rule", 0.0, cases, str(exc))
    except AssertionError as exc:
        if isinstance(exc.__context__, KernelGone) or isinstance(exc.__cause__, KernelGone):
            raise KernelGone(str(exc)) from None
        stopped = str(exc)
    except KernelGone:
        raise
    except Exception as exc:  # the answer broke the test itself (wrong type or size)
        stopped = (f"Exercise {test.exercise}: your answer could not be tested on the hidden cases "
                   f"({type(exc).__name__}: {exc}).")
    failures = [why for why in cases.values() if why]
    if not stopped:
        counts.learn(test.exercise, len(cases))
        total = max(len(cases), 1)
        share = (len(cases) - len(failures)) / total if cases else 1.0
        status = "passed" if share == 1.0 else "partial" if share > 0 else "failed"
        return TestOutcome(status, share, cases, failures[0] if failures else "", True)
    passed = sum(1 for why in cases.values() if why is None)
    total = max(counts.get(test.exercise), len(cases) + 1)
    share = passed / total
    return TestOutcome("partial" if share > 0 else "failed", share, cases, stopped, False)
