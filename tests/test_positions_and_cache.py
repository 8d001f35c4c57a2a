"""Tests for how the model is put together (issue 33): position objects, the key/value cache, layers that receive
their sub-modules.

- ``RotaryPositions.rotate`` is notebook 12's ``rope`` (written here again with complex numbers) and notebook 03's
  block rotation R(p); with it, attention scores depend on the offset of query and key only, and a sinusoidal or
  learned table rotates nothing.
- A rotary ``Transformer`` adds nothing to the token vectors, rotates in self-attention only, is not
  permutation-equivariant, and decodes with the cache exactly as without (``tests/test_decoding.py`` too).
- ``MultiHeadAttention`` fed one token at a time with a ``KeyValueCache`` equals the whole causal pass, with
  and without rotary positions; a fixed cache computes the memory's keys once.
- A layer holds the very sub-modules it is handed; a supplied part is built once and never replaces a course part
  made before it; ``residual`` is post-norm and pre-norm as the paper and nn.Transformer write them.
"""

import pytest
import torch
from torch import nn

from course_lib.attention import KeyValueCache, MultiHeadAttention
from course_lib.decoding import beam_search, greedy_decode
from course_lib.embeddings import (
    LearnedPositionalEmbedding,
    RotaryPositions,
    SinusoidalPositionalEncoding,
    make_positions,
    sinusoidal_table,
)
from course_lib.layers import DecoderLayer, EncoderLayer, LayerNorm, PositionwiseFeedForward, residual
from course_lib.masks import causal_mask
from course_lib.model import Transformer, TransformerConfig


def rope_by_complex_numbers(x, positions, base=10000.0):
    """Notebook 12's rope: each pair (x_2i, x_2i+1) as a complex number times e^(-i p theta_i)."""
    d = x.size(-1)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angle = positions[:, None].double() * theta  # (seq, d/2)
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angle), -angle)).flatten(-2)


def block_rotation(p, d, base=10000.0):
    """Notebook 03's R(p): 2x2 blocks [[cos, sin], [-sin, cos]] of the angle p * theta_i."""
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    blocks = [torch.tensor([[torch.cos(p * t), torch.sin(p * t)], [-torch.sin(p * t), torch.cos(p * t)]])
              for t in theta]
    return torch.block_diag(*blocks)


# ----- positions -----

def test_rotary_rotation_is_notebook_12s_rope_and_notebook_03s_rotation():
    torch.manual_seed(0)
    rotary = RotaryPositions(d_model=32, d_head=8, max_len=40)
    x = torch.randn(2, 4, 10, 8)  # (batch, n_heads, seq, d_head)
    for start in (0, 7):
        positions = torch.arange(start, start + 10)
        expected = rope_by_complex_numbers(x, positions).float()
        assert torch.allclose(rotary.rotate(x, start), expected, atol=1e-5)
        by_matrix = torch.stack([x[..., i, :].double() @ block_rotation(int(p), 8).T
                                 for i, p in enumerate(positions)], dim=-2)
        assert torch.allclose(rotary.rotate(x, start), by_matrix.float(), atol=1e-5)
    pe = sinusoidal_table(20, 8)  # R(3) PE(p) = PE(p + 3): rotating the table by 3 moves it 3 places
    shifted = torch.stack([rotary.rotate(pe[p][None, None, None], 3)[0, 0, 0] for p in range(10)])
    assert torch.allclose(shifted, pe[3:13], atol=1e-5)


def test_rotary_scores_depend_on_the_offset_only_and_tables_rotate_nothing():
    torch.manual_seed(1)
    rotary = RotaryPositions(d_model=16, d_head=16, max_len=64)
    q, k = torch.randn(16), torch.randn(16)
    qs = rotary.rotate(q.expand(1, 1, 24, 16))[0, 0]  # q at positions 0..23
    ks = rotary.rotate(k.expand(1, 1, 24, 16))[0, 0]
    scores = qs @ ks.T  # (24, 24): [m, n]
    assert torch.allclose(scores[1:, 1:], scores[:-1, :-1], atol=1e-4)
    assert not torch.allclose(scores[0, :1], scores[0, 5:6], atol=1e-3)  # but the offset matters
    x = torch.randn(2, 3, 5, 16)
    for table in (SinusoidalPositionalEncoding(16, 32), LearnedPositionalEmbedding(32, 16)):
        assert not table.rotates and table.rotate(x, 4) is x
    assert RotaryPositions.rotates


