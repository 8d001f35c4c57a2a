"""The bug finder against a catalogue of realistic student mistakes and of correct parts written differently.

Every planted bug must be named (stage 1 of ``find_my_bug``, no training) with a hint a student can act on;
no correct variant may ever be called a bug, whatever its attribute names, creation order or style
(einsum, ``torch.where``, ``nn.Sequential``, a fused Q/K/V projection, ``F.layer_norm``, raw parameters).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention
from course_lib.embeddings import TokenEmbedding, sinusoidal_table
from course_lib.layers import DecoderLayer, DecoderOnlyLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward
from course_lib.masks import causal_mask, padding_mask
from course_lib.student import compare as part_compare
from course_lib.student.bug_finder import find_my_bug
from course_lib.student.contracts import LAYER_PARTS, USED_BY


def course_encoder_layer(d_model, n_heads, d_ff, norm_first=False):
    return EncoderLayer(d_model, n_heads, d_ff, 0.0, norm_first)


def course_decoder_layer(d_model, n_heads, d_ff, norm_first=False):
    return DecoderLayer(d_model, n_heads, d_ff, 0.0, norm_first)


def course_decoder_only_layer(d_model, n_heads, d_ff, norm_first=False):
    return DecoderOnlyLayer(d_model, n_heads, d_ff, 0.0, norm_first)


GOOD = {"token_embedding": TokenEmbedding, "positional_encoding": sinusoidal_table,
        "attention": scaled_dot_product_attention, "multi_head_attention": MultiHeadAttention,
        "padding_mask": padding_mask, "causal_mask": causal_mask, "layer_norm": LayerNorm,
        "feed_forward": PositionwiseFeedForward, "encoder_layer": course_encoder_layer,
        "decoder_layer": course_decoder_layer, "decoder_only_layer": course_decoder_only_layer}


# ----------------------------------------------------------------------------- building blocks for the variants

def attend(q, k, v, mask=None, scale=True, axis=-1, fill=None, invert=False):
    scores = q @ k.transpose(-2, -1)  # (..., q_len, k_len)
    if scale:
        scores = scores / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask if invert else ~mask, -1e9 if fill is None else fill)
    weights = scores.softmax(dim=axis)
    return weights @ v, weights


class Embedding(nn.Module):
    def __init__(self, vocab_size, d_model, pad_id=0, scale="d", padding=True, std=None):
        super().__init__()
        self.table = nn.Embedding(vocab_size, d_model, padding_idx=pad_id if padding else None)
        nn.init.normal_(self.table.weight, std=d_model**-0.5 if std is None else std)
        if padding:
            with torch.no_grad():
                self.table.weight[pad_id].zero_()
        self.d_model, self.scale = d_model, scale

    def forward(self, ids):
        factor = {"d": math.sqrt(self.d_model), "none": 1.0, "seq": math.sqrt(ids.size(-1)),
                  "double": self.d_model}[self.scale]
        return self.table(ids) * factor


def table(max_len, d_model, index_twice=False, swap=False, base=10000.0, cos_offset=0):
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float)[:, None]  # (max_len, 1)
    for i in range(0, d_model, 2):
        exponent = (2 * i if index_twice else i) / d_model
        pe[:, i] = (torch.cos if swap else torch.sin)(position[:, 0] / base**exponent)
        pe[:, i + 1] = (torch.sin if swap else torch.cos)(position[:, 0] / base ** ((i + cos_offset) / d_model))
    return pe


class MHA(nn.Module):
    """A multi-head attention a student might write; the flags plant one mistake each."""

    def __init__(self, d_model, n_heads, merge_transpose=True, scale=True, use_out=True, eval_dropout=False):
        super().__init__()
        self.h, self.d = n_heads, d_model // n_heads
        self.wq, self.wk, self.wv = (nn.Linear(d_model, d_model) for _ in range(3))
        self.wo = nn.Linear(d_model, d_model)
        self.merge_transpose, self.scale, self.use_out, self.eval_dropout = merge_transpose, scale, use_out, eval_dropout

    def forward(self, query, key, value, mask=None):
        b, n, _ = query.shape
        q = self.wq(query).view(b, -1, self.h, self.d).transpose(1, 2)  # (b, h, n, d)
        k = self.wk(key).view(b, -1, self.h, self.d).transpose(1, 2)
        v = self.wv(value).view(b, -1, self.h, self.d).transpose(1, 2)
        out, _ = attend(q, k, v, mask, scale=self.scale)
        if self.eval_dropout:
            out = F.dropout(out, 0.1, training=True)
        merged = (out.transpose(1, 2) if self.merge_transpose else out).reshape(b, n, self.h * self.d)
        return self.wo(merged) if self.use_out else merged


class Norm(nn.Module):
    def __init__(self, d_model, mistake=None):
        super().__init__()
        self.gamma, self.beta = nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model))
        self.mistake = mistake

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        if self.mistake == "unbiased_eps_outside":
            return self.gamma * (x - mean) / (x.std(-1, keepdim=True) + 1e-5) + self.beta
        var = x.var(-1, keepdim=True, unbiased=False)
        if self.mistake == "no_eps":
            return self.gamma * (x - mean) / var.sqrt() + self.beta
        if self.mistake == "eps_outside":
            return self.gamma * (x - mean) / (var.sqrt() + 1e-5) + self.beta
        if self.mistake == "no_beta":
            return self.gamma * (x - mean) / torch.sqrt(var + 1e-5)
        return self.gamma * (x - mean) / torch.sqrt(var + 1e-5) + self.beta


class FFN(nn.Module):
    def __init__(self, d_model, d_ff, mistake=None):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.mistake = mistake

    def forward(self, x):
        if self.mistake == "no_relu":
            return self.down(self.up(x))
        if self.mistake == "relu_after":
            return torch.relu(self.down(self.up(x)))
        if self.mistake == "residual":
            return x + self.down(torch.relu(self.up(x)))
        return self.down(torch.relu(self.up(x)))


class Encoder(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False, mistake=None):
        super().__init__()
        self.attn, self.ff = MultiHeadAttention(d_model, n_heads), PositionwiseFeedForward(d_model, d_ff)
        self.n1, self.n2 = LayerNorm(d_model), LayerNorm(d_model)
        self.norm_first, self.mistake = norm_first, mistake

    def forward(self, x, mask):
        m = self.mistake
        pre = self.norm_first != (m == "placement")
        if m == "no_mask":
            mask_used = None
        else:
            mask_used = mask
        if pre:
            h = self.n1(x)
            x = x + self.attn(h, h, h, mask=mask_used)
            return x + self.ff(self.n2(x))
        x = self.n1((0 if m == "no_residual" else x) + self.attn(x, x, x, mask=mask_used))
        out = self.n2(x + self.ff(x))
        return F.dropout(out, 0.1, training=True) if m == "dropout" else out


class Decoder(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False, mistake=None):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(d_model, n_heads), MultiHeadAttention(d_model, n_heads)
        self.ff = PositionwiseFeedForward(d_model, d_ff)
        self.norms = nn.ModuleList(LayerNorm(d_model) for _ in range(3))
        self.norm_first, self.mistake = norm_first, mistake

    def forward(self, x, memory, tgt_mask, src_mask):
        m = self.mistake
        n1, n2, n3 = self.norms
        own_mask = None if m == "no_causal" else tgt_mask
        source = x if m == "cross_reads_target" else memory
        if self.norm_first != (m == "placement"):
            h = n1(x)
            x = x + self.self_attn(h, h, h, mask=own_mask)
            h = n2(x)
            x = x + self.cross_attn(h, source, source, mask=src_mask if m != "cross_reads_target" else tgt_mask)
            return x + self.ff(n3(x))
        x = n1(x + self.self_attn(x, x, x, mask=own_mask))
        cross = self.cross_attn(x, source, source, mask=src_mask if m != "cross_reads_target" else tgt_mask)
        x = n2(cross if m == "no_residual_cross" else x + cross)
        if m == "residual_outside_norm":
            return x + n3(self.ff(x))
        return n3(x + self.ff(x))


class DecoderOnly(nn.Module):
    """A GPT block (notebook 15) a student might write on course_lib's sub-modules; ``mistake`` plants one."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False, mistake=None):
        super().__init__()
        self.attn, self.ff = MultiHeadAttention(d_model, n_heads), PositionwiseFeedForward(d_model, d_ff)
        self.n1, self.n2 = LayerNorm(d_model), LayerNorm(d_model)
        self.norm_first, self.mistake = norm_first, mistake
        if mistake == "frozen_norm":  # "the norm's gain needs no training"
            self.n2.weight.requires_grad_(False)

    def forward(self, x, mask):
        m = self.mistake
        if m == "no_mask":
            mask = None
        elif m == "own_causal":  # a causal mask of its own: the padding in the mask it is given is lost
            mask = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()
        if m == "ffn_first":
            x = self.n1(x + self.ff(x))
            return self.n2(x + self.attn(x, x, x, mask=mask))
        if self.norm_first != (m == "placement"):
            h = self.n1(x)
            x = (h if m == "normed_residual" else x) + self.attn(h, h, h, mask=mask)
            return x + self.ff(self.n2(x))
        x = self.n1((0 if m == "no_residual" else x) + self.attn(x, x, x, mask=mask))
        if m == "residual_outside_norm":
            return x + self.n2(self.ff(x))
        out = self.n2(x + self.ff(x))
        return F.dropout(out, 0.1, training=True) if m == "dropout" else out


