"""Talk to PyTorch's built-in attention modules: convert the course's masks, copy weights into the course's.

**Masks: the course's one converter.** Two conventions meet here:

* the course (``course_lib.masks``) and ``F.scaled_dot_product_attention``: a bool mask, **True = may attend**;
* ``nn.MultiheadAttention``, ``nn.Transformer`` and its layers (``key_padding_mask``, ``attn_mask``,
  ``src_key_padding_mask``, ``tgt_mask``, ``memory_key_padding_mask``, ...): a bool mask means **True =
  blocked**, and a float mask is **added** to the scores, ``0.0`` = may attend, ``-inf`` = blocked (what
  ``nn.Transformer.generate_square_subsequent_mask`` returns).

Wherever the course calls one of PyTorch's modules it converts with :func:`to_torch_key_padding_mask`
(token ids -> ``key_padding_mask``) or :func:`to_torch_attn_mask` (a course mask -> ``attn_mask``; each
gives the float form with ``as_additive=True``), never with a ``~`` or ``== pad_id`` written on the spot.
Passing a course mask unconverted raises no error: it blocks exactly the keys that should be read (notebook
06). Wrong dtypes and shapes are refused with a message naming the argument
(:func:`course_lib.checks.check_mask_to_convert`). Checked in ``tests/test_mask_conversion.py`` against
``nn.MultiheadAttention``, ``nn.TransformerDecoderLayer`` and ``generate_square_subsequent_mask``.

**Weights.** PyTorch packs the query, key and value projections of ``nn.MultiheadAttention`` into one
``in_proj_weight`` of shape ``(3 * d_model, d_model)``; ours keeps three ``nn.Linear``. Everything else
maps one to one.

``nn.Transformer`` always puts a final LayerNorm after each stack, also in post-norm mode, so
:func:`transformer_from_torch` builds our model with ``final_norm=True``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .checks import check_mask_to_convert
from .layers import DecoderLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward
from .model import Transformer, TransformerConfig


def _as_torch_form(blocked: torch.Tensor, as_additive: bool, dtype: torch.dtype | None) -> torch.Tensor:
    """A bool "True = blocked" tensor as it is, or as PyTorch's additive float form (0.0 / -inf)."""
    if not as_additive:
        return blocked
    dtype = dtype or torch.get_default_dtype()
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point dtype for an additive mask, got {dtype}")
    return torch.zeros(blocked.shape, dtype=dtype, device=blocked.device).masked_fill(blocked, float("-inf"))


def to_torch_key_padding_mask(ids: torch.Tensor, pad_id: int = 0, *, as_additive: bool = False,
                              dtype: torch.dtype | None = None) -> torch.Tensor:
    """Token ids -> PyTorch's ``key_padding_mask`` (also ``src_``/``tgt_``/``memory_key_padding_mask``).

    The course would write ``padding_mask(ids, pad_id)``, True at real tokens, shape ``(batch, 1, 1, seq)``;
    PyTorch wants the opposite polarity without the two size-1 dimensions.

    Args:
        ids: integer token ids ``(batch, seq)``.
        pad_id: the id of ``<pad>``.
        as_additive: return PyTorch's float form instead of a bool one.
        dtype: the float dtype of the additive form (default: torch's default dtype).

    Returns:
        ``(batch, seq)``: bool, **True at** ``<pad>`` (= blocked); or, with ``as_additive``, float ``-inf`` at
        ``<pad>`` and ``0.0`` at real tokens.
    """
    check_mask_to_convert(ids, "ids", "ids")
    return _as_torch_form(ids == pad_id, as_additive, dtype)  # (batch, seq), True = <pad> = blocked


def to_torch_attn_mask(mask: torch.Tensor, n_heads: int | None = None, *, as_additive: bool = False,
                       dtype: torch.dtype | None = None) -> torch.Tensor:
    """A course mask (True = may attend) -> PyTorch's ``attn_mask`` / ``tgt_mask`` (True = blocked).

    Args:
        mask: bool, True = may attend: ``(q_len, k_len)`` such as ``causal_mask(n)``, or, with ``n_heads``,
            ``(batch, 1 or n_heads, q_len, k_len)`` such as ``decoder_self_attention_mask(tgt)`` (its batch
            dimension must be the real batch size, not a broadcast 1).
        n_heads: the module's number of heads, needed for a 4-D mask: PyTorch takes a per-example mask as
            ``(batch * n_heads, q_len, k_len)``, the batch varying slowest.
        as_additive: return PyTorch's float form (``0.0`` = may attend, ``-inf`` = blocked), the form of
            ``nn.Transformer.generate_square_subsequent_mask``, instead of a bool one.
        dtype: the float dtype of the additive form (default: torch's default dtype).

    Returns:
        ``(q_len, k_len)`` for a 2-D mask, ``(batch * n_heads, q_len, k_len)`` for a 4-D one: bool **True =
        blocked** (``~mask``), or float 0.0 / -inf with ``as_additive``.
    """
    check_mask_to_convert(mask, "mask", "mask", n_heads)
    blocked = ~mask  # (q_len, k_len) or (batch, 1 or n_heads, q_len, k_len), True = blocked
    if blocked.dim() == 4:
        batch, _, q_len, k_len = blocked.shape
        blocked = blocked.expand(batch, n_heads, q_len, k_len).reshape(batch * n_heads, q_len, k_len)
    return _as_torch_form(blocked, as_additive, dtype)


