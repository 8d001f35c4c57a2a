"""Hidden tests for notebook 12 (what changed since 2017)."""

from __future__ import annotations

import math

import torch

from course_lib.exercises import nb12

from . import Forbidden, Rules, generator, hidden_test
from .rules import takes_complex


@hidden_test(nb12.check_rms_norm, cases=3, rules=Rules(forbid=(
    Forbidden("rms_?norm", "written out, without F.rms_norm or nn.RMSNorm"),),
    stated="implied: the exercise asks to write RMSNorm (not to call PyTorch's)"))
def rms_norm(grader, student_fn):
    g = generator(120_001)
    for case, shape, scale, offset, eps in [
        ("x of shape (3, 4, 10)", (3, 4, 10), 3.0, 1.0, 1e-6),
        ("x of shape (5, 2), a large offset", (5, 2), 0.1, 20.0, 1e-6),
        ("near-zero values, eps 1e-2", (2, 6), 1e-3, 0.0, 1e-2),
    ]:
        x = (torch.randn(*shape, generator=g, dtype=torch.float64) * scale + offset)
        weight = 1 + 0.3 * torch.randn(shape[-1], generator=g, dtype=torch.float64)
        expected = x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps) * weight
        got = grader.call(student_fn, case, x.clone(), weight.clone(), eps)
        grader.expect(case, got, expected, atol=1e-6)


@hidden_test(nb12.check_parameter_count, cases=3, rules=Rules(
    allow=("TransformerConfig.*",),
    forbid=(Forbidden(r"^Module\.__init__$|num_parameters", "without building the model (count from the config's fields)"),),
    stated="from the fields of the config alone, without building the model"))
def parameter_count(grader, student_fn):
    from course_lib.model import Transformer, TransformerConfig

    configs = [
        ("d_model 24, 3 heads, 2 + 1 layers, d_ff 40, vocabularies 70 / 60",
         TransformerConfig(src_vocab_size=70, tgt_vocab_size=60, d_model=24, n_heads=3, n_encoder_layers=2,
                           n_decoder_layers=1, d_ff=40)),
        ("pre-norm, tied, learned positions (max_len 50)",
         TransformerConfig(src_vocab_size=90, tgt_vocab_size=110, d_model=16, n_heads=2, n_encoder_layers=3,
                           n_decoder_layers=2, d_ff=20, max_len=50, norm_first=True, tie_embeddings=True,
                           positional="learned")),
        ("one layer each, d_ff 8", TransformerConfig(src_vocab_size=11, tgt_vocab_size=13, d_model=8, n_heads=1,
                                                     n_encoder_layers=1, n_decoder_layers=1, d_ff=8)),
    ]
    for case, config in configs:
        with torch.device("meta"):
            expected = Transformer(config).num_parameters()
        got = grader.call(student_fn, case, config)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        grader.expect(case, got, expected)


@hidden_test(nb12.check_rotate_pair, cases=3, rules=Rules(forbid=(
    Forbidden(".", "without complex numbers (use torch.cos and torch.sin)", only_if=takes_complex),
    Forbidden(r"polar|view_as_complex|^complex$", "without complex numbers (use torch.cos and torch.sin)"),),
    stated="using torch.cos and torch.sin (no complex numbers)"))
def rotate_pair(grader, student_fn):
    g = generator(120_003)
    cases = [
        ("(0, 1) at position 2 with theta = pi/4 -> (1, 0)", torch.tensor([[0.0, 1.0]], dtype=torch.float64),
         torch.tensor([2]), math.pi / 4),
        ("6 pairs at positions 0..5, theta = 1.3", torch.randn(6, 2, generator=g, dtype=torch.float64),
         torch.arange(6), 1.3),
        ("positions 100 and 1, theta = 0.001", torch.randn(2, 2, generator=g, dtype=torch.float64),
         torch.tensor([100, 1]), 0.001),
    ]
    for case, pair, positions, theta in cases:
        angle = positions.double() * theta  # (seq,)
        x, y = pair[:, 0], pair[:, 1]
        # the direction of notebook 03's R(k), the block [[cos, sin], [-sin, cos]], as the exercise text says
        expected = torch.stack([x * angle.cos() + y * angle.sin(), -x * angle.sin() + y * angle.cos()], dim=-1)
        got = grader.call(student_fn, case, pair.clone(), positions.clone(), theta)
        grader.expect(case, got, expected, atol=1e-6)
