"""Greedy decoding, beam search, the key/value cache, BLEU, and the shipped toy checkpoint."""

import math
from pathlib import Path
from typing import ClassVar

import pytest
import sacrebleu
import torch
from torch import nn

from course_lib.decoding import (
    beam_search,
    greedy_decode,
    sequence_log_probs,
    translate_sentences,
    translate_token_lists,
)
from course_lib.evaluation import corpus_bleu, evaluate_translation, exact_match_rate, score_outputs
from course_lib.model import Transformer, TransformerConfig
from course_lib.tokenization import EOS_ID, PAD_ID, Vocab
from course_lib.utils import configure_threads

configure_threads()  # one thread (or COURSE_NUM_THREADS): robust on a busy machine
CHECKPOINT = Path(__file__).resolve().parent.parent / "data" / "checkpoints" / "toy_de_en.pt"


def random_model(seed=0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    settings = dict(src_vocab_size=30, tgt_vocab_size=25, d_model=32, n_heads=4, d_ff=64, dropout=0.1)
    settings.update(overrides)
    return Transformer(TransformerConfig(**settings)).eval()


def padded_sources(seed=0, batch=6, length=8):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 30, (batch, length), generator=g)
    for row in range(batch):  # different lengths: x ... <eos> <pad> ...
        n = length - row % 4
        src[row, n - 1] = EOS_ID
        src[row, n:] = PAD_ID
    return src


class ScriptedModel(nn.Module):
    """A fake translation model whose next-token probabilities depend only on the prefix.

    Greedy takes A (0.6) then A (0.36) then <eos>: probability 0.216. The better output is
    B (0.4) then <eos> (1.0): probability 0.4, which greedy never sees.
    """

    A, B = 4, 5
    TABLE: ClassVar[dict] = {(): {A: 0.6, B: 0.4}, (A,): {A: 0.36, B: 0.34, EOS_ID: 0.30}}

    def __init__(self, vocab_size=6):
        super().__init__()
        self.vocab_size = vocab_size
        self.dummy = nn.Parameter(torch.zeros(1))

    def encode(self, src):
        return torch.zeros(src.size(0), src.size(1), 1)

    def decode(self, tgt, memory, src):
        logits = torch.full((tgt.size(0), tgt.size(1), self.vocab_size), -1e9)
        for row in range(tgt.size(0)):
            for t in range(tgt.size(1)):
                prefix = tuple(tgt[row, 1 : t + 1].tolist())
                for token, p in self.TABLE.get(prefix, {EOS_ID: 1.0}).items():
                    logits[row, t, token] = math.log(p)
        return logits

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


# ----- greedy -----

def test_batched_greedy_equals_one_sentence_at_a_time():
    model, src = random_model(), padded_sources()
    batched = greedy_decode(model, src, max_len=12)
    for row in range(src.size(0)):
        alone = src[row : row + 1, : int((src[row] != PAD_ID).sum())]  # no padding at all
        single = greedy_decode(model, alone, max_len=12)[0]
        n = single.size(0)
        assert torch.equal(batched[row, :n], single)
        assert (batched[row, n:] == PAD_ID).all()


@pytest.mark.parametrize("overrides", [{}, {"norm_first": True}, {"positional": "learned", "n_decoder_layers": 3},
                                       {"positional": "rotary"}])
def test_cached_decoding_equals_uncached(overrides):
    model, src = random_model(**overrides), padded_sources(seed=1)
    cached = greedy_decode(model, src, max_len=15, use_cache=True)
    assert torch.equal(cached, greedy_decode(model, src, max_len=15, use_cache=False))
    tokens_c, scores_c = beam_search(model, src, 3, 0.6, max_len=15, use_cache=True)
    tokens_u, scores_u = beam_search(model, src, 3, 0.6, max_len=15, use_cache=False)
    assert torch.equal(tokens_c, tokens_u)
    assert torch.allclose(scores_c, scores_u, atol=1e-4)


def test_greedy_stops_as_soon_as_every_sentence_has_ended():
    output = greedy_decode(ScriptedModel(), torch.full((3, 4), 7), max_len=50, use_cache=False)
    assert output.shape == (3, 3)  # A A <eos>, not 50 columns
    assert output[0].tolist() == [ScriptedModel.A, ScriptedModel.A, EOS_ID]


