"""Your own decoder_only_layer: saved by `%%my_part decoder_only_layer` in notebook 15. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from my_transformer.feed_forward import FeedForward  # notebook 07
from my_transformer.layer_norm import LayerNorm  # notebook 07
from my_transformer.multi_head_attention import MultiHeadAttention  # notebook 05


class DecoderOnlyLayer(nn.Module):
    """A GPT block: masked self-attention, then feed-forward; each with residual + LayerNorm (no cross-attention)."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, mask):
        """x (batch, seq, d_model), mask (batch, 1, seq, seq) padding AND causal -> (batch, seq, d_model)."""
        if self.norm_first:  # pre-norm
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask=mask)
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, x, x, mask=mask))  # post-norm
        return self.norm2(x + self.feed_forward(x))
