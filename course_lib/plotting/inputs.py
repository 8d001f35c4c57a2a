"""Input checks and conversions shared by the figure helpers: tensors to NumPy, shapes, labels, masks.
"""

from __future__ import annotations

import numpy as np
import torch

# ----------------------------------------------------------------------------------------------
# Input checks and conversions
# ----------------------------------------------------------------------------------------------


def _to_numpy(x, name: str) -> np.ndarray:
    """Tensor (any device, with or without grad), array or list -> NumPy array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype not in (torch.float32, torch.float64):
            x = x.float()  # bfloat16 / float16 have no NumPy equivalent here
        return x.numpy()
    try:
        return np.asarray(x)
    except Exception as err:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be a tensor or an array, got {type(x).__name__}") from err


def _squeeze_leading(a: np.ndarray, ndim: int) -> np.ndarray:
    while a.ndim > ndim and a.shape[0] == 1:
        a = a[0]
    return a


def _as_array(x, name: str, ndim: int, shape_doc: str) -> np.ndarray:
    """Convert and check the number of dimensions (leading size-1 dimensions are dropped)."""
    a = _squeeze_leading(_to_numpy(x, name), ndim)
    if a.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape_doc}, got {tuple(a.shape)}")
    if a.size == 0:
        raise ValueError(f"{name} is empty: shape {tuple(a.shape)}")
    return a


def _as_float(x, name: str, ndim: int, shape_doc: str) -> np.ndarray:
    a = _as_array(x, name, ndim, shape_doc)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    return a.astype(np.float64)


def _labels(labels, n: int, name: str, owner: str, unit: str) -> list[str] | None:
    """Labels as strings, checked against the ``n`` ``unit`` (e.g. "rows (queries)") of ``owner``."""
    if labels is None:
        return None
    labels = [str(t) for t in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} label(s) but {owner} has {n} {unit}")
    return labels


def _select_batch(a: np.ndarray, name: str, batch_index: int) -> np.ndarray:
    if not -a.shape[0] <= batch_index < a.shape[0]:
        raise ValueError(f"batch_index={batch_index} is out of range: {name} has a batch of {a.shape[0]}")
    return a[batch_index]


def _head_stack(weights, name: str, batch_index: int) -> np.ndarray:
    """(n_heads, q_len, k_len), or (batch, n_heads, q_len, k_len) with ``batch_index`` -> (n_heads, q, k)."""
    a = _to_numpy(weights, name)
    if a.ndim == 4:
        a = _select_batch(a, name, batch_index)
    return _as_float(a, name, 3, "(n_heads, q_len, k_len) or (batch, n_heads, q_len, k_len)")


def _mask_2d(mask, name: str, batch_index: int = 0) -> np.ndarray:
    """A bool mask (k_len,), (q_len, k_len), (batch, q_len, k_len) or (batch, heads, q_len, k_len) -> 2-D."""
    a = _to_numpy(mask, name)
    if a.dtype != bool:
        raise TypeError(
            f"{name} must be a bool mask (True = may attend), got dtype {a.dtype}; "
            "convert a PyTorch mask (True = blocked) with ~mask"
        )
    if a.ndim >= 3:
        a = _select_batch(a, name, batch_index)
    if a.ndim == 3:
        a = a[0]  # masks broadcast over heads: the head dimension has size 1 (or identical heads)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"{name} must have shape (q_len, k_len), (batch, 1, q_len, k_len) or similar, got {a.shape}")
    return a


def _broadcast_mask(m: np.ndarray, shape: tuple[int, int], name: str) -> np.ndarray:
    try:
        return np.broadcast_to(m, shape)
    except ValueError as err:
        raise ValueError(
            f"{name} of shape {m.shape} does not fit the tokens: expected (q_len, k_len) = {shape}"
        ) from err