@torch.no_grad()
def _copy(dst: torch.Tensor, src: torch.Tensor, name: str) -> None:
    if dst.shape != src.shape:
        raise ValueError(f"cannot copy {name}: shape {tuple(src.shape)} does not match ours {tuple(dst.shape)}")
    dst.copy_(src)


def copy_multihead_attention(src: nn.MultiheadAttention, dst: MultiHeadAttention) -> MultiHeadAttention:
    """Copy ``nn.MultiheadAttention`` weights into our :class:`MultiHeadAttention` (in place; returns ``dst``)."""
    if not src._qkv_same_embed_dim:
        raise ValueError("only nn.MultiheadAttention with kdim == vdim == embed_dim is supported")
    d = dst.d_model
    if src.embed_dim != d or src.num_heads != dst.n_heads:
        raise ValueError(
            f"size mismatch: torch has embed_dim={src.embed_dim}, num_heads={src.num_heads}; "
            f"ours has d_model={d}, n_heads={dst.n_heads}"
        )
    w_q, w_k, w_v = src.in_proj_weight.chunk(3, dim=0)  # each (d_model, d_model)
    _copy(dst.q_proj.weight, w_q, "q weight")
    _copy(dst.k_proj.weight, w_k, "k weight")
    _copy(dst.v_proj.weight, w_v, "v weight")
    _copy(dst.out_proj.weight, src.out_proj.weight, "out_proj weight")
    if src.in_proj_bias is not None:
        if dst.q_proj.bias is None:
            raise ValueError("torch module has biases but ours was built with bias=False")
        b_q, b_k, b_v = src.in_proj_bias.chunk(3)  # each (d_model,)
        _copy(dst.q_proj.bias, b_q, "q bias")
        _copy(dst.k_proj.bias, b_k, "k bias")
        _copy(dst.v_proj.bias, b_v, "v bias")
        _copy(dst.out_proj.bias, src.out_proj.bias, "out_proj bias")
    return dst


def multihead_attention_from_torch(src: nn.MultiheadAttention) -> MultiHeadAttention:
    """A new :class:`MultiHeadAttention` with the weights of ``src``."""
    dst = MultiHeadAttention(src.embed_dim, src.num_heads, dropout=src.dropout, bias=src.in_proj_bias is not None)
    return copy_multihead_attention(src, dst)


def copy_layer_norm(src: nn.LayerNorm, dst: LayerNorm) -> LayerNorm:
    """Copy ``nn.LayerNorm`` (weight, bias, eps) into our :class:`LayerNorm`."""
    if tuple(src.normalized_shape) != (dst.d_model,):
        raise ValueError(f"nn.LayerNorm normalizes {tuple(src.normalized_shape)}, ours ({dst.d_model},)")
    _copy(dst.weight, src.weight, "LayerNorm weight")
    _copy(dst.bias, src.bias, "LayerNorm bias")
    dst.eps = src.eps
    return dst


def layer_norm_from_torch(src: nn.LayerNorm) -> LayerNorm:
    return copy_layer_norm(src, LayerNorm(src.normalized_shape[0], eps=src.eps))


def _copy_feed_forward(src_layer: nn.Module, dst: PositionwiseFeedForward) -> None:
    _copy(dst.linear1.weight, src_layer.linear1.weight, "linear1 weight")
    _copy(dst.linear1.bias, src_layer.linear1.bias, "linear1 bias")
    _copy(dst.linear2.weight, src_layer.linear2.weight, "linear2 weight")
    _copy(dst.linear2.bias, src_layer.linear2.bias, "linear2 bias")


def _check_relu(src_layer: nn.Module) -> None:
    # nn.TransformerDecoderLayer has no `activation_relu_or_gelu` flag: look at the activation itself.
    activation = src_layer.activation
    if activation is not F.relu and not isinstance(activation, nn.ReLU):
        raise ValueError("only the ReLU activation is supported (ours uses ReLU)")


