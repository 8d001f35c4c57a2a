"""Exercise checks for notebook 07 (LayerNorm, residual connections and the feed-forward block).

07.1 ``fold_layer_norm``: fold a LayerNorm's gain and shift into the linear layer that follows it.
07.2 ``fixed_norm``: repair the articles' norm (unbiased std, eps outside the square root).
07.3 the parameter count of the paper's feed-forward block (d_model 512, d_ff 2048).
07.4 ``pre_norm_sublayer``: the pre-norm residual wrapper x + sublayer(norm(x)).

Every checker compares with ``course_lib`` / ``nn.LayerNorm`` and names the typical mistake it
recognises (gamma on the wrong side of the weight, beta not passed through it, wrong variance, eps in the
wrong place, wrong dimension, post-norm instead of pre-norm).
"""

from __future__ import annotations

import torch
from torch import nn

from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise, known_mistake

ATOL = 1e-5


# ----------------------------------------------------------------------------------------------
# Reference norms: LayerNorm and the mistakes students (and articles) make
# ----------------------------------------------------------------------------------------------


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def articles_norm(x, weight, bias, eps=1e-5):
    """The articles' version: unbiased std and eps outside the square root (NOT LayerNorm)."""
    mean = x.mean(dim=-1, keepdim=True)
    std = x.std(dim=-1, keepdim=True)  # unbiased: divides by d - 1
    return weight * (x - mean) / (std + eps) + bias


_MISTAKES = [
    (
        "you use the unbiased variance (dividing by d - 1, the default of torch.var/std); LayerNorm divides by d: "
        "use unbiased=False",
        lambda x, w, b, eps: (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b,
    ),
    (
        "eps is added outside the square root (std + eps); LayerNorm computes sqrt(var + eps)",
        lambda x, w, b, eps: (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, unbiased=False) + eps) * w + b,
    ),
    (
        "this is the articles' norm: unbiased std AND eps outside the square root; fix both",
        lambda x, w, b, eps: articles_norm(x, w, b, eps),
    ),
    (
        "no eps at all: LayerNorm divides by sqrt(var + eps) so that a nearly constant position stays finite",
        lambda x, w, b, eps: (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True, unbiased=False) * w + b,
    ),
    (
        "the gain (weight) and shift (bias) are not applied: multiply by weight, then add bias",
        lambda x, w, b, eps: _layer_norm(x, torch.ones_like(w), torch.zeros_like(b), eps),
    ),
    (
        "you normalise over the wrong dimension: LayerNorm uses each position's own features, the LAST dimension",
        lambda x, w, b, eps: (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, keepdim=True, unbiased=False) + eps)
        * w
        + b,
    ),
]


def _matches(got, expected) -> bool:
    return (
        isinstance(got, torch.Tensor)
        and tuple(got.shape) == tuple(expected.shape)
        and torch.allclose(got.detach().double(), expected.double(), atol=1e-6, rtol=1e-5)
    )


def _diagnose(outputs, cases) -> str | None:
    """Name the known mistake that reproduces the student's outputs on every case, if any."""
    return known_mistake(
        _MISTAKES,
        lambda wrong: all(_matches(got, wrong(x, w, b, eps)) for got, (_, x, w, b, eps) in zip(outputs, cases, strict=True)),
        tolerate=(RuntimeError,))


def _norm_cases():
    """(description, x, weight, bias, eps): ordinary, short feature vectors, tiny variance."""
    g = torch.Generator().manual_seed(7)
    cases = []
    for description, shape, scale, eps in [
        ("x of shape (2, 5, 16), values of size ~3", (2, 5, 16), 3.0, 1e-5),
        ("short feature vectors: x of shape (3, 4, 4)", (3, 4, 4), 1.0, 1e-5),
        ("tiny variance: x of shape (2, 3, 8) * 0.001, eps 1e-5", (2, 3, 8), 1e-3, 1e-5),
        ("x of shape (6, 32) (no batch dimension), eps 1e-3", (6, 32), 1.0, 1e-3),
    ]:
        x = (torch.randn(*shape, generator=g) * scale + 0.5 * scale).double()
        d = shape[-1]
        weight = (1 + 0.5 * torch.randn(d, generator=g)).double()
        bias = (0.3 * torch.randn(d, generator=g)).double()
        cases.append((description, x, weight, bias, eps))
    return cases


