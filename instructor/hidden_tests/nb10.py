"""Hidden tests for notebook 10 (training)."""

from __future__ import annotations

import torch

from hidden_tests import VALUE, call, expect, hidden_test, not_attempted


@hidden_test("check_warmup_lr", "10.1", points=2, cases=5)
def warmup_lr(student_fn):
    for step, d_model, warmup, factor in [(1, 128, 1000, 1.0), (250, 128, 1000, 0.5), (1000, 32, 1000, 3.0),
                                          (7777, 256, 2000, 1.5), (3, 16, 2, 2.0)]:
        case = f"step {step}, d_model {d_model}, warmup {warmup}, factor {factor}"
        expected = factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        got = call("10.1", student_fn, case, step, d_model, warmup, factor)
        expect("10.1", case, float(got) if isinstance(got, (int, float, torch.Tensor)) else got, expected,
               atol=0.0, rtol=1e-6)


@hidden_test("check_smoothed_targets", "10.2", points=2, cases=4)
def smoothed_targets(student_fn):
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
        got = call("10.2", student_fn, case, target.clone(), k, smoothing, pad_id)
        expect("10.2", case, got, expected, atol=1e-6)


@hidden_test("check_batch_padding_fraction", "10.3", points=2, cases=5)
def batch_padding_fraction(student_fn):
    for lengths in ([6, 2], [1, 1], [3, 9, 9, 1, 5], [20], [2, 4, 8, 16]):
        expected = 1 - sum(lengths) / (max(lengths) * len(lengths))
        got = call("10.3", student_fn, f"lengths {lengths}", list(lengths))
        expect("10.3", f"lengths {lengths}", float(got) if isinstance(got, (int, float)) else got, expected,
               atol=1e-9, rtol=1e-9)


@hidden_test("check_recipe_fix", "10.4", points=1, kind=VALUE)
def recipe_fix(answer):
    if answer is None:
        raise not_attempted("10.4")
    if isinstance(answer, str):
        letters = {c for c in answer.upper() if c.isalpha()}
    elif isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(a, str) for a in answer):
        letters = {a.strip().upper() for a in answer}
    else:
        raise AssertionError(f"Exercise 10.4: answer with letters, e.g. {{'A', 'C'}}, got {answer!r}.")
    if letters != {"B", "D"}:
        raise AssertionError(f"Exercise 10.4: {sorted(letters)} is not the right choice.")
