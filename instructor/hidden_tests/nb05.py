"""Hidden tests for notebook 05 (multi-head attention)."""

from __future__ import annotations

import torch

from course_lib.exercises import nb05

from . import generator, hidden_test


@hidden_test(nb05.check_split_merge, cases=10)
def split_merge(grader, split_heads, merge_heads):
    g = generator(50_001)
    for seq, batch, d_model, n_heads in [(4, 3, 10, 5), (9, 1, 24, 6), (1, 2, 8, 8), (3, 5, 20, 2), (6, 6, 12, 3)]:
        case = f"x of shape {(seq, batch, d_model)} (sequence first), n_heads={n_heads}"
        x = torch.randn(seq, batch, d_model, generator=g)
        d_head = d_model // n_heads
        expected = x.reshape(seq, batch, n_heads, d_head).permute(1, 2, 0, 3)  # (batch, n_heads, seq, d_head)
        split = grader.call(split_heads, case, x.clone(), n_heads)
        grader.expect("split_heads, " + case, split, expected)
        merged = grader.call(merge_heads, case, expected.clone())
        grader.expect("merge_heads, " + case, merged, x)


@hidden_test(nb05.check_parameter_count)
def parameter_count(grader, answer):
    if isinstance(answer, bool):
        raise grader.wrong("answer with a whole number.")
    grader.check_value(answer, 4 * 512 * 512 + 4 * 512)


@hidden_test(nb05.check_fixed_multi_head_attention, cases=3)
def fixed_multi_head_attention(grader, student_fn):
    from course_lib.attention import MultiHeadAttention

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(50_003)
        cases = []
        for d_model, n_heads, batch, seq in [(20, 5, 2, 7), (6, 1, 3, 4), (32, 8, 1, 9)]:
            mha = MultiHeadAttention(d_model, n_heads).eval()
            cases.append((f"d_model={d_model}, n_heads={n_heads}, x of shape {(batch, seq, d_model)}",
                          torch.randn(batch, seq, d_model), mha))
    with torch.no_grad():
        for case, x, mha in cases:
            got = grader.call(student_fn, case, x.clone(), mha)
            grader.expect(case, got, mha(x, x, x))
