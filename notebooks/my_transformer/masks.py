"""Your own masks: saved by `%%my_part masks` in notebook 06. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

def padding_mask(ids, pad_id=0):
    """ids (batch, k_len) -> bool (batch, 1, 1, k_len): True where the key is a real token."""
    return (ids != pad_id)[:, None, None, :]  # (batch, 1, 1, k_len)


def causal_mask(size):
    """bool (size, size): query i may attend to keys 0..i (True on and below the diagonal)."""
    return torch.ones(size, size, dtype=torch.bool).tril()  # (q_len, k_len)
