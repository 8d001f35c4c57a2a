"""Hidden tests for notebook 05 (multi-head attention)."""

from __future__ import annotations

import torch

from hidden_tests import VALUE, call, check_value, expect, generator, hidden_test


@hidden_test("check_split_merge", "05.1", points=3, cases=10)
def split_merge(split_heads, merge_heads):
    g = generator(50_001)
    for seq, batch, d_model, n_heads in [(4, 3, 10, 5), (9, 1, 24, 6), (1, 2, 8, 8), (3, 5, 20, 2), (6, 6, 12, 3)]:
        case = f"x of shape {(seq, batch, d_model)} (sequence first), n_heads={n_heads}"
        x = torch.randn(seq, batch, d_model, generator=g)
        d_head = d_model // n_heads
        expected = x.reshape(seq, batch, n_heads, d_head).permute(1, 2, 0, 3)  # (batch, n_heads, seq, d_head)
        split = call("05.1", split_heads, case, x.clone(), n_heads)
        expect("05.1", "split_heads, " + case, split, expected)
        merged = call("05.1", merge_heads, case, expected.clone())
        expect("05.1", "merge_heads, " + case, merged, x)


@hidden_test("check_parameter_count", "05.2", points=1, kind=VALUE)
def parameter_count(answer):
    if isinstance(answer, bool):
        raise AssertionError("Exercise 05.2: answer with a whole number.")
    check_value("05.2", answer, 4 * 512 * 512 + 4 * 512)


@hidden_test("check_fixed_multi_head_attention", "05.3", points=2, cases=3)
def fixed_multi_head_attention(student_fn):
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
            got = call("05.3", student_fn, case, x.clone(), mha)
            expect("05.3", case, got, mha(x, x, x))
