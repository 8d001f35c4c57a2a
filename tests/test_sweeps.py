"""course_lib.sweeps.peak_sweep: one run per (width, peak), the same seed and batches, validation loss out."""

from __future__ import annotations

import math

import pytest

from course_lib.data import build_vocabs, load_toy_corpus, make_dataset, tokenize_pairs
from course_lib.sweeps import peak_sweep


@pytest.fixture(scope="module")
def tiny():
    train_tokens = tokenize_pairs(load_toy_corpus("train")[:400])
    valid_tokens = tokenize_pairs(load_toy_corpus("valid")[:64])
    src_vocab, tgt_vocab = build_vocabs(train_tokens)
    return (make_dataset(train_tokens, src_vocab, tgt_vocab), make_dataset(valid_tokens, src_vocab, tgt_vocab),
            len(src_vocab), len(tgt_vocab))


def test_one_loss_per_peak_repeatable_and_a_huge_peak_learns_worse(tiny):
    losses = peak_sweep(*tiny, widths=[16, 32], peaks=[3e-3, 1.0], steps=12, warmup=3, batch_size=32)
    assert set(losses) == {16, 32} and all(len(v) == 2 for v in losses.values())
    assert all(math.isfinite(x) and x > 0 for v in losses.values() for x in v)
    again = peak_sweep(*tiny, widths=[16], peaks=[3e-3], steps=12, warmup=3, batch_size=32)
    assert again[16][0] == pytest.approx(losses[16][0], abs=1e-6)  # same seed, same batches: the same run
    assert losses[32][1] > losses[32][0]  # a peak of 1.0 wrecks Adam's updates


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"widths": [], "peaks": [1e-3]}, "widths and peaks must not be empty"),
    ({"widths": [16], "peaks": [0.0]}, "peaks must be > 0"),
    ({"widths": [18], "peaks": [1e-3]}, "divisible by n_heads=4"),
    ({"widths": [16], "peaks": [1e-3], "steps": 5, "warmup": 5}, "expected 0 < warmup < steps"),
])
def test_bad_arguments_are_named(tiny, kwargs, message):
    with pytest.raises(ValueError, match=message):
        peak_sweep(*tiny, **kwargs)
