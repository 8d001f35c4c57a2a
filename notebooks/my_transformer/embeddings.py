"""Your own embeddings: saved by `%%my_part embeddings` in notebook 02. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

class TokenEmbedding(nn.Module):
    """ids (batch, seq) -> vectors (batch, seq, d_model), scaled by sqrt(d_model)."""

    def __init__(self, vocab_size, d_model, pad_id=0):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=d_model**-0.5)  # small: the scaling makes it unit size
        with torch.no_grad():
            self.embedding.weight[pad_id].zero_()  # <pad> is the zero vector

    def forward(self, ids):
        return self.embedding(ids) * math.sqrt(self.d_model)  # (batch, seq, d_model)
