"""LayerNorm, the position-wise feed-forward block, and the encoder and decoder layers.

Each layer wraps its sub-blocks (attention, feed-forward) in a residual connection with
dropout and a LayerNorm, placed either after the residual sum (``norm_first=False``, "post-norm",
as in the 2017 paper) or before the sub-block (``norm_first=True``, "pre-norm", what most
models use today because it trains stably without careful warm-up).

Checked against ``nn.LayerNorm``, ``nn.TransformerEncoderLayer`` and ``nn.TransformerDecoderLayer``
(copied weights, both norm placements) in ``tests/test_layers.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention


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
        if x.size(-1) != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got {tuple(x.shape)}")
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


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a residual connection with LayerNorm.

    Args:
        d_model: model width.
        n_heads: attention heads.
        d_ff: feed-forward hidden size.
        dropout: dropout on attention weights, feed-forward hidden units and both residual branches.
        norm_first: pre-norm if True, post-norm (the paper) if False.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _self_attention(self, x: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        return self.dropout1(self.self_attn(x, x, x, mask=src_mask))

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout2(self.feed_forward(x))

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x ``(batch, src_len, d_model)``, src_mask ``(batch, 1, 1, src_len)`` -> same shape as x."""
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), src_mask)
            x = x + self._feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + self._self_attention(x, src_mask))
            x = self.norm2(x + self._feed_forward(x))
        return x


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder output, then feed-forward.

    Args:
        d_model: model width.
        n_heads: attention heads.
        d_ff: feed-forward hidden size.
        dropout: dropout on attention weights, feed-forward hidden units and the residual branches.
        norm_first: pre-norm if True, post-norm (the paper) if False.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def _self_attention(self, x, tgt_mask):
        return self.dropout1(self.self_attn(x, x, x, mask=tgt_mask))

    def _cross_attention(self, x, memory, src_mask):
        return self.dropout2(self.cross_attn(x, memory, memory, mask=src_mask))

    def _feed_forward(self, x):
        return self.dropout3(self.feed_forward(x))

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        src_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run one decoder layer.

        Args:
            x: decoder activations ``(batch, tgt_len, d_model)``.
            memory: encoder output ``(batch, src_len, d_model)``.
            tgt_mask: ``(batch, 1, tgt_len, tgt_len)`` padding AND causal mask (True = may attend).
            src_mask: ``(batch, 1, 1, src_len)`` padding mask of the source.

        Returns:
            ``(batch, tgt_len, d_model)``.
        """
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), tgt_mask)
            x = x + self._cross_attention(self.norm2(x), memory, src_mask)
            x = x + self._feed_forward(self.norm3(x))
        else:
            x = self.norm1(x + self._self_attention(x, tgt_mask))
            x = self.norm2(x + self._cross_attention(x, memory, src_mask))
            x = self.norm3(x + self._feed_forward(x))
        return x