def copy_encoder_layer(src: nn.TransformerEncoderLayer, dst: EncoderLayer) -> EncoderLayer:
    """Copy ``nn.TransformerEncoderLayer`` into our :class:`EncoderLayer` (norm placement must match)."""
    _check_relu(src)
    if src.norm_first != dst.norm_first:
        raise ValueError(f"norm_first differs: torch {src.norm_first}, ours {dst.norm_first}")
    copy_multihead_attention(src.self_attn, dst.self_attn)
    _copy_feed_forward(src, dst.feed_forward)
    copy_layer_norm(src.norm1, dst.norm1)
    copy_layer_norm(src.norm2, dst.norm2)
    return dst


def encoder_layer_from_torch(src: nn.TransformerEncoderLayer) -> EncoderLayer:
    d_model = src.self_attn.embed_dim
    dst = EncoderLayer(d_model, src.self_attn.num_heads, src.linear1.out_features, src.dropout.p, src.norm_first)
    return copy_encoder_layer(src, dst)


def copy_decoder_layer(src: nn.TransformerDecoderLayer, dst: DecoderLayer) -> DecoderLayer:
    """Copy ``nn.TransformerDecoderLayer`` into our :class:`DecoderLayer` (norm placement must match)."""
    _check_relu(src)
    if src.norm_first != dst.norm_first:
        raise ValueError(f"norm_first differs: torch {src.norm_first}, ours {dst.norm_first}")
    copy_multihead_attention(src.self_attn, dst.self_attn)
    copy_multihead_attention(src.multihead_attn, dst.cross_attn)
    _copy_feed_forward(src, dst.feed_forward)
    copy_layer_norm(src.norm1, dst.norm1)
    copy_layer_norm(src.norm2, dst.norm2)
    copy_layer_norm(src.norm3, dst.norm3)
    return dst


def decoder_layer_from_torch(src: nn.TransformerDecoderLayer) -> DecoderLayer:
    d_model = src.self_attn.embed_dim
    dst = DecoderLayer(d_model, src.self_attn.num_heads, src.linear1.out_features, src.dropout.p, src.norm_first)
    return copy_decoder_layer(src, dst)


def transformer_from_torch(
    torch_model: nn.Transformer,
    src_embedding: nn.Embedding,
    tgt_embedding: nn.Embedding,
    generator: nn.Linear,
    max_len: int = 128,
    pad_id: int = 0,
) -> Transformer:
    """Build our :class:`Transformer` with the weights of an ``nn.Transformer``.

    ``nn.Transformer`` covers only the layer stacks; a full model also needs the two embedding
    tables and the output projection, supplied alongside. The reference computation this matches is
    ``generator(torch_model(pe(src_embedding(src) * sqrt(d)), pe(tgt_embedding(tgt) * sqrt(d)), ...))``
    with the sinusoidal table ``pe`` and PyTorch masks converted from ours.

    Args:
        torch_model: a ``batch_first`` ``nn.Transformer`` with ReLU activation.
        src_embedding: source embedding ``(src_vocab_size, d_model)``.
        tgt_embedding: target embedding ``(tgt_vocab_size, d_model)``.
        generator: output projection ``d_model -> tgt_vocab_size``.
        max_len: position table length of our model.
        pad_id: the padding id.
    """
    if not torch_model.batch_first:
        raise ValueError("torch_model must be built with batch_first=True (the course's convention)")
    enc_layers = torch_model.encoder.layers
    dec_layers = torch_model.decoder.layers
    first = enc_layers[0]
    config = TransformerConfig(
        src_vocab_size=src_embedding.num_embeddings,
        tgt_vocab_size=tgt_embedding.num_embeddings,
        d_model=torch_model.d_model,
        n_heads=torch_model.nhead,
        n_encoder_layers=len(enc_layers),
        n_decoder_layers=len(dec_layers),
        d_ff=first.linear1.out_features,
        dropout=first.dropout.p,
        max_len=max_len,
        pad_id=pad_id,
        norm_first=first.norm_first,
        final_norm=True,
    )
    model = Transformer(config)
    for src_layer, dst_layer in zip(enc_layers, model.encoder.layers, strict=True):
        copy_encoder_layer(src_layer, dst_layer)
    for src_layer, dst_layer in zip(dec_layers, model.decoder.layers, strict=True):
        copy_decoder_layer(src_layer, dst_layer)
    copy_layer_norm(torch_model.encoder.norm, model.encoder.norm)
    copy_layer_norm(torch_model.decoder.norm, model.decoder.norm)
    _copy(model.encoder.embedding.weight, src_embedding.weight, "source embedding")
    _copy(model.decoder.embedding.weight, tgt_embedding.weight, "target embedding")
    _copy(model.generator.weight, generator.weight, "generator weight")
    _copy(model.generator.bias, generator.bias, "generator bias")
    return model
