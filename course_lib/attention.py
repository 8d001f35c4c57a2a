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
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_attention_inputs, check_mask, check_qkv

__all__ = ["KeyValueCache", "MultiHeadAttention", "check_mask", "scaled_dot_product_attention"]


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
    check_qkv(q, k, v)
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


class KeyValueCache:
    """The keys and values one attention block has computed so far, for decoding one token at a time.

    Handed to :meth:`MultiHeadAttention.forward` as ``cache``, it changes nothing in the maths: the block still
    projects, (rotates,) attends and mixes its heads in the same lines; only the keys and values of earlier
    positions are taken from here instead of being computed again.

    Args:
        fixed: False for self-attention (each call appends the newest positions' keys and values); True for
            cross-attention (the memory's keys and values are computed on the first call and then reused).
    """

    def __init__(self, fixed: bool = False):
        self.fixed = fixed
        self.keys: torch.Tensor | None = None  # (batch, n_heads, length, d_head)
        self.values: torch.Tensor | None = None  # (batch, n_heads, length, d_head)

    @property
    def length(self) -> int:
        """Positions held."""
        return 0 if self.keys is None else self.keys.size(2)

    @property
    def start(self) -> int:
        """The position of the newest query: after every cached one (self-attention), 0 for a fixed cache."""
        return 0 if self.fixed else self.length

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the newest keys and values ``(batch, n_heads, new, d_head)``; returns all of them."""
        if self.keys is not None and not self.fixed:
            keys = torch.cat([self.keys, keys], dim=2)  # (batch, n_heads, length + new, d_head)
            values = torch.cat([self.values, values], dim=2)  # (batch, n_heads, length + new, d_head)
        self.keys, self.values = keys, values
        return keys, values

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` ``(new_batch,)`` (beam search moves hypotheses between rows)."""
        if self.keys is not None:
            self.keys, self.values = self.keys[index], self.values[index]


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads attentions of size d_head = d_model / n_heads side by side.

        head_i = Attention(Q W_q,i, K W_k,i, V W_v,i),   MultiHead(Q, K, V) = Concat(head_1 .. head_h) W_o

    Args:
        d_model: model width (input and output feature size).
        n_heads: number of heads; must divide ``d_model``.
        dropout: dropout on the attention weights during training.
        bias: whether the four projections have a bias.
        attention_fn: the attention of one set of heads, ``fn(q, k, v, mask) -> (output, weights)`` on
            ``(batch, n_heads, len, d_head)`` tensors (e.g. a student's own, notebook 04); default: the course's
            (the fused kernel when the weights are not needed, :func:`scaled_dot_product_attention` otherwise).
        rotary: a position object that rotates queries and keys by their positions
            (:class:`course_lib.embeddings.RotaryPositions`); None when positions are added to the input.

    Attributes:
        keep_attention: when True, every forward call stores its weights (detached) in
            ``last_attention`` ``(batch, n_heads, q_len, k_len)``; used to draw attention maps.
        use_fused: False forces the written-out :func:`scaled_dot_product_attention` everywhere.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 attention_fn: Callable | None = None, rotary: nn.Module | None = None):
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
        self.attention_fn = attention_fn
        self.rotary = rotary
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

    def project(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                cache: KeyValueCache | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The heads' queries, keys and values, each ``(batch, n_heads, len, d_head)``.

        With rotary positions, queries and keys are rotated by their positions; with a cache, the keys and
        values of earlier positions are taken from it (and the newest ones stored in it).
        """
        start = 0 if cache is None else cache.start
        q = self.split_heads(self.q_proj(query))  # (batch, n_heads, q_len, d_head)
        if cache is not None and cache.fixed and cache.keys is not None:
            return q, cache.keys, cache.values  # the memory's keys and values, computed at the first step
        k = self.split_heads(self.k_proj(key))  # (batch, n_heads, k_len, d_head)
        v = self.split_heads(self.v_proj(value))  # (batch, n_heads, k_len, d_head)
        if self.rotary is not None:
            q, k = self.rotary.rotate(q, start), self.rotary.rotate(k, start)
        if cache is not None:
            k, v = cache.update(k, v)  # (batch, n_heads, cached + k_len, d_head)
        return q, k, v

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
               need_weights: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """softmax(q k^T / sqrt(d_head)) v for every head: ``(heads, weights)``, weights None on the fused path."""
        dropout_p = self.dropout if self.training else 0.0
        if self.attention_fn is not None:
            return self.attention_fn(q, k, v, mask)
        if self.use_fused and not need_weights:
            # Fast path: PyTorch's fused kernel, same convention (True = may attend), same result.
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None
        return scaled_dot_product_attention(q, k, v, mask=mask, dropout_p=dropout_p)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        return_attention: bool = False,
        cache: KeyValueCache | None = None,
    ):
        """Attend from ``query`` positions to ``key``/``value`` positions.

        Args:
            query: ``(batch, q_len, d_model)``.
            key: ``(batch, k_len, d_model)``.
            value: ``(batch, k_len, d_model)``.
            mask: bool, broadcastable to ``(batch, n_heads, q_len, k_len)``; True = may attend.
            return_attention: also return the weights ``(batch, n_heads, q_len, k_len)``.
            cache: keys and values of earlier positions (decoding one token at a time), or None.

        Returns:
            ``output`` ``(batch, q_len, d_model)``, or ``(output, weights)`` if ``return_attention``.
        """
        check_attention_inputs(query, key, value, mask, self.d_model, self.n_heads,
                               0 if cache is None else cache.start)
        q, k, v = self.project(query, key, value, cache)  # (batch, n_heads, len, d_head) each
        heads, weights = self.attend(q, k, v, mask, need_weights=return_attention or self.keep_attention)
        output = self.out_proj(self.merge_heads(heads))  # (batch, q_len, d_model)
        if self.keep_attention:
            self.last_attention = weights.detach()
        return (output, weights) if return_attention else output
