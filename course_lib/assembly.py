"""Build the full Transformer from parts supplied by the caller (the student's own), course_lib filling the rest.

    parts = load_my_parts()                    # what the notebooks saved in my_transformer/
    model = build_transformer(config, parts)   # every part checked against its contract first
    print(ownership_table(parts))              # which part is whose

The assembled model has the interface the course's training loop, decoding and evaluation use
(``encode``, ``decode``, ``forward``, ``generator``, ``config``), so ``course_lib.training.train``
and ``course_lib.evaluation.evaluate_translation`` take it unchanged. Where a student supplies a
small part but not the bigger one that contains it (say ``attention`` but not
``multi_head_attention``), the course's bigger part is built around the student's small one.
Contracts: :mod:`course_lib.parts`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import torch
from torch import nn

from .attention import MultiHeadAttention
from .embeddings import TokenEmbedding, sinusoidal_table
from .layers import DecoderLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward
from .masks import causal_mask, padding_mask
from .model import Transformer, TransformerConfig
from .parts import PART_NAMES, PARTS, PartContractError, check_parts

MY_PACKAGE = "my_transformer"


class _AttentionWithFunction(MultiHeadAttention):
    """The course's multi-head attention with the student's ``attention`` function inside."""

    def __init__(self, d_model: int, n_heads: int, attention_fn: Callable):
        super().__init__(d_model, n_heads)
        self.attention_fn = attention_fn

    def forward(self, query, key, value, mask=None, return_attention=False):
        q = self.split_heads(self.q_proj(query))  # (batch, n_heads, q_len, d_head)
        k = self.split_heads(self.k_proj(key))  # (batch, n_heads, k_len, d_head)
        v = self.split_heads(self.v_proj(value))  # (batch, n_heads, k_len, d_head)
        heads, weights = self.attention_fn(q, k, v, mask)  # (batch, n_heads, q_len, d_head)
        if self.keep_attention:
            self.last_attention = weights.detach()
        output = self.out_proj(self.merge_heads(heads))  # (batch, q_len, d_model)
        return (output, weights) if return_attention else output


def _twin_weights(recorder: AttentionRecorder, query, key, value, mask) -> torch.Tensor | None:
    """Attention weights of a supplied multi-head attention, computed by course_lib's attention with the part's
    own projections, matched by role (:func:`course_lib.part_compare.match_mha_projections`: the assignment
    of its projections to W_q, W_k, W_v, W_o that reproduces its output, whatever their names or order).
    None when no assignment does (the part is not course_lib's attention with other names)."""
    from .part_compare import match_mha_projections, mha_weights

    if recorder.roles is None:
        recorder.roles = match_mha_projections(recorder.inner, query, key, value, mask, recorder.n_heads) or ()
    if not recorder.roles:
        return None
    return mha_weights(query, key, mask, recorder.roles, recorder.n_heads)


class AttentionRecorder(nn.Module):
    """Wraps a supplied multi-head attention so that ``course_lib.model.record_attention`` sees its weights.

    The supplied part computes the output; when recording is on, the weights come from course_lib's attention
    with the part's own four projections, matched by role (see :func:`_twin_weights`).

    Args:
        inner: the supplied multi-head attention module.
        d_model: model width.
        n_heads: number of heads.
    """

    records_attention = True  # picked up by course_lib.model.attention_modules

    def __init__(self, inner: nn.Module, d_model: int, n_heads: int):
        super().__init__()
        self.inner = inner
        self.d_model, self.n_heads = d_model, n_heads
        self.keep_attention = False
        self.last_attention: torch.Tensor | None = None
        self.roles = None  # the part's projections as (W_q, W_k, W_v, W_o), found on the first recording

    def forward(self, query, key, value, mask=None):
        output = self.inner(query, key, value, mask=mask)  # (batch, q_len, d_model)
        if self.keep_attention:
            self.last_attention = _twin_weights(self, query, key, value, mask)
        return output


def _wrap_attention(model: nn.Module, attention_class: type, d_model: int, n_heads: int) -> None:
    """Replace every ``attention_class`` module inside ``model`` by an :class:`AttentionRecorder` around it."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, attention_class) and not isinstance(parent, AttentionRecorder):
                setattr(parent, name, AttentionRecorder(child, d_model, n_heads))


class _Factories:
    """Makes each sub-module from the student's part when supplied, else from course_lib."""

    def __init__(self, config: TransformerConfig, parts: Mapping[str, object]):
        self.config, self.parts = config, parts

    def attention(self) -> nn.Module:
        c, p = self.config, self.parts
        if "multi_head_attention" in p:
            return p["multi_head_attention"](c.d_model, c.n_heads)
        if "attention" in p:
            return _AttentionWithFunction(c.d_model, c.n_heads, p["attention"])
        return MultiHeadAttention(c.d_model, c.n_heads)

    def norm(self) -> nn.Module:
        return self.parts["layer_norm"](self.config.d_model) if "layer_norm" in self.parts else LayerNorm(self.config.d_model)

    def feed_forward(self) -> nn.Module:
        c = self.config
        if "feed_forward" in self.parts:
            return self.parts["feed_forward"](c.d_model, c.d_ff)
        return PositionwiseFeedForward(c.d_model, c.d_ff)

    def embedding(self, vocab_size: int) -> nn.Module:
        c = self.config
        factory = self.parts.get("token_embedding", TokenEmbedding)
        return factory(vocab_size, c.d_model, c.pad_id)

    def table(self) -> torch.Tensor:
        fn = self.parts.get("positional_encoding", sinusoidal_table)
        return fn(self.config.max_len, self.config.d_model).detach().float()

    def encoder_layer(self) -> nn.Module:
        c = self.config
        if "encoder_layer" in self.parts:
            return self.parts["encoder_layer"](c.d_model, c.n_heads, c.d_ff, norm_first=c.norm_first)
        layer = EncoderLayer(c.d_model, c.n_heads, c.d_ff, 0.0, c.norm_first)
        layer.self_attn, layer.feed_forward = self.attention(), self.feed_forward()
        layer.norm1, layer.norm2 = self.norm(), self.norm()
        return layer

    def decoder_layer(self) -> nn.Module:
        c = self.config
        if "decoder_layer" in self.parts:
            return self.parts["decoder_layer"](c.d_model, c.n_heads, c.d_ff, norm_first=c.norm_first)
        layer = DecoderLayer(c.d_model, c.n_heads, c.d_ff, 0.0, c.norm_first)
        layer.self_attn, layer.cross_attn, layer.feed_forward = self.attention(), self.attention(), self.feed_forward()
        layer.norm1, layer.norm2, layer.norm3 = self.norm(), self.norm(), self.norm()
        return layer


class AssembledStack(nn.Module):
    """Embedding, positions and a stack of layers, made from the supplied parts.

    Args:
        config: the model configuration.
        factories: makes each sub-module (the student's or course_lib's).
        decoder: True for the decoder stack (target vocabulary, decoder layers).
    """

    def __init__(self, config: TransformerConfig, factories: _Factories, decoder: bool):
        super().__init__()
        self.embedding = factories.embedding(config.tgt_vocab_size if decoder else config.src_vocab_size)
        self.register_buffer("pe", factories.table(), persistent=False)  # (max_len, d_model)
        make_layer = factories.decoder_layer if decoder else factories.encoder_layer
        self.layers = nn.ModuleList(make_layer() for _ in range(
            config.n_decoder_layers if decoder else config.n_encoder_layers))
        self.norm = factories.norm() if config.use_final_norm else nn.Identity()

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """ids ``(batch, seq)`` -> embeddings plus positions ``(batch, seq, d_model)``."""
        return self.embedding(ids) + self.pe[: ids.size(1)]  # pe[:seq] broadcasts over the batch


class AssembledTransformer(nn.Module):
    """The encoder-decoder Transformer made from supplied parts; same interface as ``course_lib.model.Transformer``.

    Args:
        config: a :class:`~course_lib.model.TransformerConfig` with ``dropout == 0`` (the parts have no dropout).
        parts: ``{part name: function or class}`` for the parts the caller supplies (see
            :data:`course_lib.parts.PART_NAMES`); course_lib supplies the others.
    """

    def __init__(self, config: TransformerConfig, parts: Mapping[str, object]):
        super().__init__()
        if config.dropout != 0.0:
            raise ValueError(f"config.dropout must be 0.0 for an assembled model (the parts have no dropout), "
                             f"got {config.dropout}")
        if config.positional != "sinusoidal":
            raise ValueError(f"config.positional must be 'sinusoidal' for an assembled model, got {config.positional!r}")
        self.config = config
        self.parts = dict(parts)
        self.padding_mask = self.parts.get("padding_mask", padding_mask)
        self.causal_mask = self.parts.get("causal_mask", causal_mask)
        factories = _Factories(config, self.parts)
        self.encoder = AssembledStack(config, factories, decoder=False)
        self.decoder = AssembledStack(config, factories, decoder=True)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)  # hidden -> logits over the target vocab
        self._reset_parameters()  # Xavier for matrices, not for the embeddings
        if isinstance(self.parts.get("multi_head_attention"), type):  # let record_attention see its weights
            _wrap_attention(self, self.parts["multi_head_attention"], config.d_model, config.n_heads)

    # The same initialisation, parameter count and id checks as the course model (not a subclass of it: the
    # decoding helpers use their key/value cache only for course_lib's own layers).
    _reset_parameters = Transformer._reset_parameters
    num_parameters = Transformer.num_parameters
    _check_ids = Transformer._check_ids

    def _src_mask(self, src: torch.Tensor) -> torch.Tensor:
        return self.padding_mask(src, self.config.pad_id)  # (batch, 1, 1, src_len)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """src ``(batch, src_len)`` -> memory ``(batch, src_len, d_model)``."""
        self._check_ids(src, self.config.src_vocab_size, "src")
        src_mask = self._src_mask(src)
        x = self.encoder.embed(src)  # (batch, src_len, d_model)
        for layer in self.encoder.layers:
            x = layer(x, src_mask)
        return self.encoder.norm(x)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(batch, tgt_len, tgt_vocab_size)`` for decoder input ``tgt`` ``(batch, tgt_len)``."""
        self._check_ids(tgt, self.config.tgt_vocab_size, "tgt")
        causal = self.causal_mask(tgt.size(1)).to(tgt.device)  # (tgt_len, tgt_len)
        tgt_mask = self.padding_mask(tgt, self.config.pad_id) & causal  # (batch, 1, tgt_len, tgt_len)
        src_mask = self._src_mask(src)
        x = self.decoder.embed(tgt)  # (batch, tgt_len, d_model)
        for layer in self.decoder.layers:
            x = layer(x, memory, tgt_mask, src_mask)
        return self.generator(self.decoder.norm(x))  # (batch, tgt_len, tgt_vocab_size)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits ``(batch, tgt_len, tgt_vocab_size)``; position t predicts token t+1."""
        return self.decode(tgt, self.encode(src), src)