class ReusingDecoderOnly(DecoderOnly):
    """Calls n1 for both sub-blocks; n2 is created and never used."""

    def forward(self, x, mask):
        if self.norm_first:
            h = self.n1(x)
            x = x + self.attn(h, h, h, mask=mask)
            return x + self.ff(self.n1(x))
        x = self.n1(x + self.attn(x, x, x, mask=mask))
        return self.n1(x + self.ff(x))


class TorchMaskDecoderOnly(nn.Module):
    """Built on nn.MultiheadAttention and hands it the course's mask as it is: PyTorch reads True as *blocked*."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.n1, self.n2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, mask):
        b, n, _ = x.shape
        given = mask.expand(b, 1, n, n)[:, 0].repeat_interleave(self.attn.num_heads, dim=0)  # (b * heads, n, n)
        x = self.n1(x + self.attn(x, x, x, attn_mask=given, need_weights=False)[0])
        return self.n2(x + self.ff(x))


class StartNorm(Norm):
    """A LayerNorm with the right formula whose gamma or beta starts somewhere else."""

    def __init__(self, d_model, gamma="ones", beta="zeros"):
        super().__init__(d_model)
        start = {"ones": torch.ones, "zeros": torch.zeros, "randn": torch.randn,
                 "rand": torch.rand}
        self.gamma = nn.Parameter(start[gamma](d_model))
        self.beta = nn.Parameter(start[beta](d_model))


class StartFFN(FFN):
    """The right feed-forward block whose biases start N(0, 1) or at one."""

    def __init__(self, d_model, d_ff, bias_start="randn"):
        super().__init__(d_model, d_ff)
        with torch.no_grad():
            for layer in (self.up, self.down):
                layer.bias.copy_(torch.randn(layer.bias.shape) if bias_start == "randn" else torch.ones(layer.bias.shape))


class StartMHA(MHA):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        for layer in (self.wq, self.wk, self.wv, self.wo):
            nn.init.normal_(layer.bias, std=1.0)  # a start copied from the embedding


class ViewOnlyMHA(MHA):
    """Splits the heads with a view straight to (batch, heads, seq, d_head): no transpose."""

    def forward(self, query, key, value, mask=None):
        b, n, _ = query.shape
        q, k, v = (f(x).view(b, self.h, -1, self.d) for f, x in ((self.wq, query), (self.wk, key), (self.wv, value)))
        out, _ = attend(q, k, v, mask)
        return self.wo(out.transpose(1, 2).reshape(b, n, self.h * self.d))


class SharedProjectionMHA(MHA):
    """Uses W_q for the keys too: W_k is created and never used."""

    def forward(self, query, key, value, mask=None):
        b, n, _ = query.shape
        q, k, v = (f(x).view(b, -1, self.h, self.d).transpose(1, 2)
                   for f, x in ((self.wq, query), (self.wq, key), (self.wv, value)))
        out, _ = attend(q, k, v, mask)
        return self.wo(out.transpose(1, 2).reshape(b, n, self.h * self.d))


class FrozenFFN(FFN):
    def __init__(self, d_model, d_ff):
        super().__init__(d_model, d_ff)
        self.down.bias.requires_grad_(False)


class NoGradEmbedding(Embedding):
    def forward(self, ids):
        with torch.no_grad():  # "the lookup needs no gradient": the table then never trains
            return self.table(ids) * math.sqrt(self.d_model)


class PreNormEncoder(Encoder):
    """Post-norm right; the pre-norm branch has one planted mistake."""

    def forward(self, x, mask):
        m = self.mistake
        if not self.norm_first:
            x = self.n1(x + self.attn(x, x, x, mask=mask))
            return self.n2(x + self.ff(x))
        if m == "normed_residual":  # the residual starts from the normalised input
            h = self.n1(x)
            x = h + self.attn(h, h, h, mask=mask)
            h = self.n2(x)
            return h + self.ff(h)
        if m == "ffn_unnormed":  # the feed-forward block reads x, not norm2(x): norm2 never used
            h = self.n1(x)
            x = x + self.attn(h, h, h, mask=mask)
            return x + self.ff(x)
        if m == "no_mask":
            h = self.n1(x)
            x = x + self.attn(h, h, h)
            return x + self.ff(self.n2(x))
        raise ValueError(m)


class PreNormDecoder(Decoder):
    """Post-norm right; the pre-norm branch has one planted mistake."""

    def forward(self, x, memory, tgt_mask, src_mask):
        m = self.mistake
        n1, n2, n3 = self.norms
        if not self.norm_first or m == "ignores_norm_first":
            x = n1(x + self.self_attn(x, x, x, mask=tgt_mask))
            x = n2(x + self.cross_attn(x, memory, memory, mask=src_mask))
            return n3(x + self.ff(x))
        if m == "no_causal":
            h = n1(x)
            x = x + self.self_attn(h, h, h, mask=None)
        else:
            h = n1(x)
            x = x + self.self_attn(h, h, h, mask=tgt_mask)
        if m == "memory_normed":  # the memory goes through the decoder's norm too
            h = n2(x)
            x = x + self.cross_attn(h, n2(memory), n2(memory), mask=src_mask)
        else:
            h = n2(x)
            x = x + self.cross_attn(h, memory, memory, mask=src_mask)
        if m == "final_norm":  # normalises the sum as well: post- and pre-norm at once
            return n3(x + self.ff(n3(x)))
        return x + self.ff(n3(x))


class ReusingEncoder(Encoder):
    """Calls norm1 for both sub-blocks; norm2 is created and never used."""

    def forward(self, x, mask):
        if self.norm_first:
            h = self.n1(x)
            x = x + self.attn(h, h, h, mask=mask)
            return x + self.ff(self.n1(x))
        x = self.n1(x + self.attn(x, x, x, mask=mask))
        return self.n1(x + self.ff(x))


class ReusingDecoder(Decoder):
    """One planted re-use: the self-attention module does the cross-attention too, or one norm serves all."""

    def forward(self, x, memory, tgt_mask, src_mask):
        n1, n2, n3 = self.norms
        cross = self.self_attn if self.mistake == "attention" else self.cross_attn
        if self.mistake == "norm":
            n2 = n3 = n1
        if self.norm_first:
            h = n1(x)
            x = x + self.self_attn(h, h, h, mask=tgt_mask)
            h = n2(x)
            x = x + cross(h, memory, memory, mask=src_mask)
            return x + self.ff(n3(x))
        x = n1(x + self.self_attn(x, x, x, mask=tgt_mask))
        x = n2(x + cross(x, memory, memory, mask=src_mask))
        return n3(x + self.ff(x))


class StartNormEncoder(Encoder):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, norm_first)
        self.n2 = StartNorm(d_model, gamma="randn")


class StartNormDecoder(Decoder):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, norm_first)
        self.norms[1] = StartNorm(d_model, beta="ones")


class StartNormDecoderOnly(DecoderOnly):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, norm_first)
        self.n1 = StartNorm(d_model, gamma="zeros")


def factory(cls, **fixed):
    """A factory with the part's constructor signature that plants ``fixed`` settings."""
    def build(*args, **kwargs):
        return cls(*args, **{**kwargs, **fixed})
    build.__name__ = cls.__name__
    return build


