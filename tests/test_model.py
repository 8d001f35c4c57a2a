"""Tests for ``course_lib.model``: equality with ``nn.Transformer`` and the properties a translator needs.

- The whole model equals ``nn.Transformer(batch_first=True)`` in eval mode with weights copied by
  ``compat.transformer_from_torch`` (post-norm and pre-norm, padded source and target batches).
- Causality: changing future target tokens never changes earlier logits.
- Padding invariance: appending ``<pad>`` to the source or the target never changes real positions.
- ``record_attention`` collects every map; cross-attention on source padding is exactly 0.
- Initialisation keeps the zero padding row; tied embeddings share one tensor; parameter count by hand.
"""

import math

import pytest
import torch
from torch import nn

from course_lib.compat import to_torch_attn_mask, to_torch_key_padding_mask, transformer_from_torch
from course_lib.embeddings import sinusoidal_table
from course_lib.masks import causal_mask
from course_lib.model import Transformer, TransformerConfig, attention_modules, record_attention

ATOL = 1e-5
PAD = 0


def _ids(lengths, seq_len, vocab):
    """Random ids in [4, vocab) (a <bos>-like id 1 first), padded with 0 after each length."""
    ids = torch.randint(4, vocab, (len(lengths), seq_len))
    ids[:, 0] = 1
    for b, n in enumerate(lengths):
        ids[b, n:] = PAD
    return ids


def _tiny_config(**overrides):
    args = dict(
        src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
        d_ff=32, dropout=0.1, max_len=24,
    )
    args.update(overrides)
    return TransformerConfig(**args)


def _torch_reference(norm_first, d_model=32, n_heads=4, src_vocab=29, tgt_vocab=17):
    ref = nn.Transformer(
        d_model=d_model, nhead=n_heads, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=48,
        dropout=0.1, batch_first=True, norm_first=norm_first,
    )
    src_emb = nn.Embedding(src_vocab, d_model, padding_idx=PAD)
    tgt_emb = nn.Embedding(tgt_vocab, d_model, padding_idx=PAD)
    generator = nn.Linear(d_model, tgt_vocab)
    with torch.no_grad():  # nn.Transformer starts with zero biases and unit norms: randomise them
        for name, p in ref.named_parameters():
            if p.dim() == 1:
                p.normal_(mean=1.0 if "norm" in name and name.endswith("weight") else 0.0, std=0.2)
        src_emb.weight.mul_(d_model**-0.5)
        tgt_emb.weight.mul_(d_model**-0.5)
    return ref.eval(), src_emb, tgt_emb, generator


def _set_fused(module, use_fused):
    for m in module.modules():
        if hasattr(m, "use_fused"):
            m.use_fused = use_fused
    return module


