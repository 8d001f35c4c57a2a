"""The notebook 11 checkers pass right answers, fail wrong ones with a specific message, and report unattempted ones."""

import pytest
import torch

from course_lib.decoding import beam_search, greedy_decode
from course_lib.exercises import nb11
from course_lib.model import Transformer, TransformerConfig
from course_lib.tokenization import Vocab


def unattempted(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 11.1 beam step


def right_beam_step(scores, log_probs, k):
    batch, _, vocab = log_probs.shape
    values, flat = (scores[:, :, None] + log_probs).reshape(batch, -1).topk(k, dim=-1)
    return values, flat // vocab, flat % vocab


def per_beam_step(scores, log_probs, k):
    values, token = (scores[:, :, None] + log_probs).max(dim=-1)
    order = values.argsort(dim=-1, descending=True)
    return values.gather(1, order), order, token.gather(1, order)


def test_11_1_right_answer_passes():
    assert nb11.check_beam_step(right_beam_step, quiet=True)


@pytest.mark.parametrize(
    ("student", "needle"),
    [
        (lambda s, lp, k: (right_beam_step(s, lp, k)[0], right_beam_step(s, lp, k)[2], right_beam_step(s, lp, k)[1]),
         "swapped origin and token"),
        (per_beam_step, "best token of each beam"),
        (lambda s, lp, k: right_beam_step(torch.zeros_like(s), lp, k), "Add each hypothesis' score"),
        (lambda s, lp, k: right_beam_step(s, lp, k)[:2], "three tensors"),
        (lambda s, lp, k: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_11_1_wrong_answers_fail_with_a_specific_message(student, needle):
    result = nb11.check_beam_step(student, quiet=True)
    assert result.status == nb11.FAILED and needle in result.message, result.message


def test_11_1_unattempted():
    assert nb11.check_beam_step(unattempted, quiet=True).status == "not attempted"


def test_11_1_reference_matches_course_beam_search_on_a_tiny_model():
    """Beam search with the reference step must reproduce course_lib's best hypothesis (first steps)."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(src_vocab_size=12, tgt_vocab_size=9, d_model=16, n_heads=2,
                                          n_encoder_layers=1, n_decoder_layers=1, d_ff=32, dropout=0.0)).eval()
    src = torch.tensor([[5, 6, 7, 2]])
    tokens, _ = beam_search(model, src, beam_size=1, max_len=4)
    assert torch.equal(tokens, greedy_decode(model, src, max_len=4))
    scores = torch.tensor([[0.0, float("-inf")]])
    log_probs = torch.randn(1, 2, 9).log_softmax(-1)
    values, origin, token = nb11.reference_beam_step(scores, log_probs, 2)
    assert origin.tolist() == [[0, 0]] and torch.allclose(values, log_probs[0, 0].topk(2).values[None])
    assert token.tolist() == [log_probs[0, 0].topk(2).indices.tolist()]


# ---------------------------------------------------------------- 11.2 normalised score


def test_11_2_right_answer_passes():
    assert nb11.check_normalised_score(-3.2 / ((5 + 9) / 6) ** 0.6, quiet=True)
    assert nb11.check_normalised_score(torch.tensor(-1.9247), quiet=True)
    assert nb11.check_normalised_score(-1.925, quiet=True)  # the rounding the notebook's solution quotes
    assert abs(nb11.expected_normalised_score() - (-3.2 / (14 / 6) ** 0.6)) < 1e-6
    assert round(-3.2 / (14 / 6) ** 0.6, 3) == -1.925


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (-3.2 * ((5 + 9) / 6) ** 0.6, "multiplied"),
        (-3.2 / ((5 + 9) / 6), "exponent"),
        (-3.2 / 9, "plain average"),
        (-1.0, "-1 is not right"),
    ],
)
def test_11_2_wrong_answers_fail_with_a_specific_message(answer, needle):
    result = nb11.check_normalised_score(answer, quiet=True)
    assert result.status == nb11.FAILED and needle in result.message, result.message


def test_11_2_unattempted():
    assert nb11.check_normalised_score(None, quiet=True).status == "not attempted"


# ---------------------------------------------------------------- 11.3 read an attention map


@pytest.fixture(scope="module")
def tiny_translator():
    """A random tiny model whose greedy output we read off; the checker must agree with a direct computation."""
    torch.manual_seed(3)
    src_vocab = Vocab(["der", "hund", "hat", "gesehen", "katze", "."])
    tgt_vocab = Vocab(["the", "dog", "has", "seen", "cat", "."])
    config = TransformerConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), d_model=16, n_heads=2,
                               n_encoder_layers=1, n_decoder_layers=2, d_ff=32, dropout=0.0, max_len=32)
    model = Transformer(config).eval()

    def tokenizer(text):
        return text.split()

    german = "der hund hat katze gesehen ."
    src = torch.tensor([src_vocab.encode(tokenizer(german), add_eos=True)])
    output = greedy_decode(model, src, max_len=6)
    words = [w for w in tgt_vocab.decode(output[0].tolist()) if w in tgt_vocab.itos[4:]]
    assert words, "the tiny model must write at least one real word"
    return model, src_vocab, tgt_vocab, tokenizer, german, words[0]


def test_11_3_right_answer_passes(tiny_translator):
    model, src_vocab, tgt_vocab, tokenizer, german, word = tiny_translator
    expected = nb11.most_attended_source_token(model, src_vocab, tgt_vocab, tokenizer, german, word)
    assert expected in [*tokenizer(german), "<eos>"]
    assert nb11.check_most_attended(expected, model, src_vocab, tgt_vocab, tokenizer, german, word, quiet=True)


def test_11_3_wrong_answers_fail_with_a_specific_message(tiny_translator):
    model, src_vocab, tgt_vocab, tokenizer, german, word = tiny_translator
    expected = nb11.most_attended_source_token(model, src_vocab, tgt_vocab, tokenizer, german, word)
    other = next(t for t in tokenizer(german) if t != expected)
    result = nb11.check_most_attended(other, model, src_vocab, tgt_vocab, tokenizer, german, word, quiet=True)
    assert result.status == nb11.FAILED and "brightest cell" in result.message, result.message
    assert repr(expected) not in result.message  # the token is the answer: never shown
    almost = expected.swapcase() if expected.swapcase() != expected else None
    if almost is not None:
        result = nb11.check_most_attended(almost, model, src_vocab, tgt_vocab, tokenizer, german, word, quiet=True)
        assert result.status == nb11.FAILED and "capitalisation" in result.message and repr(expected) not in result.message
    result = nb11.check_most_attended("Elefant", model, src_vocab, tgt_vocab, tokenizer, german, word, quiet=True)
    assert result.status == nb11.FAILED and "not a token of the German sentence" in result.message
    result = nb11.check_most_attended(3, model, src_vocab, tgt_vocab, tokenizer, german, word, quiet=True)
    assert result.status == nb11.FAILED and "as a string" in result.message


def test_11_3_unattempted(tiny_translator):
    model, src_vocab, tgt_vocab, tokenizer, german, word = tiny_translator
    result = nb11.check_most_attended(None, model, src_vocab, tgt_vocab, tokenizer, german, word, quiet=True)
    assert result.status == "not attempted"


def test_11_3_word_missing_from_the_translation_is_an_error(tiny_translator):
    model, src_vocab, tgt_vocab, tokenizer, german, _ = tiny_translator
    with pytest.raises(ValueError, match="does not contain"):
        nb11.most_attended_source_token(model, src_vocab, tgt_vocab, tokenizer, german, "zebra")