def build_transformer(config: TransformerConfig, parts: Mapping[str, object] | None = None,
                      check: bool = True) -> AssembledTransformer:
    """Check the supplied parts against their contracts, then assemble the model.

    Args:
        config: the model configuration (``dropout`` must be 0).
        parts: ``{part name: function or class}``; missing parts come from course_lib.
        check: run :func:`course_lib.parts.check_parts` first (raises :class:`PartContractError`).

    Returns:
        An :class:`AssembledTransformer` (train it with ``course_lib.training.train``).
    """
    parts = dict(parts or {})
    if check:
        check_parts(parts, norm_first=config.norm_first)
    else:
        unknown = sorted(set(parts) - set(PART_NAMES))
        if unknown:
            raise ValueError(f"unknown part names {unknown}; the parts are {list(PART_NAMES)}")
    return AssembledTransformer(config, parts)


def load_my_parts(directory: str | Path = ".", package: str = MY_PACKAGE) -> dict[str, object]:
    """Import the parts the notebooks saved in ``<directory>/<package>/`` (fresh, every call).

    Args:
        directory: the folder that holds the package (the notebooks' folder).
        package: the package name.

    Returns:
        ``{part name: function or class}`` for every part whose file exists; a file that exists but
        lacks its function or class is an error naming both.
    """
    root = Path(directory).resolve()
    folder = root / package
    if not folder.is_dir():
        return {}
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]  # a fresh import: the notebooks may have saved new versions
    importlib.invalidate_caches()
    sys.path.insert(0, str(root))
    try:
        parts = {}
        for spec in PARTS:
            if not (folder / f"{spec.module}.py").is_file():
                continue
            try:
                module = importlib.import_module(f"{package}.{spec.module}")
            except Exception as error:  # report which saved file fails to import
                raise PartContractError(spec.name, f"could not be imported from {package}/{spec.module}.py: "
                                        f"{type(error).__name__}: {error}") from error
            if not hasattr(module, spec.attribute):
                raise PartContractError(spec.name, f"is missing: {package}/{spec.module}.py defines no "
                                        f"{spec.attribute}")
            parts[spec.name] = getattr(module, spec.attribute)
        return parts
    finally:
        sys.path.remove(str(root))


def ownership_rows(parts: Mapping[str, object]) -> list[tuple[str, str, str]]:
    """(part, notebook, owner) for every part: "you (my_transformer/x.py)" or the course_lib name."""
    rows = []
    for spec in PARTS:
        owner = f"you ({MY_PACKAGE}/{spec.module}.py)" if spec.name in parts else f"course_lib ({spec.reference})"
        rows.append((spec.name, spec.notebook, owner))
    return rows


def owned_notebooks(parts: Mapping[str, object]) -> set[str]:
    """Notebook numbers all of whose parts are in ``parts`` (for ``course_lib.diagrams.draw_ownership``)."""
    notebooks = {spec.notebook for spec in PARTS}
    return {n for n in notebooks if all(spec.name in parts for spec in PARTS if spec.notebook == n)}


def ownership_table(parts: Mapping[str, object]) -> str:
    """The ownership rows as an aligned text table, one line per part."""
    rows = [("part", "notebook", "whose code runs"), *ownership_rows(parts)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                     for row in rows)
