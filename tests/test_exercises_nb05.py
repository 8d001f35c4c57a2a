"""The notebook 05 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest
import torch

from course_lib.exercises import nb05

# ---------------------------------------------------------------- 05.1 split / merge, sequence first


def right_split(x, n_heads):
    seq, batch, d_model = x.shape
    return x.view(seq, batch, n_heads, d_model // n_heads).permute(1, 2, 0, 3)


def right_merge(x):
    batch, n_heads, seq, d_head = x.shape
    return x.permute(2, 0, 1, 3).reshape(seq, batch, n_heads * d_head)


def split_via_batch_first(x, n_heads):  # transpose to batch first, then the notebook's split: also right
    x = x.transpose(0, 1)
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)


def merge_via_batch_first(x):
    batch, n_heads, seq, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, seq, n_heads * d_head).transpose(0, 1)


def unattempted_split(x, n_heads):
    raise NotImplementedError


def unattempted_merge(x):
    raise NotImplementedError


@pytest.mark.parametrize(("split", "merge"), [(right_split, right_merge), (split_via_batch_first, merge_via_batch_first)])
def test_05_1_right_answers_pass(split, merge):
    result = nb05.check_split_merge(split, merge, quiet=True)
    assert result, result.message


def test_05_1_the_course_solution_is_what_the_hidden_test_expects():
    x = torch.randn(4, 3, 12)
    assert torch.equal(nb05._reference_split(x, 3), right_split(x, 3))
    assert torch.equal(nb05._reference_merge(right_split(x, 3)), x)


@pytest.mark.parametrize(
    ("split", "merge", "needle"),
    [
        (lambda x, h: x.view(x.size(0), x.size(1), h, -1).transpose(1, 2), right_merge, "as if it were batch first"),
        (lambda x, h: x.view(x.size(0), x.size(1), h, -1), right_merge, "did not move the dimensions"),
        (lambda x, h: x.view(x.size(0), x.size(1), h, -1).transpose(0, 1), right_merge, "heads must also come before"),
        (lambda x, h: x.reshape(x.size(1), h, x.size(0), -1), right_merge, "viewed x straight as"),
        (lambda x, h: x.view(x.size(0), x.size(1), -1, h).permute(1, 3, 0, 2), right_merge, "head and position are swapped"),
        (lambda x, h: x.permute(1, 0, 2)[:, None], right_merge, "shape"),
        (right_split, lambda x: x.reshape(x.size(2), x.size(0), -1), "without moving the dimensions back"),
        (right_split, lambda x: x.transpose(1, 2).reshape(x.size(0), x.size(2), -1), "must be (seq, batch, d_model)"),
        (right_split, lambda x: x.permute(2, 0, 1, 3).view(x.size(2), x.size(0), -1), "call .contiguous() before .view"),
        (right_split, lambda x: right_merge(x) * 2, "values differ"),
    ],
)
def test_05_1_wrong_answers_fail_with_specific_messages(split, merge, needle):
    result = nb05.check_split_merge(split, merge, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


@pytest.mark.parametrize(("split", "merge"), [(unattempted_split, unattempted_merge), (right_split, unattempted_merge)])
def test_05_1_not_attempted(split, merge):
    assert nb05.check_split_merge(split, merge, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 05.2 parameter count


def test_05_2_parameter_count():
    assert nb05.check_parameter_count(4 * 512 * 512 + 4 * 512, quiet=True)
    no_bias = nb05.check_parameter_count(4 * 512 * 512, quiet=True)
    assert no_bias.status == "failed" and "biases" in no_bias.message
    per_head = nb05.check_parameter_count(8 * (4 * 512 * 512 + 4 * 512), quiet=True)
    assert per_head.status == "failed" and "number of heads does not multiply" in per_head.message
    other = nb05.check_parameter_count(7, quiet=True)
    assert other.status == "failed" and "7 is not right" in other.message and "1050624" not in other.message
    assert nb05.check_parameter_count("1050624", quiet=True).status == "failed"
    assert nb05.check_parameter_count(None, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 05.3 spot the bug


def fixed_multi_head_attention(x, mha):
    batch, seq, d_model = x.shape
    n_heads, d_head = mha.n_heads, mha.d_head
    q = mha.q_proj(x).reshape(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)
    k = mha.k_proj(x).reshape(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)
    v = mha.v_proj(x).reshape(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)
    scores = q @ k.transpose(-2, -1) / d_head**0.5
    heads = scores.softmax(dim=-1) @ v
    merged = heads.permute(0, 2, 1, 3).reshape(batch, seq, d_model)
    return mha.out_proj(merged)


def test_05_3_fixed_function_passes():
    result = nb05.check_fixed_multi_head_attention(fixed_multi_head_attention, quiet=True)
    assert result, result.message


def test_05_3_unchanged_bug_counts_as_not_attempted():
    result = nb05.check_fixed_multi_head_attention(nb05.buggy_multi_head_attention, quiet=True)
    assert result.status == "not attempted" and "still gives the buggy output" in result.message


def test_05_3_other_wrong_answers_fail():
    wrong = nb05.check_fixed_multi_head_attention(lambda x, mha: 2 * fixed_multi_head_attention(x, mha), quiet=True)
    assert wrong.status == "failed" and "values differ" in wrong.message
    crashed = nb05.check_fixed_multi_head_attention(lambda x, mha: x.view(-1, 7), quiet=True)
    assert crashed.status == "failed" and "raised RuntimeError" in crashed.message


def test_05_3_not_implemented():
    def unattempted(x, mha):
        raise NotImplementedError

    assert nb05.check_fixed_multi_head_attention(unattempted, quiet=True).status == "not attempted"


def test_checkers_leave_the_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    nb05.check_fixed_multi_head_attention(fixed_multi_head_attention, quiet=True)
    nb05.check_split_merge(right_split, right_merge, quiet=True)
    assert torch.equal(torch.rand(3), expected)
