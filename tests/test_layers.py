"""Tests for ``course_lib.layers`` against PyTorch (weights copied with ``course_lib.compat``).

- ``LayerNorm`` equals ``nn.LayerNorm`` (the written-out path and the fused one); the articles' version (unbiased std, eps outside the square
  root) does not, and each of its two mistakes alone is detectable.
- ``EncoderLayer`` / ``DecoderLayer`` equal ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``
  (``batch_first=True``, post-norm and pre-norm, fused and explicit paths, eval mode, padded batches,
  causal decoder mask).
  PyTorch masks are True = blocked; ours True = may attend. Only real (non-pad) positions are compared:
  PyTorch's encoder fast path may write zeros at padded positions.
"""

import pytest
import torch
from torch import nn

from course_lib.compat import (
    copy_decoder_layer,
    copy_encoder_layer,
    decoder_layer_from_torch,
    encoder_layer_from_torch,
    layer_norm_from_torch,
    to_torch_attn_mask,
    to_torch_key_padding_mask,
)
from course_lib.layers import DecoderLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward
from course_lib.masks import causal_mask, combine_masks, padding_mask

ATOL = 1e-5


def _random_layer_norm(d_model, eps=1e-5):
    ref = nn.LayerNorm(d_model, eps=eps)
    with torch.no_grad():
        ref.weight.normal_()
        ref.bias.normal_()
    return ref


def _set_fused(module, use_fused):
    """Choose the fused kernels or the written-out computations in every sub-module that has both."""
    for m in module.modules():
        if hasattr(m, "use_fused"):
            m.use_fused = use_fused
    return module


@pytest.mark.parametrize("use_fused", [False, True])
@pytest.mark.parametrize("shape", [(5, 8), (2, 7, 16), (3, 2, 4, 33), (1, 1, 1)])
def test_layer_norm_equals_torch(shape, use_fused):
    torch.manual_seed(0)
    d_model = shape[-1]
    ref = _random_layer_norm(d_model)
    ours = _set_fused(layer_norm_from_torch(ref), use_fused)
    x = torch.randn(*shape) * 3 + 2
    torch.testing.assert_close(ours(x), ref(x), atol=ATOL, rtol=0)


@pytest.mark.parametrize("use_fused", [False, True])
def test_layer_norm_equals_torch_small_variance_and_eps(use_fused):
    torch.manual_seed(1)
    ref = _random_layer_norm(16, eps=1e-3)
    ours = _set_fused(layer_norm_from_torch(ref), use_fused)
    assert ours.eps == 1e-3
    x = torch.randn(4, 16, dtype=torch.float64) * 1e-3  # variance comparable to eps: eps placement matters
    torch.testing.assert_close(ours.double()(x), ref.double()(x), atol=1e-10, rtol=0)


def test_layer_norm_explicit_path_gradients_equal_torch():
    torch.manual_seed(2)
    ref = _random_layer_norm(12).double()
    ours = _set_fused(layer_norm_from_torch(ref), False)
    x = torch.randn(3, 4, 12, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(3, 4, 12, dtype=torch.float64)
    (grad_x,) = torch.autograd.grad(ref(x), x, grad_out)
    (ours_grad_x,) = torch.autograd.grad(ours(x), x, grad_out)
    torch.testing.assert_close(ours_grad_x, grad_x, atol=1e-10, rtol=0)
    assert torch.autograd.gradcheck(ours, (x,))


def test_layer_norm_default_init_normalises():
    torch.manual_seed(2)
    x = torch.randn(6, 32) * 5 + 7
    y = _set_fused(LayerNorm(32), False)(x).detach()
    torch.testing.assert_close(y.mean(-1), torch.zeros(6), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(6), atol=1e-3, rtol=0)


def _articles_norm(x, weight, bias, eps, unbiased=True, eps_inside=False):
    mean = x.mean(-1, keepdim=True)
    if eps_inside:
        return (x - mean) / torch.sqrt(x.var(-1, keepdim=True, unbiased=unbiased) + eps) * weight + bias
    return (x - mean) / (x.std(-1, keepdim=True, unbiased=unbiased) + eps) * weight + bias


def test_articles_layer_norm_is_not_layer_norm():
    torch.manual_seed(3)
    ref = _random_layer_norm(8)
    x = torch.randn(4, 8, dtype=torch.float64)
    ref = ref.double()
    w, b = ref.weight.detach(), ref.bias.detach()
    expected = ref(x).detach()
    # the articles' version: unbiased std and eps outside the square root
    buggy = _articles_norm(x, w, b, 1e-5)
    assert (buggy - expected).abs().max() > 1e-2
    # each mistake alone is visible: unbiased variance (any input) ...
    assert (_articles_norm(x, w, b, 1e-5, unbiased=True, eps_inside=True) - expected).abs().max() > 1e-2
    # ... and eps outside the root (inputs whose variance is comparable to eps)
    small = x * 1e-3
    expected_small = ref(small).detach()
    assert (_articles_norm(small, w, b, 1e-5, unbiased=False) - expected_small).abs().max() > 1e-2
    # sanity: with both fixed the same helper reproduces nn.LayerNorm
    fixed = _articles_norm(small, w, b, 1e-5, unbiased=False, eps_inside=True)
    torch.testing.assert_close(fixed, expected_small, atol=1e-10, rtol=0)


def test_layer_norm_rejects_wrong_width():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="last dimension d_model=8"):
        LayerNorm(8)(torch.randn(2, 7))


