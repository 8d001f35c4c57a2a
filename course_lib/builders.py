"""Where every sub-module of the course :class:`~course_lib.model.Transformer` comes from.

``Transformer(config)`` builds course_lib's own parts; ``Transformer(config, parts)`` builds the same
model with the supplied parts (a student's, from notebooks 02-09) in their places, in the spirit of
The Annotated Transformer's ``make_model``: one model class, whose parts may be anyone's.

    parts = {"layer_norm": MyLayerNorm, "attention": my_attention}
    model = Transformer(config, parts)   # course_lib fills in every part not supplied

Part names and what each must be are in :mod:`course_lib.student.contracts` (``build_transformer`` in
:mod:`course_lib.student.assembly` checks them against their contracts first). Every sub-module is made here
and handed to the module that holds it: a layer receives its attention, feed-forward block and norms, an
attention receives the attention function and, with rotary positions, the position object. Where a small part
is supplied but not the bigger one that contains it (``attention`` but not ``multi_head_attention``), the
course's bigger part is built around the supplied small one. With no parts, the modules are created in the
same order with the same arguments as always, so a seed gives the same starting weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from torch import nn

from .attention import MultiHeadAttention
from .embeddings import SinusoidalPositionalEncoding, TokenEmbedding, make_positions
from .layers import DecoderLayer, DecoderOnlyLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward
from .masks import causal_mask, padding_mask
from .probing import attention_call_inputs, match_mha_projections, mha_weights

# The parts a model can take from someone else, in course order (their contracts: course_lib.student.contracts).
PART_NAMES: tuple[str, ...] = ("token_embedding", "positional_encoding", "attention", "multi_head_attention",
                               "padding_mask", "causal_mask", "layer_norm", "feed_forward", "encoder_layer",
                               "decoder_layer", "decoder_only_layer")


def recordable(module: nn.Module, n_heads: int) -> nn.Module:
    """Let ``course_lib.model.record_attention`` see the weights of a supplied multi-head attention.

    The module itself is not changed or wrapped (its parameter names stay its own): it gets the attributes
    ``record_attention`` looks for and a forward hook. When recording is on, the hook computes the weights
    with course_lib's attention and the module's own four projections, matched by role
    (:func:`course_lib.probing.match_mha_projections`: the assignment of its projections to W_q, W_k,
    W_v, W_o that reproduces its output, whatever their names or creation order). A module that is not
    the course's attention under other names records no weights (``last_attention`` stays None).

    Args:
        module: the supplied multi-head attention module.
        n_heads: its number of heads.

    Returns:
        ``module``.
    """
    module.records_attention = True  # picked up by course_lib.model.attention_modules
    module.keep_attention = False
    module.last_attention = None
    module.course_roles = None  # its projections as (W_q, W_k, W_v, W_o), found on the first recording
    module.course_heads = n_heads
    module.register_forward_hook(_record_weights, with_kwargs=True)
    return module


def _record_weights(module: nn.Module, args: tuple, kwargs: dict, output) -> None:
    if not module.keep_attention:
        return
    query, key, value, mask = attention_call_inputs(args, kwargs)
    if module.course_roles is None:
        module.keep_attention = False  # matching calls the module again: no recording inside
        try:
            module.course_roles = match_mha_projections(module, query, key, value, mask, module.course_heads) or ()
        finally:
            module.keep_attention = True
    module.last_attention = (mha_weights(query, key, value, mask, module.course_roles, module.course_heads)
                             if module.course_roles else None)


class ModelParts:
    """Makes each sub-module of the Transformer: from a supplied part when there is one, else course_lib's.

    Args:
        config: a :class:`~course_lib.model.TransformerConfig`.
        parts: ``{part name: function or class}`` (names in :data:`PART_NAMES`), or None.

    Raises:
        ValueError: an unknown part name, or a config the supplied parts cannot honour (the parts have no
            dropout, and a supplied positional table replaces the sinusoidal one).
    """

    def __init__(self, config, parts: Mapping[str, object] | None = None):
        self.config = config
        self.parts = dict(parts or {})
        unknown = sorted(set(self.parts) - set(PART_NAMES))
        if unknown:
            raise ValueError(f"unknown part names {unknown}; the parts are {list(PART_NAMES)}")
        if self.parts and config.dropout != 0.0:
            raise ValueError(f"config.dropout must be 0.0 when parts are supplied (the parts have no dropout), "
                             f"got {config.dropout}")
        if "positional_encoding" in self.parts and config.positional != "sinusoidal":
            raise ValueError(f"a supplied positional_encoding replaces the sinusoidal table: config.positional must "
                             f"be 'sinusoidal', got {config.positional!r}")

    # Masks: functions, used by the model's encode/decode.
    @property
    def padding_mask(self) -> Callable:
        return self.parts.get("padding_mask", padding_mask)

    @property
    def causal_mask(self) -> Callable:
        return self.parts.get("causal_mask", causal_mask)

    def token_embedding(self, vocab_size: int) -> nn.Module:
        c = self.config
        return self.parts.get("token_embedding", TokenEmbedding)(vocab_size, c.d_model, c.pad_id)

    def positions(self) -> nn.Module:
        """The position object: what is added to the token vectors, and what rotates queries and keys."""
        c = self.config
        if "positional_encoding" in self.parts:
            table = self.parts["positional_encoding"](c.max_len, c.d_model).detach().float()  # (max_len, d_model)
            return SinusoidalPositionalEncoding(c.d_model, c.max_len, c.dropout, table=table)
        return make_positions(c.positional, c.d_model, c.n_heads, c.max_len, c.dropout)

    def attention(self, positions: nn.Module | None = None) -> nn.Module:
        """One multi-head attention; ``positions`` (self-attention only) rotates its queries and keys if it can."""
        c, p = self.config, self.parts
        rotary = positions if getattr(positions, "rotates", False) else None
        if "multi_head_attention" in p:
            if rotary is not None:
                raise ValueError("a supplied multi_head_attention cannot rotate queries and keys: "
                                 "use config.positional 'sinusoidal' or 'learned'")
            return p["multi_head_attention"](c.d_model, c.n_heads)
        return MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout, attention_fn=p.get("attention"),
                                  rotary=rotary)

    def feed_forward(self) -> nn.Module:
        c = self.config
        if "feed_forward" in self.parts:
            return self.parts["feed_forward"](c.d_model, c.d_ff)  # supplied parts have no dropout
        return PositionwiseFeedForward(c.d_model, c.d_ff, c.dropout)

    def watch_attention(self, model: nn.Module) -> None:
        """Make every instance of a supplied multi-head attention class inside ``model`` (also those a supplied
        layer creates itself) :func:`recordable`, so that ``record_attention`` draws its maps."""
        cls = self.parts.get("multi_head_attention")
        if not isinstance(cls, type) or issubclass(cls, MultiHeadAttention):  # course_lib's records itself
            return
        for module in model.modules():
            if isinstance(module, cls) and not getattr(module, "records_attention", False):
                recordable(module, self.config.n_heads)

    @property
    def norm(self) -> Callable[[int], nn.Module]:
        """Makes one LayerNorm of a given width: the supplied class, or course_lib's."""
        return self.parts.get("layer_norm", LayerNorm)

    def encoder_layer(self, positions: nn.Module | None = None) -> nn.Module:
        """One encoder layer: a supplied one, or course_lib's holding the supplied (or course) sub-modules."""
        c = self.config
        if "encoder_layer" in self.parts:
            return self.parts["encoder_layer"](c.d_model, c.n_heads, c.d_ff, norm_first=c.norm_first)
        return EncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first,
                            self_attn=self.attention(positions), feed_forward=self.feed_forward(), norm=self.norm)

    def decoder_layer(self, positions: nn.Module | None = None) -> nn.Module:
        """One decoder layer; cross-attention never rotates (queries and keys come from different sentences)."""
        c = self.config
        if "decoder_layer" in self.parts:
            return self.parts["decoder_layer"](c.d_model, c.n_heads, c.d_ff, norm_first=c.norm_first)
        return DecoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first,
                            self_attn=self.attention(positions), cross_attn=self.attention(),
                            feed_forward=self.feed_forward(), norm=self.norm)

    def decoder_only_layer(self, positions: nn.Module | None = None) -> nn.Module:
        """One block of a decoder-only model (:class:`course_lib.gpt.GPT`): a supplied one, or course_lib's."""
        c = self.config
        if "decoder_only_layer" in self.parts:
            return self.parts["decoder_only_layer"](c.d_model, c.n_heads, c.d_ff, norm_first=c.norm_first)
        return DecoderOnlyLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first,
                                self_attn=self.attention(positions), feed_forward=self.feed_forward(), norm=self.norm)

    def tied_matrix(self, embedding: nn.Module) -> nn.Parameter:
        """The target embedding's ``(tgt_vocab_size, d_model)`` matrix, for the output layer to share.

        Raises:
            ValueError: a supplied embedding holds no such matrix, or more than one.
        """
        if isinstance(embedding, TokenEmbedding):
            return embedding.embedding.weight
        shape = (self.config.tgt_vocab_size, self.config.d_model)
        found = [p for p in embedding.parameters() if tuple(p.shape) == shape]
        if len(found) != 1:
            raise ValueError(f"tie_embeddings needs the token embedding to hold exactly one {shape} matrix, "
                             f"found {len(found)}; set tie_embeddings=False")
        return found[0]

    def final_norm(self) -> nn.Module:
        return self.norm(self.config.d_model) if self.config.use_final_norm else nn.Identity()
