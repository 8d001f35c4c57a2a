"""Short learning-rate sweeps: how the best peak learning rate moves with the model's width.

Notebook 14 runs :func:`peak_sweep` on the toy corpus: the same short schedule at several peaks, for three
widths (``d_model`` 32, 64, 128), each run from the same seed, scored by the validation loss. The peak that
learns fastest for a wider model is lower, which is what ``course_lib.recipe`` builds in (a peak proportional to
1 / ``d_model``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .data import TranslationDataset
from .loading import make_eval_loader, make_train_loader
from .losses import LabelSmoothingLoss
from .model import Transformer, TransformerConfig
from .training import TrainConfig, evaluate_loss, train
from .utils import seed_everything


def peak_sweep(
    train_set: TranslationDataset,
    valid_set: TranslationDataset,
    src_vocab_size: int,
    tgt_vocab_size: int,
    widths: Sequence[int],
    peaks: Sequence[float],
    steps: int = 100,
    warmup: int = 30,
    layers: int = 2,
    n_heads: int = 4,
    batch_size: int = 128,
    seed: int = 0,
) -> dict[int, list[float]]:
    """Train one model per (width, peak) for ``steps`` updates and return its validation loss.

    Every run starts from ``seed`` and sees the same batches; only the width and the peak differ. The
    schedule warms up linearly over ``warmup`` steps to the peak, then decays as ``1/sqrt(step)`` (the
    course's Noam schedule with its factor set to reach ``peak``). No dropout and no weight average, so
    the loss shows what the peak alone does.

    Args:
        train_set, valid_set: datasets from :func:`course_lib.data.make_dataset`.
        src_vocab_size, tgt_vocab_size: vocabulary sizes.
        widths: the ``d_model`` values (``d_ff`` is twice ``d_model``).
        peaks: peak learning rates (> 0).
        steps: optimizer updates per run (> warmup).
        warmup: warm-up steps (> 0).
        layers: encoder and decoder layers.
        n_heads: attention heads (must divide every width).
        batch_size: sentences per batch.
        seed: the seed of every run.

    Returns:
        ``{d_model: [validation cross-entropy per target token, one per peak]}``.
    """
    if not widths or not peaks:
        raise ValueError(f"widths and peaks must not be empty, got widths={list(widths)}, peaks={list(peaks)}")
    if any(p <= 0 for p in peaks):
        raise ValueError(f"peaks must be > 0, got {list(peaks)}")
    if not 0 < warmup < steps:
        raise ValueError(f"expected 0 < warmup < steps, got warmup={warmup}, steps={steps}")
    bad = [w for w in widths if w % n_heads]
    if bad:
        raise ValueError(f"every width must be divisible by n_heads={n_heads}, got {bad}")
    criterion = LabelSmoothingLoss(smoothing=0.0)
    losses: dict[int, list[float]] = {}
    for d_model in widths:
        losses[d_model] = []
        for peak in peaks:
            seed_everything(seed)
            config = TransformerConfig(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, d_model=d_model,
                                       n_heads=n_heads, d_ff=2 * d_model, n_encoder_layers=layers,
                                       n_decoder_layers=layers, dropout=0.0)
            model = Transformer(config)
            settings = TrainConfig(max_steps=steps, warmup_steps=warmup, lr_factor=peak * math.sqrt(d_model * warmup),
                                   ema_decay=None, restore_best=False, progress=False, seed=seed)
            train(model, make_train_loader(train_set, batch_size, seed), None, settings)
            losses[d_model].append(evaluate_loss(model, make_eval_loader(valid_set), criterion).nll)
    return losses
