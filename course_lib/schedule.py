"""The learning-rate schedule of "Attention Is All You Need" (section 5.3), the "Noam" schedule.

    lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

It rises linearly for ``warmup`` steps, peaks at ``step == warmup`` with
``factor * (d_model * warmup)^-0.5``, then decays as ``1 / sqrt(step)``. Steps count optimizer
updates from 1. Checked in ``tests/test_training.py`` (peak position and value, linear rise).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.optim.lr_scheduler import LambdaLR

ADAM_BETAS = (0.9, 0.98)  # the paper's Adam settings
ADAM_EPS = 1e-9


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """Learning rate for optimizer update number ``step`` (1-based; step 0 is treated as 1).

    Args:
        step: the update number.
        d_model: model width (larger models get smaller rates).
        warmup: number of warm-up steps (the peak).
        factor: overall multiplier.
    """
    if warmup < 1 or d_model < 1:
        raise ValueError(f"warmup and d_model must be >= 1, got warmup={warmup}, d_model={d_model}")
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_lambda(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """A ``LambdaLR`` function: ``LambdaLR`` calls it with 0 before the first update, so shift by one."""
    return lambda scheduler_step: noam_lr(scheduler_step + 1, d_model, warmup, factor)


def make_optimizer(parameters, weight_decay: float = 0.0) -> torch.optim.Adam:
    """Adam with the paper's betas (0.9, 0.98) and eps 1e-9; lr 1.0 so the scheduler's value is the rate."""
    return torch.optim.Adam(parameters, lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=weight_decay)


def make_noam_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup: int, factor: float = 1.0) -> LambdaLR:
    """A ``LambdaLR`` following :func:`noam_lr`. The optimizer's base lr must be 1.0 (see :func:`make_optimizer`).

    Call ``scheduler.step()`` after every ``optimizer.step()``.
    """
    for group in optimizer.param_groups:
        base = group.get("initial_lr", group["lr"])
        if not math.isclose(base, 1.0):
            raise ValueError(f"the optimizer's lr must be 1.0 (the schedule gives the rate itself), got {base}")
    return LambdaLR(optimizer, noam_lambda(d_model, warmup, factor))
