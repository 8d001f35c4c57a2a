"""Hidden tests for notebook 07 (LayerNorm, residuals, feed-forward)."""

from __future__ import annotations

import torch
from torch import nn

from hidden_tests import VALUE, Forbidden, Rules, call, check_value, expect, generator, hidden_test

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


@hidden_test("check_layer_norm_module", "07.1", points=3, rules=Rules(forbid=(NO_LAYER_NORM,), stated=IMPLIED))
def layer_norm_module(student_cls):
    module = call("07.1", student_cls, "MyLayerNorm(5)", 5)
    params = dict(module.named_parameters())
    for name, init in (("weight", 1.0), ("bias", 0.0)):
        if name not in params or tuple(params[name].shape) != (5,) or not torch.all(params[name].detach() == init):
            raise AssertionError(f"Exercise 07.1: MyLayerNorm(5) needs a learnable '{name}' of shape (5,) "
                                 f"starting at {init:g}.")
    for case, x, weight, bias, eps in _norm_cases(70_001):
        reference = nn.LayerNorm(x.size(-1), eps=eps).double()
        with torch.no_grad():
            reference.weight.copy_(weight)
            reference.bias.copy_(bias)
        mine = call("07.1", student_cls, case, x.size(-1), eps=eps).double()
        try:
            mine.load_state_dict(reference.state_dict())
        except Exception as exc:
            raise AssertionError(f"Exercise 07.1: cannot load nn.LayerNorm's weights: {exc}") from None
        with torch.no_grad():
            got = call("07.1", mine, case, x.clone())
        expect("07.1", case, got, _layer_norm(x, weight, bias, eps), atol=1e-6)


@hidden_test("check_fixed_norm", "07.2", points=2, rules=Rules(forbid=(NO_LAYER_NORM,),
                                                            stated="change it in place; " + IMPLIED))
def fixed_norm(student_fn):
    for case, x, weight, bias, eps in _norm_cases(70_002):
        got = call("07.2", student_fn, case, x.clone(), weight.clone(), bias.clone(), eps)
        expect("07.2", case, got, _layer_norm(x, weight, bias, eps), atol=1e-6)


@hidden_test("check_ffn_parameter_count", "07.3", points=1, kind=VALUE)
def ffn_parameter_count(answer):
    if isinstance(answer, bool):
        raise AssertionError("Exercise 07.3: answer with a whole number.")
    check_value("07.3", answer, 2 * 512 * 2048 + 2048 + 512)


@hidden_test("check_pre_norm_sublayer", "07.4", points=2)
def pre_norm_sublayer(student_fn):
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
            got = call("07.4", student_fn, case, inp.clone(), sublayer, n)
            expect("07.4", case, got, inp + sublayer(n(inp)), atol=1e-5)
