"""Your own encoder_layer: saved by `%%my_part encoder_layer` in notebook 08. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from my_transformer.feed_forward import FeedForward  # notebook 07
from my_transformer.layer_norm import LayerNorm  # notebook 07
from my_transformer.multi_head_attention import MultiHeadAttention  # notebook 05


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each in a residual connection with LayerNorm (no dropout)."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, src_mask):  # x: (batch, src_len, d_model), src_mask: (batch, 1, 1, src_len)
        if self.norm_first:  # pre-norm: x + sublayer(LN(x))
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask=src_mask)
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, x, x, mask=src_mask))  # post-norm: LN(x + sublayer(x))
        return self.norm2(x + self.feed_forward(x))  # (batch, src_len, d_model)
