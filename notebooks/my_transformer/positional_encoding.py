"""Your own positional_encoding: saved by `%%my_part positional_encoding` in notebook 03. Edit the notebook cell, not this file."""
# ruff: noqa
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

def sinusoidal_table(max_len, d_model):
    """PE[p, 2i] = sin(p * omega_i), PE[p, 2i+1] = cos(p * omega_i), omega_i = 1 / 10000^(2i / d_model)."""
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    pair = torch.arange(d_model // 2, dtype=torch.float64)  # i = 0, 1, ..., d_model/2 - 1
    omega = 1.0 / 10000 ** (2 * pair / d_model)  # (d_model/2,): one frequency per pair
    angles = positions * omega  # (max_len, d_model/2)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)  # even dimensions 2i
    table[:, 1::2] = torch.cos(angles)  # odd dimensions 2i+1: the same frequency
    return table.float()
