"""The notebook 07 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest
import torch
from torch import nn

from course_lib.exercises import nb07

# ---------------------------------------------------------------- 07.1 fold gamma and beta into the next layer


def _linear_with(linear, weight, bias):
    folded = nn.Linear(linear.in_features, linear.out_features)
    with torch.no_grad():
        folded.weight.copy_(weight)
        folded.bias.copy_(bias)
    return folded


def right_fold(norm, linear):
    return _linear_with(linear, linear.weight * norm.weight, linear.weight @ norm.bias + linear.bias)


def fold_without_beta(norm, linear):
    return _linear_with(linear, linear.weight * norm.weight, linear.bias)


def fold_without_gamma(norm, linear):
    return _linear_with(linear, linear.weight, linear.weight @ norm.bias + linear.bias)


def fold_rows(norm, linear):
    return _linear_with(linear, linear.weight * norm.weight[:, None], linear.weight @ norm.bias + linear.bias)


def fold_beta_straight_into_bias(norm, linear):
    return _linear_with(linear, linear.weight * norm.weight, linear.bias + norm.bias)


def fold_transposed(norm, linear):
    return _linear_with(linear, linear.weight * norm.weight, linear.weight.T @ norm.bias + linear.bias)


def fold_losing_b(norm, linear):
    return _linear_with(linear, linear.weight * norm.weight, linear.weight @ norm.bias)


def fold_in_place(norm, linear):
    with torch.no_grad():
        linear.bias += linear.weight @ norm.bias
        linear.weight *= norm.weight
    return linear


def test_07_1_right_answer_passes():
    result = nb07.check_fold_layer_norm(right_fold, quiet=True)
    assert result, result.message


def test_07_1_the_course_solution_passes():
    assert nb07.check_fold_layer_norm(nb07.reference_fold_layer_norm, quiet=True)


@pytest.mark.parametrize(
    ("fn", "needle"),
    [
        (lambda norm, linear: linear, "comes back unchanged"),
        (lambda norm, linear: _linear_with(linear, linear.weight, linear.bias), "comes back unchanged"),
        (fold_without_beta, "beta is missing"),
        (fold_without_gamma, "gamma is missing"),
        (fold_rows, "gamma scales the wrong side"),
        (fold_beta_straight_into_bias, "without passing through the weight"),
        (fold_transposed, "transposed weight"),
        (fold_losing_b, "own bias b has disappeared"),
        (fold_in_place, "changed the norm or the layer"),
        (lambda norm, linear: linear.weight * norm.weight, "return a new nn.Linear"),
        (lambda norm, linear: _linear_with(linear, 2 * linear.weight * norm.weight, linear.bias), "values differ"),
    ],
)
def test_07_1_wrong_answers_fail_with_the_mistake_named(fn, needle):
    result = nb07.check_fold_layer_norm(fn, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_07_1_not_attempted():
    def unattempted(norm, linear):
        raise NotImplementedError

    assert nb07.check_fold_layer_norm(unattempted, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 07.2 fix the articles' norm


def right_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return weight * (x - mean) / torch.sqrt(var + eps) + bias


def only_eps_fixed(x, weight, bias, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    return weight * (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) + bias


def only_variance_fixed(x, weight, bias, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    return weight * (x - mean) / (x.std(dim=-1, keepdim=True, unbiased=False) + eps) + bias


def wrong_dim(x, weight, bias, eps=1e-5):
    mean = x.mean(dim=0, keepdim=True)
    var = x.var(dim=0, keepdim=True, unbiased=False)
    return weight * (x - mean) / torch.sqrt(var + eps) + bias


def test_07_2_right_answer_passes():
    result = nb07.check_fixed_norm(right_norm, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("fn", "needle"),
    [
        (only_eps_fixed, "unbiased variance"),
        (only_variance_fixed, "eps is added outside the square root"),
        (wrong_dim, "wrong dimension"),
    ],
)
def test_07_2_half_fixed_answers_fail_with_the_remaining_bug_named(fn, needle):
    result = nb07.check_fixed_norm(fn, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_07_2_unchanged_articles_version_counts_as_not_attempted():
    result = nb07.check_fixed_norm(nb07.articles_norm, quiet=True)
    assert result.status == "not attempted" and "still the articles' version" in result.message


def test_07_2_not_implemented_and_crash():
    def unattempted(x, weight, bias, eps=1e-5):
        raise NotImplementedError

    assert nb07.check_fixed_norm(unattempted, quiet=True).status == "not attempted"
    crashed = nb07.check_fixed_norm(lambda x, w, b, eps: x @ torch.ones(3), quiet=True)
    assert crashed.status == "failed" and "raised RuntimeError" in crashed.message


# ---------------------------------------------------------------- 07.3 FFN parameter count


def test_07_3_parameter_count():
    assert nb07.check_ffn_parameter_count(2 * 512 * 2048 + 2048 + 512, quiet=True)
    weights_only = nb07.check_ffn_parameter_count(2 * 512 * 2048, quiet=True)
    assert weights_only.status == "failed" and "bias" in weights_only.message
    other = nb07.check_ffn_parameter_count(12345, quiet=True)
    assert other.status == "failed" and "12345 is not right" in other.message and "2099712" not in other.message
    assert nb07.check_ffn_parameter_count(2.0e6, quiet=True).status == "failed"
    assert nb07.check_ffn_parameter_count(None, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 07.4 pre-norm wrapper


def test_07_4_right_answer_passes():
    result = nb07.check_pre_norm_sublayer(lambda x, sublayer, norm: x + sublayer(norm(x)), quiet=True)
    assert result and "EncoderLayer(norm_first=True)" in result.message


@pytest.mark.parametrize(
    ("fn", "needle"),
    [
        (lambda x, s, n: n(x + s(x)), "this is post-norm"),
        (lambda x, s, n: s(n(x)), "residual connection is missing"),
        (lambda x, s, n: x + n(s(x)), "norm is applied to the sub-layer's output"),
        (lambda x, s, n: x + 2 * s(n(x)), "values differ"),
    ],
)
def test_07_4_wrong_answers_fail_with_specific_messages(fn, needle):
    result = nb07.check_pre_norm_sublayer(fn, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_07_4_not_attempted():
    def unattempted(x, sublayer, norm):
        raise NotImplementedError

    assert nb07.check_pre_norm_sublayer(unattempted, quiet=True).status == "not attempted"


def test_checkers_print_one_verdict_line(capsys):
    nb07.check_ffn_parameter_count(None)
    assert capsys.readouterr().out.startswith("⏳ Exercise 07.3 not attempted yet")


def test_checkers_leave_the_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    nb07.check_pre_norm_sublayer(lambda x, sublayer, norm: x + sublayer(norm(x)), quiet=True)
    nb07.check_fold_layer_norm(right_fold, quiet=True)
    nb07.check_fixed_norm(right_norm, quiet=True)
    assert torch.equal(torch.rand(3), expected)