@pytest.mark.parametrize("use_fused", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_equals_torch(norm_first, use_fused):
    torch.manual_seed(0)
    ref, src_emb, tgt_emb, generator = _torch_reference(norm_first)
    ours = _set_fused(transformer_from_torch(ref, src_emb, tgt_emb, generator, max_len=32).eval(), use_fused)
    assert ours.config.norm_first == norm_first and ours.config.final_norm
    d = ref.d_model
    src = _ids([11, 7, 3], 11, 29)
    tgt = _ids([6, 9, 2], 9, 17)
    pe = sinusoidal_table(32, d)
    with torch.no_grad():
        expected = generator(
            ref(
                src_emb(src) * math.sqrt(d) + pe[: src.size(1)],
                tgt_emb(tgt) * math.sqrt(d) + pe[: tgt.size(1)],
                src_key_padding_mask=to_torch_key_padding_mask(src, PAD),  # torch: True = blocked
                tgt_key_padding_mask=to_torch_key_padding_mask(tgt, PAD),
                memory_key_padding_mask=to_torch_key_padding_mask(src, PAD),
                tgt_mask=to_torch_attn_mask(causal_mask(tgt.size(1))),
            )
        )
        logits = ours(src, tgt)
    assert logits.shape == (3, 9, 17)
    real = tgt != PAD
    torch.testing.assert_close(logits[real], expected[real], atol=ATOL, rtol=0)


def test_transformer_differs_from_torch_without_copy():
    """The equality above is not vacuous: an uncopied model gives other logits."""
    torch.manual_seed(1)
    ref, src_emb, tgt_emb, generator = _torch_reference(False)
    ours = transformer_from_torch(ref, src_emb, tgt_emb, generator, max_len=32).eval()
    other = Transformer(ours.config).eval()
    src, tgt = _ids([5, 4], 5, 29), _ids([4, 4], 4, 17)
    with torch.no_grad():
        assert (ours(src, tgt) - other(src, tgt)).abs().max() > 1e-2


@pytest.mark.parametrize("norm_first", [False, True])
def test_causality_future_tokens_do_not_leak(norm_first):
    torch.manual_seed(2)
    config = _tiny_config(norm_first=norm_first)
    model = Transformer(config).eval()
    src = _ids([10, 6], 10, config.src_vocab_size)
    tgt = _ids([8, 8], 8, config.tgt_vocab_size)
    with torch.no_grad():
        logits = model(src, tgt)
        for t in (1, 3, 7):
            changed = tgt.clone()
            changed[:, t:] = torch.randint(4, config.tgt_vocab_size, changed[:, t:].shape)
            assert not torch.equal(changed, tgt)
            new = model(src, changed)
            torch.testing.assert_close(new[:, :t], logits[:, :t], atol=ATOL, rtol=0)
            assert (new[:, t:] - logits[:, t:]).abs().max() > 1e-4  # the future itself does change


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_padding_invariance(positional):
    torch.manual_seed(3)
    config = _tiny_config(positional=positional, norm_first=positional == "learned")
    model = Transformer(config).eval()
    src = _ids([7, 4, 6], 7, config.src_vocab_size)
    tgt = _ids([5, 3, 5], 5, config.tgt_vocab_size)
    with torch.no_grad():
        logits = model(src, tgt)
        padded_src = torch.cat([src, torch.zeros(3, 6, dtype=torch.long)], dim=1)
        torch.testing.assert_close(model(padded_src, tgt), logits, atol=ATOL, rtol=0)
        padded_tgt = torch.cat([tgt, torch.zeros(3, 4, dtype=torch.long)], dim=1)
        both = model(padded_src, padded_tgt)
        assert both.shape == (3, 9, config.tgt_vocab_size)
        torch.testing.assert_close(both[:, :5], logits, atol=ATOL, rtol=0)
        # a sentence gives the same logits alone as inside a padded batch
        alone = model(src[1:2, :4], tgt[1:2, :3])
        torch.testing.assert_close(alone, logits[1:2, :3], atol=ATOL, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_explicit_paths_equal_fused_paths_in_training(norm_first):
    torch.manual_seed(10)
    config = _tiny_config(norm_first=norm_first, dropout=0.0)
    model = Transformer(config).train()
    src, tgt = _ids([8, 3], 8, 23), _ids([6, 2], 6, 19)
    fused = model(src, tgt)
    (fused_grad,) = torch.autograd.grad(fused.square().sum(), model.encoder.layers[0].norm1.weight)
    explicit = _set_fused(model, False)(src, tgt)
    (explicit_grad,) = torch.autograd.grad(explicit.square().sum(), model.encoder.layers[0].norm1.weight)
    torch.testing.assert_close(explicit, fused, atol=ATOL, rtol=0)
    torch.testing.assert_close(explicit_grad, fused_grad, atol=1e-4, rtol=1e-5)


def test_record_attention_collects_every_map():
    torch.manual_seed(4)
    config = _tiny_config(n_encoder_layers=2, n_decoder_layers=3)
    model = Transformer(config).eval()
    src = _ids([9, 5], 9, config.src_vocab_size)
    tgt = _ids([6, 4], 6, config.tgt_vocab_size)
    with torch.no_grad():
        fused = model(src, tgt)
        with record_attention(model) as maps:
            explicit = model(src, tgt)
        assert maps  # filled on exit
    torch.testing.assert_close(explicit, fused, atol=ATOL, rtol=0)  # explicit path == fused path
    expected_names = {f"encoder.layers.{i}.self_attn" for i in range(2)}
    expected_names |= {f"decoder.layers.{i}.{kind}" for i in range(3) for kind in ("self_attn", "cross_attn")}
    assert set(maps) == expected_names == set(attention_modules(model))
    for name, weights in maps.items():
        if name.startswith("encoder"):
            q_len, k_len = 9, 9
        elif name.endswith("cross_attn"):
            q_len, k_len = 6, 9
        else:
            q_len, k_len = 6, 6
        assert weights.shape == (2, 4, q_len, k_len), name
        assert not weights.requires_grad
    for i in range(3):
        cross = maps[f"decoder.layers.{i}.cross_attn"]
        assert torch.all(cross[1, :, :, 5:] == 0)  # source padding gets exactly zero weight
        torch.testing.assert_close(cross.sum(-1), torch.ones(2, 4, 6), atol=ATOL, rtol=0)
        self_attn = maps[f"decoder.layers.{i}.self_attn"]
        assert torch.all(self_attn.triu(diagonal=1) == 0)  # no weight on the future
    for i in range(2):
        assert torch.all(maps[f"encoder.layers.{i}.self_attn"][1, :, :, 5:] == 0)
    # after the block the modules are back to normal
    assert all(not m.keep_attention and m.last_attention is None for m in attention_modules(model).values())


def test_xavier_init_keeps_zero_padding_row_and_small_embeddings():
    torch.manual_seed(5)
    config = _tiny_config(src_vocab_size=400, tgt_vocab_size=300, d_model=32, pad_id=0)
    model = Transformer(config)
    for emb in (model.encoder.embedding, model.decoder.embedding):
        assert torch.equal(emb.weight[0], torch.zeros(32))
        std = float(emb.weight.detach()[1:].std())
        assert abs(std - 32**-0.5) < 0.05 * 32**-0.5  # N(0, 1/d): std d^-0.5, not Xavier's bound
    # matrices of the blocks were Xavier-initialised: uniform within +-sqrt(6 / (fan_in + fan_out)); W_q, W_k, W_v
    # as ONE (3d, d) matrix, as nn.MultiheadAttention keeps them, so their range is sqrt(2) narrower than W_o's
    attention = model.encoder.layers[0].self_attn
    for weight, bound in ((attention.q_proj.weight, math.sqrt(6 / (32 + 96))), (attention.v_proj.weight, math.sqrt(6 / (32 + 96))),
                          (attention.out_proj.weight, math.sqrt(6 / (32 + 32)))):
        largest = float(weight.detach().abs().max())
        assert 0.9 * bound < largest <= bound
    for projection in (attention.q_proj, attention.k_proj, attention.v_proj, attention.out_proj):
        assert torch.equal(projection.bias.detach(), torch.zeros(32))  # nn.MultiheadAttention starts its biases at zero


def test_init_matches_nn_transformer_ranges():
    """Every block matrix and bias starts in the same range as its counterpart in nn.Transformer."""
    torch.manual_seed(7)
    d_model, d_ff = 32, 64
    ours = Transformer(_tiny_config(d_model=d_model, d_ff=d_ff, n_heads=4))
    theirs = nn.Transformer(d_model, 4, 2, 2, d_ff, 0.0, batch_first=True)
    ours_layer, theirs_layer = ours.encoder.layers[0], theirs.encoder.layers[0]
    in_proj = theirs_layer.self_attn.in_proj_weight.detach()  # (3 * d_model, d_model): W_q, W_k, W_v stacked
    ours_qkv = torch.cat([p.weight.detach() for p in (ours_layer.self_attn.q_proj, ours_layer.self_attn.k_proj,
                                                      ours_layer.self_attn.v_proj)])  # (3 * d_model, d_model)
    assert abs(float(ours_qkv.abs().max()) - float(in_proj.abs().max())) < 0.02
    assert abs(float(ours_qkv.std()) - float(in_proj.std())) < 0.1 * float(in_proj.std())
    out_ours, out_theirs = ours_layer.self_attn.out_proj.weight.detach(), theirs_layer.self_attn.out_proj.weight.detach()
    assert abs(float(out_ours.std()) - float(out_theirs.std())) < 0.1 * float(out_theirs.std())
    assert float(theirs_layer.self_attn.in_proj_bias.detach().abs().max()) == 0.0
    assert float(ours_layer.self_attn.q_proj.bias.detach().abs().max()) == 0.0


def test_attention_init_applies_to_any_module_with_q_k_v_projections():
    from course_lib.model import init_attention_like_pytorch

    class StudentAttention(nn.Module):  # a student's own part: same attribute names, not course_lib's class
        def __init__(self):
            super().__init__()
            self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(48, 48) for _ in range(4))

    torch.manual_seed(8)
    part = StudentAttention()
    init_attention_like_pytorch(part)
    assert float(part.q_proj.weight.detach().abs().max()) <= math.sqrt(6 / (48 + 144))
    assert all(torch.equal(p.bias.detach(), torch.zeros(48)) for p in (part.q_proj, part.k_proj, part.v_proj, part.out_proj))
    other = nn.Sequential(nn.Linear(4, 4))
    before = [p.detach().clone() for p in other.parameters()]
    init_attention_like_pytorch(other)  # no q/k/v projections: left alone
    assert all(torch.equal(a, b) for a, b in zip(before, other.parameters(), strict=True))


def test_init_weights_on_a_bare_layer_stack_matches_the_transformer():
    from course_lib.layers import EncoderLayer
    from course_lib.model import init_weights

    torch.manual_seed(9)
    stack = nn.ModuleList(EncoderLayer(32, 4, 64, dropout=0.0) for _ in range(2))
    init_weights(stack)  # what notebook 12 does to a stack of layers without a Transformer around it
    bound_packed, bound_ffn = math.sqrt(6 / (32 + 96)), math.sqrt(6 / (32 + 64))
    for layer in stack:
        assert float(layer.self_attn.q_proj.weight.detach().abs().max()) <= bound_packed
        assert float(layer.self_attn.q_proj.bias.detach().abs().max()) == 0.0
        ffn_weight = next(p for p in layer.feed_forward.parameters() if p.dim() == 2).detach()
        assert float(ffn_weight.abs().max()) <= bound_ffn
        assert float(ffn_weight.abs().max()) > bound_packed  # Xavier over (64, 32), not nn.Linear's default


def test_xavier_init_with_other_pad_id():
    torch.manual_seed(6)
    model = Transformer(_tiny_config(pad_id=2))
    assert torch.equal(model.encoder.embedding.weight[2], torch.zeros(16))
    assert torch.equal(model.decoder.embedding.weight[2], torch.zeros(16))


def test_tie_embeddings_shares_the_tensor():
    torch.manual_seed(7)
    model = Transformer(_tiny_config(tie_embeddings=True))
    assert model.generator.weight is model.decoder.embedding.weight
    untied = Transformer(_tiny_config(tie_embeddings=False))
    assert model.num_parameters() == untied.num_parameters() - 19 * 16
    with torch.no_grad():
        model.decoder.embedding.weight[5, 0] = 123.0
    assert float(model.generator.weight.detach()[5, 0]) == 123.0


def _hand_count(V_s, V_t, d, d_ff, n_enc, n_dec, final_norm, tied, learned_max_len=0):
    attention = 4 * (d * d + d)  # q, k, v, o projections with bias
    ffn = d * d_ff + d_ff + d_ff * d + d
    norm = 2 * d
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    total = V_s * d + V_t * d + n_enc * encoder_layer + n_dec * decoder_layer
    total += 2 * norm if final_norm else 0
    total += 2 * learned_max_len * d
    total += V_t if tied else d * V_t + V_t
    return total


def test_num_parameters_matches_hand_count():
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=11, tgt_vocab_size=7, d_model=8, n_heads=2, n_encoder_layers=1,
                               n_decoder_layers=2, d_ff=16, max_len=10)
    assert Transformer(config).num_parameters() == _hand_count(11, 7, 8, 16, 1, 2, False, False)
    # and written out once in full for that configuration:
    # 88 + 56 + (288 + 280 + 32) + 2 * (576 + 280 + 48) + 63 = 2615
    assert Transformer(config).num_parameters() == 2615
    pre = TransformerConfig(**{**config.to_dict(), "norm_first": True, "tie_embeddings": True})
    assert Transformer(pre).num_parameters() == _hand_count(11, 7, 8, 16, 1, 2, True, True)
    learned = TransformerConfig(**{**config.to_dict(), "positional": "learned"})
    assert Transformer(learned).num_parameters() == _hand_count(11, 7, 8, 16, 1, 2, False, False, learned_max_len=10)


