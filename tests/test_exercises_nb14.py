"""The notebook 14 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest

from course_lib.exercises import nb14


def unattempted(*args):
    raise NotImplementedError


def right_peak_lr(d_model, layers):
    return (64 * 200) ** -0.5 * (64 / max(d_model, 64)) * (max(layers, 2) / 2) ** -0.5


def test_14_1_right_answer_passes_and_unattempted_is_reported():
    assert nb14.check_peak_lr(right_peak_lr, quiet=True)
    assert nb14.check_peak_lr(unattempted, quiet=True).status == "not attempted"


@pytest.mark.parametrize(("student", "needle"), [
    (lambda d, n: (64 * 200) ** -0.5 * (max(d, 64) / 64) ** -0.5 * (max(n, 2) / 2) ** -0.5, "like the Noam schedule"),
    (lambda d, n: (64 * 200) ** -0.5 * (max(d, 64) / 64) * (max(n, 2) / 2) ** -0.5, "grows with the width"),
    (lambda d, n: (64 * 200) ** -0.5 * (64 / max(d, 64)), "depth factor (2 / layers)^0.5 is missing"),
    (lambda d, n: (64 * 200) ** -0.5 * (64 / max(d, 64)) * (max(n, 2) / 2) ** -1, "a square root"),
    (lambda d, n: (64 * 200) ** -0.5 * (64 / d) * (n / 2) ** -0.5, "keep the toy's rate"),
    (lambda d, n: 1e-3, "start from 8.8e-3"),
    (lambda d, n: "fast", "return a number"),
    (lambda d, n: 1 / 0, "raised ZeroDivisionError"),
])
def test_14_1_wrong_answers_get_specific_hints(student, needle):
    result = nb14.check_peak_lr(student, quiet=True)
    assert not result and needle in result.message, result.message


def right_unknown_rate(token_lists, vocab):
    tokens = [t for sentence in token_lists for t in sentence]
    return sum(t not in vocab for t in tokens) / len(tokens) if tokens else 0.0


def test_14_2_right_answer_passes_and_unattempted_is_reported():
    assert nb14.check_unknown_rate(right_unknown_rate, quiet=True)
    assert nb14.check_unknown_rate(unattempted, quiet=True).status == "not attempted"


def _distinct(token_lists, vocab):
    words = {t for s in token_lists for t in s}
    return sum(t not in vocab for t in words) / len(words) if words else 0.0


@pytest.mark.parametrize(("student", "needle"), [
    (_distinct, "you count distinct words"),
    (lambda tl, v: 100 * right_unknown_rate(tl, v), "not a percentage"),
    (lambda tl, v: 1 - right_unknown_rate(tl, v), "share of KNOWN tokens"),
    (lambda tl, v: sum(t not in v for s in tl for t in s) / sum(len(s) for s in tl), "division by zero"),
    (lambda tl, v: 0.5, "count the tokens that are not"),
])
def test_14_2_wrong_answers_get_specific_hints(student, needle):
    result = nb14.check_unknown_rate(student, quiet=True)
    assert not result and needle in result.message, result.message


def test_messages_never_reveal_the_expected_value():
    # right at the toy size (whose 8.8e-3 the exercise gives), wrong at the tutorial size 256/3
    result = nb14.check_peak_lr(lambda d, n: right_peak_lr(d, n) if d == 64 else 1e-3, quiet=True)
    assert "256, 3 layers" in result.message
    assert not any(text in result.message for text in ("1.8e-03", "1.80e-03", "0.0018", "1.8e-3"))
