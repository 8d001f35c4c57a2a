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

Every position object answers two questions the same way, so the model needs no case for any of them:
``positions(x, start)`` is what is added to the token vectors at positions ``start, start + 1, ...``, and
``positions.rotate(q_or_k, start)`` is what happens to the queries and keys inside self-attention. The
sinusoidal table and the learned table add and do not rotate; :class:`RotaryPositions` (RoPE, notebook 12)
adds nothing and rotates.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .checks import check_positions, check_token_ids

__all__ = ["LearnedPositionalEmbedding", "RotaryPositions", "SinusoidalPositionalEncoding", "TokenEmbedding",
           "check_token_ids", "make_positions", "sinusoidal_table"]


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
        pe: the table ``(max_len, d_model)`` (a non-persistent buffer: moved with the module by ``.to()``, not trained, not in the ``state_dict``: it is rebuilt from ``max_len`` and ``d_model``).
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

    rotates = False  # added to the input; queries and keys stay as they are

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x ``(batch, seq, d_model)`` at positions ``start .. start + seq - 1`` -> x + PE[those], same shape."""
        check_positions(x, self.max_len, self.d_model, start)
        return self.dropout(x + self.pe[start : start + x.size(1)])  # (seq, d_model) broadcasts over the batch

    def rotate(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Queries or keys are not rotated: the positions are already in the input."""
        return x


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

    rotates = False  # added to the input; queries and keys stay as they are

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x ``(batch, seq, d_model)`` at positions ``start .. start + seq - 1`` -> x + P[those], same shape."""
        check_positions(x, self.max_len, self.d_model, start)
        return self.dropout(x + self.embedding.weight[start : start + x.size(1)])  # (seq, d_model) broadcasts

    def rotate(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Queries or keys are not rotated: the positions are already in the input."""
        return x


class RotaryPositions(nn.Module):
    """Rotary position embeddings (RoPE, Su et al. 2021; notebook 12): nothing is added to the input; inside
    self-attention every query and key at position p is rotated by notebook 03's R(p), pair by pair:

        (x_2i, x_2i+1) at position p  ->  (x_2i cos(p theta_i) + x_2i+1 sin(p theta_i),
                                           -x_2i sin(p theta_i) + x_2i+1 cos(p theta_i)),  theta_i = base^(-2i/d_head)

    so that the score of query m and key n depends on their offset n - m only.

    Args:
        d_model: model width (the input's last dimension).
        d_head: the width of one head, the vectors that are rotated (even).
        max_len: the longest sequence supported.
        dropout: dropout on the token vectors (as after adding a table).
        base: the wavelength base (10000 as for the sinusoids).
    """

    rotates = True  # nothing is added to the input

    def __init__(self, d_model: int, d_head: int, max_len: int = 512, dropout: float = 0.0, base: float = 10000.0):
        super().__init__()
        if d_head % 2 != 0:
            raise ValueError(f"d_head must be even for rotary positions (pairs are rotated), got {d_head}")
        self.d_model, self.d_head, self.max_len = d_model, d_head, max_len
        self.dropout = nn.Dropout(dropout)
        theta = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (d_head / 2,)
        angle = torch.arange(max_len, dtype=torch.float64)[:, None] * theta  # (max_len, d_head / 2)
        self.register_buffer("cos", angle.cos().float(), persistent=False)  # (max_len, d_head / 2)
        self.register_buffer("sin", angle.sin().float(), persistent=False)  # (max_len, d_head / 2)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x ``(batch, seq, d_model)`` -> dropout(x): no table is added."""
        check_positions(x, self.max_len, self.d_model, start)
        return self.dropout(x)

    def rotate(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Queries or keys ``(batch, n_heads, seq, d_head)`` at positions ``start ..`` rotated by R(position)."""
        seq = x.size(-2)
        cos, sin = self.cos[start : start + seq], self.sin[start : start + seq]  # (seq, d_head / 2) each
        even, odd = x[..., 0::2], x[..., 1::2]  # (batch, n_heads, seq, d_head / 2) each
        rotated = torch.stack([even * cos + odd * sin, odd * cos - even * sin], dim=-1)  # (..., d_head / 2, 2)
        return rotated.flatten(-2)  # (batch, n_heads, seq, d_head): pairs back in place


def make_positions(kind: str, d_model: int, n_heads: int, max_len: int, dropout: float = 0.0) -> nn.Module:
    """The position object of a model: ``"sinusoidal"``, ``"learned"`` or ``"rotary"``.

    Args:
        kind: which positions.
        d_model: model width.
        n_heads: heads per attention (rotary positions rotate vectors of d_model / n_heads).
        max_len: the longest sequence.
        dropout: dropout after the positions.
    """
    if kind == "learned":
        return LearnedPositionalEmbedding(max_len, d_model, dropout)
    if kind == "rotary":
        return RotaryPositions(d_model, d_model // n_heads, max_len, dropout)
    if kind == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len, dropout)
    raise ValueError(f"positional must be 'sinusoidal', 'learned' or 'rotary', got {kind!r}")