def test_decoding_restores_training_mode_and_needs_no_gradients():
    model = random_model().train()
    output = greedy_decode(model, padded_sources(), max_len=5)
    assert model.training and not output.requires_grad


# ----- beam search -----

def test_beam_size_one_equals_greedy():
    model, src = random_model(seed=3), padded_sources(seed=3)
    greedy = greedy_decode(model, src, max_len=12)
    beam, _ = beam_search(model, src, beam_size=1, length_penalty_alpha=0.0, max_len=12)
    assert torch.equal(beam, greedy[:, : beam.size(1)])
    assert (greedy[:, beam.size(1) :] == PAD_ID).all()


def test_beam_search_finds_the_better_sequence_greedy_misses():
    model, src = ScriptedModel(), torch.full((2, 3), 7)
    greedy = greedy_decode(model, src, max_len=10, use_cache=False)
    beam, scores = beam_search(model, src, beam_size=2, length_penalty_alpha=0.0, max_len=10, use_cache=False)
    assert beam[0].tolist() == [ScriptedModel.B, EOS_ID]
    assert torch.allclose(scores, torch.full((2,), math.log(0.4)))
    assert (sequence_log_probs(model, src, beam) > sequence_log_probs(model, src, greedy) + 0.5).all()


def test_beam_scores_are_the_log_probabilities_of_the_outputs_and_beat_greedy():
    model, src = random_model(seed=4), padded_sources(seed=4, batch=8)
    beam, scores = beam_search(model, src, beam_size=4, length_penalty_alpha=0.0, max_len=12)
    assert torch.allclose(scores, sequence_log_probs(model, src, beam), atol=1e-4)
    greedy_scores = sequence_log_probs(model, src, greedy_decode(model, src, max_len=12))
    assert scores.sum() >= greedy_scores.sum()


def test_cross_attention_is_returned_for_the_chosen_outputs():
    model, src = random_model(n_decoder_layers=2), padded_sources(seed=5)
    output, attention = greedy_decode(model, src, max_len=10, return_attention=True)
    _, _, beam_attention = beam_search(model, src, 2, max_len=10, return_attention=True)
    assert sorted(attention) == ["decoder.layers.0.cross_attn", "decoder.layers.1.cross_attn"]
    weights = attention["decoder.layers.1.cross_attn"]
    assert weights.shape == (src.size(0), 4, output.size(1), src.size(1))  # (batch, n_heads, out_len, src_len)
    assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-5)
    assert (weights.masked_select((src == PAD_ID)[:, None, None, :].expand_as(weights)) == 0).all()
    assert beam_attention["decoder.layers.0.cross_attn"].shape[:2] == (src.size(0), 4)


# ----- translating many sentences -----

def toy_vocabs():
    words = [f"w{i}" for i in range(26)]
    return Vocab(words), Vocab(words[:21])  # 30 and 25 tokens with the specials


def test_translate_keeps_the_input_order_across_length_sorted_batches():
    model = random_model()
    src_vocab, tgt_vocab = toy_vocabs()
    g = torch.Generator().manual_seed(0)
    sentences = [[f"w{int(i)}" for i in torch.randint(0, 26, (n,), generator=g)] for n in (7, 2, 5, 1, 6, 3, 4)]
    together = translate_token_lists(model, sentences, src_vocab, tgt_vocab, batch_size=3)
    one_by_one = [translate_token_lists(model, [s], src_vocab, tgt_vocab)[0] for s in sentences]
    assert together == one_by_one
    beams = translate_token_lists(model, sentences, src_vocab, tgt_vocab, batch_size=3, beam_size=3)
    assert len(beams) == len(sentences)
    text = translate_sentences(model, [" ".join(s) for s in sentences], src_vocab, tgt_vocab, str.split)
    assert text == [" ".join(t) for t in together]


# ----- scores -----

def test_bleu_of_identical_text_is_100_with_signature():
    text = ["The dog sees the cat.", "I drink water."]
    result = corpus_bleu(text, text)
    assert result.score == pytest.approx(100.0)
    assert "nrefs:1" in result.signature and "tok:13a" in result.signature
    assert exact_match_rate(text, text) == 1.0


