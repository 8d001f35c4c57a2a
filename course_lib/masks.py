"""Attention masks for the course.

Convention used everywhere in ``course_lib`` (and by ``F.scaled_dot_product_attention``):
a boolean mask where **True means "may attend"** and False means "blocked". Masks are shaped
to broadcast against attention scores of shape ``(batch, n_heads, q_len, k_len)``.

PyTorch's ``nn.MultiheadAttention`` and ``nn.Transformer`` use the opposite polarity
(True = blocked); ``course_lib.compat`` converts explicitly where we compare with them.
"""

from __future__ import annotations

import torch


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Mask out padding keys.

    Args:
        ids: token ids, shape ``(batch, k_len)``.
        pad_id: the id of ``<pad>``.

    Returns:
        Bool tensor ``(batch, 1, 1, k_len)``: True where the key is a real token.
    """
    if ids.dim() != 2:
        raise ValueError(f"ids must have shape (batch, seq), got {tuple(ids.shape)}")
    return (ids != pad_id)[:, None, None, :]  # (batch, 1, 1, k_len)


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Let position i attend to positions 0..i only (no peeking at the future).

    Args:
        size: sequence length.
        device: where to create the mask.

    Returns:
        Bool tensor ``(size, size)``, lower-triangular True (row = query, column = key).
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Combine masks: a key may be attended to only if every mask allows it (logical AND).

    Args:
        *masks: boolean masks that broadcast against each other, or None (ignored).

    Returns:
        The broadcast AND of the masks, or None if all were None.
    """
    result = None
    for i, mask in enumerate(masks):
        if mask is None:
            continue
        if mask.dtype != torch.bool:
            raise TypeError(f"masks[{i}] must be a bool tensor (True = may attend), got dtype {mask.dtype}")
        result = mask if result is None else result & mask
    return result


def decoder_self_attention_mask(tgt: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Padding mask of the target combined with the causal mask.

    Args:
        tgt: decoder input ids ``(batch, tgt_len)``.
        pad_id: the id of ``<pad>``.

    Returns:
        Bool tensor ``(batch, 1, tgt_len, tgt_len)``.
    """
    return combine_masks(padding_mask(tgt, pad_id), causal_mask(tgt.size(1), device=tgt.device))
