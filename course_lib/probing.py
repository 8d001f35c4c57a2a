"""Which weight plays which role in an attention module: found by probing, never by names or creation order.

A module written by someone else (a student's multi-head attention, say) may name its projections
anything, create them in any order, fuse Q/K/V into one matrix or keep raw ``nn.Parameter`` matrices.
To read attention weights out of it, or to compare it with course_lib's, its weights are collected as
*units* (every ``nn.Linear``, every chunk of a fused projection, every raw 2-D parameter in both
orientations) and every assignment of units to the roles W_q, W_k, W_v, W_o is tried on the module's own
inputs: the assignment whose course_lib attention reproduces the module's output is the one it uses.

Used by :func:`course_lib.builders.recordable` (``record_attention`` on a supplied attention) and by the
bug finder's comparisons (:mod:`course_lib.student.compare`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .attention import scaled_dot_product_attention

ATOL = 1e-4  # two outputs agree when they are this close (float32, small random inputs)


def close(a, b, atol: float = ATOL) -> bool:
    """Whether ``a`` and ``b`` are tensors of one shape that agree to ``atol`` (NaN never agrees)."""
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and bool(torch.allclose(a.float(), b.float(), atol=atol, rtol=1e-4, equal_nan=False)))


def first_output(value):
    """A module may return ``output`` or ``(output, weights)``: the output."""
    return value[0] if isinstance(value, tuple) else value


@dataclass
class Unit:
    """One candidate projection of a module: ``y = x @ weight.T + bias``."""

    name: str
    weight: torch.Tensor  # (out_features, in_features)
    bias: torch.Tensor | None
    source: int  # which tensor it comes from (one tensor fills one role at most)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.weight.T  # (..., out_features)
        return y if self.bias is None else y + self.bias


def owned_parameters(module: nn.Module) -> list[tuple[str, nn.Parameter, nn.Module]]:
    """``(dotted name, parameter, the module that owns it)`` for every parameter of ``module``."""
    return [(f"{prefix}.{name}" if prefix else name, p, owner)
            for prefix, owner in module.named_modules() for name, p in owner.named_parameters(recurse=False)]


def linear_units(module: nn.Module, in_features: int, out_features: int) -> list[Unit]:
    """Every way the module's weights can act as an ``in_features -> out_features`` projection.

    Args:
        module: the module whose weights are searched.
        in_features, out_features: the projection's sizes.
    """
    units: list[Unit] = []
    for index, (name, param, owner) in enumerate(owned_parameters(module)):
        if param.dim() != 2:
            continue
        if isinstance(owner, nn.Linear) and name.endswith("weight"):
            bias = owner.bias
            rows, cols = param.shape
            if cols == in_features and rows % out_features == 0:
                for k in range(rows // out_features):
                    part = slice(k * out_features, (k + 1) * out_features)
                    label = name[: -len(".weight")] if name.endswith(".weight") else name
                    units.append(Unit(label if rows == out_features else f"{label}[{k}]", param[part],
                                      None if bias is None else bias[part], index * 100 + k))
            continue
        if isinstance(owner, nn.Linear | nn.Embedding | nn.LayerNorm):
            continue
        rows, cols = param.shape  # a raw nn.Parameter: either orientation, chunks of a fused matrix
        for weight, label in ((param, name), (param.T, f"{name}.T")):
            r, c = weight.shape
            if c == in_features and r % out_features == 0:
                for k in range(r // out_features):
                    part = slice(k * out_features, (k + 1) * out_features)
                    units.append(Unit(label if r == out_features else f"{label}[{k}]", weight[part], None,
                                      index * 100 + k))
    return units


def assignments(units: Sequence[Unit], roles: int):
    """Every ordered choice of ``roles`` units from different tensors."""
    for chosen in itertools.permutations(units, roles):
        if len({u.source for u in chosen}) == roles:
            yield chosen


def attention_call_inputs(args: tuple, kwargs: dict):
    """(query, key, value, mask) of an attention call, positional or by keyword."""
    query = kwargs.get("query", args[0] if args else None)
    key = kwargs.get("key", args[1] if len(args) > 1 else None)
    value = kwargs.get("value", args[2] if len(args) > 2 else None)
    mask = kwargs.get("mask", args[3] if len(args) > 3 else None)
    if mask is None:
        mask = next((v for v in kwargs.values() if isinstance(v, torch.Tensor) and v.dtype == torch.bool), None)
    return query, key, value, mask


def course_mha(query, key, value, mask, units: Sequence[Unit], n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """course_lib's multi-head attention with the projections ``units`` = (W_q, W_k, W_v, W_o).

    Returns:
        ``(output, weights)``: ``(batch, q_len, d_model)`` and ``(batch, n_heads, q_len, k_len)``.
    """
    wq, wk, wv, wo = units
    batch, q_len, d_model = query.shape
    d_head = d_model // n_heads

    def split(x):
        return x.view(batch, x.size(1), n_heads, d_head).transpose(1, 2)  # (batch, n_heads, seq, d_head)

    heads, weights = scaled_dot_product_attention(split(wq(query)), split(wk(key)), split(wv(value)), mask)
    merged = heads.transpose(1, 2).reshape(batch, q_len, d_model)  # (batch, q_len, d_model)
    return wo(merged), weights


@torch.no_grad()
def match_mha_projections(module: nn.Module, query, key, value, mask, n_heads: int) -> tuple[Unit, ...] | None:
    """Which of ``module``'s projections play W_q, W_k, W_v, W_o: the assignment that reproduces its output.

    Args:
        module: a multi-head attention called as ``module(query, key, value, mask=mask)``.
        query, key, value, mask: inputs of one of its calls.
        n_heads: its number of heads.

    Returns:
        The four units in role order, or None when no assignment reproduces the module (then it is not
        course_lib's attention under other names).
    """
    out = first_output(module(query, key, value, mask=mask))
    for candidate in assignments(linear_units(module, query.size(-1), query.size(-1)), 4):
        if close(out, course_mha(query, key, value, mask, candidate, n_heads)[0]):
            return candidate
    return None


@torch.no_grad()
def mha_weights(query, key, value, mask, units: Sequence[Unit], n_heads: int) -> torch.Tensor:
    """The attention weights ``(batch, n_heads, q_len, k_len)`` of course_lib's attention with ``units``."""
    return course_mha(query, key, value, mask, units, n_heads)[1]
