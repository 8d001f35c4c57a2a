"""Do positions work beyond the lengths a model was trained on? Notebook 03's extrapolation experiment.

The 2017 paper chose sinusoids over learned positions because they "may allow the model to extrapolate to
sequence lengths longer than the ones encountered during training". This module tests that on a task that
cannot be solved without positions: **copy the previous token**. A one-layer encoder (course_lib's
``Encoder``) plus a linear read-out is trained on short random sequences only, then scored position by
position on longer ones. Its positions are ``"sinusoidal"`` (the fixed table, added to the input),
``"learned"`` (one trained vector per position, added) or ``"rotary"`` (nothing added: queries and keys are
rotated inside self-attention, so a score depends only on the offset); every kind covers ``max_len``
positions. The learned table has a row for every position up to ``max_len``, but only the rows of the
training lengths ever receive a gradient.

Everything is seeded and leaves the caller's random-number state alone (``torch.random.fork_rng``).
Checked in ``tests/test_extrapolation.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .model import Encoder, TransformerConfig

__all__ = ["ExtrapolationSetup", "PreviousTokenModel", "accuracy_by_position", "previous_token_batch",
           "train_previous_token"]

IGNORE = -100  # target of position 0, which has no previous token (F.cross_entropy's ignore_index)


@dataclass
class ExtrapolationSetup:
    """Sizes of the experiment (defaults: seconds per model on one CPU thread)."""

    vocab_size: int = 16  # token ids 1..vocab_size-1 (0 is <pad>, never used)
    d_model: int = 64  # width
    n_heads: int = 2  # attention heads
    n_layers: int = 1  # encoder layers
    d_ff: int = 128  # feed-forward hidden size
    max_len: int = 64  # positions every kind covers (the longest test sequence)
    train_len: int = 16  # every training sequence has this many tokens: positions 0..train_len-1
    steps: int = 400  # training steps
    batch_size: int = 32  # sequences per step
    lr: float = 3e-3  # Adam's learning rate (constant)


class PreviousTokenModel(nn.Module):
    """course_lib's ``Encoder`` and a linear read-out: ``(batch, seq)`` ids -> ``(batch, seq, vocab)`` logits."""

    def __init__(self, positional: str, setup: ExtrapolationSetup):
        super().__init__()
        config = TransformerConfig(src_vocab_size=setup.vocab_size, tgt_vocab_size=setup.vocab_size,
                                   d_model=setup.d_model, n_heads=setup.n_heads, n_encoder_layers=setup.n_layers,
                                   d_ff=setup.d_ff, max_len=setup.max_len, positional=positional)
        self.encoder = Encoder(config)
        self.readout = nn.Linear(setup.d_model, setup.vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.readout(self.encoder(ids))  # (batch, seq, vocab)


def previous_token_batch(batch_size: int, length: int, vocab_size: int, generator: torch.Generator):
    """Random ids ``(batch, length)`` in 1..vocab_size-1 and their targets: the id one position earlier
    (``IGNORE`` at position 0)."""
    ids = torch.randint(1, vocab_size, (batch_size, length), generator=generator)  # (batch, length)
    target = torch.full_like(ids, IGNORE)
    target[:, 1:] = ids[:, :-1]  # position p must name the token at p - 1
    return ids, target


def train_previous_token(positional: str, seed: int, setup: ExtrapolationSetup | None = None) -> PreviousTokenModel:
    """Train one model on short sequences only; returns it in eval mode.

    Args:
        positional: ``"sinusoidal"``, ``"learned"`` or ``"rotary"`` (``TransformerConfig.positional``).
        seed: seeds the initial weights and the training data.
        setup: sizes (default :class:`ExtrapolationSetup`).
    """
    setup = setup or ExtrapolationSetup()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = PreviousTokenModel(positional, setup)
    data = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=setup.lr)
    model.train()
    for _ in range(setup.steps):
        ids, target = previous_token_batch(setup.batch_size, setup.train_len, setup.vocab_size, data)
        loss = F.cross_entropy(model(ids).flatten(0, 1), target.flatten(), ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@torch.no_grad()
def accuracy_by_position(model: PreviousTokenModel, length: int, n_sequences: int = 256, seed: int = 1234) -> torch.Tensor:
    """Fraction of correct previous-token predictions at each position, shape ``(length,)``; NaN at
    position 0, which has no previous token. The test sequences come from their own generator (``seed``)."""
    vocab_size = model.readout.out_features
    ids, target = previous_token_batch(n_sequences, length, vocab_size, torch.Generator().manual_seed(seed))
    accuracy = (model(ids).argmax(dim=-1) == target).float().mean(dim=0)  # (length,)
    accuracy[0] = float("nan")
    return accuracy