def _compare_norms(ex, outputs, cases, quiet):
    """A failure report for the first wrong case (naming the mistake when it is a known one), or None."""
    for got, (description, x, weight, bias, eps) in zip(outputs, cases, strict=True):
        difference = describe_difference(got, _layer_norm(x, weight, bias, eps), atol=ATOL, rtol=1e-4)
        if difference is not None:
            mistake = _diagnose(outputs, cases)
            return ex.report(FAILED, f"on case '{description}': {mistake or difference}.", quiet)
    return None


# ----------------------------------------------------------------------------------------------
# 07.1 Fold the LayerNorm's gain and shift into the next linear layer
# ----------------------------------------------------------------------------------------------


def reference_fold_layer_norm(norm: nn.LayerNorm, linear: nn.Linear) -> nn.Linear:
    """W (gamma * x_hat + beta) + b = (W diag(gamma)) x_hat + (W beta + b), as a new ``nn.Linear``."""
    folded = nn.Linear(linear.in_features, linear.out_features)
    with torch.no_grad():
        folded.weight.copy_(linear.weight * norm.weight)  # (d_out, d_in): column j times gamma_j
        folded.bias.copy_(linear.weight @ norm.bias + linear.bias)
    return folded


# (message, (weight, bias) of a wrong fold from W, b, gamma, beta); the square cases tell them apart
_FOLD_MISTAKES = [
    ("the layer comes back unchanged: gamma and beta are not folded into it", lambda w, b, g, be: (w, b)),
    ("beta is missing: the shift is part of the layer's input, so it changes the bias",
     lambda w, b, g, be: (w * g, b)),
    ("gamma is missing: the gain multiplies x_hat before the layer's weight does, so it belongs in the weight",
     lambda w, b, g, be: (w, w @ be + b)),
    ("gamma scales the wrong side of the weight: nn.Linear stores it as (out_features, in_features), and gamma "
     "belongs to the input features", lambda w, b, g, be: (w * g[:, None], w @ be + b)),
    ("beta joins the bias without passing through the weight; it is an input to the layer, like gamma * x_hat",
     lambda w, b, g, be: (w * g, b + be)),
    ("beta goes through the transposed weight: nn.Linear computes x @ W.T + b, check from which side beta is "
     "multiplied", lambda w, b, g, be: (w * g, w.T @ be + b)),
    ("the layer's own bias b has disappeared from the new bias", lambda w, b, g, be: (w * g, w @ be)),
]


def _fold_cases():
    """(description, norm, linear, x): random gain, shift and weights, square, wider and narrower layers."""
    cases = []
    with torch.random.fork_rng(devices=[]):  # fixed cases without touching the notebook's random state
        torch.manual_seed(17)
        for description, d_in, d_out, eps in [
            ("square: nn.LayerNorm(8), nn.Linear(8, 8)", 8, 8, 1e-5),
            ("wider: nn.LayerNorm(6), nn.Linear(6, 10)", 6, 10, 1e-5),
            ("narrower: nn.LayerNorm(12), nn.Linear(12, 4), eps 0.01", 12, 4, 1e-2),
        ]:
            norm, linear = nn.LayerNorm(d_in, eps=eps), nn.Linear(d_in, d_out)
            with torch.no_grad():
                norm.weight.normal_(1.0, 0.5)
                norm.bias.normal_(0.0, 0.5)
            cases.append((description, norm, linear, torch.randn(2, 5, d_in) * 3 + 1))
    return cases


def _state(*modules) -> list[torch.Tensor]:
    return [p.detach().clone() for module in modules for p in module.parameters()]


