"""Compare a student's part with its course_lib twin number for number, whatever its names or creation order.

Stage 1 of ``find_my_bug`` (:mod:`course_lib.student.bug_finder`). For each of the eleven parts the student's code runs
on fixed random inputs next to a written-out reference of the course's part, and the two outputs must agree
to 1e-4. When they do not, the same inputs go through references with one known mistake each (the bugs of
the articles this course grew from and the ones students make most); a match names the mistake.

How weights are matched, never by registration order or attribute names:

* The student's module gets random values in every parameter (a fixed seed), so that biases, gains and
  shifts all matter.
* Its weights are collected as *units*: every ``nn.Linear`` (weight and bias together), every chunk of a
  fused projection (a ``3 d x d`` Q/K/V matrix gives three units), every raw 2-D ``nn.Parameter`` in both
  orientations (``x @ W`` or ``W @ x``).
* Every assignment of units to the reference's roles (W_q, W_k, W_v, W_o; W_1, W_2; gamma, beta; the
  embedding table) is tried: at most a few dozen small forward passes. The part is correct if one
  assignment reproduces it; the evidence names which unit plays which role.

Encoder, decoder and decoder-only layers are compared through their own sub-modules: forward hooks record
which sub-module is called, in what order and with which inputs (the attention called with the encoder's
``memory`` as its key is the cross-attention, whatever its name); the course's layer is then run with the
student's sub-modules plugged in, so a difference is the layer's own glue (residuals, norm placement,
masks). Each sub-module is compared with its twin too. A decoder-only layer (a GPT's block, notebook 15)
computes what an encoder layer computes, given a padding AND causal mask: the two share one comparison.

Two things no comparison with copied weights can see are checked on the part as the model builds it:

* *What trains*: one forward and backward pass; a parameter that gets no gradient (a sub-module created and
  never called, one called twice in its place, a lookup under ``torch.no_grad()``) or is frozen is named.
* *Where it starts*: the model redraws every matrix (Xavier) but keeps the vectors and the embedding table,
  so LayerNorm's gamma must start at 1 and beta at 0, and a projection's bias at 0 or within nn.Linear's
  +-1/sqrt(fan_in); the parameter and its starting values are named.

The layers are checked in both norm placements by ``find_my_bug`` (``norm_first`` False, then True).

Checked in ``tests/test_bug_catalogue.py``: every planted bug of the catalogue is named, with its hint;
correct parts written differently (other names and creation order, einsum, ``torch.where``,
``nn.Sequential``, a fused Q/K/V projection, ``F.layer_norm``, raw parameters) are never called a bug.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..attention import scaled_dot_product_attention
from ..devices import model_device
from ..embeddings import sinusoidal_table
from ..layers import residual
from ..masks import causal_mask, padding_mask
from ..probing import (
    Unit,
    assignments,
    attention_call_inputs,
    close,
    first_output,
    linear_units,
    owned_parameters,
)
from ..utils import keeps_random_state
from .contracts import LAYER_PARTS

D_MODEL, N_HEADS, D_FF, VOCAB, MAX_LEN = 16, 4, 24, 50, 40


@dataclass
class Verdict:
    """The outcome of comparing one part.

    Attributes:
        ok: True when the part equals its twin (None: it could not be compared number for number).
        evidence: one or two sentences a student can act on.
    """

    ok: bool | None
    evidence: str
    roles: dict[str, str] | None = None  # for a matched LayerNorm: {"gamma": name, "beta": name}


class NotComparable(Exception):
    """The part's weights could not be matched to the reference's roles (an unusual layout)."""


# ----------------------------------------------------------------------------- helpers

def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return math.inf
    d = (a.float() - b.float()).abs()
    return float(d.nan_to_num(math.inf).max())


def on_cpu(module: nn.Module) -> nn.Module:
    """``module`` itself on the CPU; a CPU copy of a module on another device (e.g. trained on a GPU), which the
    comparisons then change instead of the student's module: every reference here is computed on the CPU."""
    return module if model_device(module).type == "cpu" else copy.deepcopy(module).cpu()


@torch.no_grad()
def randomize(module: nn.Module, seed: int = 0) -> None:
    """Give every parameter random values (fixed seed): matrices ~ N(0, 1/fan_in), vectors ~ N(1, 0.3^2)."""
    generator = _generator(seed)
    for param in module.parameters():
        if param.dim() >= 2:
            param.copy_(torch.randn(param.shape, generator=generator) / math.sqrt(param.shape[-1]))
        else:
            param.copy_(1.0 + 0.3 * torch.randn(param.shape, generator=generator))


def _search(student_out, reference: Callable, candidates, variants: dict[str, str]):
    """The first candidate for which ``reference(candidate, None)`` equals ``student_out``, else a variant's hint.

    Returns ``("ok", candidate)``, ``("variant", hint)`` or ``("none", smallest difference)``.
    """
    candidates = list(candidates)
    best = math.inf
    for candidate in candidates:
        expected = reference(candidate, None)
        if close(student_out, expected):
            return "ok", candidate
        best = min(best, _diff(student_out, expected))
    for variant, hint in variants.items():
        for candidate in candidates:
            try:
                if close(student_out, reference(candidate, variant)):
                    return "variant", hint
            except RuntimeError:
                continue
    return "none", best


def _eval_twice_differs(call: Callable[[], torch.Tensor]) -> bool:
    """Whether two calls with different random streams give different outputs (NaN in the same places is the same:
    a NaN is a bug of its own, not randomness)."""
    torch.manual_seed(1)
    a = call()
    torch.manual_seed(2)
    b = call()
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
        return not torch.allclose(a.float(), b.float(), atol=1e-6, rtol=1e-4, equal_nan=True)
    return not close(a, b, atol=1e-6)


DROPOUT_HINT = ("gives a different output each time it is called in eval mode: dropout is applied even after "
                ".eval() (use nn.Dropout, or F.dropout(..., training=self.training))")


# ----------------------------------------------------------------------------- token embedding

def embedding_reference(table: torch.Tensor, ids: torch.Tensor, variant: str | None) -> torch.Tensor:
    rows = table[ids]  # (batch, seq, d_model)
    d_model, seq = table.size(1), ids.size(-1)
    scale = {None: math.sqrt(d_model), "unscaled": 1.0, "seq": math.sqrt(seq), "double": d_model,
             "divided": 1 / math.sqrt(d_model)}[variant]
    return rows * scale


EMBEDDING_VARIANTS = {
    "unscaled": "the vectors are not multiplied by sqrt(d_model)",
    "seq": "the vectors are multiplied by sqrt(sequence length) (the size of the id tensor's last dimension), "
           "not by sqrt(d_model)",
    "double": "the vectors are multiplied by d_model: sqrt(d_model) applied twice",
    "divided": "the vectors are divided by sqrt(d_model) instead of multiplied",
}


