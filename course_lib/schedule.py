"""The learning-rate schedule of "Attention Is All You Need" (section 5.3), the "Noam" schedule.

    lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

It rises linearly for ``warmup`` steps, peaks at ``step == warmup`` with
``factor * (d_model * warmup)^-0.5``, then decays as ``1 / sqrt(step)``. Steps count optimizer
updates from 1. Checked in ``tests/test_training.py`` (peak position and value, linear rise).

When the length of a run is known in advance, a second decay is available (:func:`linear_decay_lr`):
the same warm-up to the same peak, then a straight line down to 0 at the last planned step. The
inverse square root never reaches 0, so a run that stops after a fixed number of epochs ends at
about half the peak rate; the straight line cools down by the end. On Multi30k runs of 4 to 10
epochs, which still learn at their end, the straight line scored lower (see ``course_lib.recipe``),
so the recipe keeps the inverse square root and the straight line is an option
(``--lr-decay linear``).
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


def linear_decay_lr(step: int, d_model: int, warmup: int, factor: float, total_steps: int) -> float:
    """Warm-up as :func:`noam_lr`, then a linear fall from the same peak to 0 at ``total_steps`` (0 after it).

    Args:
        step: the update number (1-based; step 0 is treated as 1).
        d_model: model width (sets the peak with ``factor`` and ``warmup``, as in :func:`noam_lr`).
        warmup: warm-up steps; must be below ``total_steps``.
        factor: overall multiplier.
        total_steps: the last planned update, where the rate reaches 0.
    """
    if total_steps <= warmup:
        raise ValueError(f"total_steps must be larger than warmup, got total_steps={total_steps}, warmup={warmup}")
    step = max(step, 1)
    peak = noam_lr(warmup, d_model, warmup, factor)
    if step <= warmup:
        return peak * step / warmup
    return peak * max(0.0, (total_steps - step) / (total_steps - warmup))


def make_optimizer(parameters, weight_decay: float = 0.0) -> torch.optim.Adam:
    """Adam with the paper's betas (0.9, 0.98) and eps 1e-9; lr 1.0 so the scheduler's value is the rate."""
    return torch.optim.Adam(parameters, lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=weight_decay)


def make_noam_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup: int, factor: float = 1.0,
                        total_steps: int | None = None) -> LambdaLR:
    """A ``LambdaLR`` following :func:`noam_lr`. The optimizer's base lr must be 1.0 (see :func:`make_optimizer`).

    With ``total_steps`` the rate follows :func:`linear_decay_lr` instead (same warm-up and peak, then a
    straight line to 0 at ``total_steps``). Call ``scheduler.step()`` after every ``optimizer.step()``.
    """
    for group in optimizer.param_groups:
        base = group.get("initial_lr", group["lr"])
        if not math.isclose(base, 1.0):
            raise ValueError(f"the optimizer's lr must be 1.0 (the schedule gives the rate itself), got {base}")
    if total_steps is None:
        return LambdaLR(optimizer, noam_lambda(d_model, warmup, factor))
    linear_decay_lr(1, d_model, warmup, factor, total_steps)  # validates the arguments now, not at the first step
    return LambdaLR(optimizer, lambda scheduler_step: linear_decay_lr(scheduler_step + 1, d_model, warmup, factor,
                                                                      total_steps))