@exercise("07.1", points=3)
def check_fold_layer_norm(ex, student_fn, quiet: bool = False):
    """``fold_layer_norm(norm, linear)`` returns a new ``nn.Linear`` with ``folded(x_hat) == linear(norm(x))``."""
    cases = _fold_cases()
    for description, norm, linear, x in cases:
        before = _state(norm, linear)
        with torch.random.fork_rng(devices=[]):  # the student's new nn.Linear draws random numbers
            folded, verdict = ex.call_student(student_fn, (norm, linear), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        if not all(torch.equal(a, b) for a, b in zip(before, _state(norm, linear), strict=True)):
            return ex.report(FAILED, f"on case '{description}': your function changed the norm or the layer "
                          "it was given; build a new nn.Linear and leave those two as they are.", quiet)
        if not isinstance(folded, nn.Linear):
            return ex.report(FAILED, f"return a new nn.Linear, got {type(folded).__name__}.", quiet)
        if folded is linear:
            return ex.report(FAILED, f"on case '{description}': {_FOLD_MISTAKES[0][0]}.", quiet)
        with torch.no_grad():
            x_hat = nn.functional.layer_norm(x, x.shape[-1:], eps=norm.eps)  # normalised, no gain and shift
            expected = linear(norm(x))  # (batch, seq, d_out)
            got, verdict = ex.call_student(folded, (x_hat,), case=description, who="your folded layer",
                                        quiet=quiet)
            if verdict is not None:
                return verdict
            difference = describe_difference(got, expected, atol=1e-4, rtol=1e-4)
            if difference is None:
                continue
            w, b, g, be = linear.weight, linear.bias, norm.weight, norm.bias

            def folds_to_got(wrong, got=got, x_hat=x_hat, w=w, b=b, g=g, be=be):
                weight, bias = wrong(w, b, g, be)
                return describe_difference(got, x_hat @ weight.T + bias, atol=1e-4, rtol=1e-4) is None

            # RuntimeError: a mistake whose shapes only fit square layers
            message = known_mistake(_FOLD_MISTAKES, folds_to_got, tolerate=(RuntimeError,))
            if message:
                return ex.report(FAILED, f"on case '{description}': {message}.", quiet)
        return ex.report(FAILED, f"on case '{description}', folded(x_hat) differs from linear(norm(x)): "
                      f"{difference}.", quiet)
    return ex.report(PASSED, f"folded(x_hat) equals linear(norm(x)) in all {len(cases)} cases (square, wider "
                  "and narrower layers), and the given norm and layer are untouched.", quiet)


# ----------------------------------------------------------------------------------------------
# 07.2 Fix the articles' norm
# ----------------------------------------------------------------------------------------------


@exercise("07.2", points=2)
def check_fixed_norm(ex, student_fn, quiet: bool = False):
    """``fixed_norm(x, weight, bias, eps)`` repairs the articles' norm into LayerNorm."""
    cases = _norm_cases()
    outputs = []
    for description, x, weight, bias, eps in cases:
        got, verdict = ex.call_student(student_fn, (x, weight, bias, eps), case=description, quiet=quiet)
        if verdict is not None:
            return verdict
        outputs.append(got)
    unchanged = all(
        _matches(got, articles_norm(x, w, b, e))
        for got, (_, x, w, b, e) in zip(outputs, cases, strict=True)
    )
    if unchanged:
        return ex.not_attempted("the function is still the articles' version; find its two differences from "
                             "LayerNorm, fix them", quiet)
    failure = _compare_norms(ex, outputs, cases, quiet)
    if failure is not None:
        return failure
    return ex.report(PASSED, f"all {len(cases)} cases equal LayerNorm, including short feature vectors "
                  "(where the unbiased std shows) and tiny variance (where eps placement shows).", quiet)


# ----------------------------------------------------------------------------------------------
# 07.3 Parameter count of the feed-forward block
# ----------------------------------------------------------------------------------------------


@exercise("07.3", points=1, kind=VALUE)
def check_ffn_parameter_count(ex, answer, quiet: bool = False):
    """Parameters of the paper's position-wise feed-forward block, d_model 512, d_ff 2048."""
    d_model, d_ff = 512, 2048
    expected = 2 * d_model * d_ff + d_ff + d_model
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, int)):
        return ex.report(FAILED, f"expected a whole number (int), got {type(answer).__name__}", quiet)
    known = {
        2 * d_model * d_ff: "that is the two weight matrices only; each nn.Linear also has a bias vector "
        "(d_ff numbers for the first, d_model for the second)",
        2 * d_model * d_ff + 2 * d_ff: "the second bias has one number per OUTPUT feature: d_model, not d_ff",
        2 * d_model * d_ff + 2 * d_model: "the first bias has one number per hidden unit: d_ff, not d_model",
        d_model * d_ff + d_ff: "that is the first linear layer only; the block has two (d_model -> d_ff -> d_model)",
    }
    if answer in known:
        return ex.report(FAILED, f"{answer} is not right: {known[answer]}.", quiet)
    hint = "Count W_1 (d_model x d_ff), b_1 (d_ff), W_2 (d_ff x d_model) and b_2 (d_model)."
    return ex.check_answer(answer, expected, hint=hint, quiet=quiet)


