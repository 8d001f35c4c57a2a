"""Your own multi_head_attention: saved by `%%my_part multi_head_attention` in notebook 05. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from my_transformer.attention import attention  # your attention from notebook 04


class MultiHeadAttention(nn.Module):
    """n_heads attentions of width d_head = d_model / n_heads side by side, mixed by W^O."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)  # W^O

    def forward(self, query, key, value, mask=None):
        """query (batch, q_len, d_model), key/value (batch, k_len, d_model) -> (batch, q_len, d_model)."""
        batch, q_len, d_model = query.shape
        k_len = key.size(1)
        q = self.q_proj(query).view(batch, q_len, self.n_heads, self.d_head).transpose(1, 2)
        k = self.k_proj(key).view(batch, k_len, self.n_heads, self.d_head).transpose(1, 2)
        v = self.v_proj(value).view(batch, k_len, self.n_heads, self.d_head).transpose(1, 2)
        # q: (batch, n_heads, q_len, d_head); k, v: (batch, n_heads, k_len, d_head)
        heads, _ = attention(q, k, v, mask)  # (batch, n_heads, q_len, d_head)
        merged = heads.transpose(1, 2).contiguous().view(batch, q_len, d_model)  # (batch, q_len, d_model)
        return self.out_proj(merged)
