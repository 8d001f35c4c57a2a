"""The whole encoder-decoder Transformer of "Attention Is All You Need", sized for a laptop CPU.

    src ids -> TokenEmbedding + positions -> Encoder (n_encoder_layers) -> memory
    tgt ids -> TokenEmbedding + positions -> Decoder (n_decoder_layers, attends to memory) -> logits

``Transformer(config)`` is built from course_lib's parts; ``Transformer(config, parts)`` is the same model
with supplied parts (a student's own, notebook 13) in their places (:mod:`course_lib.builders`).

Checked against ``nn.Transformer`` with copied weights (post-norm and pre-norm, padded batches)
in ``tests/test_model.py``; causality and padding invariance are tested there too.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch
from torch import nn

from .attention import KeyValueCache, MultiHeadAttention
from .builders import ModelParts
from .checks import check_decode_inputs, check_model_ids
from .masks import decoder_self_attention_mask, padding_mask


@dataclass
class TransformerConfig:
    """Every size and switch of the model. The defaults train on a 2-core CPU in minutes."""

    src_vocab_size: int = 1000  # source (German) vocabulary size, specials included
    tgt_vocab_size: int = 1000  # target (English) vocabulary size, specials included
    d_model: int = 64  # width of every token vector
    n_heads: int = 4  # attention heads per attention block; d_head = d_model // n_heads
    n_encoder_layers: int = 2  # encoder depth
    n_decoder_layers: int = 2  # decoder depth
    d_ff: int = 256  # hidden size of the feed-forward block (4 * d_model, as in the paper)
    dropout: float = 0.0  # dropout on residual branches, attention weights and FFN hidden units (paper: 0.1; off
    #   here: 24k pairs do not overfit in minutes, and dropout cost 30% of the training steps per second on a CPU)
    max_len: int = 128  # longest sequence (tokens incl. <bos>/<eos>) the position table covers
    pad_id: int = 0  # id of <pad> in both vocabularies
    norm_first: bool = False  # False: post-norm (the paper); True: pre-norm
    final_norm: bool | None = None  # LayerNorm after each stack; None means "only with pre-norm"
    tie_embeddings: bool = False  # share the target embedding matrix with the output projection (its pad row
    # then gets gradient from the output layer; harmless, since pad positions are masked everywhere)
    positional: str = "sinusoidal"  # "sinusoidal" (fixed table added), "learned" (one trained vector per position,
    #   added) or "rotary" (nothing added: queries and keys rotated inside self-attention, notebook 12)

    def __post_init__(self):
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model={self.d_model}, n_heads={self.n_heads}")
        if self.positional not in ("sinusoidal", "learned", "rotary"):
            raise ValueError(f"positional must be 'sinusoidal', 'learned' or 'rotary', got {self.positional!r}")
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def use_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    def to_dict(self) -> dict:
        return asdict(self)


class Encoder(nn.Module):
    """Source embedding, positions and a stack of encoder layers.

    Args:
        config: the model configuration.
        parts: where each sub-module comes from (default: course_lib's own parts).
    """

    def __init__(self, config: TransformerConfig, parts: ModelParts | None = None):
        super().__init__()
        parts = parts or ModelParts(config)
        self.config = config
        self.embedding = parts.token_embedding(config.src_vocab_size)
        self.positions = parts.positions()
        self.layers = nn.ModuleList(parts.encoder_layer(self.positions) for _ in range(config.n_encoder_layers))
        self.norm = parts.final_norm()

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """src ``(batch, src_len)`` ids -> memory ``(batch, src_len, d_model)``."""
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (batch, 1, 1, src_len)
        x = self.positions(self.embedding(src))  # (batch, src_len, d_model)
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x)


class Decoder(nn.Module):
    """Target embedding, positions and a stack of decoder layers (no output projection).

    Args:
        config: the model configuration.
        parts: where each sub-module comes from (default: course_lib's own parts).
    """

    def __init__(self, config: TransformerConfig, parts: ModelParts | None = None):
        super().__init__()
        parts = parts or ModelParts(config)
        self.config = config
        self.embedding = parts.token_embedding(config.tgt_vocab_size)
        self.positions = parts.positions()
        self.layers = nn.ModuleList(parts.decoder_layer(self.positions) for _ in range(config.n_decoder_layers))
        self.norm = parts.final_norm()

    def forward(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None = None,
        cache: list[tuple[KeyValueCache, KeyValueCache]] | None = None,
    ) -> torch.Tensor:
        """Decode.

        Args:
            tgt: decoder input ids ``(batch, tgt_len)`` (starting with ``<bos>``).
            memory: encoder output ``(batch, src_len, d_model)``.
            src_mask: source padding mask ``(batch, 1, 1, src_len)``.
            tgt_mask: defaults to target padding AND causal, ``(batch, 1, tgt_len, tgt_len)``.
            cache: one (self, cross) pair of :class:`~course_lib.attention.KeyValueCache` per layer when decoding
                one token at a time: ``tgt`` then holds only the newest tokens, at the positions after the
                cached ones, and needs no mask (every cached position is earlier). See
                :class:`course_lib.decoding.CachedDecoder`.

        Returns:
            Hidden states ``(batch, tgt_len, d_model)``.
        """
        start = 0 if cache is None else cache[0][0].length  # position of the first token of tgt
        if tgt_mask is None and cache is None:
            tgt_mask = decoder_self_attention_mask(tgt, self.config.pad_id)  # (batch, 1, tgt_len, tgt_len)
        x = self.positions(self.embedding(tgt), start)  # (batch, tgt_len, d_model)
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, tgt_mask, src_mask, **({} if cache is None else {"cache": cache[i]}))
        return self.norm(x)


def init_attention_like_pytorch(module: nn.Module) -> None:
    """Start a multi-head attention where ``nn.MultiheadAttention`` inside ``nn.Transformer`` starts.

    PyTorch keeps W_q, W_k and W_v as ONE ``(3 * d_model, d_model)`` matrix, so Xavier draws them from
    ``U(-a, a)`` with ``a = sqrt(6 / (4 * d_model))``, a sqrt(2) narrower range than three separate
    ``d_model x d_model`` matrices get, and it starts the four projection biases at zero. The course
    model does the same; measured on the toy corpus (``benchmarks/time_to_bleu.py``), the wider start
    learned less per step. Modules without ``q_proj``, ``k_proj``, ``v_proj`` linear layers of one
    shape are left as they are.

    Args:
        module: any module; only one with ``q_proj``/``k_proj``/``v_proj`` (and optionally ``out_proj``)
            ``nn.Linear`` attributes is changed.
    """
    projections = [getattr(module, name, None) for name in ("q_proj", "k_proj", "v_proj")]
    if not all(isinstance(p, nn.Linear) for p in projections):
        return
    if len({tuple(p.weight.shape) for p in projections}) != 1:
        return
    out_features, in_features = projections[0].weight.shape
    packed = torch.empty(3 * out_features, in_features, device=projections[0].weight.device)
    nn.init.xavier_uniform_(packed)  # the fan-out of the packed matrix is 3 * out_features
    with torch.no_grad():
        for projection, rows in zip(projections, packed.chunk(3), strict=True):  # (out_features, in_features) each
            projection.weight.copy_(rows)
        for projection in [*projections, getattr(module, "out_proj", None)]:
            if isinstance(projection, nn.Linear) and projection.bias is not None:
                projection.bias.zero_()


def init_weights(model: nn.Module) -> None:
    """Initialise a model's layers as the course's ``Transformer`` does (and as ``nn.Transformer`` does).

    Xavier for every matrix of the attention and feed-forward blocks, then
    :func:`init_attention_like_pytorch` for every attention; embedding tables (parameters named
    ``...embedding...``) are left alone: they keep N(0, 1/d_model) and their zero padding row.

    Args:
        model: a ``Transformer``, a stack of layers or a single layer.
    """
    for name, param in model.named_parameters():
        if param.dim() > 1 and ".embedding." not in f".{name}":
            nn.init.xavier_uniform_(param)
    for module in model.modules():
        init_attention_like_pytorch(module)


class Transformer(nn.Module):
    """Encoder-decoder Transformer for translation.

    Args:
        config: a :class:`TransformerConfig`.
        parts: optional ``{part name: function or class}`` to use instead of course_lib's own (names in
            :data:`course_lib.builders.PART_NAMES`; ``course_lib.student.assembly.build_transformer`` checks each
            against its contract first). The supplied parts have no dropout, so ``config.dropout`` must be 0.

    Attributes:
        parts: the supplied parts (empty for the course's own model).
    """

    def __init__(self, config: TransformerConfig, parts: dict | None = None):
        super().__init__()
        builder = ModelParts(config, parts)
        self.config = config
        self.parts = builder.parts
        self._padding_mask, self._causal_mask = builder.padding_mask, builder.causal_mask
        self.encoder = Encoder(config, builder)
        self.decoder = Decoder(config, builder)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)  # hidden -> logits over the target vocab
        self._reset_parameters()
        if config.tie_embeddings:
            self.generator.weight = builder.tied_matrix(self.decoder.embedding)
        builder.watch_attention(self)

    def _reset_parameters(self) -> None:
        init_weights(self)

    def num_parameters(self) -> int:
        """Number of trainable parameters (a tied matrix counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """src ``(batch, src_len)`` -> memory ``(batch, src_len, d_model)``."""
        check_model_ids(src, self.config.src_vocab_size, self.config.max_len, "src")
        return self.encoder(src, self._padding_mask(src, self.config.pad_id))  # mask (batch, 1, 1, src_len)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """Next-token logits for every target position.

        Args:
            tgt: decoder input ids ``(batch, tgt_len)``, starting with ``<bos>``.
            memory: output of :meth:`encode`, ``(batch, src_len, d_model)``.
            src: the source ids ``(batch, src_len)`` (to mask padding in cross-attention).

        Returns:
            Logits ``(batch, tgt_len, tgt_vocab_size)``.
        """
        check_decode_inputs(tgt, memory, src, self.config)
        hidden = self.decoder(tgt, memory, self._padding_mask(src, self.config.pad_id), self._target_mask(tgt))
        return self.generator(hidden)  # (batch, tgt_len, tgt_vocab_size)

    def _target_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        """The decoder's self-attention mask, padding AND causal, ``(batch, 1, tgt_len, tgt_len)``."""
        if not self.parts:
            return decoder_self_attention_mask(tgt, self.config.pad_id)
        causal = self._causal_mask(tgt.size(1)).to(tgt.device)  # (tgt_len, tgt_len)
        return self._padding_mask(tgt, self.config.pad_id) & causal  # broadcast: (batch, 1, tgt_len, tgt_len)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits.

        Args:
            src: source ids ``(batch, src_len)``.
            tgt: decoder input ids ``(batch, tgt_len)`` (``<bos> y1 ... y_{n}``, shifted right).

        Returns:
            Logits ``(batch, tgt_len, tgt_vocab_size)``; position t predicts token t+1.
        """
        return self.decode(tgt, self.encode(src), src)


def attention_modules(model: nn.Module) -> dict[str, MultiHeadAttention]:
    """Every attention block of a model by name, e.g. ``'decoder.layers.0.cross_attn'``.

    Course ``MultiHeadAttention`` modules, and any module that declares ``records_attention = True``
    and has ``keep_attention`` / ``last_attention`` (a supplied one, see ``course_lib.builders.recordable``).
    """
    return {name: m for name, m in model.named_modules()
            if isinstance(m, MultiHeadAttention) or getattr(m, "records_attention", False)}


@contextmanager
def record_attention(model: nn.Module):
    """Collect every layer's attention weights during the forward passes inside the block.

    Usage::

        with record_attention(model) as maps:
            model(src, tgt)
        maps["decoder.layers.1.cross_attn"]  # (batch, n_heads, tgt_len, src_len)

    The dict is filled when the block exits, with each module's weights from its last call.
    """
    modules = attention_modules(model)
    maps: dict[str, torch.Tensor] = {}
    for module in modules.values():
        module.keep_attention = True
        module.last_attention = None
    try:
        yield maps
    finally:
        for name, module in modules.items():
            if module.last_attention is not None:
                maps[name] = module.last_attention
            module.keep_attention = False
            module.last_attention = None
