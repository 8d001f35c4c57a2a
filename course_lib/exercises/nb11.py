"""Exercise checks for notebook 11 (decoding and looking inside).

11.1 ``beam_step``: one beam-search expansion: the ``k`` best of ``k x vocab`` candidates per sentence.
11.2 the GNMT length-penalised score of a hypothesis (a number).
11.3 read a cross-attention map: the German token the English verb attends to most.

11.1 is compared with the expansion inside :func:`course_lib.decoding.beam_search`; 11.2 with
:func:`course_lib.decoding.length_penalty`; 11.3 is computed from the trained model the student
passes in (greedy output, one teacher-forced pass, last decoder layer averaged over heads), so the
answer stays right whatever checkpoint the notebook loads. Each checker names the usual mistake it
recognises: top-k per beam instead of over the whole beam, origin and token swapped, multiplying by
the penalty instead of dividing, a forgotten exponent.
"""

from __future__ import annotations

import torch

from course_lib.decoding import cross_attention, greedy_decode, length_penalty
from course_lib.exercises import FAILED, PASSED, VALUE, describe_difference, exercise

# ----------------------------------------------------------------------------------------------
# 11.1 one beam-search expansion step
# ----------------------------------------------------------------------------------------------


def reference_beam_step(scores: torch.Tensor, log_probs: torch.Tensor, k: int):
    """One expansion, as in ``course_lib.decoding.beam_search``.

    Args:
        scores: summed log-probabilities of the current hypotheses ``(batch, k)``.
        log_probs: next-token log-probabilities of each hypothesis ``(batch, k, vocab)``.
        k: beam size.

    Returns:
        ``(new_scores, origin, token)``, each ``(batch, k)``, best first: the score of each winner,
        the beam it extends and the token it appends.
    """
    batch, beams, vocab = log_probs.shape
    candidates = scores[:, :, None] + log_probs  # (batch, beams, vocab)
    new_scores, flat = candidates.reshape(batch, beams * vocab).topk(k, dim=-1)  # (batch, k) each
    return new_scores, flat.div(vocab, rounding_mode="floor"), flat % vocab


def _beam_cases():
    gen = torch.Generator().manual_seed(11)

    def log_probs(batch, beams, vocab):
        return torch.randn(batch, beams, vocab, generator=gen).mul(2).log_softmax(dim=-1)

    first = torch.full((2, 3), float("-inf"))
    first[:, 0] = 0.0  # the first step: one live hypothesis per sentence
    lopsided = log_probs(1, 2, 5)
    lopsided[0, 0] = torch.tensor([-0.1, -0.2, -0.3, -5.0, -6.0])  # beam 0 holds all three winners
    lopsided[0, 1] = torch.tensor([-4.0, -4.5, -5.0, -5.5, -6.0])
    return [
        ("batch 1, k 2, vocab 5, beam 0 holds every winner", (torch.tensor([[-1.0, -1.2]]), lopsided, 2)),
        ("batch 2, k 3, vocab 7, the first step (scores 0, -inf, -inf)", (first, log_probs(2, 3, 7), 3)),
        ("batch 3, k 4, vocab 11, random scores", (-torch.rand(3, 4, generator=gen) * 3, log_probs(3, 4, 11), 4)),
    ]


def _beam_hint(got, expected, scores, log_probs, k) -> str:
    new_scores, origin, token = got
    want_scores, want_origin, want_token = expected
    same_scores = new_scores.shape == want_scores.shape and torch.allclose(new_scores, want_scores)
    if same_scores and torch.equal(origin, want_token) and torch.equal(token, want_origin):
        return " You swapped origin and token: the flat index is beam * vocab + token."
    per_beam = (scores[:, :, None] + log_probs).topk(1, dim=-1).values.squeeze(-1)  # (batch, k)
    if new_scores.shape == per_beam.shape and torch.allclose(new_scores.sort(dim=-1, descending=True).values,
                                                             per_beam.sort(dim=-1, descending=True).values):
        return " You kept the best token of each beam; beam search takes the k best over ALL beam x vocab candidates."
    lp_only = log_probs.reshape(log_probs.size(0), -1).topk(k, dim=-1).values
    if new_scores.shape == lp_only.shape and torch.allclose(new_scores, lp_only):
        return " Add each hypothesis' score to its log-probabilities before ranking: the score is the running sum."
    return ""


@exercise("11.1", points=3)
def check_beam_step(ex, student_fn, quiet: bool = False):
    """``beam_step(scores, log_probs, k)`` returns ``(new_scores, origin, token)``, each ``(batch, k)``."""
    for description, (scores, log_probs, k) in _beam_cases():
        got, verdict = ex.call_student(student_fn, (scores.clone(), log_probs.clone(), k), case=description,
                                    quiet=quiet)
        if verdict is not None:
            return verdict
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return ex.report(FAILED, "return three tensors: (new_scores, origin, token)", quiet)
        expected = reference_beam_step(scores, log_probs, k)
        for name, g, e in zip(("new_scores", "origin", "token"), got, expected, strict=True):
            difference = describe_difference(g, e, atol=1e-5)
            if difference:
                hint = _beam_hint(got, expected, scores, log_probs, k) if all(
                    isinstance(t, torch.Tensor) for t in got) else ""
                return ex.report(FAILED, f"on case '{description}': {name}: {difference}.{hint}", quiet)
    return ex.report(PASSED, "all 3 cases agree with the expansion inside course_lib's beam_search.", quiet)


