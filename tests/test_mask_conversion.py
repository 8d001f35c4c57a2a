"""``course_lib.compat``'s mask converter: the course's masks (True = may attend) as PyTorch's modules take them.

- ``to_torch_key_padding_mask``: True at ``<pad>`` (bool) or -inf there (additive float), shape ``(batch, seq)``.
- ``to_torch_attn_mask``: ``~mask`` (bool) or 0 / -inf (float, equal to ``generate_square_subsequent_mask`` for the
  causal mask); a per-example 4-D mask becomes ``(batch * n_heads, q_len, k_len)``.
- Fed to ``nn.MultiheadAttention`` and ``nn.TransformerDecoderLayer`` (weights copied), every form gives the
  course module's output; the unconverted mask does not (so these tests can fail).
- Wrong input is refused with a message that names the argument and what was expected.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_lib.compat import (
    decoder_layer_from_torch,
    multihead_attention_from_torch,
    to_torch_attn_mask,
    to_torch_key_padding_mask,
)
from course_lib.masks import causal_mask, decoder_self_attention_mask, padding_mask

ATOL = 1e-5
PAD = 0
SRC = torch.tensor([[5, 6, 7, 2], [5, 2, PAD, PAD], [9, 2, PAD, PAD]])  # (batch 3, src_len 4)
TGT = torch.tensor([[1, 8, 9, 4, 6], [1, 8, PAD, PAD, PAD], [1, 7, 7, 5, PAD]])  # (batch 3, tgt_len 5)


def _mha(d_model=8, n_heads=2, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True).eval()
    with torch.no_grad():  # it starts with zero biases: make them random so that they are compared too
        ref.in_proj_bias.normal_()
        ref.out_proj.bias.normal_()
    return ref, multihead_attention_from_torch(ref).eval()


# ---------------------------------------------------------------- the values


def test_key_padding_mask_is_true_at_pad_in_both_forms():
    blocked = to_torch_key_padding_mask(SRC, PAD)
    assert blocked.dtype == torch.bool and blocked.shape == (3, 4)
    assert blocked[1].tolist() == [False, False, True, True]
    assert torch.equal(blocked, ~padding_mask(SRC, PAD)[:, 0, 0])  # the course's mask, inverted, without 1-dims
    additive = to_torch_key_padding_mask(SRC, PAD, as_additive=True)
    assert additive.dtype == torch.get_default_dtype() and additive.shape == (3, 4)
    assert additive[1].tolist() == [0.0, 0.0, float("-inf"), float("-inf")]
    assert to_torch_key_padding_mask(torch.tensor([[4, 3, 3]]), pad_id=3).tolist() == [[False, True, True]]


def test_attn_mask_is_the_inverse_and_the_additive_form_is_pytorchs_causal_mask():
    for n in (1, 4, 7):
        course = causal_mask(n)
        assert torch.equal(to_torch_attn_mask(course), ~course)
        assert torch.equal(to_torch_attn_mask(course, as_additive=True), nn.Transformer.generate_square_subsequent_mask(n))
    assert to_torch_attn_mask(causal_mask(3), as_additive=True, dtype=torch.float64).dtype == torch.float64


def test_a_4d_mask_becomes_one_mask_per_example_and_head():
    course = decoder_self_attention_mask(TGT, PAD)  # (3, 1, 5, 5)
    converted = to_torch_attn_mask(course, n_heads=2)
    assert converted.shape == (6, 5, 5)
    for b in range(3):  # PyTorch's order: the batch varies slowest
        for h in range(2):
            assert torch.equal(converted[2 * b + h], ~course[b, 0])
    per_head = torch.rand(3, 2, 5, 5) > 0.3  # a mask that differs by head
    assert torch.equal(to_torch_attn_mask(per_head, n_heads=2), ~per_head.reshape(6, 5, 5))


# ---------------------------------------------------------------- fed to PyTorch's modules


@pytest.mark.parametrize("as_additive", [False, True])
def test_mha_with_converted_masks_equals_the_course_module(as_additive):
    ref, ours = _mha()
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        expected = ours(x, x, x, mask=decoder_self_attention_mask(TGT, PAD))
        got, _ = ref(x, x, x, key_padding_mask=to_torch_key_padding_mask(TGT, PAD, as_additive=as_additive),
                     attn_mask=to_torch_attn_mask(causal_mask(5), as_additive=as_additive))
        per_example, _ = ref(x, x, x, attn_mask=to_torch_attn_mask(decoder_self_attention_mask(TGT, PAD), n_heads=2,
                                                                   as_additive=as_additive))
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(per_example, expected, atol=ATOL, rtol=0)


def test_the_unconverted_masks_give_other_outputs():
    """The comparison above can fail: PyTorch reads a course mask as its opposite."""
    ref, ours = _mha()
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        expected = ours(x, x, x, mask=causal_mask(5))
        unconverted, _ = ref(x, x, x, attn_mask=causal_mask(5))  # True read as blocked: the diagonal is blocked
        wrong_float, _ = ref(x, x, x, attn_mask=causal_mask(5).float())  # +1 on allowed scores: nothing blocked
    assert (unconverted[:, :-1] - expected[:, :-1]).abs().max() > 1e-3
    assert (wrong_float[:, :-1] - expected[:, :-1]).abs().max() > 1e-3


@pytest.mark.parametrize("as_additive", [False, True])
def test_decoder_layer_with_converted_masks_equals_the_course_layer(as_additive):
    torch.manual_seed(1)
    ref = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).eval()
    with torch.no_grad():
        for p in ref.parameters():
            if p.dim() == 1:
                p.add_(0.2 * torch.randn_like(p))
    ours = decoder_layer_from_torch(ref).eval()
    x, memory = torch.randn(3, 5, 8), torch.randn(3, 4, 8)
    with torch.no_grad():
        expected = ours(x, memory, decoder_self_attention_mask(TGT, PAD), padding_mask(SRC, PAD))
        got = ref(x, memory, tgt_mask=to_torch_attn_mask(causal_mask(5), as_additive=as_additive),
                  tgt_key_padding_mask=to_torch_key_padding_mask(TGT, PAD, as_additive=as_additive),
                  memory_key_padding_mask=to_torch_key_padding_mask(SRC, PAD, as_additive=as_additive))
    real = TGT != PAD  # a <pad> query's output is never read
    torch.testing.assert_close(got[real], expected[real], atol=ATOL, rtol=0)


# ---------------------------------------------------------------- wrong input


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: to_torch_attn_mask(causal_mask(3).float()), TypeError,
         r"mask must be a course bool mask \(True = may attend\), got torch.float32; a float mask is already additive"),
        (lambda: to_torch_attn_mask(causal_mask(3).int()), TypeError, r"mask must be a course bool mask .* got torch.int32"),
        (lambda: to_torch_attn_mask([[True]]), TypeError, r"mask must be a torch.Tensor, got list"),
        (lambda: to_torch_attn_mask(torch.ones(4, dtype=torch.bool)), ValueError,
         r"mask must have shape \(q_len, k_len\) or \(batch, 1, q_len, k_len\), got \(4,\)"),
        (lambda: to_torch_attn_mask(torch.ones(2, 3, 3, dtype=torch.bool)), ValueError, r"3-D mask is ambiguous"),
        (lambda: to_torch_attn_mask(decoder_self_attention_mask(TGT, PAD)), ValueError,
         r"mask of shape \(3, 1, 5, 5\) is 4-D: pass n_heads"),
        (lambda: to_torch_attn_mask(torch.ones(3, 2, 5, 5, dtype=torch.bool), n_heads=4), ValueError,
         r"must have 1 or n_heads=4 heads"),
        (lambda: to_torch_attn_mask(causal_mask(3), as_additive=True, dtype=torch.int64), TypeError,
         r"dtype must be a floating-point dtype"),
        (lambda: to_torch_key_padding_mask(padding_mask(SRC, PAD)), TypeError,
         r"ids must be token ids \(int64 or int32\), got a bool tensor: pass the ids, not a mask"),
        (lambda: to_torch_key_padding_mask(SRC.float()), TypeError, r"ids must be token ids .* got torch.float32"),
        (lambda: to_torch_key_padding_mask(SRC[0]), ValueError, r"ids must have shape \(batch, seq\), got \(4,\)"),
    ],
)
def test_wrong_input_is_refused_with_a_clear_message(call, error, message):
    with pytest.raises(error, match=message):
        call()
