"""The decoder-only language model (course_lib.gpt, notebook 15): its block against PyTorch, causality, the loss,
the count baselines, sampling and cached generation."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from course_lib.compat import copy_encoder_layer
from course_lib.gpt import (
    GPT,
    GPTConfig,
    NgramModel,
    best_smoothing,
    cache_mode,
    decode_ids,
    generate,
    language_model_loss,
    make_batches,
    next_token_probs,
    perplexity,
    train_language_model,
)
from course_lib.layers import DecoderOnlyLayer, EncoderLayer, LayerNorm
from course_lib.masks import causal_mask
from course_lib.tokenization import Vocab

D_MODEL, N_HEADS, D_FF = 16, 4, 32


def _tiny(seed: int = 0, **overrides) -> GPT:
    torch.manual_seed(seed)
    config = GPTConfig(**{"vocab_size": 13, "d_model": D_MODEL, "n_heads": N_HEADS, "n_layers": 2, "d_ff": D_FF,
                          "max_len": 24, **overrides})
    return GPT(config).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_block_equals_pytorch_encoder_layer_given_a_causal_mask(norm_first):
    torch.manual_seed(0)
    reference = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, batch_first=True,
                                           norm_first=norm_first).eval()
    block = DecoderOnlyLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, norm_first=norm_first).eval()
    copy_encoder_layer(reference, block)
    x = torch.randn(3, 7, D_MODEL)  # (batch, seq, d_model)
    blocked = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)  # PyTorch: True = may NOT attend
    expected = reference(x, src_mask=blocked, is_causal=True)
    assert torch.allclose(block(x, causal_mask(7)), expected, atol=1e-5)


def test_block_computes_what_an_encoder_layer_computes():
    torch.manual_seed(0)
    block = DecoderOnlyLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0).eval()
    encoder = EncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0).eval()
    encoder.load_state_dict(block.state_dict())  # same parameter names: only the mask makes the difference
    x, mask = torch.randn(2, 6, D_MODEL), causal_mask(6)
    assert torch.equal(block(x, mask), encoder(x, mask))
    assert not torch.allclose(block(x, mask), encoder(x, None), atol=1e-3)


def test_model_is_causal_and_ignores_padding_after_the_sentence():
    model = _tiny()
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    changed = ids.clone()
    changed[0, 4:] = torch.tensor([10, 11])
    assert torch.allclose(model(ids)[:, :4], model(changed)[:, :4], atol=1e-6)
    assert not torch.allclose(model(ids)[:, 4:], model(changed)[:, 4:], atol=1e-3)
    padded = torch.tensor([[1, 5, 6, 2, 0, 0], [1, 5, 6, 7, 8, 2]])
    assert torch.allclose(model(padded[:1, :4])[0], model(padded)[0, :4], atol=1e-5)


def test_tied_output_layer_and_parameter_count():
    model = _tiny()
    assert model.generator.weight is model.embedding.embedding.weight
    untied = _tiny(tie_embeddings=False)
    assert untied.num_parameters() - model.num_parameters() == 13 * D_MODEL


def test_loss_scores_the_next_token_and_skips_padding():
    ids = torch.tensor([[1, 4, 5, 2], [1, 6, 2, 0]])
    logits = torch.full((2, 4, 7), -20.0)
    for b in range(2):
        for t in range(3):
            logits[b, t, ids[b, t + 1]] = 20.0  # every next token predicted with certainty
    assert language_model_loss(logits, ids).item() < 1e-6
    logits[1, 2] = 0.0  # the position after <eos> predicts <pad>: not scored
    assert language_model_loss(logits, ids).item() < 1e-6
    logits[0, 0] = 0.0  # uniform over 7 at one of the 5 scored positions
    assert math.isclose(language_model_loss(logits, ids).item(), math.log(7) / 5, rel_tol=1e-4)
    assert math.isclose(language_model_loss(logits, ids, reduction="sum").item(), math.log(7), rel_tol=1e-4)
    with pytest.raises(ValueError, match="logits must be"):
        language_model_loss(logits[:, :3], ids)


def test_count_baselines_against_counts_by_hand():
    train = [torch.tensor([1, 4, 5, 2]), torch.tensor([1, 4, 2])]
    vocab_size = 6  # <pad> <bos> <eos> <unk> 4 5: 4 words may be predicted
    bigram = NgramModel(train, vocab_size, n=2, k=1.0)
    assert math.isclose(bigram.log_prob(1, 4), math.log((2 + 1) / (2 + 4)))
    assert math.isclose(bigram.log_prob(4, 2), math.log((1 + 1) / (2 + 4)))
    unigram = NgramModel(train, vocab_size, n=1, k=0.5)
    assert math.isclose(unigram.log_prob(4, 2), math.log((2 + 0.5) / (5 + 0.5 * 4)))
    test = [torch.tensor([1, 4, 2])]
    expected = math.exp(-(bigram.log_prob(1, 4) + bigram.log_prob(4, 2)) / 2)
    assert math.isclose(bigram.perplexity(test), expected)
    k, _ = best_smoothing(train, test, vocab_size, n=2, grid=(0.01, 1.0))
    assert k == 0.01  # the test sentence is a training sentence: less smoothing fits it better


def test_next_token_probs_temperature_and_top_k():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    assert torch.allclose(next_token_probs(logits), logits.softmax(-1))
    assert torch.allclose(next_token_probs(logits, temperature=0.5), (logits / 0.5).softmax(-1))
    top2 = next_token_probs(logits, top_k=2)
    assert torch.allclose(top2[0, 2:], torch.zeros(2)) and torch.allclose(top2.sum(-1), torch.ones(1))
    assert torch.allclose(top2[0, :2], logits[0, :2].softmax(-1))
    tie = next_token_probs(torch.tensor([[1.0, 1.0, 0.0]]), top_k=1)
    assert torch.allclose(tie, torch.tensor([[0.5, 0.5, 0.0]]))  # ties at the k-th value are kept
    with pytest.raises(ValueError, match="temperature"):
        next_token_probs(logits, temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        next_token_probs(logits, top_k=5)


@pytest.mark.parametrize("greedy", [True, False])
def test_cached_generation_equals_whole_prefix_generation(greedy):
    model = _tiny(positional="rotary")
    prompt = torch.tensor([[1, 5], [1, 7], [1, 9]])
    runs = []
    for use_cache in (True, False):
        stats = {}
        out = generate(model, prompt, 12, greedy=greedy, generator=torch.Generator().manual_seed(3),
                       use_cache=use_cache, stats=stats)
        runs.append((out, stats))
    (cached, cached_stats), (whole, whole_stats) = runs
    assert torch.equal(cached, whole)
    assert cached_stats["mode"] == "keys-values" and cached_stats["checked"] is True
    assert cached_stats["positions_run"] < whole_stats["positions_run"]


def test_generation_with_supplied_parts_caches_their_inputs():
    class Block(nn.Module):  # a student's block: course modules under other names, called as black boxes
        def __init__(self, d_model, n_heads, d_ff, norm_first=False):
            super().__init__()
            self.norm_first = norm_first
            inner = DecoderOnlyLayer(d_model, n_heads, d_ff, dropout=0.0, norm_first=norm_first)
            self.attend, self.ffn = inner.self_attn, inner.feed_forward
            self.n1, self.n2 = LayerNorm(d_model), LayerNorm(d_model)

        def forward(self, x, mask):
            if self.norm_first:
                h = self.n1(x)
                x = x + self.attend(h, h, h, mask=mask)
                return x + self.ffn(self.n2(x))
            x = self.n1(x + self.attend(x, x, x, mask=mask))
            return self.n2(x + self.ffn(x))

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=13, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, max_len=24),
                {"decoder_only_layer": Block}).eval()
    assert cache_mode(model) == "inputs"
    prompt = torch.tensor([[1, 5], [1, 6]])
    stats = {}
    cached = generate(model, prompt, 10, generator=torch.Generator().manual_seed(1), stats=stats)
    whole = generate(model, prompt, 10, generator=torch.Generator().manual_seed(1), use_cache=False)
    assert torch.equal(cached, whole) and stats["checked"] is True


def test_sampling_is_repeatable_and_stops_at_eos():
    model = _tiny()
    prompt = torch.ones(4, 1, dtype=torch.long)
    first = generate(model, prompt, 15, temperature=1.5, top_k=5, generator=torch.Generator().manual_seed(0))
    again = generate(model, prompt, 15, temperature=1.5, top_k=5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(first, again)
    for row in first.tolist():
        if 2 in row:
            assert all(token == 0 for token in row[row.index(2) + 1:])
    with pytest.raises(ValueError, match="pad"):
        generate(model, torch.tensor([[1, 0]]), 3)


def test_training_lowers_perplexity_below_the_bigram_baseline():
    torch.manual_seed(0)
    sentences = [torch.tensor([1, 4 + (i % 3), 7 + (i % 3), 10 + (i % 3), 2]) for i in range(60)]  # a fixed grammar
    model = _tiny()
    batches = make_batches(sentences, 12, seed=0)
    before = perplexity(model, batches)
    history = train_language_model(model, batches, batches, steps=150, warmup=20, lr_factor=2.0, eval_every=50,
                                   log=None)
    assert [h["step"] for h in history] == [50, 100, 150]
    unigram = NgramModel(sentences, 13, n=1, k=0.01).perplexity(sentences)
    assert history[-1]["valid_ppl"] < unigram < before
    assert history[-1]["valid_ppl"] < 1.7  # the first word decides the sentence: 3 choices once, then certain


def test_batches_and_decoding():
    vocab = Vocab(["a", "b", "c"])
    sequences = [torch.tensor([1, 4, 2]), torch.tensor([1, 4, 5, 6, 2]), torch.tensor([1, 5, 2])]
    batches = make_batches(sequences, 2)
    assert [tuple(b.shape) for b in batches] == [(2, 3), (1, 5)]
    assert sorted(tuple(b.shape) for b in make_batches(sequences, 2, seed=1)) == [(1, 5), (2, 3)]
    assert decode_ids(torch.tensor([[1, 4, 5, 2, 6], [1, 6, 0, 0, 0]]), vocab) == ["a b", "c"]


def test_clear_errors():
    with pytest.raises(ValueError, match="d_model must be divisible by n_heads"):
        GPTConfig(d_model=10, n_heads=4)
    model = _tiny()
    with pytest.raises(ValueError, match="ids must lie in"):
        model(torch.tensor([[1, 99]]))
    with pytest.raises(ValueError, match="ids must be an integer tensor"):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="longer than max_len"):
        model(torch.ones(1, 30, dtype=torch.long))


def test_generation_never_writes_pad_or_bos():
    model = _tiny(seed=3)
    with torch.no_grad():
        model.generator.bias[[0, 1]] = 50.0  # an untrained model that would write <pad> and <bos> every time
    out = generate(model, torch.ones(3, 1, dtype=torch.long), 10, greedy=True)
    assert not (out[:, 1:] == 1).any() and out.size(1) == 11 and not (out[:, 1:] == 0).any()
    sampled = generate(model, torch.ones(3, 1, dtype=torch.long), 10, generator=torch.Generator().manual_seed(0))
    assert not (sampled[:, 1:] == 1).any()
