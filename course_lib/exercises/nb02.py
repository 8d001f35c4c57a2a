"""Exercise checks for notebook 02 (embeddings): a one-hot lookup built by broadcasting, the
sqrt(sequence length) scaling bug, and the expected size of embedded vectors."""

from __future__ import annotations

import math

import torch
from torch import nn

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise

# ----------------------------------------------------------------------------------------------
# 02.1: embedding lookup as a one-hot matrix product
# ----------------------------------------------------------------------------------------------


def _reference_one_hot_embed(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return weight[ids]  # (batch, seq, d_model): the lookup that the one-hot product must reproduce


def _cases_02_1():
    generator = torch.Generator().manual_seed(2)
    small = torch.randn(6, 3, generator=generator)
    medium = torch.randn(50, 8, generator=generator)
    return [
        ("one sentence, vocab 6, d_model 3", (torch.tensor([[1, 4, 2]]), small)),
        ("a repeated token and <pad> (id 0)", (torch.tensor([[5, 5, 0, 0]]), small)),
        ("the last id of the vocabulary", (torch.tensor([[0, 5]]), small)),
        ("batch of 3 sentences, vocab 50, d_model 8", (torch.randint(0, 50, (3, 7), generator=generator), medium)),
    ]


@exercise("02.1", points=2)
def check_one_hot_embed(ex, student_fn, quiet: bool = False):
    """``embed_via_one_hot(ids, weight)`` equals ``weight[ids]``, shape ``(batch, seq, d_model)``."""
    for description, (ids, weight) in _cases_02_1():
        got, verdict = ex.call_student(student_fn, (ids.clone(), weight.clone()), case=description,
                                    who=f"your function (ids shape {tuple(ids.shape)}, weight shape "
                                        f"{tuple(weight.shape)})", quiet=quiet)
        if verdict is not None:
            return verdict
        if isinstance(got, torch.Tensor) and got.dtype in (torch.bool, torch.int64, torch.int32):
            return ex.report(FAILED, f"on case '{description}': the result has dtype {got.dtype}; turn the one-hot "
                                          "matrix into floats (.float() or .to(weight.dtype)) before the product", quiet)
        difference = describe_difference(got, _reference_one_hot_embed(ids, weight), atol=1e-6)
        if difference:
            return ex.report(FAILED, f"on case '{description}': {difference}.", quiet)
    return ex.report(PASSED, f"all {len(_cases_02_1())} cases equal the lookup weight[ids].", quiet)


# ----------------------------------------------------------------------------------------------
# 02.2: spot the bug: scaling by sqrt(sequence length)
# ----------------------------------------------------------------------------------------------


def _make_student_module(student_cls, vocab_size: int, d_model: int, weight: torch.Tensor):
    module = student_cls(vocab_size, d_model)
    embedding = getattr(module, "embedding", None)
    if not isinstance(embedding, nn.Embedding):
        raise AttributeError("keep the nn.Embedding in self.embedding, as in the given code")
    with torch.no_grad():
        embedding.weight.copy_(weight)
    return module


@exercise("02.2", points=2)
def check_scaled_embedding(ex, student_cls, quiet: bool = False):
    """``ScaledEmbedding(vocab_size, d_model)(ids)`` must be ``embedding(ids) * sqrt(d_model)`` for every length."""
    generator = torch.Generator().manual_seed(3)
    cases = [  # (description, vocab_size, d_model, seq_len); the first hides the bug on purpose
        ("seq_len 16 = d_model 16", 30, 16, 16),
        ("seq_len 5, d_model 16", 30, 16, 5),
        ("seq_len 40, d_model 16", 30, 16, 40),
        ("seq_len 7, d_model 64", 100, 64, 7),
    ]
    for description, vocab_size, d_model, seq_len in cases:
        weight = torch.randn(vocab_size, d_model, generator=generator)
        ids = torch.randint(0, vocab_size, (2, seq_len), generator=generator)

        def build_and_run(vocab_size=vocab_size, d_model=d_model, weight=weight, ids=ids):
            return _make_student_module(student_cls, vocab_size, d_model, weight)(ids)

        got, verdict = ex.call_student(build_and_run, case=description, who="your module",
                                    todo="delete the `raise NotImplementedError` line, fix the bug", quiet=quiet)
        if verdict is not None:
            return verdict
        expected = weight[ids] * math.sqrt(d_model)
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
            return ex.report(FAILED, f"on case '{description}': {describe_difference(got, expected)}.", quiet)
        if torch.allclose(got, weight[ids] * math.sqrt(seq_len), atol=1e-5) and seq_len != d_model:
            return ex.report(FAILED, f"on case '{description}': the output is still scaled by sqrt(seq_len) = "
                                          f"{math.sqrt(seq_len):.3f} instead of sqrt(d_model) = {math.sqrt(d_model):.3f}. "
                                          "x.size(-1) of the id tensor x is the sequence length, not the model width. "
                                          "(With seq_len = d_model the bug is invisible, which is how it slipped through.)",
                          quiet)
        if torch.allclose(got, weight[ids], atol=1e-5):
            return ex.report(FAILED, f"on case '{description}': the output is not scaled at all; multiply by "
                                          f"sqrt(d_model) = {math.sqrt(d_model):.3f}.", quiet)
        difference = describe_difference(got, expected, atol=1e-4)
        if difference:
            return ex.report(FAILED, f"on case '{description}': {difference}.", quiet)
    return ex.report(PASSED, f"all {len(cases)} cases scale by sqrt(d_model), whatever the sentence length.", quiet)


# ----------------------------------------------------------------------------------------------
# 02.3: expected norms
# ----------------------------------------------------------------------------------------------

NORM_D_MODEL = 256


def expected_norms(d_model: int = NORM_D_MODEL) -> tuple[float, float, float]:
    """(token with N(0, 1) init, token with N(0, 1/d_model) init, positional encoding), all after the scaling."""
    return float(d_model), math.sqrt(d_model), math.sqrt(d_model / 2)


@exercise("02.3", points=1, kind=VALUE)
def check_norms(ex, answer, quiet: bool = False):
    """The typical length of a scaled token vector under both inits and of a positional-encoding vector."""
    if answer is None:
        return ex.not_attempted("set your answer instead of `None`", quiet)
    names = ("(a) N(0, 1) init", "(b) course init", "(c) positional encoding")
    if (not isinstance(answer, (tuple, list)) or len(answer) != 3
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in answer)):
        return ex.report(FAILED, f"expected three numbers (a, b, c), got {answer!r}", quiet)
    expected = expected_norms()
    d = NORM_D_MODEL
    hints = (
        f"Each of the {d} components is N(0, 1) times sqrt({d}), so its square has mean {d}; sum {d} of them, "
        "then take the square root.",
        f"Each component is N(0, 1/{d}) times sqrt({d}), i.e. N(0, 1); the squared length sums {d} squares of mean 1.",
        f"The {d} dimensions form {d // 2} (sin, cos) pairs and sin² + cos² = 1 for each pair.",
    )
    swapped = {  # a value that belongs to another part of the question
        (0, expected[1]): "that is the length with the course's init (b); with N(0, 1) every component is sqrt(d_model) "
                          "times larger.",
        (1, expected[0]): "that is the length with N(0, 1) init (a); the course's init has standard deviation "
                          "d_model^-0.5, so the scaled components are N(0, 1).",
        (1, expected[2]): "that is the positional encoding's length (c).",
        (2, expected[1]): "that would be sqrt(d_model): but not every dimension contributes 1, each (sin, cos) pair "
                          "contributes sin² + cos² = 1.",
    }
    for index, (name, got, want, hint) in enumerate(zip(names, answer, expected, hints, strict=True)):
        if abs(got - want) > 0.02 * want:
            for (part, value), why in swapped.items():
                if part == index and abs(got - value) <= 0.02 * value:
                    hint = f"It looks like {why}"
            return ex.report(FAILED, f"{name}: {got:.2f} is not right. {hint}", quiet)
    return ex.report(PASSED, f"correct: {expected[0]:.0f}, {expected[1]:.0f} and {expected[2]:.2f}. With the default "
                                  f"init the tokens are {expected[0] / expected[2]:.0f}x longer than the positions.", quiet)


__all__ = [
    "PASSED",
    "check_norms",
    "check_one_hot_embed",
    "check_scaled_embedding",
    "expected_norms",
]
