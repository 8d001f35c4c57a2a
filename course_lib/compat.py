"""Copy weights from PyTorch's built-in modules into the course's, to prove they compute the same thing.

PyTorch packs the query, key and value projections of ``nn.MultiheadAttention`` into one
``in_proj_weight`` of shape ``(3 * d_model, d_model)``; ours keeps three ``nn.Linear``. Everything else
maps one to one. PyTorch's masks use the opposite polarity (True = blocked):
:func:`to_torch_key_padding_mask` and :func:`to_torch_attn_mask` convert ours (True = may attend).

``nn.Transformer`` always puts a final LayerNorm after each stack, also in post-norm mode, so
:func:`transformer_from_torch` builds our model with ``final_norm=True``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .layers import DecoderLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward
from .model import Transformer, TransformerConfig


def to_torch_key_padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """ids ``(batch, seq)`` -> PyTorch ``key_padding_mask`` ``(batch, seq)``, True = padding (blocked)."""
    return ids == pad_id


def to_torch_attn_mask(mask: torch.Tensor) -> torch.Tensor:
    """Our bool mask (True = may attend) -> PyTorch's bool ``attn_mask`` (True = blocked)."""
    return ~mask


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
