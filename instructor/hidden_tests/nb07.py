"""Hidden tests for notebook 07 (LayerNorm, residuals, feed-forward)."""

from __future__ import annotations

import torch
from torch import nn

from course_lib.exercises import nb07

from . import Forbidden, Rules, generator, hidden_test

NO_LAYER_NORM = Forbidden("layer_?norm|group_?norm|instance_?norm|batch_?norm",
                          "LayerNorm written out, without PyTorch's (nn.LayerNorm, F.layer_norm)")
IMPLIED = "implied: the exercise asks to write LayerNorm (not to call PyTorch's)"


def _norm_cases(seed):
    """(case, x, weight, bias, eps) in float64 with learned-looking weight and bias."""
    g = generator(seed)
    cases = []
    for case, shape, scale, shift, eps in [
        ("x of shape (3, 2, 10), large values", (3, 2, 10), 50.0, 7.0, 1e-5),
        ("two features: x of shape (4, 2)", (4, 2), 1.0, 0.0, 1e-5),
        ("near-constant rows: x * 1e-4, eps 1e-6", (2, 5, 6), 1e-4, 0.0, 1e-6),
        ("eps 0.1 changes the result", (1, 3, 12), 0.5, -1.0, 0.1),
    ]:
        x = (torch.randn(*shape, generator=g, dtype=torch.float64) * scale + shift)
        d = shape[-1]
        weight = 1 + 0.5 * torch.randn(d, generator=g, dtype=torch.float64)
        bias = 0.3 * torch.randn(d, generator=g, dtype=torch.float64)
        cases.append((case, x, weight, bias, eps))
    return cases


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased variance: divide by d
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def _fold_cases():
    """(case, norm, linear, x): nn.LayerNorm with learned-looking gain and shift, then an nn.Linear."""
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(70_001)
        for case, d_in, d_out, eps in [
            ("nn.LayerNorm(5), nn.Linear(5, 5)", 5, 5, 1e-5),
            ("nn.LayerNorm(7), nn.Linear(7, 3)", 7, 3, 1e-5),
            ("nn.LayerNorm(4, eps=0.1), nn.Linear(4, 9)", 4, 9, 0.1),
        ]:
            norm, linear = nn.LayerNorm(d_in, eps=eps), nn.Linear(d_in, d_out)
            with torch.no_grad():
                norm.weight.normal_(1.0, 0.7)
                norm.bias.normal_(0.0, 0.7)
                linear.bias.normal_(0.0, 1.0)
            cases.append((case, norm, linear, torch.randn(3, 4, d_in) * 5 - 2))
    return cases


@hidden_test(nb07.check_fold_layer_norm, cases=3)
def fold_layer_norm(grader, student_fn):
    for case, norm, linear, x in _fold_cases():
        before = [p.detach().clone() for module in (norm, linear) for p in module.parameters()]
        with torch.random.fork_rng(devices=[]):
            folded = grader.call(student_fn, case, norm, linear)
        after = [p.detach() for module in (norm, linear) for p in module.parameters()]
        if not all(torch.equal(a, b) for a, b in zip(before, after, strict=True)):
            raise grader.wrong("fold_layer_norm changed the norm or the layer it was given; "
                                 "return a new nn.Linear.")
        if not isinstance(folded, nn.Linear):
            raise grader.wrong(f"return a new nn.Linear, got {type(folded).__name__}.")
        with torch.no_grad():
            mean = x.mean(dim=-1, keepdim=True)
            x_hat = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(dim=-1, keepdim=True) + norm.eps)  # no gain, shift
            expected = (x_hat * norm.weight + norm.bias) @ linear.weight.T + linear.bias  # linear(norm(x))
            got = grader.call(folded, case, x_hat)
        grader.expect(case, got, expected, atol=1e-4)


@hidden_test(nb07.check_fixed_norm, cases=4, rules=Rules(forbid=(NO_LAYER_NORM,),
                                                            stated="change it in place; " + IMPLIED))
def fixed_norm(grader, student_fn):
    for case, x, weight, bias, eps in _norm_cases(70_002):
        got = grader.call(student_fn, case, x.clone(), weight.clone(), bias.clone(), eps)
        grader.expect(case, got, _layer_norm(x, weight, bias, eps), atol=1e-6)


@hidden_test(nb07.check_ffn_parameter_count)
def ffn_parameter_count(grader, answer):
    if isinstance(answer, bool):
        raise grader.wrong("answer with a whole number.")
    grader.check_value(answer, 2 * 512 * 2048 + 2048 + 512)


@hidden_test(nb07.check_pre_norm_sublayer, cases=3)
def pre_norm_sublayer(grader, student_fn):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(70_004)
        d = 12
        norm = nn.LayerNorm(d)
        with torch.no_grad():
            norm.weight.normal_(1.0, 0.5)
            norm.bias.normal_(0.0, 0.5)
        linear = nn.Linear(d, d)
        x = torch.randn(3, 4, d) * 3 - 2
    cases = [
        ("a linear sub-layer and nn.LayerNorm", (x, linear, norm)),
        ("a squaring sub-layer", (x, lambda h: h**2, norm)),
        ("a sub-layer that returns zeros", (x, torch.zeros_like, norm)),
    ]
    with torch.no_grad():
        for case, (inp, sublayer, n) in cases:
            got = grader.call(student_fn, case, inp.clone(), sublayer, n)
            grader.expect(case, got, inp + sublayer(n(inp)), atol=1e-5)