def test_bleu_equals_sacrebleu_and_exact_match_counts_sentences():
    hyps = ["The dog sees a cat.", "I drink water.", "She has seen the man."]
    refs = ["The dog sees the cat.", "I drink water.", "She saw the man."]
    assert math.isclose(corpus_bleu(hyps, refs).score, sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert math.isclose(exact_match_rate(hyps, refs), 1 / 3)
    with pytest.raises(ValueError, match="2 hypotheses but 3 references"):
        corpus_bleu(hyps[:2], refs)


def test_subword_output_scores_exactly_like_the_same_words():
    """BPE pieces are glued into words before both the detokenized and the tokenized lower-cased figure."""
    from course_lib.tokenization import Tokenizer

    words = [["A", "dog", "runs", "on", "the", "t", "-", "shirt", "."], ["Two", "Hundefutter", "bowls", "."]]
    pieces = [["A</w>", "do", "g</w>", "runs</w>", "on</w>", "the</w>", "t</w>", "-</w>", "shirt</w>", ".</w>"],
              ["Two</w>", "Hunde", "futter</w>", "bow", "ls</w>", ".</w>"]]
    refs = ["A dog runs in the t-shirt.", "Two dog food bowls."]
    tokenizer = Tokenizer("en")
    as_words, as_pieces = score_outputs(words, refs, tokenizer), score_outputs(pieces, refs, tokenizer)
    for name in ("bleu", "bleu_lc", "bleu_tok_lc"):
        assert as_pieces[name] == pytest.approx(as_words[name]), name
    assert 0 < as_words["bleu_tok_lc"] < 100


def test_shipped_checkpoint_translates_the_test_split_with_bleu_at_least_97():
    from course_lib.checkpoint import load_checkpoint
    from course_lib.data import build_vocabs, load_toy_corpus, tokenize_pairs

    assert CHECKPOINT.is_file(), f"the shipped checkpoint is missing: {CHECKPOINT}"
    assert CHECKPOINT.stat().st_size <= 10 * 2**20
    model, src_vocab, tgt_vocab, _ = load_checkpoint(CHECKPOINT)
    train_vocabs = build_vocabs(tokenize_pairs(load_toy_corpus("train")))
    assert (src_vocab, tgt_vocab) == train_vocabs, (
        "the toy corpus changed since the checkpoint was trained: re-make it with the command in "
        "data/checkpoints/README.md"
    )
    test_pairs = tokenize_pairs(load_toy_corpus("test"))
    scores = evaluate_translation(model, [s for s, _ in test_pairs], [t for _, t in test_pairs], src_vocab, tgt_vocab)
    assert len(scores.hypotheses) == 1000
    assert scores.bleu >= 97.0, scores.summary()
    assert scores.exact_match >= 0.9, scores.summary()


def test_toy_references_rejoin_to_the_file_text():
    """evaluation.py's promise: on the toy corpus, detokenized reference tokens are the reference lines exactly,
    so notebooks that pass token lists score what the command line scores against the raw file."""
    from course_lib.data import load_toy_corpus
    from course_lib.tokenization import Tokenizer, detokenize

    english = Tokenizer("en")
    for split in ("valid", "test"):
        references = [target for _, target in load_toy_corpus(split)]
        assert [detokenize(english(r)) for r in references] == references


def test_output_limits_are_one_and_a_half_times_the_source_plus_ten_per_sentence():
    """The default limit notebook 12 quotes (1.5 x the input length + 10, the paper's is + 50): per sentence, so
    padding in a batch changes nothing; capped by the model's position table; ``max_len`` overrides it."""
    from types import SimpleNamespace

    from course_lib.decoding import output_limits

    model = SimpleNamespace(config=SimpleNamespace(max_len=30))
    src = torch.tensor([[5, 6, 7, 2, 0, 0, 0, 0, 0], [5, 6, 7, 8, 9, 6, 7, 8, 2]])  # 4 and 9 real tokens
    assert output_limits(model, src, None).tolist() == [4 * 3 // 2 + 10, 9 * 3 // 2 + 10]  # 16 and 23
    assert output_limits(model, src[:1, :4], None).tolist() == [16]  # alone, without padding: the same limit
    long = torch.full((1, 20), 5)
    assert output_limits(model, long, None).tolist() == [30]  # 40 capped at config.max_len
    assert output_limits(model, src, 7).tolist() == [7, 7] and output_limits(model, src, 99).tolist() == [30, 30]
