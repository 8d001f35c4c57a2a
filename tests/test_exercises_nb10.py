"""The notebook 10 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest
import torch

from course_lib.exercises import nb10


def unattempted(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 10.1 the warm-up learning rate


def right_lr(step, d_model, warmup, factor):
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def test_10_1_right_answer_passes():
    result = nb10.check_warmup_lr(right_lr, quiet=True)
    assert result, result.message
    as_tensor = nb10.check_warmup_lr(lambda *args: torch.tensor(right_lr(*args)), quiet=True)
    assert as_tensor, as_tensor.message


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda s, d, w, f: d**-0.5 * min(s**-0.5, s * w**-1.5), "left out the factor"),
        (lambda s, d, w, f: f * min(s**-0.5, s * w**-1.5), "left out d_model^-0.5"),
        (lambda s, d, w, f: f * d**-0.5 * max(s**-0.5, s * w**-1.5), "max instead of min"),
        (lambda s, d, w, f: f * d**-0.5 * min(s**-0.5, s * w**-0.5), "warmup^-1.5"),
        (lambda s, d, w, f: f * d**-0.5 * s**-0.5, "never warms up"),
        (lambda s, d, w, f: f * d**0.5 * min(s**-0.5, s * w**-1.5), "d_model^+0.5"),
        (lambda s, d, w, f: "fast", "return a number"),
    ],
)
def test_10_1_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb10.check_warmup_lr(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_10_1_failure_names_the_case_and_both_values():
    result = nb10.check_warmup_lr(lambda s, d, w, f: 0.001, quiet=True)
    assert "step 1, d_model 64" in result.message and "expected 3.125e-05" in result.message, result.message


def test_10_1_not_attempted_and_crash():
    assert nb10.check_warmup_lr(unattempted, quiet=True).status == "not attempted"
    crashed = nb10.check_warmup_lr(lambda s, d, w, f: s.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


# ---------------------------------------------------------------- 10.2 the smoothed target distribution


def right_smoothing(target, num_classes, smoothing, pad_id):
    dist = torch.full((*target.shape, num_classes), smoothing / num_classes)
    dist.scatter_add_(-1, target.unsqueeze(-1), torch.full((*target.shape, 1), 1.0 - smoothing))
    dist[target == pad_id] = 0.0
    return dist


def no_pad_rows(target, num_classes, smoothing, pad_id):
    dist = torch.full((*target.shape, num_classes), smoothing / num_classes)
    dist.scatter_add_(-1, target.unsqueeze(-1), torch.full((*target.shape, 1), 1.0 - smoothing))
    return dist


def annotated_transformer_style(target, num_classes, smoothing, pad_id):
    dist = torch.full((*target.shape, num_classes), smoothing / (num_classes - 1))
    dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    dist[target == pad_id] = 0.0
    return dist


def not_normalised(target, num_classes, smoothing, pad_id):
    dist = torch.full((*target.shape, num_classes), smoothing)
    dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    dist[target == pad_id] = 0.0
    return dist


def test_10_2_right_answer_passes():
    result = nb10.check_smoothed_targets(right_smoothing, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (no_pad_rows, "must be all zeros"),
        (annotated_transformer_style, "K - 1 wrong classes"),
        (not_normalised, "must sum to 1"),
        (lambda t, k, s, p: right_smoothing(t, k, s, p)[..., :-1], "shape (*target.shape, K)"),
        (lambda t, k, s, p: right_smoothing(t, k, s, p).tolist(), "return a tensor"),
        (lambda t, k, s, p: torch.nn.functional.one_hot(t, k), "float probabilities"),
    ],
)
def test_10_2_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb10.check_smoothed_targets(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_10_2_failure_names_the_case():
    result = nb10.check_smoothed_targets(no_pad_rows, quiet=True)
    assert "padded target" in result.message, result.message


def test_10_2_not_attempted_and_crash():
    assert nb10.check_smoothed_targets(unattempted, quiet=True).status == "not attempted"
    crashed = nb10.check_smoothed_targets(lambda t, k, s, p: t.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


# ---------------------------------------------------------------- 10.3 the padding fraction of a batch


def right_padding(lengths):
    return 1 - sum(lengths) / (max(lengths) * len(lengths))


def test_10_3_right_answer_passes():
    result = nb10.check_batch_padding_fraction(right_padding, quiet=True)
    assert result, result.message
    with_torch = nb10.check_batch_padding_fraction(
        lambda n: 1 - torch.tensor(n).sum() / (torch.tensor(n).max() * len(n)), quiet=True)
    assert with_torch, with_torch.message


def test_10_3_reference_agrees_with_a_padded_batch():
    from course_lib.data import pad_sequences

    lengths = [5, 3, 2]
    batch = pad_sequences([torch.ones(n, dtype=torch.long) for n in lengths])  # (3, 5), zeros are padding
    expected = float((batch == 0).double().mean())
    assert abs(nb10.reference_batch_padding_fraction(lengths) - expected) < 1e-9


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda n: sum(n) / (max(n) * len(n)), "fraction of REAL tokens"),
        (lambda n: (max(n) * len(n) - sum(n)) / sum(n), "divided the padding by the number of real tokens"),
        (lambda n: 0.0, "padded to the MEAN length"),
        (lambda n: float(max(n) * len(n) - sum(n)), "number of padding positions"),
        (lambda n: "a lot", "return a number"),
    ],
)
def test_10_3_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb10.check_batch_padding_fraction(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_10_3_not_attempted_and_crash():
    assert nb10.check_batch_padding_fraction(unattempted, quiet=True).status == "not attempted"
    crashed = nb10.check_batch_padding_fraction(lambda n: n.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


def test_10_3_failure_names_the_batch():
    result = nb10.check_batch_padding_fraction(lambda n: 0.5, quiet=True)
    assert "lengths [5, 3, 2]" in result.message and "expected 0.3333" in result.message, result.message


# ---------------------------------------------------------------- 10.4 the articles' recipe


@pytest.mark.parametrize("answer", [{"B", "D"}, "BD", "d, b", ["b", "d"], ("D", "B")])
def test_10_4_right_answer_passes_in_any_spelling(answer):
    result = nb10.check_recipe_fix(answer, quiet=True)
    assert result, result.message


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ({"A", "B"}, "A does not help: more epochs on 5 sentences"),
        ({"B", "F"}, "F does not help: without the causal mask"),
        ({"B"}, "1 of the two real fixes is missing"),
        ({"C", "E"}, "2 of the two real fixes are missing"),
        ({"B", "D", "E"}, "E does not help"),
        ({"B", "Z"}, "there is no option Z"),
        (42, "give your choice as letters"),
    ],
)
def test_10_4_wrong_answers_fail_with_specific_messages(answer, needle):
    result = nb10.check_recipe_fix(answer, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_10_4_not_attempted():
    assert nb10.check_recipe_fix(None, quiet=True).status == "not attempted"


def test_10_4_every_option_has_an_explanation():
    assert set(nb10._RECIPE_WHY) == set(nb10.RECIPE_OPTIONS)
    assert nb10.RECIPE_ANSWER <= set(nb10.RECIPE_OPTIONS)