def compare_token_embedding(factory) -> Verdict:
    fresh = factory(VOCAB, D_MODEL, 0).eval()
    ids = torch.randint(1, VOCAB, (2, 9), generator=_generator(0))
    ids[1, 6:] = 0  # padding
    with torch.no_grad():
        out = fresh(ids)
    tables = [(n, p) for n, p, _ in owned_parameters(fresh) if p.dim() == 2 and VOCAB in p.shape and D_MODEL in p.shape]
    if len(tables) != 1:
        raise NotComparable(f"expected one ({VOCAB}, {D_MODEL}) table among the parameters, found {len(tables)}")
    name, table = tables[0]
    table = table if table.shape == (VOCAB, D_MODEL) else table.T
    problems = []
    if not torch.allclose(out[1, 6:], torch.zeros_like(out[1, 6:]), atol=1e-6):
        problems.append("the <pad> id's vector is not zero: give nn.Embedding padding_idx=pad_id (and keep that row "
                        "zero if you re-initialise the table)")
    std = float(table[1:].detach().std())
    if not 0.5 < std * math.sqrt(D_MODEL) < 2.0:
        problems.append(f"the table starts with standard deviation {std:.2f}; because the vectors are multiplied by "
                        f"sqrt(d_model), start it at 1/sqrt(d_model) = {D_MODEL ** -0.5:.2f} "
                        "(nn.init.normal_(weight, std=d_model ** -0.5))")
    real = ids != 0  # compare the real tokens (the pad row is judged above)
    with torch.no_grad():
        status, result = _search(out[real], lambda t, v: embedding_reference(t, ids, v)[real], [table],
                                 EMBEDDING_VARIANTS)
    if status == "variant":
        problems.insert(0, result)
    elif status == "none":
        problems.insert(0, f"the vectors are not the table rows times sqrt(d_model) (largest difference {result:.3g})")
    if problems:
        return Verdict(False, "; ".join(problems))
    return Verdict(True, f"equals course_lib's TokenEmbedding (table: {name}), zero <pad> vector, N(0, 1/d_model) start")


# ----------------------------------------------------------------------------- positional encoding

def positional_reference(max_len: int, d_model: int, variant: str | None) -> torch.Tensor:
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    pair = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i
    base = 1000.0 if variant == "base" else 10000.0
    exponent = 2 * pair / d_model if variant == "doubled" else pair / d_model
    angles = positions / base**exponent  # (max_len, d_model / 2)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    if variant == "swapped":
        table[:, 0::2], table[:, 1::2] = torch.cos(angles), torch.sin(angles)
    elif variant == "halves":
        table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    elif variant == "cos_shifted":
        table[:, 0::2] = torch.sin(angles)
        table[:, 1::2] = torch.cos(positions / base ** ((pair + 1) / d_model))
    else:
        table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table.float()


POSITIONAL_VARIANTS = {
    "doubled": "the exponent is 2*(2i)/d_model: the pair index is counted twice (a loop over 0, 2, 4, ... that "
               "then multiplies by 2 again); use 2i/d_model",
    "swapped": "sine and cosine are swapped: even dimensions hold sin, odd dimensions cos",
    "base": "the base is 1,000; the formula uses 10,000",
    "halves": "the sines fill the first half and the cosines the second; the course interleaves them "
              "(sin in even, cos in odd dimensions)",
    "cos_shifted": "the cosine of a pair uses a different frequency from its sine (exponent (2i+1)/d_model); "
                   "use the same angle for both",
}


def _wave(max_len: int, d_model: int, kind: str, exponent: str, base: float = 10000.0) -> torch.Tensor:
    """One half of the table: ``kind`` sin or cos of position / base^e, e per ``exponent`` (pair index i = 0, 2, ...)."""
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i in the paper's notation
    e = {"right": i / d_model, "doubled": 2 * i / d_model, "shifted": (i + 1) / d_model,
         "doubled_shifted": 2 * (i + 1) / d_model}[exponent]
    return (torch.sin if kind == "sin" else torch.cos)(positions / base**e).float()  # (max_len, d_model / 2)


WAVE_HINTS = {
    "doubled": "use exponent 2*(2i)/d_model: the pair index is counted twice (a loop over 0, 2, 4, ... that then "
               "multiplies by 2 again); use 2i/d_model",
    "shifted": "use a different frequency from the sine of their pair (exponent (2i+1)/d_model); use the same "
               "angle for both",
    "doubled_shifted": "use exponent 2*(2i+2)/d_model: the pair index is counted twice and shifted by one; use "
                       "2i/d_model, the same angle as the sine",
}


def compare_positional_encoding(fn) -> Verdict:
    table = fn(MAX_LEN, D_MODEL)
    table = table.detach().float() if isinstance(table, torch.Tensor) else torch.as_tensor(table, dtype=torch.float32)
    assert close(positional_reference(MAX_LEN, D_MODEL, None), sinusoidal_table(MAX_LEN, D_MODEL), atol=1e-5)
    status, result = _search(table, lambda _, v: positional_reference(MAX_LEN, D_MODEL, v), [None], POSITIONAL_VARIANTS)
    if status == "ok":
        return Verdict(True, "equals course_lib's sinusoidal_table")
    if status == "variant":
        return Verdict(False, result)
    hints = []
    for columns, kind, label in ((table[:, 0::2], "sin", "the sines (even dimensions)"),
                                 (table[:, 1::2], "cos", "the cosines (odd dimensions)")):
        if close(columns, _wave(MAX_LEN, D_MODEL, kind, "right"), atol=1e-4):
            continue
        hint = next((h for e, h in WAVE_HINTS.items() if close(columns, _wave(MAX_LEN, D_MODEL, kind, e), atol=1e-4)),
                    "differ from the formula")
        hints.append(f"{label} {hint}")
    return Verdict(False, "; ".join(hints) or "the table differs from the sinusoid formula")


# ----------------------------------------------------------------------------- attention

def attention_reference(q, k, v, mask, variant: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1)  # (..., q_len, k_len)
    if variant != "unscaled":
        scores = scores / (d_k if variant == "scale_d" else math.sqrt(d_k))
    if mask is not None and variant != "mask_ignored":
        blocked = mask if variant == "mask_inverted" else ~mask
        fill = 0.0 if variant == "mask_zero" else torch.finfo(scores.dtype).min
        scores = scores.masked_fill(blocked, fill)
    weights = scores.softmax(dim=-2 if variant == "softmax_axis" else -1)
    if mask is not None and variant not in ("mask_ignored", "mask_inverted", "mask_zero", "softmax_axis"):
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights  # (..., q_len, d_v), (..., q_len, k_len)