def test_feed_forward_formula():
    torch.manual_seed(4)
    ffn = PositionwiseFeedForward(8, 32).eval()
    x = torch.randn(2, 3, 8)
    expected = torch.relu(x @ ffn.linear1.weight.T + ffn.linear1.bias) @ ffn.linear2.weight.T + ffn.linear2.bias
    torch.testing.assert_close(ffn(x), expected, atol=ATOL, rtol=0)
    # position-wise: each position is transformed independently
    torch.testing.assert_close(ffn(x[:, 1:2]), ffn(x)[:, 1:2], atol=ATOL, rtol=0)


def _randomise_(module):
    """nn.Transformer*Layer starts with zero attention biases and unit LayerNorms: make everything random."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:
                p.normal_(mean=1.0 if "norm" in name and name.endswith("weight") else 0.0, std=0.2)
    return module


def _ids(lengths, seq_len):
    ids = torch.randint(4, 30, (len(lengths), seq_len))
    for b, n in enumerate(lengths):
        ids[b, n:] = 0
    return ids


@pytest.mark.parametrize("use_fused", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch(norm_first, use_fused):
    torch.manual_seed(5)
    ref = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True, norm_first=norm_first)
    ref = _randomise_(ref).eval()
    ours = _set_fused(encoder_layer_from_torch(ref).eval(), use_fused)
    src = _ids([7, 5, 2], 7)
    x = torch.randn(3, 7, 16)
    real = src != 0  # (batch, src_len)
    with torch.no_grad():
        expected = ref(x, src_key_padding_mask=to_torch_key_padding_mask(src))  # torch: True = padding
        out = ours(x, padding_mask(src))  # ours: True = real token
    assert out.shape == x.shape
    torch.testing.assert_close(out[real], expected[real], atol=ATOL, rtol=0)
    # with gradients enabled torch takes its regular (non fast) path: same answer
    expected_slow = ref(x, src_key_padding_mask=to_torch_key_padding_mask(src))
    torch.testing.assert_close(ours(x, padding_mask(src))[real], expected_slow[real], atol=ATOL, rtol=0)


@pytest.mark.parametrize("use_fused", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch(norm_first, use_fused):
    torch.manual_seed(6)
    ref = nn.TransformerDecoderLayer(16, 2, 24, dropout=0.1, batch_first=True, norm_first=norm_first)
    ref = _randomise_(ref).eval()
    ours = _set_fused(decoder_layer_from_torch(ref).eval(), use_fused)
    src, tgt = _ids([9, 4], 9), _ids([6, 3], 6)
    memory, x = torch.randn(2, 9, 16), torch.randn(2, 6, 16)
    expected = ref(
        x,
        memory,
        tgt_mask=to_torch_attn_mask(causal_mask(6)),
        tgt_key_padding_mask=to_torch_key_padding_mask(tgt),
        memory_key_padding_mask=to_torch_key_padding_mask(src),
    )
    tgt_mask = combine_masks(padding_mask(tgt), causal_mask(6))  # (batch, 1, tgt_len, tgt_len)
    out = ours(x, memory, tgt_mask=tgt_mask, src_mask=padding_mask(src))
    real = tgt != 0
    assert out.shape == x.shape
    torch.testing.assert_close(out[real], expected[real], atol=ATOL, rtol=0)


def test_decoder_layer_without_causal_mask_differs_from_torch_with_it():
    """Guard against the articles' bug: dropping the causal mask changes the result."""
    torch.manual_seed(7)
    ref = _randomise_(nn.TransformerDecoderLayer(16, 2, 24, batch_first=True)).eval()
    ours = decoder_layer_from_torch(ref).eval()
    x, memory = torch.randn(1, 5, 16), torch.randn(1, 4, 16)
    expected = ref(x, memory, tgt_mask=to_torch_attn_mask(causal_mask(5)))
    out = ours(x, memory)  # no mask at all
    assert (out[:, :-1] - expected[:, :-1]).abs().max() > 1e-3


def test_copy_rejects_mismatched_norm_placement():
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True)
    with pytest.raises(ValueError, match="norm_first differs"):
        copy_encoder_layer(ref, EncoderLayer(8, 2, 16, norm_first=False))
    ref = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, norm_first=False)
    with pytest.raises(ValueError, match="norm_first differs"):
        copy_decoder_layer(ref, DecoderLayer(8, 2, 16, norm_first=True))


@pytest.mark.parametrize("activation", ["gelu", torch.nn.functional.silu, nn.GELU()])
def test_copy_rejects_other_activations(activation):
    torch.manual_seed(0)
    for layer_class in (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer):
        ref = layer_class(8, 2, 16, activation=activation, batch_first=True)
        converter = encoder_layer_from_torch if layer_class is nn.TransformerEncoderLayer else decoder_layer_from_torch
        with pytest.raises(ValueError, match="only the ReLU activation is supported"):
            converter(ref)
    assert decoder_layer_from_torch(nn.TransformerDecoderLayer(8, 2, 16, activation=nn.ReLU(), batch_first=True))


@pytest.mark.parametrize("norm_first", [False, True])
def test_layers_dropout_active_only_in_training(norm_first):
    torch.manual_seed(8)
    layer = EncoderLayer(16, 4, 32, dropout=0.5, norm_first=norm_first)
    x = torch.randn(2, 5, 16)
    layer.eval()
    torch.testing.assert_close(layer(x), layer(x))
    layer.train()
    assert (layer(x) - layer(x)).abs().max() > 1e-3
