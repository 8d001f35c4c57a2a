"""Hidden tests for notebook 04 (attention)."""

from __future__ import annotations

import math

import torch

from course_lib.exercises import nb04

from . import Forbidden, Rules, generator, hidden_test


@hidden_test(nb04.check_dot_product_variance)
def dot_product_variance(grader, answer):
    grader.check_value(answer, 64.0, atol=0.5)


@hidden_test(nb04.check_most_attended_key)
def most_attended_key(grader, answer):
    if isinstance(answer, str):
        answer = answer.strip()
    grader.check_value(answer, "Ball")


def _attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k)) v in float64, written independently of course_lib."""
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return (scores.softmax(dim=-1) @ v.double()).to(q.dtype)  # (..., q_len, d_v)


@hidden_test(nb04.check_attention_by_hand, cases=6, rules=Rules(forbid=(
    Forbidden("softmax|scaled_dot_product_attention|multi_head_attention",
              "without softmax (use exp, sum and amax)"),), stated="without calling softmax: use exp, sum and amax"))
def attention_by_hand(grader, student_fn):
    g = generator(40_417)

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=g) * scale

    causal = torch.ones(5, 5, dtype=torch.bool).tril()  # (q_len, k_len)
    lengths = torch.tensor([6, 2, 4])
    padding = (torch.arange(6)[None, :] < lengths[:, None])[:, None, None, :]  # (3, 1, 1, 6)
    cases = [
        ("two queries, one key, d_k=3", (randn(2, 3), randn(1, 3), randn(1, 5)), None),
        ("batch=3, q_len=4, k_len=6, d_k=5, d_v=2", (randn(3, 4, 5), randn(3, 6, 5), randn(3, 6, 2)), None),
        ("a causal mask on 5 positions", (randn(2, 5, 6), randn(2, 5, 6), randn(2, 5, 6)), causal),
        ("heads with a padding mask (batch=3, n_heads=2)", (randn(3, 2, 4, 8), randn(3, 2, 6, 8), randn(3, 2, 6, 8)),
         padding),
        ("huge scores (entries around ±60)", (randn(2, 3, 32, scale=60), randn(2, 7, 32, scale=60), randn(2, 7, 4)),
         None),
        ("double precision inputs", (randn(1, 3, 4).double(), randn(1, 4, 4).double(), randn(1, 4, 4).double()), None),
    ]
    for case, (q, k, v), mask in cases:
        args = (q.clone(), k.clone(), v.clone()) + (() if mask is None else (mask.clone(),))
        with torch.no_grad():
            got = grader.call(student_fn, case, *args)
        grader.expect(case, got, _attention(q, k, v, mask), atol=1e-4)
