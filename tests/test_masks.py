"""Tests for ``course_lib.masks`` (True = may attend): shapes, values, AND-combination and broadcasting."""

import pytest
import torch

from course_lib.masks import causal_mask, combine_masks, decoder_self_attention_mask, padding_mask


def test_padding_mask_shape_and_values():
    ids = torch.tensor([[5, 6, 7, 0, 0], [8, 0, 9, 4, 0]])
    mask = padding_mask(ids)
    assert mask.dtype == torch.bool
    assert mask.shape == (2, 1, 1, 5)
    expected = torch.tensor([[True, True, True, False, False], [True, False, True, True, False]])
    assert torch.equal(mask[:, 0, 0, :], expected)


def test_padding_mask_custom_pad_id():
    ids = torch.tensor([[0, 1, 9, 9]])
    assert padding_mask(ids, pad_id=9)[0, 0, 0].tolist() == [True, True, False, False]


def test_padding_mask_rejects_wrong_rank():
    with pytest.raises(ValueError, match=r"ids must have shape \(batch, seq\)"):
        padding_mask(torch.tensor([1, 2, 0]))


def test_causal_mask_lower_triangular():
    for size in (1, 2, 5):
        mask = causal_mask(size)
        assert mask.shape == (size, size) and mask.dtype == torch.bool
        for i in range(size):
            for j in range(size):
                assert bool(mask[i, j]) == (j <= i), (size, i, j)  # query i may see keys 0..i


def test_causal_mask_rejects_size_zero():
    with pytest.raises(ValueError, match="size must be >= 1"):
        causal_mask(0)


def test_combine_masks_is_and_with_broadcast():
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pad = padding_mask(ids)  # (2, 1, 1, 3)
    causal = causal_mask(3)  # (3, 3)
    combined = combine_masks(pad, causal)
    assert combined.shape == (2, 1, 3, 3)
    for b in range(2):
        for i in range(3):
            for j in range(3):
                expected = bool(ids[b, j] != 0) and j <= i
                assert bool(combined[b, 0, i, j]) == expected
    assert torch.equal(combined, decoder_self_attention_mask(ids))


def test_combine_masks_none_handling():
    causal = causal_mask(4)
    assert combine_masks() is None
    assert combine_masks(None, None) is None
    assert combine_masks(None, causal) is causal
    assert torch.equal(combine_masks(causal, None), causal)
    with pytest.raises(TypeError, match=r"masks\[1\] must be a bool tensor"):
        combine_masks(causal, causal.float())


def test_combine_masks_unbroadcastable_shapes_fail():
    with pytest.raises(RuntimeError):
        combine_masks(torch.ones(2, 3, dtype=torch.bool), torch.ones(4, 5, dtype=torch.bool))
