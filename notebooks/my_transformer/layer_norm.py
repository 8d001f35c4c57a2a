"""Your own layer_norm: saved by `%%my_part layer_norm` in notebook 07. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

class LayerNorm(nn.Module):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dimension (biased variance)."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta

    def forward(self, x):  # x: (..., d_model)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias  # (..., d_model)
