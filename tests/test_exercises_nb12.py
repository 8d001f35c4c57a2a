"""The notebook 12 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import math

import pytest
import torch
from torch import nn

from course_lib.exercises import nb12
from course_lib.model import Transformer


def unattempted(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 12.1 RMSNorm


def right_rms_norm(x, weight, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def test_12_1_right_answer_passes():
    result = nb12.check_rms_norm(right_rms_norm, quiet=True)
    assert result, result.message


def test_12_1_reference_equals_torch_rms_norm():
    x = torch.randn(3, 5, 16)
    norm = nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.normal_(1.0, 0.3)
        torch.testing.assert_close(nb12.reference_rms_norm(x, norm.weight, 1e-6), norm(x))


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda x, w, eps: nn.functional.layer_norm(x, x.shape[-1:], w, None, eps), "that is LayerNorm"),
        (lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w, "outside the square root"),
        (lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True) + eps) * w, "not its square root"),
        (lambda x, w, eps: x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w, "SUM of squares"),
        (lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps), "gain (weight) is not applied"),
        (lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(0, keepdim=True) + eps) * w, "wrong dimension"),
        (lambda x, w, eps: x * 2, "values differ"),
        (lambda x, w, eps: x[..., :-1], "expected shape"),
    ],
)
def test_12_1_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb12.check_rms_norm(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_12_1_not_attempted_and_crash():
    assert nb12.check_rms_norm(unattempted, quiet=True).status == "not attempted"
    crashed = nb12.check_rms_norm(lambda x, w, eps: x.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


# ---------------------------------------------------------------- 12.2 parameter count


def right_count(c):
    d = c.d_model
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * c.d_ff + c.d_ff + d
    norm = 2 * d
    encoder = c.n_encoder_layers * (attention + ffn + 2 * norm)
    decoder = c.n_decoder_layers * (2 * attention + ffn + 3 * norm)
    embeddings = c.src_vocab_size * d + c.tgt_vocab_size * d
    generator = (0 if c.tie_embeddings else c.tgt_vocab_size * d) + c.tgt_vocab_size
    final = 2 * norm if c.use_final_norm else 0
    positions = 2 * c.max_len * d if c.positional == "learned" else 0
    return encoder + decoder + embeddings + generator + final + positions


def test_12_2_right_answer_passes_and_matches_built_models():
    result = nb12.check_parameter_count(right_count, quiet=True)
    assert result, result.message
    for _, config in nb12.parameter_configs()[:4]:
        assert right_count(config) == Transformer(config).num_parameters()


def test_12_2_accepts_counting_by_building_the_model():
    assert nb12.check_parameter_count(nb12.reference_parameter_count, quiet=True)


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda c: right_count(c) + (c.tgt_vocab_size * c.d_model if c.tie_embeddings else 0), "count it once"),
        (lambda c: right_count(c) - (4 * c.d_model if c.use_final_norm else 0), "final LayerNorm"),
        (lambda c: right_count(c) - (2 * c.max_len * c.d_model if c.positional == "learned" else 0),
         "learned position tables"),
        (lambda c: right_count(c) - c.n_decoder_layers * (4 * c.d_model**2 + 4 * c.d_model), "cross-attention"),
        (lambda c: right_count(c) - (2 * c.n_encoder_layers + 3 * c.n_decoder_layers) * 2 * c.d_model, "LayerNorms"),
        (lambda c: right_count(c) - c.tgt_vocab_size, "generator's bias"),
        (lambda c: right_count(c) - c.src_vocab_size * c.d_model, "source embedding"),
        (lambda c: right_count(c) + 1, "parameters, got"),
        (lambda c: "many", "return an int"),
    ],
)
def test_12_2_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb12.check_parameter_count(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_12_2_not_attempted_and_crash():
    assert nb12.check_parameter_count(unattempted, quiet=True).status == "not attempted"
    crashed = nb12.check_parameter_count(lambda c: c.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


# ---------------------------------------------------------------- 12.3 RoPE for one pair


def right_rotate(pair, positions, theta):
    angle = positions * theta
    x, y = pair[:, 0], pair[:, 1]
    # notebook 03's R(k): the block [[cos, sin], [-sin, cos]] applied to (x, y)
    return torch.stack([x * torch.cos(angle) + y * torch.sin(angle), -x * torch.sin(angle) + y * torch.cos(angle)], -1)


def test_12_3_right_answer_passes():
    result = nb12.check_rotate_pair(right_rotate, quiet=True)
    assert result, result.message


def test_12_3_rotation_keeps_relative_dot_products():
    q, k = torch.randn(1, 2, dtype=torch.float64), torch.randn(1, 2, dtype=torch.float64)
    dots = [float((nb12.reference_rotate_pair(q, torch.tensor([m]), 0.3)
                   * nb12.reference_rotate_pair(k, torch.tensor([m + 2]), 0.3)).sum()) for m in range(5)]
    assert max(dots) - min(dots) < 1e-12


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda p, pos, th: right_rotate(p, pos, -th), "goes the other way"),
        (lambda p, pos, th: right_rotate(p, torch.ones_like(pos), th), "by theta alone"),
        (lambda p, pos, th: right_rotate(p, pos, math.radians(th)), "degrees"),
        (lambda p, pos, th: p, "values differ"),
        (lambda p, pos, th: p[:, 0], "expected shape"),
    ],
)
def test_12_3_wrong_answers_fail_with_specific_messages(student, needle):
    result = nb12.check_rotate_pair(student, quiet=True)
    assert result.status == "failed" and needle in result.message, result.message


def test_12_3_not_attempted_and_crash():
    assert nb12.check_rotate_pair(unattempted, quiet=True).status == "not attempted"
    crashed = nb12.check_rotate_pair(lambda p, pos, th: p.foo, quiet=True)
    assert crashed.status == "failed" and "raised AttributeError" in crashed.message


def test_12_3_reference_rotates_like_notebook_03s_R_k():
    """R(k) maps the pair (sin a, cos a) of PE(p) to (sin(a + b), cos(a + b)) of PE(p + k), b = k * omega."""
    omega, p, k = 0.37, torch.tensor([5]), 3
    a = p.double() * omega
    pair = torch.stack([a.sin(), a.cos()], dim=-1)  # (1, 2)
    rotated = nb12.reference_rotate_pair(pair, torch.tensor([k]), omega)
    assert torch.allclose(rotated, torch.stack([(a + k * omega).sin(), (a + k * omega).cos()], dim=-1))
    block = torch.tensor([[math.cos(k * omega), math.sin(k * omega)], [-math.sin(k * omega), math.cos(k * omega)]],
                         dtype=torch.float64)  # notebook 03's 2 x 2 block of R(k)
    assert torch.allclose(rotated, pair @ block.T)


def test_12_2_first_config_uses_the_course_vocabularies():
    from course_lib.data import build_vocabs, load_toy_corpus

    src_vocab, tgt_vocab = build_vocabs(load_toy_corpus("train"))
    description, config = nb12.parameter_configs()[0]
    assert (config.src_vocab_size, config.tgt_vocab_size) == (len(src_vocab), len(tgt_vocab))
    assert f"{len(src_vocab)} / {len(tgt_vocab)}" in description