ATTENTION_VARIANTS = {
    "unscaled": "the scores are not divided by sqrt(d_k): softmax(q k^T) v instead of softmax(q k^T / sqrt(d_k)) v",
    "scale_d": "the scores are divided by d_k, not by sqrt(d_k)",
    "softmax_axis": "the softmax runs over the queries (dim -2); it must run over the keys (dim -1), so that each "
                    "query's weights sum to 1",
    "mask_inverted": "the mask's polarity is inverted: positions where the mask is True are blocked (True must mean "
                     "'may attend')",
    "mask_ignored": "the mask is not applied",
    "mask_zero": "masked scores are set to 0 instead of a very negative number: exp(0) = 1, so masked keys still "
                 "get weight",
}


def compare_attention(fn) -> Verdict:
    g = _generator(1)
    q, k = torch.randn(2, 2, 4, 8, generator=g), torch.randn(2, 2, 6, 8, generator=g)  # (batch, heads, len, d_k)
    v = torch.randn(2, 2, 6, 5, generator=g)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False
    result = fn(q, k, v, mask)
    out, weights = result if isinstance(result, tuple) else (result, None)
    reference_out, _ = scaled_dot_product_attention(q, k, v, mask)
    assert close(attention_reference(q, k, v, mask, None)[0], reference_out)
    both = torch.cat([out.flatten(), weights.flatten()]) if weights is not None else out.flatten()

    def reference(_, variant):
        o, w = attention_reference(q, k, v, mask, variant)
        return torch.cat([o.flatten(), w.flatten()]) if weights is not None else o.flatten()

    status, result = _search(both, reference, [None], ATTENTION_VARIANTS)
    if status == "ok":
        return Verdict(True, "equals course_lib's scaled_dot_product_attention (output and weights)")
    if status == "variant":
        return Verdict(False, result)
    if weights is not None and not torch.allclose(weights.sum(-1), torch.ones_like(weights.sum(-1)), atol=1e-4):
        return Verdict(False, "the weights of a query do not sum to 1 over the keys")
    return Verdict(False, f"differs from softmax(q k^T / sqrt(d_k)) v (largest difference {result:.3g})")


# ----------------------------------------------------------------------------- multi-head attention

def mha_reference(query, key, value, mask, units: Sequence[Unit], n_heads: int, variant: str | None) -> torch.Tensor:
    """course_lib's MultiHeadAttention written out, with the projections ``units`` = (q, k, v, out)."""
    wq, wk, wv, wo = units
    batch, q_len, d_model = query.shape
    d_head = d_model // n_heads

    def split(x):
        return x.view(batch, x.size(1), n_heads, d_head).transpose(1, 2)  # (batch, n_heads, seq, d_head)

    q, k, v = split(wq(query)), split(wk(key)), split(wv(value))
    heads, _ = attention_reference(q, k, v, mask, variant if variant in ATTENTION_VARIANTS else None)
    if variant == "merge_no_transpose":
        merged = heads.reshape(batch, q_len, d_model)  # (batch, q_len, d_model) without bringing heads together
    else:
        merged = heads.transpose(1, 2).reshape(batch, q_len, d_model)  # (batch, q_len, d_model)
    return merged if variant == "no_out_proj" else wo(merged)


MHA_VARIANTS = {**ATTENTION_VARIANTS,
                "merge_no_transpose": "the heads are merged with a reshape but without transposing (batch, n_heads, "
                                      "seq, d_head) back to (batch, seq, n_heads, d_head) first: positions and heads "
                                      "get mixed",
                "no_out_proj": "the output projection W_o is not applied after merging the heads"}


def _mha_inputs():
    g = _generator(2)
    query = torch.randn(2, 5, D_MODEL, generator=g)  # (batch, q_len, d_model)
    key = torch.randn(2, 7, D_MODEL, generator=g)  # (batch, k_len, d_model)
    value = torch.randn(2, 7, D_MODEL, generator=g)
    mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 5:] = False
    return query, key, value, mask


def compare_mha_module(module: nn.Module, n_heads: int = N_HEADS, d_model: int = D_MODEL) -> Verdict:
    """Compare an already built multi-head attention (e.g. one found inside a student's layer; any device)."""
    module = on_cpu(module).eval()
    randomize(module, seed=3)
    query, key, value, mask = _mha_inputs()
    with torch.no_grad():
        if _eval_twice_differs(lambda: first_output(module(query, key, value, mask=mask))):
            return Verdict(False, DROPOUT_HINT)
        out = first_output(module(query, key, value, mask=mask))
        units = linear_units(module, d_model, d_model)
        if len({u.source for u in units}) < 4:
            raise NotComparable(f"found {len(units)} d_model x d_model projections, expected 4 (q, k, v, out)")
        status, result = _search(out, lambda u, v: mha_reference(query, key, value, mask, u, n_heads, v),
                                 assignments(units, 4), MHA_VARIANTS)
    if status == "ok":
        roles = ", ".join(f"{role} = {u.name}" for role, u in zip(("W_q", "W_k", "W_v", "W_o"), result, strict=True))
        return Verdict(True, f"equals course_lib's MultiHeadAttention with your projections ({roles})")
    if status == "variant":
        return Verdict(False, result)
    return Verdict(False, "differs from course_lib's MultiHeadAttention for every way of using your four projections "
                          f"as W_q, W_k, W_v, W_o (smallest largest-difference {result:.3g}): check the head split "
                          "(view to (batch, seq, n_heads, d_head), then transpose) and the merge")


def compare_multi_head_attention(factory) -> Verdict:
    return compare_mha_module(factory(D_MODEL, N_HEADS))


# ----------------------------------------------------------------------------- masks

def compare_padding_mask(fn) -> Verdict:
    ids = torch.randint(4, VOCAB, (3, 8), generator=_generator(4))
    ids[1, 5:] = 0
    ids[2, 3:] = 0
    expected = padding_mask(ids, 0)
    mask = fn(ids, 0)
    full = mask.expand(3, N_HEADS, 8, 8)
    if torch.equal(full, ~expected.expand_as(full)):
        return Verdict(False, "True at <pad> and False at real tokens: the polarity is inverted (True = may attend)")
    if not torch.equal(full, expected.expand_as(full)):
        return Verdict(False, "does not mark exactly the <pad> keys as False")
    other = ids.clone()
    other[other == 0] = 7  # the same sentences with pad id 7
    other[0, 0] = 0  # and a real token with id 0
    if not torch.equal(fn(other, 7).expand(3, N_HEADS, 8, 8), padding_mask(other, 7).expand(3, N_HEADS, 8, 8)):
        return Verdict(False, "ignores its pad_id argument (with pad_id=7 it still treats id 0 as padding)")
    return Verdict(True, "equals course_lib's padding_mask, for pad_id 0 and 7")


