"""Tests for ``course_lib.attention`` against PyTorch.

- ``scaled_dot_product_attention`` equals ``F.scaled_dot_product_attention`` (no mask, padding,
  causal and combined masks; 3-D and 4-D inputs); a fully masked query row gives zero weights and a
  zero output with finite gradients; ``gradcheck`` passes in float64.
- ``MultiHeadAttention`` equals ``nn.MultiheadAttention(batch_first=True)`` with weights copied by
  ``course_lib.compat`` (self- and cross-attention, key padding and causal masks, per-head weights).
  PyTorch's masks are True = blocked, ours True = may attend: converted with ``compat``.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention
from course_lib.compat import multihead_attention_from_torch, to_torch_attn_mask, to_torch_key_padding_mask
from course_lib.masks import causal_mask, combine_masks, padding_mask

ATOL = 1e-5


def _qkv(*lead, q_len=5, k_len=7, d_k=8, d_v=6, dtype=torch.float32):
    q = torch.randn(*lead, q_len, d_k, dtype=dtype)
    k = torch.randn(*lead, k_len, d_k, dtype=dtype)
    v = torch.randn(*lead, k_len, d_v, dtype=dtype)
    return q, k, v


def _ids_with_padding(lengths, seq_len, vocab=20):
    ids = torch.randint(4, vocab, (len(lengths), seq_len))
    for b, n in enumerate(lengths):
        ids[b, n:] = 0
    return ids


def _reference_weights(q, k, mask):
    """Attention weights computed independently: softmax with -inf, NaN rows (fully masked) set to 0."""
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(scores.softmax(-1), nan=0.0)


def _masks_4d(batch, q_len, k_len):
    ids = _ids_with_padding([k_len - 2, k_len], k_len)[:batch]
    pad = padding_mask(ids)  # (batch, 1, 1, k_len)
    causal = causal_mask(max(q_len, k_len))[:q_len, :k_len]  # (q_len, k_len)
    return {"none": None, "padding": pad, "causal": causal, "combined": combine_masks(pad, causal)}


@pytest.mark.parametrize("kind", ["none", "padding", "causal", "combined"])
def test_sdpa_equals_torch_4d(kind):
    torch.manual_seed(0)
    q, k, v = _qkv(2, 3, q_len=7, k_len=7)
    mask = _masks_4d(2, 7, 7)[kind]
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.shape == (2, 3, 7, 6) and weights.shape == (2, 3, 7, 7)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, _reference_weights(q, k, mask), atol=ATOL, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 7), atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", ["none", "padding", "causal"])
def test_sdpa_equals_torch_3d_cross_lengths(kind):
    torch.manual_seed(1)
    q, k, v = _qkv(4, q_len=5, k_len=9)
    ids = _ids_with_padding([9, 6, 3, 1], 9)
    masks = {"none": None, "padding": padding_mask(ids)[:, 0], "causal": causal_mask(9)[:5]}  # 3-D: (batch, 1, k)
    mask = masks[kind]
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (4, 5, 6) and weights.shape == (4, 5, 9)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, _reference_weights(q, k, mask), atol=ATOL, rtol=0)


def test_sdpa_float64_matches_closely():
    torch.manual_seed(2)
    q, k, v = _qkv(2, 2, dtype=torch.float64)
    mask = _masks_4d(2, 5, 7)["combined"]
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-12, rtol=0)


def test_sdpa_masked_keys_get_exactly_zero_weight_and_do_not_influence_output():
    torch.manual_seed(3)
    q, k, v = _qkv(2, q_len=4, k_len=6)
    mask = torch.tensor([True, True, True, True, False, False])
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(weights[..., 4:] == 0)
    v2 = v.clone()
    v2[:, 4:] = 1000.0  # blocked values must not leak
    out2, _ = scaled_dot_product_attention(q, k, v2, mask)
    torch.testing.assert_close(out, out2, atol=ATOL, rtol=0)


def test_sdpa_fully_masked_row_is_zero_not_nan_with_finite_gradients():
    torch.manual_seed(4)
    q, k, v = _qkv(2, 2, q_len=4, k_len=5)
    for t in (q, k, v):
        t.requires_grad_(True)
    mask = torch.ones(2, 1, 4, 5, dtype=torch.bool)
    mask[0, :, 1, :] = False  # query 1 of batch 0 may attend to nothing
    mask[1, :, :, 3:] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert torch.all(weights[0, :, 1] == 0) and torch.all(out[0, :, 1] == 0)
    # the other rows are normal probability distributions
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(2, 4), atol=ATOL, rtol=0)
    # PyTorch's fused kernel agrees (also zeros on the fully masked row)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)
    (out.square().sum() + weights.square().sum()).backward()
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), name
    assert torch.all(q.grad[0, :, 1] == 0)  # the masked query gets no gradient
    assert q.grad.abs().sum() > 0  # ... but the others do


def test_sdpa_gradcheck_float64_with_mask():
    torch.manual_seed(5)
    q, k, v = _qkv(2, q_len=3, k_len=4, d_k=4, d_v=3, dtype=torch.float64)
    for t in (q, k, v):
        t.requires_grad_(True)
    mask = torch.tensor([[True, True, False, False]]).expand(3, 4).clone()
    mask[2] = False  # include a fully masked row
    mask = torch.stack([mask, causal_mask(4)[:3]])  # (2, 3, 4)
    assert torch.autograd.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, mask), (q, k, v))


def test_sdpa_dropout_only_when_asked():
    torch.manual_seed(6)
    q, k, v = _qkv(2, q_len=4, k_len=4)
    _, weights = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert (weights == 0).any()  # some weights dropped
    _, plain = scaled_dot_product_attention(q, k, v)
    assert (plain > 0).all()


# ---------------------------------------------------------------- MultiHeadAttention vs nn.MultiheadAttention


def _torch_and_ours(d_model=16, n_heads=4, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True).eval()
    with torch.no_grad():  # nn.MultiheadAttention starts with zero biases: make them random
        ref.in_proj_bias.normal_()
        ref.out_proj.bias.normal_()
    ours = multihead_attention_from_torch(ref).eval()
    return ref, ours


def test_mha_self_attention_with_padding_equals_torch():
    ref, ours = _torch_and_ours()
    x = torch.randn(3, 6, 16)
    ids = _ids_with_padding([6, 4, 1], 6)
    expected, expected_w = ref(x, x, x, key_padding_mask=to_torch_key_padding_mask(ids), average_attn_weights=False)
    out, weights = ours(x, x, x, mask=padding_mask(ids), return_attention=True)
    assert out.shape == (3, 6, 16) and weights.shape == (3, 4, 6, 6)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_w, atol=ATOL, rtol=0)
    assert torch.all(weights[1, :, :, 4:] == 0)


def test_mha_cross_attention_different_lengths_equals_torch():
    ref, ours = _torch_and_ours(d_model=24, n_heads=3, seed=1)
    query = torch.randn(2, 4, 24)
    memory = torch.randn(2, 9, 24)
    ids = _ids_with_padding([9, 5], 9)
    expected, expected_w = ref(
        query, memory, memory, key_padding_mask=to_torch_key_padding_mask(ids), average_attn_weights=False
    )  # torch: True = padding (blocked)
    out, weights = ours(query, memory, memory, mask=padding_mask(ids), return_attention=True)  # ours: True = real
    assert out.shape == (2, 4, 24) and weights.shape == (2, 3, 4, 9)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_w, atol=ATOL, rtol=0)


def test_mha_causal_and_padding_equals_torch():
    ref, ours = _torch_and_ours(seed=2)
    x = torch.randn(2, 5, 16)
    ids = _ids_with_padding([5, 3], 5)
    expected, expected_w = ref(
        x, x, x,
        key_padding_mask=to_torch_key_padding_mask(ids),
        attn_mask=to_torch_attn_mask(causal_mask(5)),
        average_attn_weights=False,
    )
    out, weights = ours(x, x, x, mask=combine_masks(padding_mask(ids), causal_mask(5)), return_attention=True)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_w, atol=ATOL, rtol=0)


def test_mha_no_mask_averaged_weights_equal_torch_default():
    ref, ours = _torch_and_ours(seed=3)
    x = torch.randn(2, 5, 16)
    expected, expected_w = ref(x, x, x)  # torch averages the heads by default
    out, weights = ours(x, x, x, return_attention=True)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights.mean(dim=1), expected_w, atol=ATOL, rtol=0)


@pytest.mark.parametrize("training", [False, True])
def test_mha_fused_path_equals_explicit_path(training):
    torch.manual_seed(4)
    mha = MultiHeadAttention(16, 4, dropout=0.0).train(training)
    query, memory = torch.randn(3, 5, 16), torch.randn(3, 7, 16)
    ids = _ids_with_padding([7, 2, 4], 7)
    mask = padding_mask(ids)
    mask = mask & torch.tensor([True, True, False]).view(3, 1, 1, 1)  # batch 2: every key blocked
    mha.use_fused = True
    fused = mha(query, memory, memory, mask=mask)
    explicit, _ = mha(query, memory, memory, mask=mask, return_attention=True)
    mha.use_fused = False
    explicit2 = mha(query, memory, memory, mask=mask)
    assert torch.isfinite(fused).all()
    torch.testing.assert_close(fused, explicit, atol=ATOL, rtol=0)
    torch.testing.assert_close(fused, explicit2, atol=ATOL, rtol=0)
    # a query with no visible key outputs only the output bias (zero heads)
    torch.testing.assert_close(fused[2], mha.out_proj.bias.detach().expand(5, 16), atol=ATOL, rtol=0)


def test_mha_return_attention_and_keep_attention():
    torch.manual_seed(5)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 3, 8)
    out = mha(x, x, x)
    assert isinstance(out, torch.Tensor) and out.shape == (2, 3, 8)
    out2, weights = mha(x, x, x, return_attention=True)
    assert weights.shape == (2, 2, 3, 3)
    torch.testing.assert_close(out, out2, atol=ATOL, rtol=0)
    assert mha.last_attention is None
    mha.keep_attention = True
    out3 = mha(x, x, x)
    assert isinstance(out3, torch.Tensor)
    torch.testing.assert_close(mha.last_attention, weights.detach(), atol=ATOL, rtol=0)
    assert not mha.last_attention.requires_grad


def test_mha_split_merge_heads_round_trip():
    torch.manual_seed(6)
    mha = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    heads = mha.split_heads(x)
    assert heads.shape == (2, 3, 5, 4)
    torch.testing.assert_close(heads[:, 1], x[..., 4:8])  # head h sees features h*d_head:(h+1)*d_head
    assert torch.equal(mha.merge_heads(heads), x)
