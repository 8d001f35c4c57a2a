"""LayerNorm, the position-wise feed-forward block, and the encoder, decoder and decoder-only layers.

Each layer wraps its sub-blocks (attention, feed-forward) in a residual connection with
dropout and a LayerNorm, placed either after the residual sum (``norm_first=False``, "post-norm",
as in the 2017 paper) or before the sub-block (``norm_first=True``, "pre-norm", what most
models use today because it trains stably without careful warm-up). That connection is written
once, in :func:`residual`; a layer is the list of its sub-blocks.

A layer receives its sub-modules (``self_attn=``, ``feed_forward=``, ``norm=``), as in The Annotated
Transformer's ``make_model``: :mod:`course_lib.builders` passes in whoever's parts the model uses. Given
only sizes, a layer makes course_lib's own.

Checked against ``nn.LayerNorm``, ``nn.TransformerEncoderLayer`` and ``nn.TransformerDecoderLayer``
(copied weights, both norm placements) in ``tests/test_layers.py``; the decoder-only layer (a GPT's block,
notebook 15) against ``nn.TransformerEncoderLayer`` given a causal mask in ``tests/test_gpt.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .attention import KeyValueCache, MultiHeadAttention
from .checks import check_width


class LayerNorm(nn.Module):
    """Layer normalisation written out: normalise each position's features, then scale and shift.

        y = (x - mean) / sqrt(var + eps) * weight + bias

    mean and var are over the last dimension, var is the *biased* (population) variance and
    eps sits *inside* the square root, exactly as ``nn.LayerNorm``.

    Args:
        d_model: feature size (the last dimension of the input).
        eps: added to the variance for numerical safety.

    Attributes:
        use_fused: compute the same formula with PyTorch's fused ``F.layer_norm`` kernel (about 3x
            faster in training on a CPU); set it to False to run the written-out lines below.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta
        self.use_fused = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(..., d_model)`` -> same shape."""
        check_width(x, self.d_model)
        if self.use_fused:  # fast path: one fused kernel for exactly the lines below
            return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        centered = x - mean  # (..., d_model)
        var = centered.square().mean(dim=-1, keepdim=True)  # (..., 1), divides by d_model (biased)
        x_hat = centered / torch.sqrt(var + self.eps)
        return x_hat * self.weight + self.bias


class PositionwiseFeedForward(nn.Module):
    """Two linear maps with a ReLU between, applied to every position independently.

        FFN(x) = W_2 dropout(relu(W_1 x + b_1)) + b_2

    Args:
        d_model: input and output size.
        d_ff: hidden size (the paper uses 4 * d_model).
        dropout: dropout on the hidden activations.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(batch, seq, d_model)`` -> ``(batch, seq, d_model)``."""
        return self.linear2(self.dropout(F.relu(self.linear1(x))))  # hidden: (batch, seq, d_ff)


def residual(x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor], norm: nn.Module,
             dropout: nn.Module, norm_first: bool) -> torch.Tensor:
    """One sub-block inside its residual connection: the only place the norm's placement is written.

        post-norm (the paper):  norm(x + dropout(sublayer(x)))
        pre-norm:               x + dropout(sublayer(norm(x)))

    Args:
        x: the residual stream ``(batch, seq, d_model)``.
        sublayer: the sub-block (attention or feed-forward) as a function of its input.
        norm: the LayerNorm of this sub-block.
        dropout: dropout on the sub-block's output.
        norm_first: pre-norm if True, post-norm if False.
    """
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a residual connection with LayerNorm.

    Args:
        d_model: model width.
        n_heads: attention heads.
        d_ff: feed-forward hidden size.
        dropout: dropout on attention weights, feed-forward hidden units and both residual branches.
        norm_first: pre-norm if True, post-norm (the paper) if False.
        self_attn: the self-attention module (default: course_lib's :class:`MultiHeadAttention`).
        feed_forward: the feed-forward module (default: course_lib's :class:`PositionwiseFeedForward`).
        norm: makes one LayerNorm from ``d_model`` (default: course_lib's :class:`LayerNorm`).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False, *,
                 self_attn: nn.Module | None = None, feed_forward: nn.Module | None = None,
                 norm: Callable[[int], nn.Module] = LayerNorm):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = self_attn if self_attn is not None else MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = (feed_forward if feed_forward is not None
                             else PositionwiseFeedForward(d_model, d_ff, dropout))
        self.norm1 = norm(d_model)
        self.norm2 = norm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x ``(batch, src_len, d_model)``, src_mask ``(batch, 1, 1, src_len)`` -> same shape as x."""
        x = residual(x, lambda h: self.self_attn(h, h, h, mask=src_mask), self.norm1, self.dropout1, self.norm_first)
        return residual(x, self.feed_forward, self.norm2, self.dropout2, self.norm_first)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder output, then feed-forward.

    Args:
        d_model: model width.
        n_heads: attention heads.
        d_ff: feed-forward hidden size.
        dropout: dropout on attention weights, feed-forward hidden units and the residual branches.
        norm_first: pre-norm if True, post-norm (the paper) if False.
        self_attn: the masked self-attention module (default: course_lib's :class:`MultiHeadAttention`).
        cross_attn: the attention to the encoder's output (default: course_lib's).
        feed_forward: the feed-forward module (default: course_lib's :class:`PositionwiseFeedForward`).
        norm: makes one LayerNorm from ``d_model`` (default: course_lib's :class:`LayerNorm`).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False, *,
                 self_attn: nn.Module | None = None, cross_attn: nn.Module | None = None,
                 feed_forward: nn.Module | None = None, norm: Callable[[int], nn.Module] = LayerNorm):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = self_attn if self_attn is not None else MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attn = (cross_attn if cross_attn is not None
                           else MultiHeadAttention(d_model, n_heads, dropout=dropout))
        self.feed_forward = (feed_forward if feed_forward is not None
                             else PositionwiseFeedForward(d_model, d_ff, dropout))
        self.norm1 = norm(d_model)
        self.norm2 = norm(d_model)
        self.norm3 = norm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        src_mask: torch.Tensor | None = None,
        cache: tuple[KeyValueCache, KeyValueCache] | None = None,
    ) -> torch.Tensor:
        """Run one decoder layer.

        Args:
            x: decoder activations ``(batch, tgt_len, d_model)``.
            memory: encoder output ``(batch, src_len, d_model)``.
            tgt_mask: ``(batch, 1, tgt_len, tgt_len)`` padding AND causal mask (True = may attend).
            src_mask: ``(batch, 1, 1, src_len)`` padding mask of the source.
            cache: the self- and cross-attention's :class:`KeyValueCache` when decoding one token at a time
                (``x`` then holds only the newest positions and ``tgt_mask`` is None: every cached position
                is earlier), else None.

        Returns:
            ``(batch, tgt_len, d_model)``.
        """
        self_cache, cross_cache = ({"cache": c} for c in cache) if cache else ({}, {})  # supplied modules: no cache
        x = residual(x, lambda h: self.self_attn(h, h, h, mask=tgt_mask, **self_cache),
                     self.norm1, self.dropout1, self.norm_first)
        x = residual(x, lambda h: self.cross_attn(h, memory, memory, mask=src_mask, **cross_cache),
                     self.norm2, self.dropout2, self.norm_first)
        return residual(x, self.feed_forward, self.norm3, self.dropout3, self.norm_first)