def compare_causal_mask(fn) -> Verdict:
    for size in (1, 4, 7):
        mask = fn(size).reshape(size, size)  # (q_len, k_len)
        expected = causal_mask(size)
        if torch.equal(mask, expected):
            continue
        if torch.equal(mask, ~expected):
            return Verdict(False, "True above the diagonal: the polarity is inverted (True = may attend)")
        if torch.equal(mask, expected.tril(-1)):
            return Verdict(False, "False on the diagonal: a position cannot attend to itself (use tril(), "
                                  "not tril(-1))")
        if torch.equal(mask, expected.T):
            return Verdict(False, "True on and above the diagonal: the mask is transposed, queries see the future")
        return Verdict(False, f"differs from the lower triangle of ones at size {size}")
    return Verdict(True, "equals course_lib's causal_mask (sizes 1, 4, 7)")


# ----------------------------------------------------------------------------- layer norm

EPS_VALUES = (1e-5, 1e-6, 1e-12, 1e-8, 1e-9)  # the eps values LayerNorms use (nn.LayerNorm: 1e-5; the Annotated Transformer: 1e-6)


def layer_norm_reference(x, gamma, beta, variant: str | None, eps: float = 1e-5) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    if variant == "unbiased_eps_outside":
        return (x - mean) / (x.std(-1, keepdim=True) + eps) * gamma + beta
    if variant == "unbiased":
        return (x - mean) / torch.sqrt(x.var(-1, keepdim=True, unbiased=True) + eps) * gamma + beta
    var = x.var(-1, keepdim=True, unbiased=False)
    if variant == "eps_outside":
        return (x - mean) / (var.sqrt() + eps) * gamma + beta
    if variant == "no_eps":
        return (x - mean) / var.sqrt() * gamma + beta
    if variant == "no_center":
        return x / torch.sqrt(var + eps) * gamma + beta
    if variant == "no_beta":
        return (x - mean) / torch.sqrt(var + eps) * gamma
    return F.layer_norm(x, (x.size(-1),), gamma, beta, eps=eps)


LAYER_NORM_VARIANTS = {
    "unbiased_eps_outside": "divides by the unbiased standard deviation plus eps: LayerNorm uses the biased variance "
                            "(divide by d_model) with eps inside the square root, sqrt(var + eps)",
    "unbiased": "uses the unbiased variance (divides by d_model - 1); LayerNorm divides by d_model",
    "eps_outside": "adds eps outside the square root, std + eps; LayerNorm uses sqrt(var + eps)",
    "no_eps": "has no eps: a constant vector (variance 0) gives 0 / 0 = NaN; use sqrt(var + eps)",
    "no_center": "does not subtract the mean",
    "no_beta": "does not add beta (the learned shift)",
}


def compare_layer_norm_module(module: nn.Module, d_model: int = D_MODEL) -> Verdict:
    """Compare an already built LayerNorm (any device) with course_lib's."""
    module = on_cpu(module).eval()
    randomize(module, seed=5)
    x = torch.randn(3, 5, d_model, generator=_generator(6)) * 3 + 1
    x[2, 2] = 1.0 + 0.1 * torch.randn(d_model, generator=_generator(7))  # small variances: where eps shows
    x[2, 3] = 1.0 + 0.001 * torch.randn(d_model, generator=_generator(8))
    x[2, 4] = 2.5  # a constant vector: variance 0
    with torch.no_grad():
        out = module(x)
        vectors = [(n, p) for n, p, _ in owned_parameters(module) if p.shape == (d_model,)]
        if not vectors:
            raise NotComparable(f"no parameter of shape ({d_model},) for gamma and beta")
        pairs = list(itertools.permutations(vectors, 2)) if len(vectors) >= 2 else [(vectors[0], None)]
        candidates = [(pair, eps) for eps in EPS_VALUES for pair in pairs]

        def reference(candidate, variant):
            pair, eps = candidate
            gamma = pair[0][1]
            beta = pair[1][1] if pair[1] is not None else torch.zeros(d_model)
            return layer_norm_reference(x, gamma, beta, variant, eps)

        status, result = _search(out, reference, candidates, LAYER_NORM_VARIANTS)
    if status == "ok":
        (gamma, beta), eps = result
        return Verdict(True, f"equals nn.LayerNorm (gamma = {gamma[0]}, beta = {beta[0] if beta is not None else 'none'}, "
                             f"eps {eps:g}), small and zero variances included",
                       roles={"gamma": gamma[0], **({"beta": beta[0]} if beta is not None else {})})
    if status == "variant":
        return Verdict(False, result)
    if not torch.isfinite(out).all():
        return Verdict(False, "gives NaN or inf on a constant vector (variance 0): put eps inside the square root")
    return Verdict(False, f"differs from nn.LayerNorm with your gamma and beta (largest difference {result:.3g})")


def compare_layer_norm(factory) -> Verdict:
    return compare_layer_norm_module(factory(D_MODEL))


# ----------------------------------------------------------------------------- feed-forward

def ffn_reference(x, units, variant: str | None) -> torch.Tensor:
    w1, w2 = units
    hidden = w1(x)  # (batch, seq, d_ff)
    if variant == "gelu":
        hidden = F.gelu(hidden)
    elif variant != "no_relu" and variant != "relu_after":
        hidden = torch.relu(hidden)
    out = w2(hidden)  # (batch, seq, d_model)
    if variant == "relu_after":
        out = torch.relu(out)
    if variant == "residual":
        out = out + x
    return out


FFN_VARIANTS = {
    "no_relu": "there is no ReLU between the two linear layers: two linear maps in a row are one linear map",
    "relu_after": "the ReLU comes after the second linear layer; it belongs between the two",
    "gelu": "uses GELU; the course's (and the paper's) feed-forward block uses ReLU",
    "residual": "adds its input to its output: the residual connection belongs to the layer, not to the "
                "feed-forward block",
}


def compare_ffn_module(module: nn.Module, d_model: int = D_MODEL, d_ff: int = D_FF) -> Verdict:
    """Compare an already built feed-forward block (any device) with course_lib's."""
    module = on_cpu(module).eval()
    randomize(module, seed=7)
    x = torch.randn(2, 5, d_model, generator=_generator(8))
    with torch.no_grad():
        if _eval_twice_differs(lambda: module(x)):
            return Verdict(False, DROPOUT_HINT)
        out = module(x)
        first, second = linear_units(module, d_model, d_ff), linear_units(module, d_ff, d_model)
        if not first or not second:
            raise NotComparable(f"no {d_model} -> {d_ff} and {d_ff} -> {d_model} projections found")
        candidates = [(a, b) for a in first for b in second if a.source != b.source]
        status, result = _search(out, lambda u, v: ffn_reference(x, u, v), candidates, FFN_VARIANTS)
    if status == "ok":
        return Verdict(True, f"equals W_2 relu(W_1 x + b_1) + b_2 (W_1 = {result[0].name}, W_2 = {result[1].name})")
    if status == "variant":
        return Verdict(False, result)
    return Verdict(False, f"differs from W_2 relu(W_1 x + b_1) + b_2 with your weights (largest difference {result:.3g})")


def compare_feed_forward(factory) -> Verdict:
    return compare_ffn_module(factory(D_MODEL, D_FF))


# ----------------------------------------------------------------------------- encoder and decoder layers

