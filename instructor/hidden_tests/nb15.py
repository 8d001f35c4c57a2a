"""Hidden tests for notebook 15 (your parts make a GPT)."""

from __future__ import annotations

import math

import torch

from course_lib.exercises import nb15

from . import Rules, generator, hidden_test


@hidden_test(nb15.check_next_token_probs, cases=4, rules=Rules(
    stated="own code (course_lib.gpt's next_token_probs is imported above)"))
def next_token_probs(grader, student_fn):
    g = generator(150_001)
    wide = torch.randn(4, 30, generator=g, dtype=torch.float64) * 3  # (batch, vocab)
    for case, logits, temperature, top_k in [
        ("four rows of 30 logits, temperature 0.8", wide, 0.8, None),
        ("four rows, top-7 at temperature 1.5", wide, 1.5, 7),
        ("a three-way tie at the top, top-2 keeps all three", torch.tensor([[1.0, 4.0, 4.0, 4.0, 0.0]],
                                                                           dtype=torch.float64), 1.0, 2),
        ("top-k equal to the vocabulary size keeps everything", wide[:1], 1.0, 30),
    ]:
        scaled = logits / temperature
        if top_k is not None:
            kth = torch.sort(scaled, dim=-1, descending=True).values[:, top_k - 1:top_k]  # (batch, 1)
            scaled = torch.where(scaled >= kth, scaled, torch.full_like(scaled, -math.inf))
        expected = torch.exp(scaled - scaled.max(dim=-1, keepdim=True).values)
        expected = expected / expected.sum(dim=-1, keepdim=True)
        got = grader.call(student_fn, case, logits.clone(), temperature, top_k)
        grader.expect(case, got, expected, atol=1e-7)


@hidden_test(nb15.check_language_model_loss, cases=3, rules=Rules(
    stated="own code (course_lib.gpt's language_model_loss is imported above)"))
def language_model_loss(grader, student_fn):
    g = generator(150_002)
    for case, lengths, vocab, pad_id in [
        ("five sentences of lengths 3 to 11", [3, 11, 5, 8, 4], 25, 0),
        ("one long sentence, vocabulary 50", [16], 50, 0),
        ("pad_id 7, two sentences", [9, 4], 12, 7),
    ]:
        seq = max(lengths)
        ids = torch.full((len(lengths), seq), pad_id)
        for row, length in enumerate(lengths):
            ids[row, :length] = torch.randint(8, vocab, (length,), generator=g)
        logits = torch.randn(len(lengths), seq, vocab, generator=g, dtype=torch.float64)
        total, count = 0.0, 0
        for row, length in enumerate(lengths):  # -log softmax of every next token, by hand
            for t in range(length - 1):
                log_probs = logits[row, t] - torch.logsumexp(logits[row, t], dim=0)
                total -= float(log_probs[ids[row, t + 1]])
                count += 1
        got = grader.call(student_fn, case, logits.clone(), ids.clone(), pad_id)
        got = got.reshape(()) if isinstance(got, torch.Tensor) else got
        grader.expect(case, got, torch.tensor(total / count, dtype=torch.float64), atol=1e-6)
