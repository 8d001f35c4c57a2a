"""course_lib.extrapolation: notebook 03's experiment on lengths longer than training (small and fast here)."""

import math

import torch

from course_lib.extrapolation import (
    IGNORE,
    ExtrapolationSetup,
    accuracy_by_position,
    previous_token_batch,
    train_previous_token,
)

TINY = ExtrapolationSetup(d_model=16, d_ff=32, max_len=12, train_len=6, steps=5, batch_size=4)


def test_the_target_is_the_previous_token():
    ids, target = previous_token_batch(3, 5, 16, torch.Generator().manual_seed(0))
    assert ids.shape == target.shape == (3, 5)
    assert bool((ids >= 1).all() and (ids < 16).all())  # never <pad>
    assert bool((target[:, 0] == IGNORE).all())
    assert torch.equal(target[:, 1:], ids[:, :-1])


def test_training_is_seeded_and_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = train_previous_token("sinusoidal", seed=1, setup=TINY)
    assert torch.equal(torch.get_rng_state(), before)
    second = train_previous_token("sinusoidal", seed=1, setup=TINY)
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(a, b)
    assert not first.training


def test_accuracy_covers_every_position_up_to_max_len_for_each_kind():
    for kind in ("learned", "sinusoidal", "rotary"):
        accuracy = accuracy_by_position(train_previous_token(kind, seed=0, setup=TINY), TINY.max_len, n_sequences=8)
        assert accuracy.shape == (TINY.max_len,)
        assert math.isnan(accuracy[0])
        assert bool(((accuracy[1:] >= 0) & (accuracy[1:] <= 1)).all())
