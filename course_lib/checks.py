"""Every input check of the model's modules, in one place, so that each ``forward`` shows only the maths.

A module's ``forward`` calls one of these on its first line and then computes; a bad input stops there with a
message that names the argument and what was expected (a shape, a dtype, a range). The messages are part of
the course: notebooks show several of them (``raises-exception`` cells), and ``tests/test_errors.py`` checks
them.
"""

from __future__ import annotations

import torch


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


def check_model_ids(ids: torch.Tensor, vocab_size: int, max_len: int, name: str) -> None:
    """:func:`check_token_ids`, and no longer than the model's position table ``max_len``."""
    check_token_ids(ids, vocab_size, name)
    if ids.size(1) > max_len:
        raise ValueError(f"{name} has length {ids.size(1)}, longer than max_len={max_len}")


def check_decode_inputs(tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor, config) -> None:
    """What ``Transformer.decode`` needs: target and source ids of one batch, and the memory of that source."""
    check_model_ids(tgt, config.tgt_vocab_size, config.max_len, "tgt")
    check_token_ids(src, config.src_vocab_size, "src")
    if memory.dim() != 3 or memory.shape[:2] != src.shape:
        raise ValueError(
            f"memory must have shape (batch, src_len, d_model) matching src {tuple(src.shape)}, "
            f"got {tuple(memory.shape)}"
        )
    if tgt.size(0) != src.size(0):
        raise ValueError(f"tgt and src must have the same batch size, got {tgt.size(0)} and {src.size(0)}")


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Queries ``(..., q_len, d_k)``, keys ``(..., k_len, d_k)`` and values ``(..., k_len, d_v)``, none empty."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., seq, d), got {tuple(t.shape)}")
    if q.size(-1) != k.size(-1):
        raise ValueError(f"q and k must have the same last dimension d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length k_len, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if q.size(-2) == 0 or k.size(-2) == 0:
        raise ValueError(f"q and k must hold at least one position, got q {tuple(q.shape)} and k {tuple(k.shape)}")


def check_mask(mask: torch.Tensor, scores_shape: tuple[int, ...], name: str = "mask") -> None:
    """Raise a clear error unless ``mask`` is a bool tensor that broadcasts to ``scores_shape``.

    Args:
        mask: the mask to check (True = may attend).
        scores_shape: shape of the attention scores, ``(..., q_len, k_len)``.
        name: the argument name used in the message.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"{name} must be a bool tensor (True = may attend), got {got}")
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    if shape != torch.Size(scores_shape):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"(..., q_len, k_len) = {tuple(scores_shape)}"
        )


def check_attention_inputs(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
                           d_model: int, n_heads: int, cached: int = 0) -> None:
    """What multi-head attention needs: ``(batch, seq, d_model)`` inputs of one batch, keys and values of one
    length, and a bool mask that broadcasts to ``(batch, n_heads, q_len, k_len)``.

    Args:
        query, key, value: the three inputs.
        mask: the mask or None.
        d_model: the module's width.
        n_heads: its number of heads.
        cached: positions already held in a key/value cache (they add to the keys' length).
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() != 3:
            raise ValueError(f"{name} must have shape (batch, seq, d_model), got {tuple(t.shape)}")
        if t.size(-1) != d_model:
            raise ValueError(f"{name} must have last dimension d_model={d_model}, got {tuple(t.shape)}")
        if t.size(0) == 0 or t.size(1) == 0:
            raise ValueError(f"{name} is empty (batch or seq of size 0): {tuple(t.shape)}")
    if not (query.size(0) == key.size(0) == value.size(0)):
        raise ValueError(
            f"query, key and value must have the same batch size, got {query.size(0)}, {key.size(0)}, {value.size(0)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(f"key and value must have the same length, got {key.size(1)} and {value.size(1)}")
    if mask is None:
        return
    if isinstance(mask, torch.Tensor) and mask.dim() == 3:
        # (batch, q_len, k_len) would line batch up with the heads dimension when broadcast
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} is 3-D, which is ambiguous: use (q_len, k_len) or "
            "(batch, 1, q_len, k_len), e.g. mask[:, None] for a (batch, q_len, k_len) mask"
        )
    check_mask(mask, (query.size(0), n_heads, query.size(1), cached + key.size(1)))


def check_width(x: torch.Tensor, d_model: int) -> None:
    """``x`` of shape ``(..., d_model)``."""
    if x.size(-1) != d_model:
        raise ValueError(f"x must have last dimension d_model={d_model}, got {tuple(x.shape)}")


def check_positions(x: torch.Tensor, max_len: int, d_model: int, start: int = 0) -> None:
    """``x`` of shape ``(batch, seq, d_model)`` whose positions ``start .. start + seq - 1`` the table covers."""
    if x.dim() != 3 or x.size(-1) != d_model:
        raise ValueError(f"x must have shape (batch, seq, d_model={d_model}), got {tuple(x.shape)}")
    if start + x.size(1) > max_len:
        if start:
            raise ValueError(f"cannot decode beyond max_len={max_len} positions")
        raise ValueError(f"sequence length {x.size(1)} is longer than max_len={max_len}; raise max_len in the config")


def check_mask_to_convert(value: torch.Tensor, name: str, kind: str, n_heads: int | None = None) -> None:
    """What ``course_lib.compat``'s mask converters take: token ids, or a course mask (True = may attend).

    Args:
        value: the converter's input.
        name: the argument name used in the message.
        kind: ``"ids"`` for integer token ids ``(batch, seq)``; ``"mask"`` for a course bool mask of shape
            ``(q_len, k_len)``, or ``(batch, 1 or n_heads, q_len, k_len)`` when ``n_heads`` is given.
        n_heads: the number of heads a 4-D mask is converted for (None: only 2-D masks are accepted).
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if kind == "ids":
        if value.dtype == torch.bool:
            raise TypeError(f"{name} must be token ids (int64 or int32), got a bool tensor: pass the ids, not a "
                            "mask (a course padding mask p of shape (batch, 1, 1, k_len) converts as ~p[:, 0, 0])")
        if value.is_floating_point() or value.is_complex():
            raise TypeError(f"{name} must be token ids (int64 or int32), got {value.dtype}")
        if value.dim() != 2:
            raise ValueError(f"{name} must have shape (batch, seq), got {tuple(value.shape)}")
        return
    if value.dtype != torch.bool:
        raise TypeError(f"{name} must be a course bool mask (True = may attend), got {value.dtype}; a float mask "
                        "is already additive (PyTorch's form) and needs no conversion")
    if value.dim() == 2:
        return
    if value.dim() != 4:
        raise ValueError(f"{name} must have shape (q_len, k_len) or (batch, 1, q_len, k_len), got "
                         f"{tuple(value.shape)}" + (" (a 3-D mask is ambiguous: add the head dimension, "
                                                     "mask[:, None])" if value.dim() == 3 else ""))
    if n_heads is None:
        raise ValueError(f"{name} of shape {tuple(value.shape)} is 4-D: pass n_heads, PyTorch wants one "
                         "(q_len, k_len) mask per batch entry and head, (batch * n_heads, q_len, k_len)")
    if value.size(1) not in (1, n_heads):
        raise ValueError(f"{name} of shape {tuple(value.shape)} must have 1 or n_heads={n_heads} heads "
                         "(dimension 1)")
