"""Hidden tests for notebook 02 (embeddings)."""

from __future__ import annotations

import math

import torch
from torch import nn

from course_lib.exercises import nb02

from . import Forbidden, Rules, generator, hidden_test
from .rules import looks_up_rows


@hidden_test(nb02.check_one_hot_embed, cases=4, rules=Rules(forbid=(
    Forbidden("one_hot", "without F.one_hot (build the one-hot tensor yourself by broadcasting)"),
    Forbidden("embedding|index_select|gather|take|index_put", "without nn.Embedding or a lookup of weight's rows "
              "(multiply the one-hot tensor by weight)"),
    Forbidden("__getitem__", "without weight[ids] (multiply the one-hot tensor by weight)", only_if=looks_up_rows),
), stated="no F.one_hot, no nn.Embedding, no weight[ids]: build the one-hot tensor by broadcasting"))
def one_hot_embed(grader, student_fn):
    g = generator(20_001)
    cases = [
        ("vocab 11, d_model 5, batch 4 x 9", torch.randint(0, 11, (4, 9), generator=g), torch.randn(11, 5, generator=g)),
        ("every id of a vocabulary of 7, d_model 2", torch.arange(7)[None, :], torch.randn(7, 2, generator=g)),
        ("one token, vocab 3, d_model 6", torch.tensor([[2]]), torch.randn(3, 6, generator=g)),
        ("float64 weights", torch.randint(0, 20, (2, 5), generator=g), torch.randn(20, 3, generator=g).double()),
    ]
    for case, ids, weight in cases:
        got = grader.call(student_fn, case, ids.clone(), weight.clone())
        grader.expect(case, got, weight[ids], atol=1e-6)


@hidden_test(nb02.check_scaled_embedding, cases=4)
def scaled_embedding(grader, student_cls):
    g = generator(20_002)
    for vocab_size, d_model, seq_len in [(13, 8, 3), (25, 12, 50), (40, 32, 32), (9, 2, 11)]:
        case = f"vocab {vocab_size}, d_model {d_model}, seq_len {seq_len}"
        weight = torch.randn(vocab_size, d_model, generator=g)
        ids = torch.randint(0, vocab_size, (3, seq_len), generator=g)
        module = grader.call(student_cls, case, vocab_size, d_model)
        embedding = getattr(module, "embedding", None)
        if not isinstance(embedding, nn.Embedding):
            raise grader.wrong("keep the nn.Embedding in self.embedding, as in the given code.")
        with torch.no_grad():
            embedding.weight.copy_(weight)
            got = grader.call(module, case, ids.clone())
        grader.expect(case, got, weight[ids] * math.sqrt(d_model), atol=1e-4)


@hidden_test(nb02.check_norms)
def norms(grader, answer):
    if answer is None:
        raise grader.not_attempted()
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise grader.wrong(f"answer with three numbers (a, b, c), got {answer!r}.")
    for name, got, want in zip("abc", answer, (256.0, 16.0, math.sqrt(128)), strict=True):
        if not isinstance(got, (int, float)) or isinstance(got, bool) or abs(got - want) > 0.02 * want:
            raise grader.wrong(f"({name}) is not right.")