# ----------------------------------------------------------------------------------------------
# 07.4 Pre-norm residual wrapper
# ----------------------------------------------------------------------------------------------


def _reference_pre_norm(x, sublayer, norm):
    return x + sublayer(norm(x))


_WRAPPER_MISTAKES = [
    ("this is post-norm, norm(x + sublayer(x)); pre-norm normalises the INPUT of the sub-layer and leaves the "
     "residual sum un-normalised", lambda x, s, n: n(x + s(x))),
    ("the residual connection is missing: add the input x back", lambda x, s, n: s(n(x))),
    ("the norm is applied to the sub-layer's output; pre-norm applies it to the sub-layer's input",
     lambda x, s, n: x + n(s(x))),
    ("the residual adds the normalised x; it must add the original x, so the stream itself is never normalised",
     lambda x, s, n: n(x) + s(n(x))),
]


def _wrapper_cases():
    from course_lib.layers import EncoderLayer, LayerNorm

    d = 16
    with torch.random.fork_rng(devices=[]):  # fixed cases without touching the notebook's random state
        torch.manual_seed(11)
        norm = LayerNorm(d)
        with torch.no_grad():
            norm.weight.normal_(1.0, 0.3)
            norm.bias.normal_(0.0, 0.3)
        linear = nn.Linear(d, d)
        layer = EncoderLayer(d, 2, 32, dropout=0.0, norm_first=True).eval()
        x = torch.randn(2, 5, d) * 2 + 1
    return layer, [
        ("a linear sub-layer", (x, linear, norm)),
        ("self-attention as the sub-layer", (x, lambda h: layer.self_attn(h, h, h), layer.norm1)),
        ("the feed-forward block as the sub-layer", (x, layer.feed_forward, layer.norm2)),
    ]


@exercise("07.4", points=2)
def check_pre_norm_sublayer(ex, student_fn, quiet: bool = False):
    """``pre_norm_sublayer(x, sublayer, norm)`` returns ``x + sublayer(norm(x))``."""
    layer, cases = _wrapper_cases()
    with torch.no_grad():
        for description, args in cases:
            got, verdict = ex.call_student(student_fn, args, case=description, quiet=quiet)
            if verdict is not None:
                return verdict
            difference = describe_difference(got, _reference_pre_norm(*args), atol=ATOL)
            if difference:
                message = known_mistake(_WRAPPER_MISTAKES, lambda wrong, got=got, args=args:
                                        describe_difference(got, wrong(*args), atol=ATOL) is None)
                return ex.report(FAILED, f"on case '{description}': {message or difference}.", quiet)
        x = cases[0][1][0]
        h = student_fn(x, lambda t: layer.self_attn(t, t, t), layer.norm1)
        out = student_fn(h, layer.feed_forward, layer.norm2)
        if describe_difference(out, layer(x), atol=ATOL):
            return ex.report(FAILED, "two wrappers in a row do not reproduce course_lib's pre-norm "
                          "EncoderLayer: " + describe_difference(out, layer(x), atol=ATOL), quiet)
    return ex.report(PASSED, f"all {len(cases)} cases agree, and two of your wrappers (attention, then "
                  "feed-forward) reproduce course_lib's EncoderLayer(norm_first=True).", quiet)