# ----------------------------------------------------------------------------- the catalogue

BUGS = [
    # (part, planted mistake, words the evidence must contain)
    ("token_embedding", factory(Embedding, scale="seq"), "sqrt(sequence length)"),
    ("token_embedding", factory(Embedding, scale="none"), "not multiplied by sqrt(d_model)"),
    ("token_embedding", factory(Embedding, scale="double"), "applied twice"),
    ("token_embedding", factory(Embedding, padding=False), "<pad>"),
    ("token_embedding", factory(Embedding, std=1.0), "standard deviation"),
    ("positional_encoding", lambda n, d: table(n, d, index_twice=True), "counted twice"),
    ("positional_encoding", lambda n, d: table(n, d, swap=True), "swapped"),
    ("positional_encoding", lambda n, d: table(n, d, base=1000.0), "base is 1,000"),
    ("positional_encoding", lambda n, d: table(n, d, cos_offset=1), "different frequency"),
    ("attention", lambda q, k, v, mask=None: attend(q, k, v, mask, scale=False), "not divided by sqrt(d_k)"),
    ("attention", lambda q, k, v, mask=None: attend(q, k, v, mask, axis=-2), "masked"),
    ("attention", lambda q, k, v, mask=None: attend(q, k, v, mask, invert=True), "masked"),
    ("attention", lambda q, k, v, mask=None: attend(q, k, v, mask, fill=0.0), "masked"),
    ("multi_head_attention", factory(MHA, merge_transpose=False), "without transposing"),
    ("multi_head_attention", factory(MHA, scale=False), "not divided by sqrt(d_k)"),
    ("multi_head_attention", factory(MHA, use_out=False), "output projection"),
    ("multi_head_attention", factory(MHA, eval_dropout=True), "dropout"),
    ("padding_mask", lambda ids, pad_id=0: (ids == pad_id)[:, None, None, :], "inverted"),
    ("padding_mask", lambda ids, pad_id=0: (ids != 0)[:, None, None, :], "pad_id"),
    ("causal_mask", lambda size: torch.ones(size, size, dtype=torch.bool).tril(-1), "itself"),
    ("causal_mask", lambda size: torch.ones(size, size, dtype=torch.bool).triu(1), "inverted"),
    ("layer_norm", factory(Norm, mistake="unbiased_eps_outside"), "unbiased"),
    ("layer_norm", factory(Norm, mistake="no_eps"), "eps"),
    ("layer_norm", factory(Norm, mistake="eps_outside"), "outside the square root"),
    ("layer_norm", factory(Norm, mistake="no_beta"), "beta"),
    ("feed_forward", factory(FFN, mistake="no_relu"), "no ReLU"),
    ("feed_forward", factory(FFN, mistake="relu_after"), "after the second"),
    ("feed_forward", factory(FFN, mistake="residual"), "residual"),
    ("encoder_layer", factory(Encoder, mistake="placement"), "pre-norm"),
    ("encoder_layer", factory(Encoder, mistake="no_residual"), "residual"),
    ("encoder_layer", factory(Encoder, mistake="no_mask"), "mask"),
    ("encoder_layer", factory(Encoder, mistake="dropout"), "dropout"),
    ("decoder_layer", factory(Decoder, mistake="no_residual_cross"), "around cross-attention"),
    ("decoder_layer", factory(Decoder, mistake="cross_reads_target"), "memory"),
    ("decoder_layer", factory(Decoder, mistake="no_causal"), "future"),
    ("decoder_layer", factory(Decoder, mistake="placement"), "pre-norm"),
    ("decoder_layer", factory(Decoder, mistake="residual_outside_norm"), "residual after the norm around the feed-forward"),
    # learners' bugs from public Transformer repositories' issue threads
    ("multi_head_attention", ViewOnlyMHA, "masked"),
    ("padding_mask", lambda ids, pad_id=0: (ids != pad_id)[:, None, :, None], "<pad>"),
    # notebook 06's promise: a query that may see no key (left padding under a causal mask) gets no NaN
    ("attention", lambda q, k, v, mask=None: attend(q, k, v, mask, fill=float("-inf")), "fully masked row"),
    # starting values: the right numbers with copied weights, but the model starts somewhere else
    ("layer_norm", factory(StartNorm, gamma="zeros"), "gamma (gamma) starts at all 0"),
    ("layer_norm", factory(StartNorm, gamma="randn"), "gamma (gamma) starts at values from"),
    ("layer_norm", factory(StartNorm, beta="ones"), "beta (beta) starts at all 1"),
    ("layer_norm", factory(StartNorm, gamma="rand", beta="rand"), "does not start as plain normalisation"),
    ("feed_forward", factory(StartFFN, bias_start="randn"), "bias up.bias starts at values from"),
    ("feed_forward", factory(StartFFN, bias_start="ones"), "bias up.bias starts at all 1"),
    ("multi_head_attention", StartMHA, "bias wq.bias starts"),
    ("encoder_layer", StartNormEncoder, "its LayerNorm n2 does not start as plain normalisation"),
    ("decoder_layer", StartNormDecoder, "its LayerNorm norms.1 does not start"),
    # the pre-norm path (norm_first=True): post-norm is right
    ("encoder_layer", factory(PreNormEncoder, mistake="normed_residual"), "with norm_first=True"),
    ("encoder_layer", factory(PreNormEncoder, mistake="ffn_unnormed"), "with norm_first=True"),
    ("encoder_layer", factory(PreNormEncoder, mistake="no_mask"), "with norm_first=True"),
    ("decoder_layer", factory(PreNormDecoder, mistake="ignores_norm_first"), "although norm_first=True"),
    ("decoder_layer", factory(PreNormDecoder, mistake="no_causal"), "future"),
    ("decoder_layer", factory(PreNormDecoder, mistake="memory_normed"), "normalises the encoder's memory"),
    ("decoder_layer", factory(PreNormDecoder, mistake="final_norm"), "norms.2 2 times"),
    # parameters the forward pass never uses (or that never train)
    ("encoder_layer", ReusingEncoder, "n2.weight, n2.bias never get a gradient: the forward pass does not use them, so they never train; n1 is called 2 times"),
    ("decoder_layer", factory(ReusingDecoder, mistake="attention"), "cross_attn.q_proj.weight"),
    ("decoder_layer", factory(ReusingDecoder, mistake="norm"), "norms.1.weight, norms.1.bias, norms.2.weight"),
    ("multi_head_attention", SharedProjectionMHA, "wk.weight, wk.bias never get a gradient"),
    ("feed_forward", FrozenFFN, "frozen"),
    ("token_embedding", NoGradEmbedding, "table.weight never gets a gradient"),
    # notebook 15: a GPT's block, masked self-attention then feed-forward (the articles' "decoder with no
    # causal mask" first: the loss falls, then generation is useless)
    ("decoder_only_layer", factory(DecoderOnly, mistake="no_mask"),
     "leaks the future: with a causal mask, changing the input at positions 1 and later changed the output at "
     "earlier ones (is mask passed to self-attention?); likely cause: calls masked self-attention without any mask"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="own_causal"),
     "attends to masked positions: changing a key the mask blocks changed the output at other positions"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="no_residual"),
     "has no residual connection around masked self-attention"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="placement"), "(pre-norm) although norm_first=False"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="ffn_first"),
     "runs the feed-forward block before masked self-attention"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="normed_residual"),
     "with norm_first=True (pre-norm, as notebook 15's GPT trains): adds the output of masked self-attention to "
     "the normalised input"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="residual_outside_norm"),
     "adds the residual after the norm around the feed-forward block"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="dropout"), "dropout is applied even after .eval()"),
    ("decoder_only_layer", factory(DecoderOnly, mistake="frozen_norm"), "parameter n2.weight is frozen"),
    ("decoder_only_layer", ReusingDecoderOnly, "n2.weight, n2.bias never get a gradient"),
    ("decoder_only_layer", StartNormDecoderOnly, "its LayerNorm n1 does not start as plain normalisation"),
    ("decoder_only_layer", TorchMaskDecoderOnly, "returned NaN"),
]


