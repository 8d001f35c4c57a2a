"""Token embeddings and positional encodings.

``TokenEmbedding`` multiplies by sqrt(d_model) (as in "Attention Is All You Need") and is
therefore initialised small, N(0, 1/d_model) (standard deviation d_model^-0.5): the scaled
vectors then have entries of unit size and length sqrt(d_model), comparable to the positional
encoding's sqrt(d_model / 2). With PyTorch's default N(0, 1) the scaled token vectors have length
about d_model, sqrt(2 * d_model) times (11 times for d_model 64) longer than the positions, and
training is slower (notebooks 02 and 10).

``SinusoidalPositionalEncoding`` implements, for position p and frequency pair i,

    PE[p, 2i]   = sin(p / 10000^(2i / d_model))
    PE[p, 2i+1] = cos(p / 10000^(2i / d_model))

checked against that closed form and the relative-position property PE(p+k) = R(k) PE(p)
in ``tests/test_embeddings.py``.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def check_token_ids(ids: torch.Tensor, vocab_size: int, name: str = "ids") -> None:
    """Raise a clear error unless ``ids`` is a non-empty integer ``(batch, seq)`` tensor in ``[0, vocab_size)``."""
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32):
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"{name} must be an int64 or int32 tensor of token ids, got {got}")
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, seq), got {tuple(ids.shape)}")
    if ids.numel() == 0:
        raise ValueError(f"{name} is empty (batch or seq of size 0): {tuple(ids.shape)}")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{name} must be token ids in [0, {vocab_size}) (the vocab size), got values in [{low}, {high}]")


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal position table, shape ``(max_len, d_model)``.

    Args:
        max_len: number of positions.
        d_model: model width; must be even (sine and cosine come in pairs).
    """
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even for sinusoidal encodings, got {d_model}")
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    pair = torch.arange(0, d_model, 2, dtype=torch.float64)  # the even dimensions 2i: 0, 2, 4, ...
    inv_freq = torch.exp(-math.log(10000.0) * pair / d_model)  # 1 / 10000^(2i / d_model), (d_model / 2,)
    angles = position * inv_freq  # (max_len, d_model / 2)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)  # even dimensions
    table[:, 1::2] = torch.cos(angles)  # odd dimensions: the same frequency as their even partner
    return table.float()


class TokenEmbedding(nn.Module):
    """Token ids -> vectors, scaled by sqrt(d_model).

    Args:
        vocab_size: number of tokens.
        d_model: vector size.
        pad_id: id of ``<pad>``; its row is zero and receives no gradient.
    """

    def __init__(self, vocab_size: int, d_model: int, pad_id: int = 0):
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """N(0, 1/d_model) (std d_model^-0.5): after the sqrt(d_model) scaling entries have unit scale; pad row zero."""
        nn.init.normal_(self.embedding.weight, mean=0.0, std=self.d_model**-0.5)
        with torch.no_grad():
            self.embedding.weight[self.pad_id].zero_()

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids ``(batch, seq)`` -> ``(batch, seq, d_model)``."""
        check_token_ids(ids, self.vocab_size)
        return self.embedding(ids) * math.sqrt(self.d_model)  # scale by the model width, not the length


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table to the embeddings, then applies dropout.

    Args:
        d_model: model width (even).
        max_len: the longest sequence supported.
        dropout: dropout after adding positions.
        table: a ready ``(max_len, d_model)`` table to add instead of :func:`sinusoidal_table`'s (e.g. a
            student's own, in ``Transformer(config, parts)``).

    Attributes:
        pe: the table ``(max_len, d_model)`` (a buffer: saved, moved with the module, not trained).
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0, table: torch.Tensor | None = None):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        if table is None:
            table = sinusoidal_table(max_len, d_model)
        elif tuple(table.shape) != (max_len, d_model):
            raise ValueError(f"table must have shape (max_len={max_len}, d_model={d_model}), got {tuple(table.shape)}")
        self.register_buffer("pe", table, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(batch, seq, d_model)`` -> x + PE[:seq], same shape."""
        _check_positions(x, self.max_len, self.d_model)
        return self.dropout(x + self.pe[: x.size(1)])  # pe[:seq] broadcasts over the batch


class LearnedPositionalEmbedding(nn.Module):
    """The alternative: one trained vector per position (as in BERT and GPT-2).

    Args:
        max_len: the longest sequence supported (no extrapolation beyond it).
        d_model: model width.
        dropout: dropout after adding positions.
    """

    def __init__(self, max_len: int, d_model: int, dropout: float = 0.0):
        super().__init__()
        self.max_len = max_len
        self.d_model = d_model
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)
        self.dropout = nn.Dropout(dropout)

    @property
    def pe(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(batch, seq, d_model)`` -> x + P[:seq], same shape."""
        _check_positions(x, self.max_len, self.d_model)
        return self.dropout(x + self.embedding.weight[: x.size(1)])


def _check_positions(x: torch.Tensor, max_len: int, d_model: int) -> None:
    if x.dim() != 3 or x.size(-1) != d_model:
        raise ValueError(f"x must have shape (batch, seq, d_model={d_model}), got {tuple(x.shape)}")
    if x.size(1) > max_len:
        raise ValueError(f"sequence length {x.size(1)} is longer than max_len={max_len}; raise max_len in the config")
