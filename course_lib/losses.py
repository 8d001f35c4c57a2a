"""Label-smoothed cross-entropy that ignores padding.

With smoothing ``eps`` and ``K`` target classes, the target distribution of a token whose
true class is ``y`` is

    q(k) = (1 - eps) * [k == y] + eps / K

(the mass ``eps`` is spread uniformly over *all* classes, the true one included), and the loss is
the cross-entropy ``-sum_k q(k) log p(k)`` averaged over the non-padding positions. This is exactly
what ``F.cross_entropy(logits, target, label_smoothing=eps, ignore_index=pad_id)`` computes;
``tests/test_training.py`` checks :class:`LabelSmoothingLoss`, :func:`smoothed_target_distribution`
and ``F.cross_entropy`` against each other. (The Annotated Transformer gives ``<pad>`` zero mass and
spreads ``eps`` over the ``K - 2`` other wrong classes; the difference is tiny for ``K`` in the hundreds.)

The same pass also gives the plain negative log-likelihood (no smoothing), whose exponential is
the perplexity reported during training.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


def smoothed_target_distribution(
    target: torch.Tensor, num_classes: int, smoothing: float, pad_id: int | None = 0
) -> torch.Tensor:
    """The distribution the model is trained to match, one row per target token (for pictures).

    Args:
        target: true token ids, any shape ``(...)``.
        num_classes: vocabulary size ``K``.
        smoothing: the mass ``eps`` taken from the true class and spread over all ``K`` classes.
        pad_id: rows whose target is this id are all zero (they are not trained on); None keeps them.

    Returns:
        Float tensor ``(..., K)``; each non-padding row sums to 1 with ``1 - eps + eps / K`` on the true class.
    """
    _check_smoothing(smoothing)
    dist = torch.full((*target.shape, num_classes), smoothing / num_classes)  # (..., K)
    dist.scatter_add_(-1, target.unsqueeze(-1), torch.full((*target.shape, 1), 1.0 - smoothing))
    if pad_id is not None:
        dist[target == pad_id] = 0.0
    return dist


@dataclass
class LossStats:
    """Sums over the non-padding tokens of one batch (sums, so batches of any size add up exactly).

    Attributes:
        loss_sum: summed label-smoothed loss (the training objective).
        nll_sum: summed negative log-likelihood of the true tokens (no smoothing).
        n_tokens: number of non-padding target tokens.
        n_correct: how many of them the argmax predicts correctly.
    """

    loss_sum: float = 0.0
    nll_sum: float = 0.0
    n_tokens: int = 0
    n_correct: int = 0

    def __iadd__(self, other: LossStats) -> LossStats:
        self.loss_sum += other.loss_sum
        self.nll_sum += other.nll_sum
        self.n_tokens += other.n_tokens
        self.n_correct += other.n_correct
        return self

    @property
    def loss(self) -> float:
        return self.loss_sum / max(self.n_tokens, 1)

    @property
    def nll(self) -> float:
        return self.nll_sum / max(self.n_tokens, 1)

    @property
    def accuracy(self) -> float:
        return self.n_correct / max(self.n_tokens, 1)


class LabelSmoothingLoss(nn.Module):
    """Label-smoothed cross-entropy averaged over non-padding target tokens.

    Args:
        smoothing: label smoothing ``eps`` in [0, 1); 0 gives the plain cross-entropy.
        pad_id: target id that is ignored (contributes nothing, not even to the count).
    """

    def __init__(self, smoothing: float = 0.1, pad_id: int = 0):
        super().__init__()
        _check_smoothing(smoothing)
        self.smoothing = smoothing
        self.pad_id = pad_id

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean loss over non-padding tokens.

        Args:
            logits: ``(batch, tgt_len, vocab)`` (or ``(n, vocab)``).
            target: ``(batch, tgt_len)`` (or ``(n,)``) true ids, ``pad_id`` where there is no token.

        Returns:
            A scalar tensor.
        """
        loss_sum, _, n_tokens = self.sums(logits, target)
        return loss_sum / n_tokens.clamp(min=1)

    def sums(self, logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Summed smoothed loss, summed NLL and the number of non-padding tokens (all 0-dim tensors)."""
        if logits.shape[:-1] != target.shape:
            raise ValueError(
                f"logits (..., vocab) must match target (...): got logits {tuple(logits.shape)}, target {tuple(target.shape)}"
            )
        log_probs = F.log_softmax(logits.float(), dim=-1).flatten(0, -2)  # (n, vocab)
        target = target.flatten()  # (n,)
        keep = target != self.pad_id  # (n,)
        nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (n,) -log p(true token)
        uniform = -log_probs.mean(dim=-1)  # (n,) cross-entropy against the uniform distribution
        loss = (1.0 - self.smoothing) * nll + self.smoothing * uniform  # (n,)
        loss_sum = (loss * keep).sum()
        nll_sum = (nll * keep).sum()
        return loss_sum, nll_sum, keep.sum()

    def stats(self, logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, LossStats]:
        """The mean loss to back-propagate and the batch's :class:`LossStats` (plain numbers)."""
        loss_sum, nll_sum, n_tokens = self.sums(logits, target)
        keep = target != self.pad_id
        n_correct = int(((logits.argmax(-1) == target) & keep).sum())
        stats = LossStats(float(loss_sum), float(nll_sum), int(n_tokens), n_correct)
        return loss_sum / n_tokens.clamp(min=1), stats


def _check_smoothing(smoothing: float) -> None:
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