@dataclass
class Call:
    """One call of a sub-module during a layer's forward pass."""

    kind: str  # "attention", "norm" or "feed_forward"
    module: nn.Module
    args: tuple
    kwargs: dict


def _kind(module: nn.Module, args: tuple, kwargs: dict, d_model: int, d_ff: int) -> str | None:
    """What a sub-module call looks like from its inputs and weights (never from its name)."""
    if any(callable(a) and not isinstance(a, torch.Tensor) for a in (*args, *kwargs.values())):
        return None  # a wrapper handed the sub-block to run (the Annotated Transformer's SublayerConnection)
    tensors = [a for a in args if isinstance(a, torch.Tensor)] + [
        v for k, v in kwargs.items() if k in ("query", "key", "value") and isinstance(v, torch.Tensor)]
    wide = [t for t in tensors if t.dim() == 3 and t.size(-1) == d_model]
    params = list(module.parameters())
    if len(wide) >= 3:
        return "attention"
    if len(wide) != 1 or not params:
        return None
    if all(p.dim() == 1 and p.numel() == d_model for p in params):
        return "norm"
    if linear_units(module, d_model, d_ff) and linear_units(module, d_ff, d_model):
        return "feed_forward"
    return None


def record_calls(layer: nn.Module, inputs: tuple, d_model: int = D_MODEL, d_ff: int = D_FF) -> list[Call]:
    """The outermost attention, norm and feed-forward calls of ``layer(*inputs)``, in the order they happen."""
    calls: list[Call] = []
    stack: list[bool] = []  # for each active sub-module call: is it (inside) a recorded part?
    handles = []

    def before(module, args, kwargs):
        inside = any(stack)
        kind = None if inside else _kind(module, args, kwargs, d_model, d_ff)
        if kind:
            calls.append(Call(kind, module, args, dict(kwargs)))
        stack.append(inside or kind is not None)

    def after(module, args, kwargs, output):
        stack.pop()

    for sub in layer.modules():
        if sub is not layer:
            handles.append(sub.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(sub.register_forward_hook(after, with_kwargs=True))
    try:
        with torch.no_grad():
            layer(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _norm_misuse(layer: nn.Module, calls: list[Call], memory: torch.Tensor | None = None) -> Verdict | None:
    """A norm that reads the encoder's memory, or one norm module called more than once in one pass."""
    names = {id(m): n for n, m in layer.named_modules()}
    norms = [c for c in calls if c.kind == "norm"]
    if memory is not None:
        on_memory = next((c for c in norms if any(_same(a, memory) for a in c.args)), None)
        if on_memory is not None:
            return Verdict(False, f"normalises the encoder's memory with its own LayerNorm "
                                  f"{names.get(id(on_memory.module), '?')}: cross-attention takes memory as the "
                                  "encoder returns it; only the decoder's own stream goes through its norms")
    counts: dict[int, int] = {}
    for call in norms:
        counts[id(call.module)] = counts.get(id(call.module), 0) + 1
    twice = [(names.get(i, "?"), n) for i, n in counts.items() if n > 1]
    if twice:
        name, n = twice[0]
        return Verdict(False, f"calls its LayerNorm {name} {n} times in one pass: each sub-block has its own norm, "
                              "used once (post-norm: norm(x + sublayer(x)); pre-norm: x + sublayer(norm(x)))")
    return None


def _attention_inputs(call: Call):
    """(query, key, value, mask) of a recorded attention call."""
    return attention_call_inputs(tuple(call.args), call.kwargs)


def _same(a, b) -> bool:
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and (
        a is b or (a.shape == b.shape and bool(torch.equal(a, b))))


def _same_mask(given, expected) -> bool:
    if not isinstance(given, torch.Tensor):
        return False
    try:
        return bool(torch.equal(given.bool().expand(torch.broadcast_shapes(given.shape, expected.shape)),
                                expected.expand(torch.broadcast_shapes(given.shape, expected.shape))))
    except RuntimeError:
        return False


def _refuse_pytorch_attention(calls: list[Call]) -> None:
    """nn.MultiheadAttention takes masks of the opposite polarity under other names: leave such layers to stage 2."""
    if any(isinstance(c.module, nn.MultiheadAttention) for c in calls):
        raise NotComparable("it uses nn.MultiheadAttention, whose masks mean the opposite (True = blocked)")


def _sub_part_verdicts(calls: list[Call], d_model: int, d_ff: int) -> list[str]:
    """Compare each distinct sub-module with its twin (on a copy: the layer's own weights stay as they are)."""
    import copy

    problems, seen = [], set()
    for call in calls:
        if id(call.module) in seen:
            continue
        seen.add(id(call.module))
        module = copy.deepcopy(call.module)
        try:
            if call.kind == "attention":
                verdict = compare_mha_module(module, N_HEADS, d_model)
            elif call.kind == "norm":
                verdict = compare_layer_norm_module(module, d_model)
            else:
                verdict = compare_ffn_module(module, d_model, d_ff)
        except NotComparable:
            continue
        if verdict.ok is False:
            label = {"attention": "its multi-head attention", "norm": "its LayerNorm", "feed_forward":
                     "its feed-forward block"}[call.kind]
            problems.append(f"{label} differs from course_lib's: {verdict.evidence}")
    return problems


def _attend(module, query, key, value, mask):
    return first_output(module(query, key, value, mask=mask))


def _block(x, run, norm, mode: str):
    """One residual sub-block: ``run`` is the sub-block on its (normalised) input.

    mode: "post" norm(x + f(x)), "pre" x + f(norm(x)), "post_no_residual" norm(f(x)),
    "pre_no_residual" f(norm(x)), "outside" x + norm(f(x)), "normed_residual" norm(x) + f(norm(x)).
    """
    if mode in ("pre", "post"):  # course_lib's own placements, as its layers compute them
        return residual(x, run, norm, nn.Identity(), norm_first=mode == "pre")
    if mode == "pre_no_residual":
        return run(norm(x))
    if mode == "post_no_residual":
        return norm(run(x))
    if mode == "outside":
        return x + norm(run(x))
    if mode == "normed_residual":
        h = norm(x)
        return h + run(h)
    raise ValueError(f"unknown glue mode {mode!r}")


def _modes(blocks: Sequence[str], norm_first: bool, variant: str | None) -> dict[str, str]:
    """Each block's mode for a glue ``variant``: None (course_lib's), "placement" or "<mistake>:<block>" (block
    ``*``: the mistake in every block)."""
    base = "pre" if norm_first else "post"
    if variant == "placement":
        return dict.fromkeys(blocks, "post" if norm_first else "pre")
    modes = dict.fromkeys(blocks, base)
    if variant:
        mistake, block = variant.split(":")
        for name in (blocks if block == "*" else (block,)):
            modes[name] = f"{base}_no_residual" if mistake == "no_residual" else mistake
    return modes


def encoder_glue(x, mask, attn, ffn, norms, norm_first: bool, variant: str | None = None) -> torch.Tensor:
    """course_lib's EncoderLayer around the given sub-modules (``variant``: one known glue mistake)."""
    modes = _modes(("self", "ffn"), norm_first, variant)
    x = _block(x, lambda h: attn(h, h, h, mask), norms[0], modes["self"])
    return _block(x, ffn, norms[1], modes["ffn"])


def decoder_glue(x, memory, tgt_mask, src_mask, self_attn, cross_attn, ffn, norms, norm_first: bool,
                 variant: str | None = None) -> torch.Tensor:
    """course_lib's DecoderLayer around the given sub-modules (``variant``: one known glue mistake)."""
    modes = _modes(("self", "cross", "ffn"), norm_first, variant)
    x = _block(x, lambda h: self_attn(h, h, h, tgt_mask), norms[0], modes["self"])
    x = _block(x, lambda h: cross_attn(h, memory, memory, src_mask), norms[1], modes["cross"])
    return _block(x, ffn, norms[2], modes["ffn"])


def _placement_hint(norm_first: bool) -> str:
    return ("normalises before each sub-block (pre-norm) although norm_first=False: post-norm is "
            "norm(x + sublayer(x))" if not norm_first else
            "normalises after each residual sum (post-norm) although norm_first=True: pre-norm is "
            "x + sublayer(norm(x))")


_BLOCK_NAMES = {"self": "self-attention", "cross": "cross-attention", "ffn": "the feed-forward block"}


def _glue_hints(blocks: Sequence[str], decoder: bool) -> dict[str, str]:
    hints = {}
    for block in blocks:
        name = _BLOCK_NAMES[block]
        if decoder and block == "self":
            name = "masked self-attention"
        hints[f"no_residual:{block}"] = f"has no residual connection around {name}: its input is not added back"
        hints[f"outside:{block}"] = (f"adds the residual after the norm around {name}, x + norm(sublayer(x)); "
                                     "post-norm is norm(x + sublayer(x)), pre-norm x + sublayer(norm(x))")
    for block in (*blocks, "*"):
        name = "each sub-block" if block == "*" else _BLOCK_NAMES[block]
        if decoder and block == "self":
            name = "masked self-attention"
        hints[f"normed_residual:{block}"] = (
            f"adds the output of {name} to the normalised input, norm(x) + sublayer(norm(x)): the residual carries "
            "x itself, x + sublayer(norm(x)) (pre-norm)")
    return hints


ENCODER_GLUE_HINTS = _glue_hints(("self", "ffn"), decoder=False)
DECODER_GLUE_HINTS = _glue_hints(("self", "cross", "ffn"), decoder=True)
DECODER_ONLY_GLUE_HINTS = _glue_hints(("self", "ffn"), decoder=True)


def _layer_inputs():
    g = _generator(10)
    x = torch.randn(2, 6, D_MODEL, generator=g)  # (batch, seq, d_model)
    memory = torch.randn(2, 7, D_MODEL, generator=g)  # (batch, src_len, d_model)
    src_mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    src_mask[1, ..., 5:] = False  # (batch, 1, 1, src_len)
    enc_mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    enc_mask[1, ..., 4:] = False  # (batch, 1, 1, seq)
    tgt_mask = enc_mask & causal_mask(6)  # (batch, 1, seq, seq)
    return x, memory, enc_mask, tgt_mask, src_mask


def _glue_verdict(out, reference, hints: dict, norm_first: bool, what: str) -> Verdict:
    if close(out, reference(None)):
        return Verdict(True, f"equals course_lib's {what} built from your own sub-modules")
    if close(out, reference("placement")):
        return Verdict(False, _placement_hint(norm_first))
    for variant, hint in hints.items():
        if close(out, reference(variant)):
            return Verdict(False, hint)
    return Verdict(False, f"differs from course_lib's {what} built from your own sub-modules (largest difference "
                          f"{_diff(out, reference(None)):.3g}): check the residual connections and where the norms sit")


def _compare_self_attention_layer(factory, norm_first: bool, seed: int, mask: torch.Tensor, what: str,
                                  attention: str, hints: dict[str, str], mask_hint: Callable) -> Verdict:
    """Compare a layer called ``layer(x, mask)`` whose sub-blocks are one self-attention then one feed-forward.

    The encoder layer (``mask``: padding) and the decoder-only layer (``mask``: padding AND causal) are this
    same layer: they differ only in the mask they are given, and so in what a mistake is called.

    Args:
        factory: the part's class (or function) with the constructor ``(d_model, n_heads, d_ff, norm_first=...)``.
        norm_first: the placement to build and compare.
        seed: the seed of the layer's random parameter values.
        mask: the mask to pass, bool (batch, 1, 1 or seq, seq).
        what: course_lib's class, for the evidence (``"EncoderLayer"``).
        attention: what its self-attention is called (``"self-attention"``, ``"masked self-attention"``).
        hints: the glue mistakes and their hints (:data:`ENCODER_GLUE_HINTS`).
        mask_hint: the evidence for a self-attention given another mask (or None, the argument).
    """
    layer = factory(D_MODEL, N_HEADS, D_FF, norm_first=norm_first).eval()
    randomize(layer, seed=seed)
    x = _layer_inputs()[0]
    with torch.no_grad():
        if _eval_twice_differs(lambda: layer(x, mask)):
            return Verdict(False, DROPOUT_HINT)
        out = layer(x, mask)
    calls = record_calls(layer, (x, mask))
    _refuse_pytorch_attention(calls)
    misuse = _norm_misuse(layer, calls)
    if misuse:
        return misuse
    by_kind = {k: [c for c in calls if c.kind == k] for k in ("attention", "norm", "feed_forward")}
    if [len(by_kind[k]) for k in ("attention", "norm", "feed_forward")] != [1, 2, 1]:
        raise NotComparable(f"found {len(by_kind['attention'])} attention, {len(by_kind['norm'])} norm and "
                            f"{len(by_kind['feed_forward'])} feed-forward calls; expected 1, 2 and 1")
    given = _attention_inputs(by_kind["attention"][0])[3]
    if given is None or not _same_mask(given, mask):
        return Verdict(False, mask_hint(given))
    if calls.index(by_kind["feed_forward"][0]) < calls.index(by_kind["attention"][0]):
        return Verdict(False, f"runs the feed-forward block before {attention}; the order is {attention}, then "
                              "feed-forward")
    problems = _sub_part_verdicts(calls, D_MODEL, D_FF)
    if problems:
        return Verdict(False, "; ".join(problems))
    attn_module, ffn_module = by_kind["attention"][0].module, by_kind["feed_forward"][0].module
    norms = [c.module for c in by_kind["norm"]]

    def reference(variant):
        with torch.no_grad():
            return encoder_glue(x, mask, lambda q, k, v, m: _attend(attn_module, q, k, v, m), ffn_module, norms,
                                norm_first, variant)

    return _glue_verdict(out, reference, hints, norm_first, what)


def compare_encoder_layer(factory, norm_first: bool = False) -> Verdict:
    enc_mask = _layer_inputs()[2]  # (batch, 1, 1, seq): padding
    return _compare_self_attention_layer(
        factory, norm_first, 11, enc_mask, "EncoderLayer", "self-attention", ENCODER_GLUE_HINTS,
        lambda given: "calls self-attention without src_mask: padded positions are attended to")


def _causal_mask_hint(given) -> str:
    if given is None:
        return ("calls masked self-attention without any mask: without the causal mask every position sees the "
                "later ones (the very tokens it must predict) while training, and padded positions are attended to")
    return ("calls masked self-attention with a mask other than the mask it is given (padding AND causal, "
            "(batch, 1, seq, seq)): pass mask on as it is, build none of your own")


def compare_decoder_only_layer(factory, norm_first: bool = False) -> Verdict:
    tgt_mask = _layer_inputs()[3]  # (batch, 1, seq, seq): padding AND causal, as the GPT gives it
    return _compare_self_attention_layer(
        factory, norm_first, 13, tgt_mask, "DecoderOnlyLayer", "masked self-attention", DECODER_ONLY_GLUE_HINTS,
        _causal_mask_hint)


def compare_decoder_layer(factory, norm_first: bool = False) -> Verdict:
    layer = factory(D_MODEL, N_HEADS, D_FF, norm_first=norm_first).eval()
    randomize(layer, seed=12)
    x, memory, _, tgt_mask, src_mask = _layer_inputs()
    with torch.no_grad():
        if _eval_twice_differs(lambda: layer(x, memory, tgt_mask, src_mask)):
            return Verdict(False, DROPOUT_HINT)
        out = layer(x, memory, tgt_mask, src_mask)
    calls = record_calls(layer, (x, memory, tgt_mask, src_mask))
    _refuse_pytorch_attention(calls)
    misuse = _norm_misuse(layer, calls, memory)
    if misuse:
        return misuse
    attention = [c for c in calls if c.kind == "attention"]
    norms = [c.module for c in calls if c.kind == "norm"]
    ffns = [c for c in calls if c.kind == "feed_forward"]
    if len(attention) != 2 or len(norms) != 3 or len(ffns) != 1:
        raise NotComparable(f"found {len(attention)} attention, {len(norms)} norm and {len(ffns)} feed-forward calls; "
                            "expected 2, 3 and 1")
    reads_memory = [c for c in attention if _same(_attention_inputs(c)[1], memory)]
    if not reads_memory:
        return Verdict(False, "no attention reads the encoder's memory: cross-attention must take its keys and "
                              "values from memory (query from the decoder)")
    cross = reads_memory[0]
    own = next(c for c in attention if c is not cross)
    if not _same(_attention_inputs(cross)[2], memory):
        return Verdict(False, "cross-attention takes its keys from memory but not its values")
    own_mask, cross_mask = _attention_inputs(own)[3], _attention_inputs(cross)[3]
    if own_mask is None or not _same_mask(own_mask, tgt_mask):
        hint = ("without any mask" if own_mask is None else "with a mask other than tgt_mask")
        return Verdict(False, f"calls masked self-attention {hint}: without the causal mask the decoder sees the "
                              "future while training")
    if cross_mask is None or not _same_mask(cross_mask, src_mask):
        return Verdict(False, "calls cross-attention without src_mask: padded source positions are attended to")
    if next(i for i, c in enumerate(calls) if c is own) > next(i for i, c in enumerate(calls) if c is cross):
        return Verdict(False, "runs cross-attention before masked self-attention; the order is self-attention, "
                              "cross-attention, feed-forward")
    problems = _sub_part_verdicts(calls, D_MODEL, D_FF)
    if problems:
        return Verdict(False, "; ".join(problems))

    def reference(variant):
        with torch.no_grad():
            return decoder_glue(x, memory, tgt_mask, src_mask,
                                lambda q, k, v, m: _attend(own.module, q, k, v, m),
                                lambda q, k, v, m: _attend(cross.module, q, k, v, m), ffns[0].module, norms,
                                norm_first, variant)

    return _glue_verdict(out, reference, DECODER_GLUE_HINTS, norm_first, "DecoderLayer")



# ----------------------------------------------------------------------------- what trains, and where it starts

def _fresh(name: str, factory, norm_first: bool) -> nn.Module:
    """The part built as the model builds it (fixed seed), before any comparison changes its values."""
    torch.manual_seed(0)
    if name in LAYER_PARTS:
        return factory(D_MODEL, N_HEADS, D_FF, norm_first=norm_first).eval()
    if name == "token_embedding":
        return factory(VOCAB, D_MODEL, 0).eval()
    if name == "multi_head_attention":
        return factory(D_MODEL, N_HEADS).eval()
    if name == "layer_norm":
        return factory(D_MODEL).eval()
    return factory(D_MODEL, D_FF).eval()  # feed_forward


def _forward_inputs(name: str) -> tuple:
    """Inputs for one forward pass of a module part (the same as its comparison's)."""
    x, memory, enc_mask, tgt_mask, src_mask = _layer_inputs()
    if name == "token_embedding":
        ids = torch.randint(1, VOCAB, (2, 9), generator=_generator(0))
        ids[1, 6:] = 0
        return (ids,)
    if name == "multi_head_attention":
        query, key, value, mask = _mha_inputs()
        return (query, key, value, mask)
    if name == "encoder_layer":
        return (x, enc_mask)
    if name == "decoder_layer":
        return (x, memory, tgt_mask, src_mask)
    if name == "decoder_only_layer":
        return (x, tgt_mask)
    return (x,)  # layer_norm, feed_forward


def _repeated_calls(module: nn.Module, calls: list[Call]) -> str:
    """``"; norms.0 is called twice (each sub-block needs its own)"`` for a sub-module used more than once."""
    names = {id(m): n for n, m in module.named_modules()}
    counts: dict[int, int] = {}
    for call in calls:
        counts[id(call.module)] = counts.get(id(call.module), 0) + 1
    repeated = [f"{names.get(i, '?')} is called {c} times" for i, c in counts.items() if c > 1]
    if not repeated:
        return ""
    return f"; {', '.join(repeated)}: each sub-block needs its own sub-module"


def unused_parameters(name: str, factory, norm_first: bool = False) -> str | None:
    """A parameter of a module part that one forward and backward pass never reaches, or that is frozen.

    Such a parameter never trains. It hides from every comparison with copied weights: a layer that calls
    one LayerNorm twice and never calls its other computes the course's numbers when both hold the same
    values, but after the first update they differ. Returns the evidence, or None when every parameter
    gets a gradient (a zero one counts: the key bias of attention gets exactly zero, and that is right).
    """
    if name not in ("token_embedding", "multi_head_attention", "layer_norm", "feed_forward", *LAYER_PARTS):
        return None
    module = on_cpu(_fresh(name, factory, norm_first))
    params = list(module.named_parameters())
    if not params:
        return None
    frozen = [n for n, p in params if not p.requires_grad]
    if frozen:
        return (f"parameter{'s' if len(frozen) > 1 else ''} {', '.join(frozen)} {'are' if len(frozen) > 1 else 'is'} "
                "frozen (requires_grad=False): it never trains; leave requires_grad at its default, True")
    inputs = _forward_inputs(name)
    for _, p in params:
        p.grad = None
    with torch.enable_grad():
        out = first_output(module(*inputs))
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            unused = [n for n, _ in params]
        else:
            weights = torch.randn(out.shape, generator=_generator(20))  # a random direction: no sum cancels
            (out.float() * weights).sum().backward()
            unused = [n for n, p in params if p.grad is None]
    for _, p in params:
        p.grad = None
    if not unused:
        return None
    calls = record_calls(module, inputs) if name in LAYER_PARTS else []
    listed = ", ".join(unused[:6]) + (f" and {len(unused) - 6} more" if len(unused) > 6 else "")
    return (f"parameter{'s' if len(unused) > 1 else ''} {listed} never get{'' if len(unused) > 1 else 's'} a gradient: "
            f"the forward pass does not use {'them' if len(unused) > 1 else 'it'}, so {'they' if len(unused) > 1 else 'it'} "
            f"never train{'' if len(unused) > 1 else 's'}{_repeated_calls(module, calls)}")


def _describe_values(values: torch.Tensor) -> str:
    values = values.detach().float().flatten()
    if bool((values == values[0]).all()):
        return f"all {float(values[0]):.3g}"
    return f"values from {float(values.min()):.3g} to {float(values.max()):.3g} (mean {float(values.mean()):.3g})"


def _norm_start(norm: nn.Module, label: str, d_model: int = D_MODEL) -> str | None:
    """A LayerNorm must start as plain normalisation: gamma all 1, beta all 0 (nn.LayerNorm's start)."""
    try:
        verdict = compare_layer_norm_module(copy.deepcopy(norm), d_model)
    except NotComparable:
        return None
    if not verdict.ok or not verdict.roles:
        return None  # the numbers differ: the comparison reports that
    start = dict(norm.named_parameters())
    problems = []
    for role, wanted in (("gamma", 1.0), ("beta", 0.0)):
        param = start.get(verdict.roles.get(role, ""))
        if param is not None and not torch.allclose(param.detach().float(), torch.full_like(param.float(), wanted)):
            problems.append(f"{role} ({verdict.roles[role]}) starts at {_describe_values(param)}, not all {wanted:g}")
    if not problems:
        return None
    return (f"{label} does not start as plain normalisation: {'; '.join(problems)} (start with "
            "torch.ones(d_model) for gamma and torch.zeros(d_model) for beta, as nn.LayerNorm does)")


def _bias_start(module: nn.Module, label: str, d_model: int = D_MODEL) -> str | None:
    """The biases of attention and feed-forward projections start at zero or within nn.Linear's +-1/sqrt(fan_in)."""
    bound = 1.0 / math.sqrt(d_model)  # the widest of nn.Linear's bounds here (fan_in is d_model or d_ff >= d_model)
    for pname, param in module.named_parameters():
        if param.dim() == 1 and float(param.detach().abs().max()) > bound + 1e-6:
            return (f"{label}'s bias {pname} starts at {_describe_values(param)}; a projection's bias starts at 0 or "
                    f"within nn.Linear's +-1/sqrt(fan_in) (here +-{bound:.2f}): leave nn.Linear's own start or use "
                    "torch.zeros")
    return None


def starting_values(name: str, factory, norm_first: bool = False) -> str | None:
    """Where the part's parameters start, against its contract (see :mod:`course_lib.student.contracts`).

    The model redraws every matrix (Xavier, :func:`course_lib.model.init_weights`) except the embedding
    tables; vectors (LayerNorm's gamma and beta, the biases) and the embedding table keep the start the
    student's code gives them, so those are what is checked here. Returns the evidence, or None.
    """
    if name not in ("multi_head_attention", "layer_norm", "feed_forward", *LAYER_PARTS):
        return None  # the token embedding's start is judged by compare_token_embedding
    module = on_cpu(_fresh(name, factory, norm_first))
    if name == "layer_norm":
        return _norm_start(module, "your LayerNorm")
    if name in ("multi_head_attention", "feed_forward"):
        return _bias_start(module, "your " + ("multi-head attention" if name == "multi_head_attention" else
                                               "feed-forward block"))
    calls = record_calls(module, _forward_inputs(name))
    names = {id(m): n for n, m in module.named_modules()}
    seen = set()
    for call in calls:
        if id(call.module) in seen:
            continue
        seen.add(id(call.module))
        label = f"its {'LayerNorm' if call.kind == 'norm' else call.kind.replace('_', '-')} {names.get(id(call.module))}"
        problem = (_norm_start(call.module, label) if call.kind == "norm" else
                   _bias_start(call.module, label) if not isinstance(call.module, nn.MultiheadAttention) else None)
        if problem:
            return problem
    return None


COMPARE: dict[str, Callable] = {
    "token_embedding": compare_token_embedding,
    "positional_encoding": compare_positional_encoding,
    "attention": compare_attention,
    "multi_head_attention": compare_multi_head_attention,
    "padding_mask": compare_padding_mask,
    "causal_mask": compare_causal_mask,
    "layer_norm": compare_layer_norm,
    "feed_forward": compare_feed_forward,
    "encoder_layer": compare_encoder_layer,
    "decoder_layer": compare_decoder_layer,
    "decoder_only_layer": compare_decoder_only_layer,
}


@keeps_random_state
def compare_part(name: str, part, norm_first: bool = False) -> Verdict:
    """Compare one part with its twin (see the module docstring); ``ok`` is None when it cannot be matched."""
    torch.manual_seed(0)
    unused = unused_parameters(name, part, norm_first)
    torch.manual_seed(0)
    try:
        if name in LAYER_PARTS:
            verdict = COMPARE[name](part, norm_first=norm_first)
        else:
            verdict = COMPARE[name](part)
    except NotComparable as reason:
        verdict = Verdict(None, f"not comparable number for number ({reason})")
    except Exception:
        if not unused:
            raise
        verdict = Verdict(None, "")
    if unused:  # with a sub-module called twice, the numbers can still agree: the unused one is the evidence
        known = verdict.ok is False and not verdict.evidence.startswith(("differs from", "calls its LayerNorm"))
        return Verdict(False, f"{verdict.evidence}; {unused}" if known else unused)
    if verdict.ok:  # right numbers with copied weights; does it also start where the contract says?
        start = starting_values(name, part, norm_first)
        if start:
            return Verdict(False, start)
    return verdict