# ----------------------------------------------------------------------------------------------
# 11.2 a length-penalised score
# ----------------------------------------------------------------------------------------------

LOG_PROB_B, LENGTH_B, ALPHA = -3.2, 9, 0.6


def expected_normalised_score() -> float:
    """log p / ((5 + |y|) / 6) ** alpha for hypothesis B of the exercise."""
    return LOG_PROB_B / float(length_penalty(torch.tensor(LENGTH_B), ALPHA))


@exercise("11.2", points=1, kind=VALUE)
def check_normalised_score(ex, answer, quiet: bool = False):
    """The GNMT score of a hypothesis with log p = -3.2 and 9 tokens, alpha = 0.6."""
    expected = expected_normalised_score()
    hint = "Divide log p by ((5 + length) / 6) ** alpha."
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = float(answer)
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        penalty = float(length_penalty(torch.tensor(LENGTH_B), ALPHA))
        if abs(answer - LOG_PROB_B * penalty) < 1e-3:
            hint = "You multiplied by the penalty; divide by it (a longer output gets a smaller penalty on its log p)."
        elif abs(answer - LOG_PROB_B / ((5 + LENGTH_B) / 6)) < 1e-3:
            hint = "You forgot the exponent alpha = 0.6 on ((5 + length) / 6)."
        elif abs(answer - LOG_PROB_B / LENGTH_B) < 1e-3:
            hint = "That is the plain average per token; the GNMT penalty is ((5 + length) / 6) ** alpha."
    result = ex.check_answer(answer, expected, hint=hint, atol=1e-3, quiet=True)
    if result:
        a_score = -2.1 / float(length_penalty(torch.tensor(5), ALPHA))
        return ex.report(PASSED, f"correct: B scores {expected:.4f} and A {a_score:.4f}, so A still wins.", quiet)
    return ex.report(result.status, result.message, quiet)


# ----------------------------------------------------------------------------------------------
# 11.3 read an attention map
# ----------------------------------------------------------------------------------------------


def most_attended_source_token(model, src_vocab, tgt_vocab, tokenizer, german: str, english_word: str) -> str:
    """The German token that ``english_word`` of the model's greedy translation attends to most
    (last decoder layer's cross-attention, averaged over heads).

    Raises:
        ValueError: if the greedy translation does not contain ``english_word``.
    """
    src_tokens = [*tokenizer(german), "<eos>"]
    src = torch.tensor([src_vocab.encode(tokenizer(german), add_eos=True)])  # (1, src_len)
    output = greedy_decode(model, src)  # (1, out_len)
    out_tokens = tgt_vocab.decode(output[0].tolist(), strip_specials=False)
    out_tokens = [t for t in out_tokens if t != "<pad>"]
    if english_word not in out_tokens:
        raise ValueError(f"the model's translation {' '.join(out_tokens)!r} does not contain {english_word!r}")
    maps = cross_attention(model, src, output)
    last = maps[sorted(maps)[-1]][0].mean(dim=0)  # (out_len, src_len), averaged over heads
    row = out_tokens.index(english_word)
    return src_tokens[int(last[row].argmax())]


@exercise("11.3", points=1, kind=VALUE)
def check_most_attended(ex, answer, model, src_vocab, tgt_vocab, tokenizer, german: str, english_word: str,
                        quiet: bool = False):
    """Which German token does ``english_word`` attend to most? ``answer`` is a token string."""
    if answer is None:
        return ex.not_attempted("set your answer (a German token, e.g. 'Hund') instead of `None`", quiet)
    expected = most_attended_source_token(model, src_vocab, tgt_vocab, tokenizer, german, english_word)
    if not isinstance(answer, str):
        return ex.report(FAILED, f"answer with the German token as a string, got {type(answer).__name__}", quiet)
    if answer.strip() == expected:
        return ex.report(PASSED, f"correct: {english_word!r} looks mostly at {expected!r}.", quiet)
    if answer.strip().lower() == expected.lower():
        return ex.report(FAILED, f"almost: {answer.strip()!r} has the wrong capitalisation; write the token "
                      "exactly as it is written in the German sentence.", quiet)
    src_tokens = [*tokenizer(german), "<eos>"]
    if answer.strip() not in src_tokens:
        return ex.report(FAILED, f"{answer!r} is not a token of the German sentence {src_tokens}.", quiet)
    return ex.report(FAILED, f"{english_word!r} attends more to another German token than to {answer!r}. "
                  f"In the averaged map, find the row that predicts {english_word!r} (its label ends in "
                  f"'→ {english_word}') and its brightest cell.", quiet)

