"""Your own decoder_layer: saved by `%%my_part decoder_layer` in notebook 09. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from my_transformer.feed_forward import FeedForward  # notebook 07
from my_transformer.layer_norm import LayerNorm  # notebook 07
from my_transformer.multi_head_attention import MultiHeadAttention  # notebook 05


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the memory, feed-forward; each with residual + LayerNorm."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.cross_attn = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask, src_mask):
        """x (batch, tgt_len, d_model), memory (batch, src_len, d_model) -> (batch, tgt_len, d_model)."""
        if self.norm_first:  # pre-norm
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask=tgt_mask)
            x = x + self.cross_attn(self.norm2(x), memory, memory, mask=src_mask)
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attn(x, x, x, mask=tgt_mask))  # post-norm
        x = self.norm2(x + self.cross_attn(x, memory, memory, mask=src_mask))
        return self.norm3(x + self.feed_forward(x))
