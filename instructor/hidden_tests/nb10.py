"""Hidden tests for notebook 10 (training)."""

from __future__ import annotations

import torch

from course_lib.exercises import nb10

from . import hidden_test


@hidden_test(nb10.check_warmup_lr, cases=5)
def warmup_lr(grader, student_fn):
    for step, d_model, warmup, factor in [(1, 128, 1000, 1.0), (250, 128, 1000, 0.5), (1000, 32, 1000, 3.0),
                                          (7777, 256, 2000, 1.5), (3, 16, 2, 2.0)]:
        case = f"step {step}, d_model {d_model}, warmup {warmup}, factor {factor}"
        expected = factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        got = grader.call(student_fn, case, step, d_model, warmup, factor)
        grader.expect(case, float(got) if isinstance(got, (int, float, torch.Tensor)) else got, expected,
               atol=0.0, rtol=1e-6)


@hidden_test(nb10.check_smoothed_targets, cases=4)
def smoothed_targets(grader, student_fn):
    cases = [
        ("target=[3, 9, 1], K=12, smoothing=0.15", torch.tensor([3, 9, 1]), 12, 0.15, 0),
        ("a (3, 2) batch with padding, K=7, smoothing=0.25", torch.tensor([[4, 0], [6, 5], [0, 0]]), 7, 0.25, 0),
        ("pad_id=1, K=5, smoothing=0.1", torch.tensor([1, 2, 4, 1]), 5, 0.1, 1),
        ("smoothing=0.5, K=4", torch.tensor([2, 3]), 4, 0.5, 0),
    ]
    for case, target, k, smoothing, pad_id in cases:
        expected = torch.full((*target.shape, k), smoothing / k)  # (..., K)
        expected += (1.0 - smoothing) * torch.nn.functional.one_hot(target, k)
        expected[target == pad_id] = 0.0
        got = grader.call(student_fn, case, target.clone(), k, smoothing, pad_id)
        grader.expect(case, got, expected, atol=1e-6)


@hidden_test(nb10.check_batch_padding_fraction, cases=5)
def batch_padding_fraction(grader, student_fn):
    for lengths in ([6, 2], [1, 1], [3, 9, 9, 1, 5], [20], [2, 4, 8, 16]):
        expected = 1 - sum(lengths) / (max(lengths) * len(lengths))
        got = grader.call(student_fn, f"lengths {lengths}", list(lengths))
        grader.expect(f"lengths {lengths}", float(got) if isinstance(got, (int, float)) else got, expected,
               atol=1e-9, rtol=1e-9)


@hidden_test(nb10.check_recipe_fix)
def recipe_fix(grader, answer):
    if answer is None:
        raise grader.not_attempted()
    if isinstance(answer, str):
        letters = {c for c in answer.upper() if c.isalpha()}
    elif isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(a, str) for a in answer):
        letters = {a.strip().upper() for a in answer}
    else:
        raise grader.wrong(f"answer with letters, e.g. {{'A', 'C'}}, got {answer!r}.")
    if letters != {"B", "D"}:
        raise grader.wrong(f"{sorted(letters)} is not the right choice.")