# ----------------------------------------------------------------------------- correct parts written differently

class RawEmbedding(nn.Module):
    """A raw parameter table (transposed: d_model x vocab), index_select, pad row zeroed by hand."""

    def __init__(self, vocab_size, d_model, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.weight_t = nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))
        with torch.no_grad():
            self.weight_t[:, pad_id] = 0.0

    def forward(self, ids):
        rows = self.weight_t.T.index_select(0, ids.reshape(-1)).view(*ids.shape, -1)  # (batch, seq, d_model)
        return rows * self.weight_t.size(0) ** 0.5


def pe_with_exp(max_len, d_model):
    position = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
    div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (d_model / 2,)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
    return pe


def attention_einsum_where(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / q.size(-1) ** 0.5  # (..., q_len, k_len)
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf")))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


class OutFirstMHA(nn.Module):
    """Output projection created first, other names."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.mix = nn.Linear(d_model, d_model)
        self.to_v, self.to_k, self.to_q = (nn.Linear(d_model, d_model) for _ in range(3))
        self.n_heads = n_heads

    def forward(self, query, key, value, mask=None):
        b, n, d = query.shape
        h = self.n_heads
        q, k, v = (f(x).view(b, -1, h, d // h).transpose(1, 2)
                   for f, x in ((self.to_q, query), (self.to_k, key), (self.to_v, value)))
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return self.mix(out.transpose(1, 2).reshape(b, n, d))


class FusedEinsumMHA(nn.Module):
    """One fused (3 d_model x d_model) projection; einsum for the heads."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.n_heads = n_heads

    def forward(self, query, key, value, mask=None):
        d = query.size(-1)
        w_q, w_k, w_v = self.qkv.weight.split(d)
        b_q, b_k, b_v = self.qkv.bias.split(d)
        h = self.n_heads

        def heads(x, w, bias):
            y = torch.einsum("bnd,ed->bne", x, w) + bias  # (batch, seq, d_model)
            return y.unflatten(-1, (h, d // h)).transpose(1, 2)  # (batch, h, seq, d_head)

        out, _ = attention_einsum_where(heads(query, w_q, b_q), heads(key, w_k, b_k), heads(value, w_v, b_v), mask)
        return self.proj(out.transpose(1, 2).flatten(-2))


class RawParameterMHA(nn.Module):
    """Raw (in x out) matrices used as x @ W, no biases."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.W = nn.ParameterList(nn.Parameter(torch.randn(d_model, d_model) / d_model**0.5) for _ in range(4))
        self.n_heads = n_heads

    def forward(self, query, key, value, mask=None):
        b, n, d = query.shape
        h = self.n_heads
        q, k, v = ((x @ w).view(b, -1, h, d // h).transpose(1, 2) for x, w in zip((query, key, value), list(self.W)[:3], strict=True))
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return out.transpose(1, 2).reshape(b, n, d) @ self.W[3]


class BetaFirstNorm(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(d_model))
        self.scale = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.scale, self.shift, 1e-5)


class RsqrtNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.g, self.b, self.eps = nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model)), eps

    def forward(self, x):
        centered = x - x.mean(-1, keepdim=True)
        return centered * torch.rsqrt(centered.pow(2).mean(-1, keepdim=True) + self.eps) * self.g + self.b


def sequential_ffn(d_model, d_ff):
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class ReorderedEncoder(nn.Module):
    """Feed-forward created first, norms in a ModuleList, the student's own sub-parts."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.block = sequential_ffn(d_model, d_ff)
        self.norms = nn.ModuleList([BetaFirstNorm(d_model), RsqrtNorm(d_model)])
        self.mixer = OutFirstMHA(d_model, n_heads)
        self.norm_first = norm_first

    def forward(self, x, src_mask):
        first, second = self.norms
        if self.norm_first:
            h = first(x)
            x = x + self.mixer(h, h, h, mask=src_mask)
            return x + self.block(second(x))
        x = first(x + self.mixer(x, x, x, mask=src_mask))
        return second(x + self.block(x))


class CrossFirstDecoder(nn.Module):
    """Cross-attention created before self-attention; masks passed by keyword."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.src_attention = FusedEinsumMHA(d_model, n_heads)
        self.tgt_attention = RawParameterMHA(d_model, n_heads)
        self.ffn = sequential_ffn(d_model, d_ff)
        self.ln = nn.ModuleList(LayerNorm(d_model) for _ in range(3))
        self.norm_first = norm_first

    def forward(self, x, memory, tgt_mask, src_mask):
        a, b, c = self.ln
        if self.norm_first:
            h = a(x)
            x = x + self.tgt_attention(h, h, h, mask=tgt_mask)
            x = x + self.src_attention(b(x), memory, memory, mask=src_mask)
            return x + self.ffn(c(x))
        x = a(x + self.tgt_attention(query=x, key=x, value=x, mask=tgt_mask))
        x = b(x + self.src_attention(query=x, key=memory, value=memory, mask=src_mask))
        return c(x + self.ffn(x))


class XavierZeroBiasFFN(nn.Module):
    """Xavier matrices and zero biases (PyTorch's start for attention): a different start the contract allows."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        for layer in (self.w_1, self.w_2):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        return self.w_2(F.relu(self.w_1(x)))


class SublayerConnection(nn.Module):
    """The Annotated Transformer's residual wrapper: one norm each, either placement."""

    def __init__(self, d_model, norm_first):
        super().__init__()
        self.norm, self.norm_first = nn.LayerNorm(d_model), norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            return x + sublayer(self.norm(x))
        return self.norm(x + sublayer(x))


class AnnotatedDecoder(nn.Module):
    """Residual wrappers in a ModuleList, nn.LayerNorm, an nn.Dropout(0.0) module, lambdas for the sub-blocks."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.sublayer = nn.ModuleList(SublayerConnection(d_model, norm_first) for _ in range(3))
        self.self_attn, self.src_attn = OutFirstMHA(d_model, n_heads), MultiHeadAttention(d_model, n_heads)
        self.feed_forward = XavierZeroBiasFFN(d_model, d_ff)
        self.drop = nn.Dropout(0.0)

    def forward(self, x, memory, tgt_mask, src_mask):
        x = self.sublayer[0](x, lambda h: self.drop(self.self_attn(h, h, h, tgt_mask)))
        x = self.sublayer[1](x, lambda h: self.src_attn(h, memory, memory, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class AnnotatedEncoder(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.sublayer = nn.ModuleList(SublayerConnection(d_model, norm_first) for _ in range(2))
        self.attn, self.ff = FusedEinsumMHA(d_model, n_heads), sequential_ffn(d_model, d_ff)

    def forward(self, x, src_mask):
        x = self.sublayer[0](x, lambda h: self.attn(h, h, h, src_mask))
        return self.sublayer[1](x, self.ff)


class AnnotatedDecoderOnly(nn.Module):
    """The Annotated Transformer's style for a GPT block: residual wrappers, a fused einsum attention, nn.Sequential."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.sublayer = nn.ModuleList(SublayerConnection(d_model, norm_first) for _ in range(2))
        self.attn, self.ff = FusedEinsumMHA(d_model, n_heads), sequential_ffn(d_model, d_ff)

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda h: self.attn(h, h, h, mask))
        return self.sublayer[1](x, self.ff)


class CourseModulesDecoderOnly(nn.Module):
    """course_lib's modules under other names, the feed-forward created first, the norms in a ModuleList, the mask
    passed by keyword and the branches written with the sum first."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.mlp = PositionwiseFeedForward(d_model, d_ff)
        self.lns = nn.ModuleList(LayerNorm(d_model) for _ in range(2))
        self.causal_attention = MultiHeadAttention(d_model, n_heads)
        self.pre = norm_first

    def forward(self, x, mask):
        ln_1, ln_2 = self.lns
        if self.pre:
            h = ln_1(x)
            x = self.causal_attention(query=h, key=h, value=h, mask=mask) + x
            return self.mlp(ln_2(x)) + x
        x = ln_1(self.causal_attention(query=x, key=x, value=x, mask=mask) + x)
        return ln_2(self.mlp(x) + x)


def encoder_layer_as_gpt_block(d_model, n_heads, d_ff, norm_first=False):
    """The course's encoder layer itself: given a causal mask it is a GPT block (notebook 15's point)."""
    return EncoderLayer(d_model, n_heads, d_ff, 0.0, norm_first)


CORRECT = [
    ("token_embedding", RawEmbedding),
    ("positional_encoding", pe_with_exp),
    ("attention", attention_einsum_where),
    ("multi_head_attention", OutFirstMHA),
    ("multi_head_attention", FusedEinsumMHA),
    ("multi_head_attention", RawParameterMHA),
    ("padding_mask", lambda ids, pad_id=0: ids.ne(pad_id).unsqueeze(1).unsqueeze(2)),
    ("causal_mask", lambda size: torch.arange(size)[:, None] >= torch.arange(size)[None, :]),
    ("layer_norm", BetaFirstNorm),
    ("layer_norm", RsqrtNorm),
    ("feed_forward", sequential_ffn),
    ("encoder_layer", ReorderedEncoder),
    ("decoder_layer", CrossFirstDecoder),
    ("layer_norm", nn.LayerNorm),
    ("layer_norm", lambda d_model: nn.LayerNorm(d_model, eps=1e-6)),
    ("feed_forward", XavierZeroBiasFFN),
    ("encoder_layer", AnnotatedEncoder),
    ("decoder_layer", AnnotatedDecoder),
    ("decoder_only_layer", AnnotatedDecoderOnly),
    ("decoder_only_layer", CourseModulesDecoderOnly),
    ("decoder_only_layer", encoder_layer_as_gpt_block),
    ("decoder_only_layer", ReorderedEncoder),  # the student's own encoder layer, other names: a GPT block too
    *GOOD.items(),
]


def _id(entry):
    return f"{entry[0]}-{getattr(entry[1], '__name__', 'fn')}"


@pytest.mark.parametrize(("part", "buggy", "words"), BUGS, ids=[f"{b[0]}-{i}" for i, b in enumerate(BUGS)])
def test_every_planted_bug_is_named_with_its_hint(part, buggy, words):
    report = find_my_bug({part: buggy}, train_steps=0)
    assert report.faulty[:1] == [part], str(report)
    evidence = next(f.evidence for f in report.findings if f.part == part)
    assert words in evidence, evidence


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize(("part", "correct"), CORRECT, ids=[_id(c) for c in CORRECT])
def test_no_correct_variant_is_called_a_bug(part, correct, norm_first):
    if norm_first and part not in LAYER_PARTS:
        pytest.skip("the placement matters for the layers only")
    verdict = part_compare.compare_part(part, correct, norm_first=norm_first)
    assert verdict.ok is True, verdict.evidence


def test_the_catalogue_is_big_enough():
    assert len(BUGS) >= 25 and {b[0] for b in BUGS} == set(GOOD)
    assert len([c for c in CORRECT if c[1] is not GOOD.get(c[0])]) >= 8


@pytest.mark.parametrize(("part", "buggy"), [("decoder_layer", factory(Decoder, mistake="no_residual_cross")),
                                             ("decoder_only_layer", factory(DecoderOnly, mistake="ffn_first"))])
def test_a_planted_bug_is_named_first_among_all_the_parts(part, buggy):
    """With all eleven parts supplied, the one planted mistake is the first (here: the only) part named."""
    report = find_my_bug({**GOOD, part: buggy}, train_steps=0)
    assert report.faulty == [part], str(report)


def test_a_layer_built_on_a_buggy_attention_names_the_attention_first():
    """The student's encoder layer uses their own (buggy) multi-head attention: the root cause comes first."""

    class LayerOnBuggyAttention(Encoder):
        def __init__(self, d_model, n_heads, d_ff, norm_first=False):
            super().__init__(d_model, n_heads, d_ff, norm_first)
            self.attn = MHA(d_model, n_heads, merge_transpose=False)

    parts = {"multi_head_attention": factory(MHA, merge_transpose=False), "encoder_layer": LayerOnBuggyAttention}
    report = find_my_bug(parts, train_steps=0)
    assert report.faulty == ["multi_head_attention", "encoder_layer"], str(report)
    layer = next(f.evidence for f in report.findings if f.part == "encoder_layer")
    assert "its multi-head attention differs" in layer


def _decodings(model, src):
    """(cached greedy, uncached greedy, cached beam, uncached beam) for ``model``; asserts no cache fallback."""
    import warnings

    from course_lib.decoding import beam_search, greedy_decode

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to uncached decoding warns: make it fail the test
        return (greedy_decode(model, src, max_len=7), greedy_decode(model, src, max_len=7, use_cache=False),
                beam_search(model, src, beam_size=3, max_len=7), beam_search(model, src, beam_size=3, max_len=7,
                                                                              use_cache=False))


TRANSLATOR_CORRECT = [c for c in CORRECT if c[0] in USED_BY["transformer"]]
GPT_CORRECT = [c for c in CORRECT if c[0] in USED_BY["gpt"]]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize(("part", "correct"), [*TRANSLATOR_CORRECT, ("all ten", None)],
                         ids=[*(_id(c) for c in TRANSLATOR_CORRECT), "all-ten"])
def test_the_students_model_decodes_with_a_cache_that_changes_nothing(part, correct, norm_first):
    """Transformer(config, parts): cached greedy and beam decoding equal the whole-prefix pass, for every
    correct variant (their own names, order, fused projections) and for all ten parts at once."""
    from course_lib.decoding import CachedDecoder, InputCachedDecoder, make_stepper
    from course_lib.model import Transformer, TransformerConfig

    parts = {name: GOOD[name] for name in USED_BY["transformer"]} if correct is None else {part: correct}
    config = TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=4, d_ff=32,
                               norm_first=norm_first)
    torch.manual_seed(0)
    model = Transformer(config, parts).eval()
    src = torch.randint(4, 23, (3, 6))
    src[1, 4:] = 0
    with torch.no_grad():
        stepper = make_stepper(model, model.encode(src), src)
    from course_lib.attention import MultiHeadAttention
    from course_lib.layers import DecoderLayer

    course_owned = all(type(layer) is DecoderLayer and type(layer.self_attn) is MultiHeadAttention
                       and type(layer.cross_attn) is MultiHeadAttention for layer in model.decoder.layers)
    assert isinstance(stepper, CachedDecoder if course_owned else InputCachedDecoder)
    if correct in (OutFirstMHA, FusedEinsumMHA, RawParameterMHA, CrossFirstDecoder):
        assert isinstance(stepper, InputCachedDecoder)  # a student's own attention module: its inputs are cached
    if correct is attention_einsum_where:  # a student's attention function runs inside the course's module,
        assert isinstance(stepper, CachedDecoder)  # whose keys and values are cached around it
        assert all(layer.self_attn.attention_fn is correct for layer in model.decoder.layers)
    greedy, greedy_plain, beam, beam_plain = _decodings(model, src)
    assert torch.equal(greedy, greedy_plain)
    beam, beam_plain = (b[0] if isinstance(b, tuple) else b for b in (beam, beam_plain))  # the tokens
    assert torch.equal(beam, beam_plain)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize(("part", "correct"), [*GPT_CORRECT, ("all nine", None)],
                         ids=[*(_id(c) for c in GPT_CORRECT), "all-nine"])
def test_the_students_gpt_generates_with_a_cache_that_changes_nothing(part, correct, norm_first):
    """GPT(config, parts) (notebook 15): generating with a cache gives the tokens of the whole-prefix pass, for every
    correct variant of the parts a GPT is built from (the decoder-only blocks included) and for all nine at once."""
    from course_lib.gpt import GPT, GPTConfig, cache_mode, generate

    parts = {name: GOOD[name] for name in USED_BY["gpt"]} if correct is None else {part: correct}
    torch.manual_seed(0)
    tie = correct is not RawEmbedding  # its table is stored (d_model, vocab): nothing for the output layer to share
    model = GPT(GPTConfig(vocab_size=19, d_model=16, n_heads=4, d_ff=32, max_len=12, norm_first=norm_first,
                          tie_embeddings=tie), parts).eval()
    if part == "decoder_only_layer" and correct is not course_decoder_only_layer:
        assert cache_mode(model) == "inputs"  # a student's own block: the inputs of its self-attention are cached
    with torch.no_grad():  # a trained model never predicts <pad> (never a target); this random one could, and a
        model.generator.bias[0] = -1e4  # <pad> in the prefix is a key the whole-prefix pass masks and a cache keeps
    prompt = torch.tensor([[1, 5, 7], [1, 9, 4]])  # <bos> and two tokens
    stats = {}
    cached = generate(model, prompt, 8, greedy=True, eos_id=-1, stats=stats)  # no <eos>: every step runs
    assert stats["checked"] is True and cached.shape == (2, 11)
    assert torch.equal(cached, generate(model, prompt, 8, greedy=True, eos_id=-1, use_cache=False))
    sampled = [generate(model, prompt, 8, generator=torch.Generator().manual_seed(3), use_cache=use_cache)
               for use_cache in (True, False)]
    assert torch.equal(*sampled)