class DecoderOnlyLayer(nn.Module):
    """A GPT's block: masked self-attention then feed-forward, each inside a residual connection with LayerNorm.

    The translator's :class:`DecoderLayer` without its cross-attention (a language model has no encoder to
    attend to). What is left computes exactly what an :class:`EncoderLayer` computes; the layer is a *decoder*
    because the mask it is given is causal, so position t sees positions 0..t only (notebook 15).

    Args:
        d_model: model width.
        n_heads: attention heads.
        d_ff: feed-forward hidden size.
        dropout: dropout on attention weights, feed-forward hidden units and both residual branches.
        norm_first: pre-norm if True (GPT-2 and later), post-norm (the 2017 paper) if False.
        self_attn: the masked self-attention module (default: course_lib's :class:`MultiHeadAttention`).
        feed_forward: the feed-forward module (default: course_lib's :class:`PositionwiseFeedForward`).
        norm: makes one LayerNorm from ``d_model`` (default: course_lib's :class:`LayerNorm`).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False, *,
                 self_attn: nn.Module | None = None, feed_forward: nn.Module | None = None,
                 norm: Callable[[int], nn.Module] = LayerNorm):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = self_attn if self_attn is not None else MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = (feed_forward if feed_forward is not None
                             else PositionwiseFeedForward(d_model, d_ff, dropout))
        self.norm1 = norm(d_model)
        self.norm2 = norm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: KeyValueCache | None = None) -> torch.Tensor:
        """Run one block.

        Args:
            x: activations ``(batch, seq, d_model)``.
            mask: ``(batch, 1, seq, seq)`` padding AND causal mask (True = may attend).
            cache: the self-attention's :class:`KeyValueCache` when generating one token at a time (``x`` then
                holds only the newest positions and ``mask`` is None: every cached position is earlier).

        Returns:
            ``(batch, seq, d_model)``.
        """
        kwargs = {} if cache is None else {"cache": cache}
        x = residual(x, lambda h: self.self_attn(h, h, h, mask=mask, **kwargs), self.norm1, self.dropout1,
                     self.norm_first)
        return residual(x, self.feed_forward, self.norm2, self.dropout2, self.norm_first)
