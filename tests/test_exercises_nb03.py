"""Checkers of notebook 03: right answers pass, wrong ones fail with a specific message, no answer is 'not attempted'."""

import math

import pytest
import torch

from course_lib.embeddings import sinusoidal_table
from course_lib.exercises import nb03


def _not_implemented(*args):
    raise NotImplementedError


def _loop_table(max_len, d_model, sin_exponent, cos_exponent):
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / (10000 ** sin_exponent(i, d_model)))
            pe[pos, i + 1] = math.cos(pos / (10000 ** cos_exponent(i, d_model)))
    return pe


# ----------------------------------------------------------------------------- 03.1 fix the loop


def test_fixed_table_passes_the_repaired_loop(capsys):
    result = nb03.check_fixed_table(lambda n, d: _loop_table(n, d, lambda i, d: i / d, lambda i, d: i / d))
    assert result and "✅ Exercise 03.1 passed" in capsys.readouterr().out


def test_fixed_table_recognises_the_articles_bug():
    buggy = nb03.check_fixed_table(
        lambda n, d: _loop_table(n, d, lambda i, d: 2 * i / d, lambda i, d: 2 * (i + 1) / d), quiet=True
    )
    assert buggy.status == "failed"
    assert "max_len=10, d_model=4" in buggy.message and "counted twice" in buggy.message


def test_fixed_table_recognises_a_cosine_with_its_own_exponent():
    half_fixed = nb03.check_fixed_table(
        lambda n, d: _loop_table(n, d, lambda i, d: i / d, lambda i, d: (i + 1) / d), quiet=True
    )
    assert half_fixed.status == "failed" and "one bug is left" in half_fixed.message and "i + 1" in half_fixed.message
    assert "counted twice" not in half_fixed.message


def test_fixed_table_not_attempted_and_crash():
    assert nb03.check_fixed_table(_not_implemented, quiet=True).status == "not attempted"
    crashed = nb03.check_fixed_table(lambda n, d: torch.zeros(n, d)[:, d], quiet=True)
    assert crashed.status == "failed" and "raised IndexError" in crashed.message


# ----------------------------------------------------------------------------- 03.2 encode positions


def _encode(positions, d_model):
    omega = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = positions.double()[:, None] * omega[None, :]
    pe = torch.zeros(len(positions), d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe


def test_encode_positions_passes_the_solution(capsys):
    assert nb03.check_encode_positions(_encode)
    assert "✅ Exercise 03.2 passed: all 4 cases" in capsys.readouterr().out


def test_encode_positions_matches_the_library_table():
    positions = torch.tensor([0, 7, 3, 49])
    torch.testing.assert_close(nb03.reference_encode_positions(positions, 16), sinusoidal_table(50, 16)[positions])


@pytest.mark.parametrize(
    "wrong, explanation",
    [
        (lambda p, d: _encode(p, d)[:, torch.arange(d) ^ 1], "swapped"),  # sin <-> cos within each pair
        (lambda p, d: torch.cat([_encode(p, d)[:, 0::2], _encode(p, d)[:, 1::2]], dim=1), "interleaves"),
    ],
)
def test_encode_positions_names_layout_mistakes(wrong, explanation):
    result = nb03.check_encode_positions(wrong, quiet=True)
    assert result.status == "failed" and explanation in result.message


def test_encode_positions_wrong_shape_and_unattempted():
    result = nb03.check_encode_positions(lambda p, d: _encode(p, d)[:, : d // 2], quiet=True)
    assert result.status == "failed" and "expected shape (10, 4), got shape (10, 2)" in result.message
    assert nb03.check_encode_positions(_not_implemented, quiet=True).status == "not attempted"


# ----------------------------------------------------------------------------- 03.3 wavelength


def test_wavelength_right_wrong_and_missing():
    assert nb03.check_wavelength(2 * math.pi * 10, quiet=True)
    assert nb03.check_wavelength(62.8, quiet=True)
    assert nb03.check_wavelength(torch.tensor(62.83), quiet=True)
    assert nb03.check_wavelength(None, quiet=True).status == "not attempted"


@pytest.mark.parametrize(
    "answer, hint",
    [(10.0, "positions per radian"), (0.1, "frequency"), (2 * math.pi * 100, "double-counting"), (30.0, "2π / ω_i")],
)
def test_wavelength_explains_the_mistake(answer, hint):
    result = nb03.check_wavelength(answer, quiet=True)
    assert result.status == "failed" and "62.8" not in result.message and hint in result.message


@pytest.mark.parametrize(
    ("sin_exponent", "cos_exponent", "needles", "absent"),
    [  # each bug of the articles' loop on its own, in whichever order the student fixes them
        (lambda i, d: 2 * i / d, lambda i, d: 2 * i / d, ["one bug is left", "sine and the cosine is counted twice"],
         ["i + 1"]),
        (lambda i, d: i / d, lambda i, d: (i + 1) / d, ["one bug is left", "i + 1"], ["counted twice"]),
        (lambda i, d: 2 * i / d, lambda i, d: i / d, ["one bug is left", "exponent of the sine is counted twice"],
         ["i + 1", "cosine is counted"]),
        (lambda i, d: i / d, lambda i, d: 2 * (i + 1) / d, ["two things are still wrong", "cosine is counted twice",
                                                             "i + 1"], ["sine and"]),
        (lambda i, d: 2 * i / d, lambda i, d: 2 * (i + 1) / d, ["both bugs of the loop are still there"], []),
    ],
)
def test_fixed_table_names_each_remaining_bug(sin_exponent, cos_exponent, needles, absent):
    result = nb03.check_fixed_table(lambda n, d: _loop_table(n, d, sin_exponent, cos_exponent), quiet=True)
    assert result.status == "failed"
    for needle in needles:
        assert needle in result.message, result.message
    for word in absent:
        assert word not in result.message, result.message
