"""Scaled dot-product attention and multi-head attention.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

The explicit computation below is the teaching path: every step is a line you can print.
When the attention weights are not requested, ``MultiHeadAttention`` may use PyTorch's fused
``F.scaled_dot_product_attention`` instead; the tests check that both paths agree with each
other and with ``F.scaled_dot_product_attention`` / ``nn.MultiheadAttention``.

Masks are boolean, True = may attend (see ``course_lib.masks``). A query row whose keys are all
masked gets all-zero weights and a zero output (never NaN), the same as PyTorch's fused kernel.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., seq, d), got {tuple(t.shape)}")
    if q.size(-1) != k.size(-1):
        raise ValueError(f"q and k must have the same last dimension d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length k_len, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if q.size(-2) == 0 or k.size(-2) == 0:
        raise ValueError(f"q and k must hold at least one position, got q {tuple(q.shape)} and k {tuple(k.shape)}")


def check_mask(mask: torch.Tensor, scores_shape: tuple[int, ...], name: str = "mask") -> None:
    """Raise a clear error unless ``mask`` is a bool tensor that broadcasts to ``scores_shape``.

    Args:
        mask: the mask to check (True = may attend).
        scores_shape: shape of the attention scores, ``(..., q_len, k_len)``.
        name: the argument name used in the message.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"{name} must be a bool tensor (True = may attend), got {got}")
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    if shape != torch.Size(scores_shape):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"(..., q_len, k_len) = {tuple(scores_shape)}"
        )


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v, written out step by step.

    Args:
        q: queries ``(..., q_len, d_k)``.
        k: keys ``(..., k_len, d_k)``.
        v: values ``(..., k_len, d_v)``.
        mask: optional bool mask broadcastable to ``(..., q_len, k_len)``; True = may attend.
        dropout_p: dropout probability on the attention weights (0 in evaluation).

    Returns:
        ``(output, weights)``: output ``(..., q_len, d_v)`` and weights ``(..., q_len, k_len)``.
        A fully masked query row has zero weights and a zero output.
    """
    _check_qkv(q, k, v)
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        check_mask(mask, scores.shape)
        # A large finite negative number (not -inf) keeps a fully masked row finite in the
        # forward and the backward pass; exp(min - max) underflows to exactly 0.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (..., q_len, k_len), each row sums to 1
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)  # rows with no allowed key -> 0
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (..., q_len, d_v), (..., q_len, k_len)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads attentions of size d_head = d_model / n_heads side by side.

    Args:
        d_model: model width (input and output feature size).
        n_heads: number of heads; must divide ``d_model``.
        dropout: dropout on the attention weights during training.
        bias: whether the four projections have a bias.

    Attributes:
        keep_attention: when True, every forward call stores its weights (detached) in
            ``last_attention`` ``(batch, n_heads, q_len, k_len)``; used to draw attention maps.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, got d_model={d_model}, n_heads={n_heads}")
        if d_model % n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model={d_model}, n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W_o: mixes the heads back together
        self.use_fused = True
        self.keep_attention = False
        self.last_attention: torch.Tensor | None = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq, d_model) -> (batch, n_heads, seq, d_head)."""
        batch, seq, _ = x.shape
        x = x.view(batch, seq, self.n_heads, self.d_head)  # (batch, seq, n_heads, d_head)
        return x.transpose(1, 2)  # (batch, n_heads, seq, d_head)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, n_heads, seq, d_head) -> (batch, seq, d_model)."""
        batch, _, seq, _ = x.shape
        x = x.transpose(1, 2).contiguous()  # (batch, seq, n_heads, d_head)
        return x.view(batch, seq, self.d_model)  # (batch, seq, d_model)

    def _check_inputs(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3:
                raise ValueError(f"{name} must have shape (batch, seq, d_model), got {tuple(t.shape)}")
            if t.size(-1) != self.d_model:
                raise ValueError(f"{name} must have last dimension d_model={self.d_model}, got {tuple(t.shape)}")
            if t.size(0) == 0 or t.size(1) == 0:
                raise ValueError(f"{name} is empty (batch or seq of size 0): {tuple(t.shape)}")
        if not (query.size(0) == key.size(0) == value.size(0)):
            raise ValueError(
                f"query, key and value must have the same batch size, got {query.size(0)}, {key.size(0)}, {value.size(0)}"
            )
        if key.size(1) != value.size(1):
            raise ValueError(f"key and value must have the same length, got {key.size(1)} and {value.size(1)}")

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        return_attention: bool = False,
    ):
        """Attend from ``query`` positions to ``key``/``value`` positions.

        Args:
            query: ``(batch, q_len, d_model)``.
            key: ``(batch, k_len, d_model)``.
            value: ``(batch, k_len, d_model)``.
            mask: bool, broadcastable to ``(batch, n_heads, q_len, k_len)``; True = may attend.
            return_attention: also return the weights ``(batch, n_heads, q_len, k_len)``.

        Returns:
            ``output`` ``(batch, q_len, d_model)``, or ``(output, weights)`` if ``return_attention``.
        """
        self._check_inputs(query, key, value)
        batch, q_len, k_len = query.size(0), query.size(1), key.size(1)
        if mask is not None:
            if isinstance(mask, torch.Tensor) and mask.dim() == 3:
                # (batch, q_len, k_len) would line batch up with the heads dimension when broadcast
                raise ValueError(
                    f"mask of shape {tuple(mask.shape)} is 3-D, which is ambiguous: use (q_len, k_len) or "
                    "(batch, 1, q_len, k_len), e.g. mask[:, None] for a (batch, q_len, k_len) mask"
                )
            check_mask(mask, (batch, self.n_heads, q_len, k_len))
        q = self.split_heads(self.q_proj(query))  # (batch, n_heads, q_len, d_head)
        k = self.split_heads(self.k_proj(key))  # (batch, n_heads, k_len, d_head)
        v = self.split_heads(self.v_proj(value))  # (batch, n_heads, k_len, d_head)
        dropout_p = self.dropout if self.training else 0.0
        need_weights = return_attention or self.keep_attention
        if self.use_fused and not need_weights:
            # Fast path: PyTorch's fused kernel, same convention (True = may attend), same result.
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
            weights = None
        else:
            heads, weights = scaled_dot_product_attention(q, k, v, mask=mask, dropout_p=dropout_p)
        output = self.out_proj(self.merge_heads(heads))  # (batch, q_len, d_model)
        if self.keep_attention:
            self.last_attention = weights.detach()
        return (output, weights) if return_attention else output
