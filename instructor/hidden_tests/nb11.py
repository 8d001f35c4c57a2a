"""Hidden tests for notebook 11 (decoding and attention)."""

from __future__ import annotations

import torch

from hidden_tests import VALUE, call, check_value, expect, generator, hidden_test, not_attempted, unpack


def _beam_step(scores, log_probs, k):
    batch, beams, vocab = log_probs.shape
    candidates = (scores[:, :, None] + log_probs).reshape(batch, beams * vocab)  # (batch, beams * vocab)
    best, flat = candidates.topk(k, dim=-1)  # (batch, k) each, best first
    return best, flat // vocab, flat % vocab


@hidden_test("check_beam_step", "11.1", points=3, cases=12)
def beam_step(student_fn):
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
        got = call("11.1", student_fn, case, scores.clone(), lp.clone(), k)
        got = unpack("11.1", case, got, 3, "return three tensors (new_scores, origin, token)", (tuple, list))
        for name, g_, e in zip(("new_scores", "origin", "token"), got, _beam_step(scores, lp, k), strict=True):
            expect("11.1", f"{case}, {name}", g_, e, atol=1e-5)


@hidden_test("check_normalised_score", "11.2", points=1, kind=VALUE)
def normalised_score(answer):
    check_value("11.2", answer, -3.2 / ((5 + 9) / 6) ** 0.6, atol=1e-3)


@hidden_test("check_most_attended", "11.3", points=1, kind=VALUE)
def most_attended(answer, model, src_vocab, tgt_vocab, tokenizer, german, english_word):
    """The German token the English word attends to most: last decoder layer, averaged over heads."""
    from course_lib.decoding import cross_attention, greedy_decode

    if answer is None:
        raise not_attempted("11.3")
    if not isinstance(answer, str):
        raise AssertionError("Exercise 11.3: answer with a German token as a string.")
    src_tokens = [*tokenizer(german), "<eos>"]
    src = torch.tensor([src_vocab.encode(tokenizer(german), add_eos=True)])  # (1, src_len)
    with torch.no_grad():
        output = greedy_decode(model, src)  # (1, out_len)
        out_tokens = [t for t in tgt_vocab.decode(output[0].tolist(), strip_specials=False) if t != "<pad>"]
        maps = cross_attention(model, src, output)
    last = maps[sorted(maps)[-1]][0].mean(dim=0)  # (out_len, src_len): averaged over the heads
    expected = src_tokens[int(last[out_tokens.index(english_word)].argmax())]
    if answer.strip() != expected:
        raise AssertionError(f"Exercise 11.3: {english_word!r} attends most to another German token than {answer!r}.")
