"""Hidden tests for notebook 03 (positional encoding)."""

from __future__ import annotations

import math

import torch

from course_lib.exercises import nb03

from . import Rules, hidden_test


def _table(positions, d_model):
    """Sinusoids in float64: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same angle)."""
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model / 2,): the dimensions 2i
    angles = positions.to(torch.float64)[:, None] / 10000.0 ** (even / d_model)  # (n, d_model / 2)
    out = torch.zeros(len(positions), d_model, dtype=torch.float64)
    out[:, 0::2], out[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return out.float()


@hidden_test(nb03.check_fixed_table, cases=4)
def fixed_table(grader, student_fn):
    for max_len, d_model in [(7, 6), (3, 2), (40, 20), (12, 128)]:
        case = f"max_len={max_len}, d_model={d_model}"
        got = grader.call(student_fn, case, max_len, d_model)
        grader.expect(case, got, _table(torch.arange(max_len), d_model), atol=1e-4)


@hidden_test(nb03.check_encode_positions, cases=4, rules=Rules(no_loops=True, stated="without Python loops"))
def encode_positions(grader, student_fn):
    cases = [
        ("positions 0..19, d_model=10", torch.arange(20), 10),
        ("positions [3, 1, 4, 1, 5, 9], d_model=8", torch.tensor([3, 1, 4, 1, 5, 9]), 8),
        ("far positions [500, 1000], d_model=32", torch.tensor([500, 1000]), 32),
        ("the single position [0], d_model=6", torch.tensor([0]), 6),
    ]
    for case, positions, d_model in cases:
        got = grader.call(student_fn, case, positions.clone(), d_model)
        grader.expect(case, got, _table(positions, d_model), atol=1e-4)


@hidden_test(nb03.check_wavelength)
def wavelength(grader, answer):
    expected = 2 * math.pi * 10000 ** (2 * 8 / 64)
    grader.check_value(answer, expected, atol=0.01 * expected)
