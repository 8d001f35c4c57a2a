"""Hidden tests for notebook 02 (embeddings)."""

from __future__ import annotations

import math

import torch
from torch import nn

from hidden_tests import VALUE, Forbidden, Rules, call, expect, generator, hidden_test, not_attempted
from hidden_tests.rules import looks_up_rows


@hidden_test("check_one_hot_embed", "02.1", points=2, cases=4, rules=Rules(forbid=(
    Forbidden("one_hot", "without F.one_hot (build the one-hot tensor yourself by broadcasting)"),
    Forbidden("embedding|index_select|gather|take|index_put", "without nn.Embedding or a lookup of weight's rows "
              "(multiply the one-hot tensor by weight)"),
    Forbidden("__getitem__", "without weight[ids] (multiply the one-hot tensor by weight)", only_if=looks_up_rows),
), stated="no F.one_hot, no nn.Embedding, no weight[ids]: build the one-hot tensor by broadcasting"))
def one_hot_embed(student_fn):
    g = generator(20_001)
    cases = [
        ("vocab 11, d_model 5, batch 4 x 9", torch.randint(0, 11, (4, 9), generator=g), torch.randn(11, 5, generator=g)),
        ("every id of a vocabulary of 7, d_model 2", torch.arange(7)[None, :], torch.randn(7, 2, generator=g)),
        ("one token, vocab 3, d_model 6", torch.tensor([[2]]), torch.randn(3, 6, generator=g)),
        ("float64 weights", torch.randint(0, 20, (2, 5), generator=g), torch.randn(20, 3, generator=g).double()),
    ]
    for case, ids, weight in cases:
        got = call("02.1", student_fn, case, ids.clone(), weight.clone())
        expect("02.1", case, got, weight[ids], atol=1e-6)


@hidden_test("check_scaled_embedding", "02.2", points=2, cases=4)
def scaled_embedding(student_cls):
    g = generator(20_002)
    for vocab_size, d_model, seq_len in [(13, 8, 3), (25, 12, 50), (40, 32, 32), (9, 2, 11)]:
        case = f"vocab {vocab_size}, d_model {d_model}, seq_len {seq_len}"
        weight = torch.randn(vocab_size, d_model, generator=g)
        ids = torch.randint(0, vocab_size, (3, seq_len), generator=g)
        module = call("02.2", student_cls, case, vocab_size, d_model)
        embedding = getattr(module, "embedding", None)
        if not isinstance(embedding, nn.Embedding):
            raise AssertionError("Exercise 02.2: keep the nn.Embedding in self.embedding, as in the given code.")
        with torch.no_grad():
            embedding.weight.copy_(weight)
            got = call("02.2", module, case, ids.clone())
        expect("02.2", case, got, weight[ids] * math.sqrt(d_model), atol=1e-4)


@hidden_test("check_norms", "02.3", points=1, kind=VALUE)
def norms(answer):
    if answer is None:
        raise not_attempted("02.3")
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AssertionError(f"Exercise 02.3: answer with three numbers (a, b, c), got {answer!r}.")
    for name, got, want in zip("abc", answer, (256.0, 16.0, math.sqrt(128)), strict=True):
        if not isinstance(got, (int, float)) or isinstance(got, bool) or abs(got - want) > 0.02 * want:
            raise AssertionError(f"Exercise 02.3: ({name}) is not right.")