def test_position_objects_add_at_any_start_and_refuse_positions_past_max_len():
    torch.manual_seed(2)
    x = torch.randn(2, 3, 8)
    sinusoidal = SinusoidalPositionalEncoding(8, max_len=10).eval()
    assert torch.equal(sinusoidal(x, start=4), x + sinusoidal.pe[4:7])
    learned = LearnedPositionalEmbedding(10, 8).eval()
    assert torch.equal(learned(x, start=2), x + learned.embedding.weight[2:5])
    rotary = RotaryPositions(8, 4, max_len=10).eval()
    assert torch.equal(rotary(x, start=5), x)  # nothing added
    with pytest.raises(ValueError, match="cannot decode beyond max_len=10 positions"):
        sinusoidal(x, start=8)
    with pytest.raises(ValueError, match="sequence length 12 is longer than max_len=10"):
        rotary(torch.randn(1, 12, 8))
    with pytest.raises(ValueError, match="d_head must be even"):
        RotaryPositions(9, 3)
    with pytest.raises(ValueError, match="positional must be 'sinusoidal', 'learned' or 'rotary'"):
        make_positions("alibi", 8, 2, 10)


# ----- a rotary model -----

def rotary_model(seed=0, **overrides):
    torch.manual_seed(seed)
    settings = dict(src_vocab_size=30, tgt_vocab_size=25, d_model=32, n_heads=4, d_ff=64, positional="rotary")
    settings.update(overrides)
    return Transformer(TransformerConfig(**settings)).eval()