def test_config_defaults_and_final_norm():
    torch.manual_seed(0)
    config = TransformerConfig()
    assert config.d_head == 16 and not config.use_final_norm
    assert TransformerConfig(norm_first=True).use_final_norm
    assert TransformerConfig(norm_first=False, final_norm=True).use_final_norm
    assert config.to_dict()["d_model"] == 64
    assert isinstance(Transformer(_tiny_config()).encoder.norm, nn.Identity)


def test_train_mode_uses_dropout_eval_is_deterministic():
    torch.manual_seed(8)
    config = _tiny_config(dropout=0.3)
    model = Transformer(config)
    src, tgt = _ids([6, 6], 6, 23), _ids([5, 5], 5, 19)
    model.train()
    assert (model(src, tgt) - model(src, tgt)).abs().max() > 1e-4
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model(src, tgt))


def test_one_training_step_reduces_loss_and_keeps_pad_rows():
    torch.manual_seed(9)
    config = _tiny_config(dropout=0.0)
    model = Transformer(config)
    src, tgt = _ids([8, 5], 8, 23), _ids([7, 4], 7, 19)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = loss_fn(model(src, tgt[:, :-1]).reshape(-1, 19), tgt[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    assert torch.equal(model.encoder.embedding.weight[0], torch.zeros(16))
    assert torch.equal(model.decoder.embedding.weight[0], torch.zeros(16))
