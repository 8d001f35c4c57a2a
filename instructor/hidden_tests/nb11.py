"""Hidden tests for notebook 11 (decoding and attention)."""

from __future__ import annotations

import torch

from course_lib.exercises import nb11

from . import generator, hidden_test


def _beam_step(scores, log_probs, k):
    batch, beams, vocab = log_probs.shape
    candidates = (scores[:, :, None] + log_probs).reshape(batch, beams * vocab)  # (batch, beams * vocab)
    best, flat = candidates.topk(k, dim=-1)  # (batch, k) each, best first
    return best, flat // vocab, flat % vocab


@hidden_test(nb11.check_beam_step, cases=12)
def beam_step(grader, student_fn):
    g = generator(110_001)

    def log_probs(batch, beams, vocab):
        return (torch.randn(batch, beams, vocab, generator=g) * 3).log_softmax(dim=-1)

    first = torch.full((3, 2), float("-inf"))
    first[:, 0] = 0.0
    strong = log_probs(2, 3, 6)
    strong[:, 1] = torch.tensor([-0.01, -0.02, -0.03, -0.04, -0.05, -0.06])  # beam 1 wins every place
    cases = [
        ("batch 4, k 5, vocab 9, random scores", -torch.rand(4, 5, generator=g) * 4, log_probs(4, 5, 9), 5),
        ("batch 3, k 2, vocab 13, the first step", first, log_probs(3, 2, 13), 2),
        ("batch 2, k 3, vocab 6, one beam holds every winner", torch.tensor([[-2.0, -1.0, -3.0]] * 2), strong, 3),
        ("batch 1, k 1, vocab 4", torch.tensor([[-0.5]]), log_probs(1, 1, 4), 1),
    ]
    for case, scores, lp, k in cases:
        got = grader.call(student_fn, case, scores.clone(), lp.clone(), k)
        got = grader.unpack(case, got, 3, "return three tensors (new_scores, origin, token)", (tuple, list))
        for name, g_, e in zip(("new_scores", "origin", "token"), got, _beam_step(scores, lp, k), strict=True):
            grader.expect(f"{case}, {name}", g_, e, atol=1e-5)


@hidden_test(nb11.check_normalised_score)
def normalised_score(grader, answer):
    grader.check_value(answer, -3.2 / ((5 + 9) / 6) ** 0.6, atol=1e-3)


@hidden_test(nb11.check_most_attended)
def most_attended(grader, answer, model, src_vocab, tgt_vocab, tokenizer, german, english_word):
    """The German token the English word attends to most: last decoder layer, averaged over heads."""
    from course_lib.decoding import cross_attention, greedy_decode

    if answer is None:
        raise grader.not_attempted()
    if not isinstance(answer, str):
        raise grader.wrong("answer with a German token as a string.")
    src_tokens = [*tokenizer(german), "<eos>"]
    src = torch.tensor([src_vocab.encode(tokenizer(german), add_eos=True)])  # (1, src_len)
    with torch.no_grad():
        output = greedy_decode(model, src)  # (1, out_len)
        out_tokens = [t for t in tgt_vocab.decode(output[0].tolist(), strip_specials=False) if t != "<pad>"]
        maps = cross_attention(model, src, output)
    last = maps[sorted(maps)[-1]][0].mean(dim=0)  # (out_len, src_len): averaged over the heads
    expected = src_tokens[int(last[out_tokens.index(english_word)].argmax())]
    if answer.strip() != expected:
        raise grader.wrong(f"{english_word!r} attends most to another German token than {answer!r}.")