def test_a_rotary_model_rotates_in_self_attention_only_and_knows_word_order():
    model = rotary_model()
    rotary = model.encoder.positions
    assert isinstance(rotary, RotaryPositions) and isinstance(model.decoder.positions, RotaryPositions)
    assert all(layer.self_attn.rotary is rotary for layer in model.encoder.layers)
    assert all(layer.self_attn.rotary is model.decoder.positions and layer.cross_attn.rotary is None
               for layer in model.decoder.layers)
    assert not any("cos" in name or "sin" in name for name in model.state_dict())  # tables are not saved
    src = torch.randint(4, 30, (1, 7))
    memory = model.encode(src)
    flipped = model.encode(src.flip(1))
    # without positions an encoder is permutation-equivariant: flipped input, flipped output; not so with RoPE
    assert not torch.allclose(flipped, memory.flip(1), atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_rotary_model_decodes_with_the_cache_exactly_as_without(norm_first):
    model = rotary_model(norm_first=norm_first)
    src = torch.randint(4, 30, (4, 8))
    src[1, 5:] = 0
    assert torch.equal(greedy_decode(model, src, max_len=12, use_cache=True),
                       greedy_decode(model, src, max_len=12, use_cache=False))
    tokens_c, _ = beam_search(model, src, 3, 0.6, max_len=12, use_cache=True)
    tokens_u, _ = beam_search(model, src, 3, 0.6, max_len=12, use_cache=False)
    assert torch.equal(tokens_c, tokens_u)


def test_a_supplied_multi_head_attention_cannot_take_rotary_positions():
    class Supplied(MultiHeadAttention.__base__):  # any module that is not course_lib's attention
        def __init__(self, d_model, n_heads):
            super().__init__()

    config = TransformerConfig(positional="rotary")
    with pytest.raises(ValueError, match="a supplied multi_head_attention cannot rotate queries and keys"):
        Transformer(config, {"multi_head_attention": Supplied})


# ----- the key/value cache -----

@pytest.mark.parametrize("rotary", [False, True])
def test_attention_one_token_at_a_time_with_a_cache_equals_the_causal_pass(rotary):
    torch.manual_seed(3)
    positions = RotaryPositions(16, 4, max_len=20) if rotary else None
    attention = MultiHeadAttention(16, 4, rotary=positions).eval()
    x = torch.randn(2, 6, 16)
    whole = attention(x, x, x, mask=causal_mask(6))
    cache = KeyValueCache()
    steps = [attention(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(6)]
    assert cache.length == 6
    assert torch.allclose(torch.cat(steps, dim=1), whole, atol=1e-5)


def test_a_fixed_cache_computes_the_memorys_keys_once_and_reorders_with_the_beam():
    torch.manual_seed(4)
    attention = MultiHeadAttention(16, 4).eval()
    memory, query = torch.randn(3, 5, 16), torch.randn(3, 1, 16)
    cache = KeyValueCache(fixed=True)
    first = attention(query, memory, memory, cache=cache)
    keys = cache.keys
    second = attention(query, memory, memory, cache=cache)
    assert cache.keys is keys and cache.length == 5 and cache.start == 0
    assert torch.equal(first, second) and torch.allclose(first, attention(query, memory, memory), atol=1e-6)
    cache.reorder(torch.tensor([2, 2, 0]))
    assert torch.equal(cache.keys[0], keys[2]) and torch.equal(cache.keys[2], keys[0])


# ----- layers receive their sub-modules -----

def test_a_layer_holds_the_sub_modules_it_is_handed_under_the_usual_names():
    attention, cross, ffn = MultiHeadAttention(16, 2), MultiHeadAttention(16, 2), PositionwiseFeedForward(16, 32)
    made = []

    def norm(d_model):
        made.append(LayerNorm(d_model))
        return made[-1]

    layer = DecoderLayer(16, 2, 32, 0.0, self_attn=attention, cross_attn=cross, feed_forward=ffn, norm=norm)
    assert layer.self_attn is attention and layer.cross_attn is cross and layer.feed_forward is ffn
    assert [layer.norm1, layer.norm2, layer.norm3] == made
    plain = EncoderLayer(16, 2, 32, 0.0)
    assert [name for name, _ in plain.named_children()] == ["self_attn", "feed_forward", "norm1", "norm2",
                                                            "dropout1", "dropout2"]


def test_a_supplied_part_is_passed_in_not_patched_over_a_course_part(monkeypatch):
    built = {"course_ffn": 0, "course_norm": 0}
    original_ffn, original_norm = PositionwiseFeedForward.__init__, LayerNorm.__init__

    def counting_ffn(self, *args, **kwargs):
        built["course_ffn"] += 1
        original_ffn(self, *args, **kwargs)

    def counting_norm(self, *args, **kwargs):
        built["course_norm"] += 1
        original_norm(self, *args, **kwargs)

    class MyFeedForward(nn.Module):
        def __init__(self, d_model, d_ff):
            super().__init__()
            self.up, self.down = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

        def forward(self, x):
            return self.down(torch.relu(self.up(x)))

    class MyLayerNorm(nn.LayerNorm):
        pass

    monkeypatch.setattr(PositionwiseFeedForward, "__init__", counting_ffn)
    monkeypatch.setattr(LayerNorm, "__init__", counting_norm)
    config = TransformerConfig(n_encoder_layers=2, n_decoder_layers=3, norm_first=True)
    model = Transformer(config, {"feed_forward": MyFeedForward, "layer_norm": MyLayerNorm})
    assert built == {"course_ffn": 0, "course_norm": 0}  # no course part made only to be replaced
    layers = [*model.encoder.layers, *model.decoder.layers]
    assert all(isinstance(layer.feed_forward, MyFeedForward) for layer in layers)
    assert all(isinstance(model_norm, MyLayerNorm) for model_norm in (model.encoder.norm, model.decoder.norm))


def test_residual_is_post_norm_or_pre_norm_as_written_in_the_paper_and_pytorch():
    torch.manual_seed(5)
    x = torch.randn(2, 3, 8)
    norm, sublayer, dropout = nn.LayerNorm(8), nn.Linear(8, 8), nn.Identity()
    assert torch.equal(residual(x, sublayer, norm, dropout, norm_first=False), norm(x + sublayer(x)))
    assert torch.equal(residual(x, sublayer, norm, dropout, norm_first=True), x + sublayer(norm(x)))
