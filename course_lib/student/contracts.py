"""The parts a student builds, each with one contract, and the checks that enforce it.

A *part* is one piece of the Transformer that a notebook teaches (the token embedding in 02, the
attention function in 04, ...). The capstone notebook assembles the student's parts into the model
that trains (:mod:`course_lib.student.assembly`); before it does, every supplied part is run on small random
inputs here, and a part that breaks a promise of its contract stops the assembly with an error that
names the part and the promise (wrong shape, wrong dtype, NaN, attends to masked positions, leaks the
future, mixes positions).

The contracts (masks are bool, True = may attend; batch first):

==================== ======== ==================================================================
part                 notebook contract
==================== ======== ==================================================================
token_embedding      02       ``TokenEmbedding(vocab_size, d_model, pad_id=0)``; ``(batch, seq)`` ids
                              -> ``(batch, seq, d_model)`` floats, scaled by sqrt(d_model)
positional_encoding  03       ``sinusoidal_table(max_len, d_model)`` -> ``(max_len, d_model)`` floats
attention            04, 06   ``attention(q, k, v, mask=None)`` -> ``(output, weights)``;
                              ``(..., q_len, d_k)``, ``(..., k_len, d_k)``, ``(..., k_len, d_v)`` ->
                              ``(..., q_len, d_v)``, ``(..., q_len, k_len)``; from notebook 06 on, a fully
                              masked row (a query that may see no key) gives no NaN
multi_head_attention 05       ``MultiHeadAttention(d_model, n_heads)``; ``(query, key, value, mask=None)``
                              ``(batch, q_len, d_model)``... -> ``(batch, q_len, d_model)``
padding_mask         06       ``padding_mask(ids, pad_id=0)`` -> bool ``(batch, 1, 1, k_len)``
causal_mask          06       ``causal_mask(size)`` -> bool ``(size, size)``, True on and below the diagonal
layer_norm           07       ``LayerNorm(d_model)``; ``(..., d_model)`` -> same shape
feed_forward         07       ``FeedForward(d_model, d_ff)``; ``(batch, seq, d_model)`` -> same shape
encoder_layer        08       ``EncoderLayer(d_model, n_heads, d_ff, norm_first=False)``;
                              ``(x, src_mask)`` -> same shape as x
decoder_layer        09       ``DecoderLayer(d_model, n_heads, d_ff, norm_first=False)``;
                              ``(x, memory, tgt_mask, src_mask)`` -> same shape as x
decoder_only_layer   15       ``DecoderOnlyLayer(d_model, n_heads, d_ff, norm_first=False)``; ``(x, mask)``
                              -> same shape as x, ``mask`` ``(batch, 1, seq, seq)`` padding AND causal;
                              no output depends on a later position, nor on a key the mask blocks
==================== ======== ==================================================================

The translator (:class:`course_lib.model.Transformer`, notebooks 10-13) is built from every part but
``decoder_only_layer``; the GPT of notebook 15 (:class:`course_lib.gpt.GPT`) from every part but
``encoder_layer`` and ``decoder_layer`` (:data:`USED_BY`).

Where a part starts is part of its contract, because the model keeps it: the embedding table N(0, 1/d_model)
with a zero ``<pad>`` row, LayerNorm's gamma all 1 and beta all 0, a projection's bias 0 or within nn.Linear's
+-1/sqrt(fan_in) (the model redraws the matrices itself). Every parameter must train (get a gradient in
the forward pass), and the layers keep their contract for both values of ``norm_first``. ``find_my_bug``
checks these (:mod:`course_lib.student.compare`).

The student's parts carry no dropout: the course trains without it (see notebook 10).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..builders import PART_NAMES
from ..utils import keeps_random_state


@dataclass(frozen=True)
class PartSpec:
    """One part of the model: where the student builds it and where its course_lib twin lives.

    Attributes:
        name: the part's key, e.g. ``"attention"``.
        notebook: the notebook that teaches it, e.g. ``"04"``.
        module: the file in the student's package (``my_transformer/<module>.py``).
        attribute: the function or class that file must define.
        reference: the course_lib equivalent, for the ownership table.
        signature: the call contract in one line.
    """

    name: str
    notebook: str
    module: str
    attribute: str
    reference: str
    signature: str


PARTS: tuple[PartSpec, ...] = (
    PartSpec("token_embedding", "02", "embeddings", "TokenEmbedding", "course_lib.embeddings.TokenEmbedding",
             "TokenEmbedding(vocab_size, d_model, pad_id=0)(ids) -> (batch, seq, d_model)"),
    PartSpec("positional_encoding", "03", "positional_encoding", "sinusoidal_table",
             "course_lib.embeddings.sinusoidal_table", "sinusoidal_table(max_len, d_model) -> (max_len, d_model)"),
    PartSpec("attention", "04", "attention", "attention", "course_lib.attention.scaled_dot_product_attention",
             "attention(q, k, v, mask=None) -> (output, weights)"),
    PartSpec("multi_head_attention", "05", "multi_head_attention", "MultiHeadAttention",
             "course_lib.attention.MultiHeadAttention",
             "MultiHeadAttention(d_model, n_heads)(query, key, value, mask=None) -> (batch, q_len, d_model)"),
    PartSpec("padding_mask", "06", "masks", "padding_mask", "course_lib.masks.padding_mask",
             "padding_mask(ids, pad_id=0) -> bool (batch, 1, 1, k_len)"),
    PartSpec("causal_mask", "06", "masks", "causal_mask", "course_lib.masks.causal_mask",
             "causal_mask(size) -> bool (size, size)"),
    PartSpec("layer_norm", "07", "layer_norm", "LayerNorm", "course_lib.layers.LayerNorm",
             "LayerNorm(d_model)(x) -> same shape"),
    PartSpec("feed_forward", "07", "feed_forward", "FeedForward", "course_lib.layers.PositionwiseFeedForward",
             "FeedForward(d_model, d_ff)(x) -> same shape"),
    PartSpec("encoder_layer", "08", "encoder_layer", "EncoderLayer", "course_lib.layers.EncoderLayer",
             "EncoderLayer(d_model, n_heads, d_ff, norm_first=False)(x, src_mask) -> same shape"),
    PartSpec("decoder_layer", "09", "decoder_layer", "DecoderLayer", "course_lib.layers.DecoderLayer",
             "DecoderLayer(d_model, n_heads, d_ff, norm_first=False)(x, memory, tgt_mask, src_mask) -> same shape"),
    PartSpec("decoder_only_layer", "15", "decoder_only_layer", "DecoderOnlyLayer", "course_lib.layers.DecoderOnlyLayer",
             "DecoderOnlyLayer(d_model, n_heads, d_ff, norm_first=False)(x, mask) -> same shape"),
)
if tuple(spec.name for spec in PARTS) != PART_NAMES:  # one list of parts: the model's
    raise ImportError("course_lib.student.contracts.PARTS must name the parts of course_lib.builders.PART_NAMES, in order")
SPECS: dict[str, PartSpec] = {spec.name: spec for spec in PARTS}
LAYER_PARTS: tuple[str, ...] = ("encoder_layer", "decoder_layer", "decoder_only_layer")  # built with a norm_first
# The parts each model is built from, in course order: the translator has no decoder-only block, the GPT no
# encoder or encoder-decoder layer.
USED_BY: dict[str, tuple[str, ...]] = {
    "transformer": tuple(name for name in PART_NAMES if name != "decoder_only_layer"),
    "gpt": tuple(name for name in PART_NAMES if name not in ("encoder_layer", "decoder_layer")),
}


class PartContractError(ValueError):
    """A supplied part broke its contract; the message names the part and the broken promise."""

    def __init__(self, part: str, promise: str):
        self.part = part
        self.promise = promise
        super().__init__(f"your {part} ({SPECS[part].signature}) {promise}")


# Sizes of the probes: small, and with distinct values so that a mixed-up dimension shows.
_D_MODEL, _N_HEADS, _D_FF, _VOCAB, _MAX_LEN = 16, 4, 24, 11, 20
_ATOL = 1e-5


def _call(part: str, fn, *args, **kwargs):
    """Call a part; turn any exception into a PartContractError that names the part."""
    try:
        return fn(*args, **kwargs)
    except PartContractError:
        raise
    except Exception as error:  # any crash of student code is reported with its part
        raise PartContractError(part, f"raised {type(error).__name__}: {error}") from error


def _expect_tensor(part: str, value, shape: tuple[int, ...], what: str = "output", finite: bool = True) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise PartContractError(part, f"must return a tensor as its {what}, got {type(value).__name__}")
    if tuple(value.shape) != shape:
        raise PartContractError(part, f"returned {what} of shape {tuple(value.shape)}, expected {shape}")
    if not value.is_floating_point():
        raise PartContractError(part, f"returned {what} of dtype {value.dtype}, expected floats")
    if finite and not torch.isfinite(value).all():
        raise PartContractError(part, f"returned NaN or infinite values in its {what}")
    return value


def _module(part: str, factory, *args, **kwargs) -> nn.Module:
    module = _call(part, factory, *args, **kwargs)
    if not isinstance(module, nn.Module):
        raise PartContractError(part, f"must build an nn.Module, got {type(module).__name__}")
    return module.eval()


def _probe_ids(generator: torch.Generator) -> torch.Tensor:
    """(2, 9) ids: row 0 full, row 1 padded after 5 tokens."""
    ids = torch.randint(4, _VOCAB, (2, 9), generator=generator)
    ids[1, 5:] = 0
    return ids


def _changed(x: torch.Tensor, index, scale: float = 10.0) -> torch.Tensor:
    """A copy of ``x`` with random noise (times ``scale``) added at ``index``: random, not a constant, because a
    LayerNorm removes a constant added to every feature (a pre-norm layer would never see the change)."""
    changed = x.clone()
    changed[index] += scale * torch.randn(changed[index].shape, generator=torch.Generator().manual_seed(12))
    return changed


def _unchanged(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))


def _same_twice(part: str, module: nn.Module, *inputs, **kwargs) -> None:
    """A module in eval mode must compute the same output twice: else the probes would blame the wrong promise."""
    first, second = _call(part, module, *inputs, **kwargs), _call(part, module, *inputs, **kwargs)
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape and not \
            torch.allclose(first, second, atol=1e-5, rtol=1e-4, equal_nan=True):
        raise PartContractError(part, "gives a different output each time it is called in eval mode: dropout is "
                                "applied even after .eval() (use nn.Dropout, or F.dropout(..., training=self.training))")


def check_token_embedding(factory) -> None:
    """``TokenEmbedding(vocab_size, d_model, pad_id)``: ids -> (batch, seq, d_model) floats."""
    generator = torch.Generator().manual_seed(0)
    module = _module("token_embedding", factory, _VOCAB, _D_MODEL, 0)
    ids = _probe_ids(generator)
    with torch.no_grad():
        out = _call("token_embedding", module, ids)
    _expect_tensor("token_embedding", out, (2, 9, _D_MODEL))


def check_positional_encoding(fn) -> None:
    """``sinusoidal_table(max_len, d_model)`` -> (max_len, d_model) floats."""
    table = _call("positional_encoding", fn, _MAX_LEN, _D_MODEL)
    _expect_tensor("positional_encoding", table, (_MAX_LEN, _D_MODEL), "table")


def check_attention(fn, fully_masked_rows: bool = True) -> None:
    """``attention(q, k, v, mask)`` -> (output, weights); masked keys get no weight, rows sum to 1, and (from
    notebook 06 on, ``fully_masked_rows``) a query with no key it may see gets no NaN."""
    generator = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 4, 8, generator=generator)  # (batch, heads, q_len, d_k)
    k = torch.randn(2, 3, 6, 8, generator=generator)  # (batch, heads, k_len, d_k)
    v = torch.randn(2, 3, 6, 5, generator=generator)  # (batch, heads, k_len, d_v)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False  # the last two keys of sentence 1 are padding
    result = _call("attention", fn, q, k, v, mask)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise PartContractError("attention", f"must return (output, weights), got {type(result).__name__}")
    out, weights = result
    _expect_tensor("attention", out, (2, 3, 4, 5), finite=False)
    _expect_tensor("attention", weights, (2, 3, 4, 6), "weights", finite=False)
    blocked = weights[1, ..., 4:].nan_to_num(1.0)  # weights on the keys the mask blocks
    if blocked.abs().max() > 1e-6:
        raise PartContractError(
            "attention", "attends to masked positions: keys where the mask is False got weight "
            f"{float(blocked.max()):.3f} (True must mean 'may attend')")
    _expect_tensor("attention", out, (2, 3, 4, 5))
    _expect_tensor("attention", weights, (2, 3, 4, 6), "weights")
    if not torch.allclose(weights.sum(-1), torch.ones(2, 3, 4), atol=1e-4):
        raise PartContractError("attention", "returned weights whose rows do not sum to 1 (softmax over the keys?)")
    causal = torch.ones(4, 4, dtype=torch.bool).tril()  # (q_len, k_len)
    out, weights = _call("attention", fn, q, q, q, causal)
    if weights.triu(1).abs().max() > 1e-6:
        raise PartContractError("attention", "leaks the future: with a causal mask, a query attends to later keys")
    if fully_masked_rows:
        check_fully_masked_row(fn)


FULLY_MASKED_HINT = ("returns NaN for a query whose every key is masked (a fully masked row: with -inf, softmax "
                     "computes -inf - (-inf)); fill blocked scores with torch.finfo(scores.dtype).min and give such "
                     "rows zero weights, as notebook 06 shows")


def check_fully_masked_row(fn) -> None:
    """A query that may see no key (left padding under a causal mask) gets finite output and weights, no NaN.

    The promise notebook 06 adds to notebook 04's attention (one NaN row poisons the model in one step).
    """
    generator = torch.Generator().manual_seed(9)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=generator) for _ in range(3))  # (batch, heads, len, d_k)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()  # (q_len, k_len)
    mask[:, :2] = False  # keys 0 and 1 are <pad> on the left: queries 0 and 1 may see no key
    out, weights = _call("attention", fn, q, k, v, mask)
    if not (torch.isfinite(out).all() and torch.isfinite(weights).all()):
        raise PartContractError("attention", FULLY_MASKED_HINT)


def check_multi_head_attention(factory) -> None:
    """``MultiHeadAttention(d_model, n_heads)``: shapes, masked keys ignored, no future leak."""
    generator = torch.Generator().manual_seed(2)
    module = _module("multi_head_attention", factory, _D_MODEL, _N_HEADS)
    x = torch.randn(2, 5, _D_MODEL, generator=generator)  # (batch, q_len, d_model)
    memory = torch.randn(2, 7, _D_MODEL, generator=generator)  # (batch, k_len, d_model)
    mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 4:] = False
    with torch.no_grad():
        _same_twice("multi_head_attention", module, x, memory, memory, mask=mask)
        out = _call("multi_head_attention", module, x, memory, memory, mask=mask)
        _expect_tensor("multi_head_attention", out, (2, 5, _D_MODEL))
        changed = _changed(memory, (1, slice(4, None)))  # only masked key positions change
        if not _unchanged(out, _call("multi_head_attention", module, x, changed, changed, mask=mask)):
            raise PartContractError("multi_head_attention", "attends to masked positions: changing keys where "
                                    "the mask is False changed the output")
        causal = torch.ones(5, 5, dtype=torch.bool).tril()
        out = _call("multi_head_attention", module, x, x, x, mask=causal)
        later = _changed(x, (slice(None), slice(3, None)))  # change positions 3 and 4 only
        again = _call("multi_head_attention", module, later, later, later, mask=causal)
        if not _unchanged(out[:, :3], again[:, :3]):
            raise PartContractError("multi_head_attention", "leaks the future: with a causal mask, changing "
                                    "later positions changed the output at earlier ones")


def check_padding_mask(fn) -> None:
    """``padding_mask(ids, pad_id)``: bool, True at real tokens, broadcasts to (batch, heads, q, k)."""
    ids = _probe_ids(torch.Generator().manual_seed(3))
    mask = _call("padding_mask", fn, ids, 0)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise PartContractError("padding_mask", f"must return a bool tensor (True = may attend), got {got}")
    try:
        full = mask.expand(2, _N_HEADS, 9, 9) if mask.dim() <= 4 else None
    except RuntimeError:
        full = None
    if full is None or mask.dim() != 4 or mask.size(0) != 2:
        raise PartContractError("padding_mask", f"returned shape {tuple(mask.shape)}, expected (batch, 1, 1, k_len) "
                                "= (2, 1, 1, 9)")
    expected = (ids != 0)[:, None, None, :].expand_as(full)
    if torch.equal(full, ~expected):
        raise PartContractError("padding_mask", "has inverted polarity: it is True at <pad> and False at real "
                                "tokens (True must mean 'may attend')")
    if not torch.equal(full, expected):
        raise PartContractError("padding_mask", "does not mark exactly the <pad> keys as False")


def check_causal_mask(fn) -> None:
    """``causal_mask(size)``: bool (size, size), True on and below the diagonal."""
    mask = _call("causal_mask", fn, 5)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise PartContractError("causal_mask", f"must return a bool tensor (True = may attend), got {got}")
    if tuple(mask.shape[-2:]) != (5, 5) or mask.numel() != 25:
        raise PartContractError("causal_mask", f"returned shape {tuple(mask.shape)}, expected (size, size) = (5, 5)")
    mask = mask.reshape(5, 5)  # (q_len, k_len)
    expected = torch.ones(5, 5, dtype=torch.bool).tril()
    if torch.equal(mask, ~expected):
        raise PartContractError("causal_mask", "has inverted polarity: True above the diagonal (the future) and "
                                "False on and below it (True must mean 'may attend')")
    if mask.triu(1).any():
        raise PartContractError("causal_mask", "leaks the future: it lets a position attend to later positions")
    if not torch.equal(mask, expected):
        raise PartContractError("causal_mask", "blocks positions a query may attend to (itself or earlier ones)")


def check_layer_norm(factory) -> None:
    """``LayerNorm(d_model)``: (..., d_model) -> same shape, finite."""
    module = _module("layer_norm", factory, _D_MODEL)
    x = torch.randn(2, 5, _D_MODEL, generator=torch.Generator().manual_seed(4)) * 3 + 1
    with torch.no_grad():
        _expect_tensor("layer_norm", _call("layer_norm", module, x), (2, 5, _D_MODEL))


def check_feed_forward(factory) -> None:
    """``FeedForward(d_model, d_ff)``: same shape out, every position on its own."""
    module = _module("feed_forward", factory, _D_MODEL, _D_FF)
    x = torch.randn(2, 5, _D_MODEL, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        out = _expect_tensor("feed_forward", _call("feed_forward", module, x), (2, 5, _D_MODEL))
        changed = _changed(x, (slice(None), 2), 5.0)
        again = _call("feed_forward", module, changed)
    keep = [0, 1, 3, 4]
    if not _unchanged(out[:, keep], again[:, keep]):
        raise PartContractError("feed_forward", "mixes positions: changing position 2 changed other positions")


def check_encoder_layer(factory, norm_first: bool = False) -> None:
    """``EncoderLayer(d_model, n_heads, d_ff, norm_first)``: shape kept, padding keys ignored."""
    module = _module("encoder_layer", factory, _D_MODEL, _N_HEADS, _D_FF, norm_first=norm_first)
    x = torch.randn(2, 6, _D_MODEL, generator=torch.Generator().manual_seed(6))
    src_mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    src_mask[1, ..., 4:] = False  # (batch, 1, 1, src_len)
    with torch.no_grad():
        _same_twice("encoder_layer", module, x, src_mask)
        out = _expect_tensor("encoder_layer", _call("encoder_layer", module, x, src_mask), (2, 6, _D_MODEL))
        changed = _changed(x, (1, slice(4, None)))
        again = _call("encoder_layer", module, changed, src_mask)
    if not _unchanged(out[1, :4], again[1, :4]):
        raise PartContractError("encoder_layer", "attends to masked positions: changing <pad> positions changed "
                                "the output at real tokens (is src_mask passed to self-attention?)")


def check_decoder_layer(factory, norm_first: bool = False) -> None:
    """``DecoderLayer(...)``: shape kept, no future leak, source padding ignored."""
    generator = torch.Generator().manual_seed(7)
    module = _module("decoder_layer", factory, _D_MODEL, _N_HEADS, _D_FF, norm_first=norm_first)
    x = torch.randn(2, 5, _D_MODEL, generator=generator)  # (batch, tgt_len, d_model)
    memory = torch.randn(2, 6, _D_MODEL, generator=generator)  # (batch, src_len, d_model)
    src_mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    src_mask[1, ..., 4:] = False
    tgt_mask = torch.ones(5, 5, dtype=torch.bool).tril()[None, None]  # (1, 1, tgt_len, tgt_len)
    with torch.no_grad():
        _same_twice("decoder_layer", module, x, memory, tgt_mask, src_mask)
        out = _call("decoder_layer", module, x, memory, tgt_mask, src_mask)
        _expect_tensor("decoder_layer", out, (2, 5, _D_MODEL))
        later = _changed(x, (slice(None), slice(3, None)))
        if not _unchanged(out[:, :3], _call("decoder_layer", module, later, memory, tgt_mask, src_mask)[:, :3]):
            raise PartContractError("decoder_layer", "leaks the future: changing later target positions changed "
                                    "the output at earlier ones (is tgt_mask passed to self-attention?)")
        changed = _changed(memory, (1, slice(4, None)))
        if not _unchanged(out, _call("decoder_layer", module, x, changed, tgt_mask, src_mask)):
            raise PartContractError("decoder_layer", "attends to masked positions: changing padded source "
                                    "positions changed the output (is src_mask passed to cross-attention?)")


def check_decoder_only_layer(factory, norm_first: bool = False) -> None:
    """``DecoderOnlyLayer(...)``: shape kept; no output depends on a later position (a GPT's promise: the logits
    at position t must not see token t + 1, the one they predict), nor on a key the mask blocks."""
    module = _module("decoder_only_layer", factory, _D_MODEL, _N_HEADS, _D_FF, norm_first=norm_first)
    x = torch.randn(2, 6, _D_MODEL, generator=torch.Generator().manual_seed(8))  # (batch, seq, d_model)
    keys = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    keys[1, ..., 2] = False  # sentence 1: key 2 is blocked (an earlier key, so the causal mask alone keeps it visible)
    mask = keys & torch.ones(6, 6, dtype=torch.bool).tril()  # (batch, 1, seq, seq): padding AND causal
    with torch.no_grad():
        _same_twice("decoder_only_layer", module, x, mask)
        out = _call("decoder_only_layer", module, x, mask)
        _expect_tensor("decoder_only_layer", out, (2, 6, _D_MODEL))
        for t in range(1, 6):  # change positions t.. only: the outputs at 0..t-1 must stay as they were
            later = _changed(x, (slice(None), slice(t, None)))
            again = _call("decoder_only_layer", module, later, mask)
            if not _unchanged(out[:, :t], again[:, :t]):
                raise PartContractError("decoder_only_layer", "leaks the future: with a causal mask, changing the "
                                        f"input at positions {t} and later changed the output at earlier ones (is "
                                        "mask passed to self-attention?)")
        changed = _changed(x, (1, 2))  # only the blocked key of sentence 1
        again = _call("decoder_only_layer", module, changed, mask)
    others = [0, 1, 3, 4, 5]
    if not _unchanged(out[1, others], again[1, others]):
        raise PartContractError("decoder_only_layer", "attends to masked positions: changing a key the mask blocks "
                                "changed the output at other positions (is the mask it is given passed to "
                                "self-attention, rather than a causal mask of its own?)")


_CHECKS = {
    "token_embedding": check_token_embedding,
    "positional_encoding": check_positional_encoding,
    "attention": check_attention,
    "multi_head_attention": check_multi_head_attention,
    "padding_mask": check_padding_mask,
    "causal_mask": check_causal_mask,
    "layer_norm": check_layer_norm,
    "feed_forward": check_feed_forward,
    "encoder_layer": check_encoder_layer,
    "decoder_layer": check_decoder_layer,
    "decoder_only_layer": check_decoder_only_layer,
}


@keeps_random_state
def check_part(name: str, part, norm_first: bool = False, fully_masked_rows: bool = True) -> None:
    """Run ``part`` on small probes and raise :class:`PartContractError` if it breaks its contract.

    Args:
        name: one of :data:`PART_NAMES`.
        part: the student's function or class.
        norm_first: for the layers, the norm placement the model will use.
        fully_masked_rows: for the attention, also the promise notebook 06 adds (no NaN for a query that
            may see no key); False when notebook 04 first saves it.
    """
    if name not in _CHECKS:
        raise ValueError(f"name must be one of {PART_NAMES}, got {name!r}")
    if not callable(part):
        raise PartContractError(name, f"must be a function or class, got {type(part).__name__}")
    torch.manual_seed(0)  # the parts' own random initialisation: the same every time
    if name in LAYER_PARTS:
        _CHECKS[name](part, norm_first=norm_first)
    elif name == "attention":
        _CHECKS[name](part, fully_masked_rows=fully_masked_rows)
    else:
        _CHECKS[name](part)


@keeps_random_state
def check_parts(parts: dict, norm_first: bool = False) -> None:
    """Check every supplied part (see :func:`check_part`); unknown names are an error."""
    unknown = sorted(set(parts) - set(PART_NAMES))
    if unknown:
        raise ValueError(f"unknown part names {unknown}; the parts are {list(PART_NAMES)}")
    for name in PART_NAMES:
        if name in parts:
            check_part(name, parts[name], norm_first)

